"""Every built-in against JavaScript itself: the cases of ``builtins_oracle.json`` were evaluated
by node (and lodash 4.17.21) by ``tests/schema/oracle/builtins.mjs``; each must give here what it
gave there. Regenerate with ``node tests/schema/oracle/builtins.mjs > tests/schema/builtins_oracle.json``.

Where JavaScript throws, the interpreter must throw a catchable error (``MVU_SCHEMA``); the
``budget`` cases must end in ``MVU_LIMIT``. ``Math``'s transcendental functions may differ from
V8's fdlibm in the last bits (the C library computes them here), so those compare within 4 ulps.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

import pytest
from builtins_replay import cases, replay

CASES = cases()
LODASH_GAPS: frozenset[str] = frozenset()
"""lodash functions some of whose oracle cases still differ from lodash 4.17.21. Their cases must
still end typed: a value, a thrown JavaScript error or an MvuError, never a Python exception.
Remove a name once it agrees (``tests/schema/oracle/lodash_gaps.py`` lists the differences)."""
LODASH_REFUSED = frozenset({"now", "random", "sample", "uniqueId"})
"""lodash functions refused by name because they are not deterministic (docs/schema.md's table):
every case of theirs must be ``MVU_UNSUPPORTED`` naming the function."""
_ARRAY = "[[1, {k: 2}]]"
_NAMED_PATHS = ["'a.b[0].c'", "'a.b.1'", "['a', 'b', '0', 'c']", "'a.b'", "['a.b']", "'x.y'", "''", "'a[\"b\"]'",
                "undefined", "'a.b.length'", "'x'", "'a.b[5]'"]
NAMED_KEYS_ON_ARRAYS = frozenset(
    [f"((o) => [_.{fn}(o, {path}, {value}), o])({_ARRAY})"
     for fn, value in (("set", "9"), ("update", "v => [v]")) for path in _NAMED_PATHS]
    + [f"_.{fn}([[1], [2, [3]]], [{{a: 1}}])" for fn in ("merge", "mergeWith", "defaultsDeep")])
"""Cases where lodash writes a named key onto an array: JavaScript keeps it as a property JSON
never shows; here an array holds no named keys (S-7), so the write is refused (``MVU_SCHEMA``)."""
FAMILIES = sorted({family for family, _, _ in CASES})


def _within_ulps(expected: Any, actual: Any) -> bool:
    if type(expected) is not float or type(actual) is not float:
        return False
    return abs(expected - actual) <= 4 * math.ulp(expected)


def _refused_as_documented(expression: str, actual: Any) -> bool:
    """Whether a case of :data:`LODASH_REFUSED` or :data:`NAMED_KEYS_ON_ARRAYS` ends as documented."""
    if expression in NAMED_KEYS_ON_ARRAYS:
        return actual.get("$") == "refused" and actual.get("code") == "MVU_SCHEMA" \
            and "no named keys" in actual.get("message", "")
    name = _lodash_function(expression)
    return actual.get("$") == "unsupported" and f"`_.{name}` is not supported" in actual.get("message", "")


def agrees(family: str, expected: Any, actual: Any) -> bool:
    if expected == actual:
        return True
    if type(expected) is dict and type(actual) is dict and expected.get("$") == "throw":
        return actual.get("$") == "throw"
    return family == "math" and _within_ulps(expected, actual)


def _lodash_function(expression: str) -> str:
    found = re.search(r"_\.(\w+)", expression)
    return found.group(1) if found else ""


@pytest.mark.parametrize("family", FAMILIES)
def test_built_ins_answer_as_node_does(family: str) -> None:
    selected = [case for case in CASES if case[0] == family]
    failures: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    for _, expression, expected, actual in replay(selected):
        if family == "lodash" and (expression in NAMED_KEYS_ON_ARRAYS
                                   or _lodash_function(expression) in LODASH_REFUSED):
            if not (type(actual) is dict and _refused_as_documented(expression, actual)):
                failures[expression].append((expected, actual))
            continue
        if family == "lodash" and _lodash_function(expression) in LODASH_GAPS:
            if type(actual) is dict and actual.get("$") == "crash":
                failures[expression].append((expected, actual))
            continue
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


def test_the_docs_table_lists_every_supported_built_in() -> None:
    """docs/schema.md's table is generated from nothing: it must name every built-in there is."""
    from pathlib import Path

    from mvu_store.schema.arrays import ARRAY_METHODS
    from mvu_store.schema.lodash import LODASH
    from mvu_store.schema.numeric import MATH, NUMBER_METHODS
    from mvu_store.schema.strings import STRING_METHODS

    docs = Path(__file__).parents[2].joinpath("docs", "schema.md").read_text(encoding="utf-8")
    table = docs.split("## Built-ins: supported and refused", 1)[1].split("\n## ", 1)[0]
    names = [*STRING_METHODS, *ARRAY_METHODS, *MATH.members, *NUMBER_METHODS, *LODASH.members]
    assert [name for name in names if f"`{name}`" not in table] == []


def test_the_docs_name_every_refused_lodash_function_and_why() -> None:
    from pathlib import Path

    from mvu_store.schema.lodash import LODASH, REFUSED_LODASH

    docs = Path(__file__).parents[2].joinpath("docs", "schema.md").read_text(encoding="utf-8")
    assert set(REFUSED_LODASH) >= LODASH_REFUSED
    assert not set(REFUSED_LODASH) & set(LODASH.members)
    assert [name for name, why in REFUSED_LODASH.items() if f"`{name}` ({why})" not in docs] == []
