"""Each fast path of the extractor and the value reader returns exactly what its general path
returns, or hands the text over to it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import MAX_DEPTH, MAX_NODES
from mvu_store.lang import commands, parse_commands, restricted_yaml
from mvu_store.lang.commands import split_arguments
from mvu_store.lang.jsvalues import same
from mvu_store.lang.literals import parse_value
from mvu_store.lang.paths import _checked, _segments, parse_path, trim_quotes
from mvu_store.lang.restricted_yaml import load_yaml
from mvu_store.lang.slowparse import ParseBudget

SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _joined(*pieces: str, max_size: int = 40) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(list(pieces)) | st.text(max_size=2), max_size=max_size).map("".join)


bodies = _joined(",", " ", "'", '"', "`", "a", "1", ", ", "\\", "(", ")", "[", "]", "{", "}")
path_texts = _joined(".", "a", "0", " ", "[", "]", "'", '"', "`", "\\", "..", "x.y")


@SETTINGS
@given(bodies)
def test_splitting_arguments_matches_the_character_scan(body: str) -> None:
    assert split_arguments(body) == commands._split_scanning(body)


def _general_path(raw: str) -> Any:
    try:
        return _checked(_segments(trim_quotes(raw.strip())), raw)
    except MvuError as error:
        return error.code, error.message


@SETTINGS
@given(path_texts)
def test_a_dotted_path_matches_the_general_reader(raw: str) -> None:
    try:
        fast: Any = parse_path(raw)
    except MvuError as error:
        fast = error.code, error.message
    assert fast == _general_path(raw)


def test_a_long_dotted_path_is_refused_the_same_way() -> None:
    raw = ".".join(["a"] * 500)
    assert _general_path(raw)[0] == "MVU_PATH"
    with pytest.raises(MvuError, match="segments"):
        parse_path(raw)


replies = _joined(
    "_.set(", "_.add(", "_.delete(", ")", "(", ");", ";", "//r\n", "'", '"', "`", "\\", ",", "a.b", "1", max_size=50
)


def _extracted(text: str) -> Any:
    try:
        return parse_commands(text)
    except MvuError as error:
        return error.code


@SETTINGS
@given(replies)
def test_extraction_without_the_simple_close_is_the_same(text: str) -> None:
    fast = _extracted(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(commands, "simple_close", lambda text, open_at: None)
        assert _extracted(text) == fast


def _outcome(read: Any, *args: Any) -> Any:
    """What a reader gives: the value with its exact type, or the refusal's code and message."""
    try:
        value = read(*args)
    except MvuError as error:
        return "refused", error.code, error.message
    return json.dumps(value, sort_keys=True)


LITERALS = [
    "1e3", "0x10", "0o17", "0b11", ".5", "-.5", "-0", "-0.0", "+5", "01", "1_000", "1e999", ".inf", "-.Inf", ".nan",
    "yes", "no", "Yes", "NO", "on", "off", "y", "n", "true", "True", "TRUE", "tRue", "false", "null", "Null", "~",
    "e", "pi", "angry", "a b", "a  b", "a: b", "a:b", "a #b", "a#b", "#a", "- a", "-a", "--", "---", "...", "?a",
    "'it''s'", "'a\\'b'", "'a\"b'", "' a '", "'\ta'", "''", "'", "'a", "a'", '"a"', '"a\\"b"', '"\\u00e9"',
    "`a`", "早上", "状态 正常", "x\u3000", "\u3000x", "a\u2028b", "a\x85b", "'a\u2028b'", "'\ufeffa'", "a\ufeff",
    "'\x07'", "a\x7f", "!!str a", "&a a", "*a", "%a", "@a", "|", ">", "[a]", "{a: 1}", "a,b", "1.5e+3", "12:30",
]
literal_texts = st.sampled_from(LITERALS) | _joined(
    "'", '"', " ", "\t", "-", "+", ".", ":", "#", "e", "1", "0", "x", "a", "早", "\u3000", "\\", "~", "_", ",",
    max_size=8,
)


@SETTINGS
@given(literal_texts)
def test_the_fast_yaml_scalar_reads_what_the_event_stream_reads(text: str) -> None:
    assert _outcome(load_yaml, text) == _outcome(restricted_yaml._load_events, text, MAX_DEPTH, MAX_NODES)


@SETTINGS
@given(literal_texts, st.integers(0, 40))
def test_a_command_value_reads_the_same_without_the_fast_scalar(text: str, budget_left: int) -> None:
    # The same budget on both sides, sometimes too small: the fast path spends it like ruamel.
    def read(budget: ParseBudget) -> Any:
        return _outcome(parse_value, text, budget), budget.remaining

    fast = read(ParseBudget(budget_left))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(restricted_yaml, "_fast_scalar", lambda text, max_nodes: (False, None))
        assert read(ParseBudget(budget_left)) == fast


def test_common_command_values_never_reach_ruamel() -> None:
    def no_ruamel(*args: Any) -> Any:
        raise AssertionError("the event stream was used")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(restricted_yaml, "_load_events", no_ruamel)
        texts = ("'morning'", "morning", "'早上'", "晴 转 多云", "True", "NULL", "0x1F")
        values = [parse_value(text) for text in texts]
    assert values == ["morning", "morning", "早上", "晴 转 多云", True, None, 31]


scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, 1.5]) | st.text(max_size=2)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "1"]), inner, max_size=3),
    max_leaves=10,
)


@SETTINGS
@given(values, values, st.booleans())
def test_same_is_equality_of_the_sorted_json_texts(left: Any, right: Any, share: bool) -> None:
    if share:  # a subtree of one value inside the other, as persistent states share them
        right = {"shared": left, "other": right}
        left = {"other": json.loads(json.dumps(right["other"])), "shared": left}
    assert same(left, right) == (json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True))
    assert same(left, left)
    assert same((1, [2]), [1, [2]]) and not same({1: "a"}, {"a": 1}) and same({1: "a"}, {"1": "a"})
