"""Every built-in against JavaScript itself: the cases of ``builtins_oracle.json`` were evaluated
by node (and lodash 4.17.21) by ``tests/schema/oracle/builtins.mjs``; each must give here what it
gave there. Regenerate with ``node tests/schema/oracle/builtins.mjs > tests/schema/builtins_oracle.json``.

Where JavaScript throws, the interpreter must throw a catchable error (``MVU_SCHEMA``); the
``budget`` cases must end in ``MVU_LIMIT``. ``Math``'s transcendental functions may differ from
V8's fdlibm in the last bits (the C library computes them here), so those compare within 4 ulps.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import pytest
from builtins_replay import cases, replay

CASES = cases()
FAMILIES = sorted({family for family, _, _ in CASES})


def _within_ulps(expected: Any, actual: Any) -> bool:
    if type(expected) is not float or type(actual) is not float:
        return False
    return abs(expected - actual) <= 4 * math.ulp(expected)


def agrees(family: str, expected: Any, actual: Any) -> bool:
    if expected == actual:
        return True
    if type(expected) is dict and type(actual) is dict and expected.get("$") == "throw":
        return actual.get("$") == "throw"
    return family == "math" and _within_ulps(expected, actual)


@pytest.mark.parametrize("family", FAMILIES)
def test_built_ins_answer_as_node_does(family: str) -> None:
    selected = [case for case in CASES if case[0] == family]
    failures: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    for _, expression, expected, actual in replay(selected):
        if not agrees(family, expected, actual):
            failures[expression].append((expected, actual))
    shown = "\n".join(f"{expression}: node {pairs[0][0]!r}, here {pairs[0][1]!r}"
                      for expression, pairs in list(failures.items())[:30])
    assert not failures, f"{len(failures)} of {len(selected)} {family} cases differ from node:\n{shown}"


def test_the_oracle_covers_every_family_with_many_cases() -> None:
    counts = defaultdict(int)
    for family, _, _ in CASES:
        counts[family] += 1
    assert set(counts) >= {"values", "number", "math", "string", "array", "object", "json", "date", "lodash", "budget"}
    assert sum(counts.values()) > 10_000
