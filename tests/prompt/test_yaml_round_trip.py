"""Whatever the emitter writes reads back as the value it was given (a YAML 1.2 reader, ruamel's),
for generated states: the fixture pins the exact bytes, this checks that no input breaks them."""

from __future__ import annotations

import io
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from mvu_store.prompt import yaml_stringify

# Characters that make YAML hard: indicators, quotes, spaces and breaks, digits, CJK, an emoji,
# control characters. Left out where ruamel's reader is stricter than YAML 1.2 (and than the
# reader of the yaml package, whose output the fixture pins): tabs and U+3000 inside plain
# scalars, the line separators and NEL, which it takes for line breaks.
ALPHABET = st.sampled_from([*"ab -?:#,[]{}&*!|>'\"%@`.~01e+\n\\", "中", "文", "😀", "\u0007", "\r"])
TEXT = st.text(ALPHABET, max_size=120) | st.sampled_from(["true", "null", "~", "", "1e3", "0x1F", "-", "---", "..."])
NUMBER = st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda number: not number.is_integer())
SCALAR = TEXT | NUMBER | st.booleans() | st.none()
KEY = TEXT.filter(lambda key: not key.startswith("$"))
VALUE = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEY, inner, max_size=4),
                     max_leaves=20)
# A map or a list at the root, as the macro prints them: a string there is inserted as it is, never
# as YAML (and the yaml package itself does not read back every root block scalar it writes).
STATE = st.lists(VALUE, min_size=1, max_size=4) | st.dictionaries(KEY, VALUE, min_size=1, max_size=4)


def _read(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(io.StringIO(text))


@settings(max_examples=150, deadline=None)
@given(STATE)
def test_the_yaml_reads_back_as_the_state(state: Any) -> None:
    assert _read(yaml_stringify(state)) == state
