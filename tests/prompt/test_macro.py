"""What the macro reads and what it leaves alone (the rendering itself is checked against the
original's output in test_yaml_fixture.py)."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.prompt import expand_message_variables, format_message_variable, has_macro, macro_paths
from mvu_store.prompt.macro import MAX_EXPANDED_CHARS
from mvu_store.prompt.units import join_units, js_length, js_trim_end, split_units

VARIABLES = {"stat_data": {"hp": 7, "$hidden": 1}}


def test_only_message_variables_are_ours_other_scopes_stay_literal() -> None:
    text = "{{format_chat_variable::stat_data}} {{format_global_variable::x}} {{get_message_variable::stat_data}}"
    assert not has_macro(text)
    assert expand_message_variables(text, VARIABLES) == text


def test_text_without_the_macro_is_returned_unchanged() -> None:
    text = "{{user}} looks at {{char}}.\r\nNo state here."
    assert expand_message_variables(text, VARIABLES) == text


def test_paths_are_listed_in_text_order_even_within_one_line() -> None:
    text = "a {{format_message_variable::stat_data.hp}} b {{format_message_variable::stat_data}}\n" \
           "{{FORMAT_MESSAGE_VARIABLE::display_data}}"
    assert has_macro(text)
    assert macro_paths(text) == ["stat_data.hp", "stat_data", "display_data"]


def test_a_value_rendered_directly_drops_dollar_keys_and_indents_by_the_prefix() -> None:
    assert format_message_variable({"a": {"$x": 1, "b": [1, 2]}}) == "a:\n  b:\n    - 1\n    - 2"
    assert format_message_variable({"a": [1]}, prefix="- ") == "a:\n    - 1"
    # A string is inserted as it is, only indented.
    assert format_message_variable("x\ny", prefix="😀") == "x\n  y"


def test_a_dollar_key_addressed_directly_is_still_read() -> None:
    assert expand_message_variables("{{format_message_variable::stat_data.$hidden}}", VARIABLES) == "1"


def test_lengths_are_counted_in_utf16_units() -> None:
    assert js_length("a😀中") == 4
    assert join_units(split_units("a😀\ud800")) == "a😀\ud800"
    # JavaScript's trimEnd strips U+3000 and U+FEFF but keeps U+0085 and U+001F.
    assert js_trim_end("x\u3000\ufeff \n") == "x"
    assert js_trim_end("x\u0085\u001f") == "x\u0085\u001f"


def test_a_line_of_multi_line_macros_stops_at_the_expansion_bound() -> None:
    """Each macro's lines are indented by the whole line before it, so the line doubles with each
    multi-line value: twenty-six of them would be over a billion characters."""
    text = "{{format_message_variable::s}}" * 26
    with pytest.raises(MvuError) as refused:
        expand_message_variables(text, {"s": {"a": 1, "b": 2}})
    assert refused.value.code == "MVU_LIMIT" and refused.value.details == {"limit": MAX_EXPANDED_CHARS,
                                                                            "kind": "chars"}


def test_indentation_follows_the_line_as_it_grows() -> None:
    """The second macro is indented by the JavaScript length of all that comes before it from
    the line's start, the first macro's text with its line break included (é 1 unit, 😀 2)."""
    text = "é😀{{format_message_variable::s}} x{{format_message_variable::s}}"
    before_second = "é😀a: 1\n   b: 2 x"
    assert expand_message_variables(text, {"s": {"a": 1, "b": 2}}) == (
        f"{before_second}a: 1\n" + " " * js_length(before_second) + "b: 2")
    assert js_length(before_second) == 17
