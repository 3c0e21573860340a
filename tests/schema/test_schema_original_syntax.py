"""The original-syntax option (S-8): what the original interpreter refuses, refused here on request.

This interpreter reads ``while`` / ``do`` loops, ``for...in`` and destructured parameters, which
real cards use; a host that must also run the card on the original asks for its narrower rule."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.schema.syntax import parse_program

REFUSED_BY_THE_ORIGINAL = {
    "while": "const f = (n) => { let i = 0; while (i < n) { i += 1; } return i; };",
    "do-while": "const f = (n) => { let i = 0; do { i += 1; } while (i < n); return i; };",
    "for-in": "const f = (o) => { let n = 0; for (const k in o) { n += 1; } return n; };",
    "object parameter": "const f = ({ hp }) => hp > 0;",
    "array parameter": "const f = ([k, v]) => v;",
    "defaulted pattern parameter": "function f({ hp } = {}) { return hp; }",
}
ACCEPTED_BY_BOTH = [
    "const f = (items) => { let n = 0; for (const item of items) { n += item; } return n; };",
    "const f = (hp, max = 100) => Math.min(hp, max);",
    "const { hp } = { hp: 1 };",
]


@pytest.mark.parametrize("source", REFUSED_BY_THE_ORIGINAL.values(), ids=REFUSED_BY_THE_ORIGINAL.keys())
def test_the_original_rule_refuses_what_the_original_refuses_and_the_default_reads_it(source: str) -> None:
    assert parse_program(source).kids  # read by default
    with pytest.raises(MvuError) as refused:
        parse_program(source, original=True)
    assert refused.value.code == "MVU_SCHEMA_CODE" and "S-8" in refused.value.message


@pytest.mark.parametrize("source", ACCEPTED_BY_BOTH)
def test_the_original_rule_keeps_for_of_plain_parameters_and_declaration_patterns(source: str) -> None:
    assert parse_program(source, original=True) == parse_program(source)
