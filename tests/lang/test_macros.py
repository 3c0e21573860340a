"""Name macros ({{user}}, {{char}}, <user>, <char>, <bot>): substituted as SillyTavern does when
names are given, kept as written when not, and held as text while initial data is parsed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.lang import initialize_variables, parse_commands
from mvu_store.lang.macros import (
    MAX_SUBSTITUTED_CHARS,
    Names,
    initialize_keeping_macros,
    substitute,
    substitute_data,
)

NAMES = Names(user="爱丽丝", char="Snow")


@pytest.mark.parametrize(("text", "expected"), [
    ("{{user}} meets {{char}}", "爱丽丝 meets Snow"),
    ("{{USER}} / {{Char}}", "爱丽丝 / Snow"),  # any letter case, as SillyTavern's /gi patterns
    ("<USER> and <BOT> and <char>", "爱丽丝 and Snow and Snow"),  # the legacy forms
    ("{{ user }} {user} {{user}", "{{ user }} {user} {{user}"),  # not macros: left alone
    ("{{persona}} {{charIfNotGroup}}", "{{persona}} {{charIfNotGroup}}"),  # other macros: not ours
])
def test_macros_take_the_names(text: str, expected: str) -> None:
    assert substitute(text, NAMES) == expected


def test_without_names_everything_stays_as_written() -> None:
    text = "_.set('{{user}}.好感度', 5);//<USER>"
    assert substitute(text, None) == text
    assert substitute(text, Names()) == text
    assert substitute(text, Names(char="Snow")) == text  # only {{char}} would change


def test_a_name_that_looks_like_a_macro_is_not_substituted_again() -> None:
    assert substitute("{{user}}", Names(user="{{char}}", char="Snow")) == "{{char}}"


def test_substitution_comes_before_extraction_so_paths_and_values_use_names() -> None:
    text = substitute("好的。_.set('{{user}}.称呼', '{{char}}的朋友');//认识了<user>", NAMES)
    [command] = parse_commands(text)
    assert command.args[0] == "'爱丽丝.称呼'"
    assert command.args[-1] == "'Snow的朋友'"
    assert command.reason == "认识了爱丽丝"


def test_a_text_that_grows_too_much_is_a_limit() -> None:
    with pytest.raises(MvuError) as refused:
        substitute("{{user}}" * 200_000, Names(user="x" * 200))
    assert refused.value.code == "MVU_LIMIT"
    assert len(substitute("{{user}}" * 1000, Names(user="x" * 200))) < MAX_SUBSTITUTED_CHARS


@pytest.mark.parametrize("bad", [{"user": ""}, {"user": 5}, {"char": "x" * 201}, {"nick": "a"}, ["a"]])
def test_names_are_checked(bad: object) -> None:
    with pytest.raises(MvuError) as refused:
        Names.of(bad)  # type: ignore[arg-type]
    assert refused.value.code == "MVU_OPERATION"


def test_a_calls_names_go_over_the_sessions() -> None:
    session = Names(user="Ann", char="Bo")
    assert Names(char="Cy").over(session) == Names(user="Ann", char="Cy")
    assert Names().over(session) == session


def test_initial_data_parses_with_macros_in_yaml_and_keeps_them_as_written() -> None:
    entries = ["{{user}}:\n  好感度: 0\n名字: {{Char}}\n备注: <USER>和<bot>\n队伍: [{{user}}, 2]",
               '{"称呼": "{{user}}"}']
    with pytest.raises(MvuError):
        initialize_variables(entries)  # YAML reads `{{char}}` as a flow mapping: it needs the hold
    stat_data = initialize_keeping_macros(entries)["stat_data"]
    assert stat_data == {"{{user}}": {"好感度": 0}, "名字": "{{Char}}", "备注": "<USER>和<bot>",
                         "队伍": ["{{user}}", 2], "称呼": "{{user}}"}
    assert substitute_data(stat_data, NAMES) == {"爱丽丝": {"好感度": 0}, "名字": "Snow", "备注": "爱丽丝和Snow",
                                                 "队伍": ["爱丽丝", 2], "称呼": "爱丽丝"}


def test_a_name_never_changes_the_shape_of_initial_data() -> None:
    stat_data = initialize_keeping_macros(["名字: {{user}}"])["stat_data"]
    assert substitute_data(stat_data, Names(user="a: [1, 2]")) == {"名字": "a: [1, 2]"}


def test_meta_keys_named_by_macros_reach_the_native_schema() -> None:
    envelope = initialize_keeping_macros(["{{user}}:\n  $meta: {extensible: true}\n  hp: 1"])
    assert envelope["stat_data"] == {"{{user}}": {"hp": 1}}
    assert "{{user}}" in envelope["schema"]["properties"]


_PLAIN = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Co", "Cc")), max_size=20)
_MACROS = st.sampled_from(["{{user}}", "{{CHAR}}", "<user>", "<Bot>", "<CHAR>"])


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.one_of(_PLAIN, _MACROS), max_size=8))
def test_held_macros_come_back_exactly_as_written(parts: list[str]) -> None:
    """Property: a JSON string value made of any text and macros parses back to itself."""
    import json

    text = "".join(parts)
    entry = json.dumps({"k": text}, ensure_ascii=False)
    assert initialize_keeping_macros([entry])["stat_data"] == {"k": text}
    assert substitute(text, Names()) == text


_SAFE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Co"), exclude_characters="{}<>"), max_size=20)
_ROLE_OF = {"{{user}}": "user", "{{CHAR}}": "char", "<user>": "user", "<Bot>": "char", "<CHAR>": "char"}


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.one_of(_SAFE, _MACROS), max_size=8), user=_SAFE.filter(bool), char=_SAFE.filter(bool))
def test_each_macro_becomes_its_name_and_nothing_else_changes(parts: list[str], user: str, char: str) -> None:
    """Property: substituting is the same as writing each macro's name in its place."""
    names = {"user": user, "char": char}
    expected = "".join(names[_ROLE_OF[part]] if part in _ROLE_OF else part for part in parts)
    assert substitute("".join(parts), Names(user=user, char=char)) == expected
