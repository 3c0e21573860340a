"""Command extraction: one test per rule MagVarUpdate follows."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.lang import contains_update, parse_commands


def kinds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(c.type, c.args) for c in parse_commands(text)]


def test_commands_anywhere_in_the_message_run_including_comments_and_prose() -> None:
    text = (
        "story text _.set(a, 1); more /* _.set(b, 2); */ and // _.set(c, 3);\n"
        "<UpdateVariable>_.set(d,4);</UpdateVariable>"
    )
    assert [c.path for c in parse_commands(text)] == [("a",), ("b",), ("c",), ("d",)]


def test_thinking_blocks_are_skipped_deliberately() -> None:
    text = "<thinking>draft _.add(hp, -5);</thinking>\n_.add(hp, -5);\n<think>_.set(x,1);</think>"
    assert kinds(text) == [("add", ("hp", "-5"))]


def test_an_unclosed_thinking_tag_hides_nothing() -> None:
    assert kinds("<thinking> _.set(a, 1);") == [("set", ("a", "1"))]


def test_the_call_name_is_case_sensitive_and_needs_no_word_boundary() -> None:
    assert kinds("_.SET(a, 1); x_.set(b, 2);") == [("set", ("b", "2"))]


def test_a_space_before_the_parenthesis_is_not_a_command() -> None:
    assert kinds("_.set (a, 1);") == []


def test_move_cannot_be_written_as_a_function_call() -> None:
    assert kinds("_.move(a, b);") == []


def test_aliases_are_resolved_but_the_written_name_is_kept() -> None:
    commands = parse_commands("_.assign(a, 1); _.remove(b); _.unset(c); _.delete(d); _.insert(e, 2);")
    assert [(c.type, c.name) for c in commands] == [
        ("insert", "assign"),
        ("delete", "remove"),
        ("delete", "unset"),
        ("delete", "delete"),
        ("insert", "insert"),
    ]


def test_the_closing_parenthesis_is_found_by_counting() -> None:
    assert kinds("_.set(a, (1+2)*3);") == [("set", ("a", "(1+2)*3"))]


def test_parentheses_inside_quotes_do_not_count() -> None:
    assert kinds('_.set(a, "x)y");') == [("set", ("a", '"x)y"'))]


def test_only_the_matching_quote_closes_so_apostrophes_survive_in_double_quotes() -> None:
    assert kinds('_.set(a, "it\'s");') == [("set", ("a", '"it\'s"'))]


def test_an_escaped_quote_does_not_toggle() -> None:
    assert kinds(r'_.set(a, "x\")");') == [("set", ("a", r'"x\")"'))]


def test_an_unclosed_call_resumes_scanning_after_its_parenthesis() -> None:
    # The first quote never closes, so the outer call has no end; the inner one starts afresh.
    assert kinds("_.set(a, 'oops _.set(b, 2);") == [("set", ("b", "2"))]
    assert kinds("_.set(a, _.set(b, 2);") == [("set", ("b", "2"))]


def test_a_call_not_followed_by_semicolon_is_dropped() -> None:
    assert kinds("_.set(a, 1)\n_.set(b, 2) ;_.set(c, 3);") == [("set", ("c", "3"))]


def test_double_semicolons_are_fine() -> None:
    assert kinds("_.set(a, 1);;") == [("set", ("a", "1"))]


def test_scanning_resumes_after_a_dropped_call_not_inside_it() -> None:
    # The inner command sits inside the dropped call's arguments and is not seen again.
    assert kinds("_.set(a, f(_.set(b, 2);))") == []


def test_the_reason_follows_a_double_slash_and_is_trimmed() -> None:
    (command,) = parse_commands("_.set(a, 1); //  took damage  \nrest")
    assert command.reason == "took damage"
    assert command.full_match == "_.set(a, 1); //  took damage  "


def test_a_comment_on_the_next_line_becomes_the_reason() -> None:
    (command,) = parse_commands("_.set(a, 1);\n\n// next line\n")
    assert command.reason == "next line"


def test_a_reason_swallows_the_rest_of_its_line_including_commands() -> None:
    assert kinds("_.set(a,1);//r _.set(b,2);//r2") == [("set", ("a", "1"))]


def test_the_space_before_a_reason_is_javascripts_so_an_ideographic_space_counts() -> None:
    (command,) = parse_commands("_.set(a,1);\u3000//受伤 _.set(b,2);")
    assert (command.args, command.reason) == (("a", "1"), "受伤 _.set(b,2);")


def test_each_bracket_kind_is_counted_on_its_own_when_splitting() -> None:
    # "{" then "]" leaves a brace open and a bracket below zero: no split, as in MagVarUpdate.
    assert parse_commands("_.set(a, x{], y);")[0].args == ("a", "x{], y")


def test_arguments_split_on_top_level_commas_only() -> None:
    (command,) = parse_commands("_.set(a, {x: 1, y: [2, 3]}, 'p, q', f(1, 2));")
    assert command.args == ("a", "{x: 1, y: [2, 3]}", "'p, q'", "f(1, 2)")


def test_a_trailing_empty_argument_is_dropped_but_inner_empties_stay() -> None:
    assert parse_commands("_.set(a, , 1,);")[0].args == ("a", "", "1")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("_.set(a);", 0),
        ("_.set(a, 1);", 1),
        ("_.insert(a);", 0),
        ("_.assign(a, 1);", 1),
        ("_.delete();", 0),
        ("_.remove(a);", 1),
        ("_.add(a);", 0),
        ("_.add(a, 1);", 1),
        ("_.add(a, 1, 2);", 0),
    ],
)
def test_arity_is_checked_and_wrong_calls_are_silently_dropped(text: str, expected: int) -> None:
    assert len(parse_commands(text)) == expected


def test_commands_keep_their_source_span() -> None:
    text = "ab _.set(x, 1); cd"
    (command,) = parse_commands(text)
    assert text[command.start : command.end] == command.full_match == "_.set(x, 1);"


def test_function_and_patch_commands_are_merged_in_text_order() -> None:
    text = '_.set(a,1);\n<JSONPatch>[{"op":"replace","path":"/b","value":2}]</JSONPatch>\n_.set(c,3);'
    assert [c.path for c in parse_commands(text)] == [("a",), ("b",), ("c",)]


def test_more_than_1000_commands_is_a_limit() -> None:
    with pytest.raises(MvuError) as caught:
        parse_commands("_.set(a, 1);" * 1001)
    assert caught.value.code == "MVU_LIMIT"


def test_more_than_one_mebibyte_is_a_limit() -> None:
    with pytest.raises(MvuError) as caught:
        parse_commands("x" * (1024 * 1024 + 1))
    assert caught.value.code == "MVU_LIMIT"


def test_a_prototype_path_refuses_the_parse() -> None:
    with pytest.raises(MvuError) as caught:
        parse_commands("_.set(__proto__.polluted, 1);")
    assert caught.value.code == "MVU_PATH"


def test_contains_update() -> None:
    assert contains_update("hello _.set(a, 1); bye")
    assert not contains_update("hello _.set(a, 1) bye")
    assert not contains_update("<thinking>_.set(a, 1);</thinking>")
    assert contains_update('<json_patch>[{"op":"remove","path":"/a"}]</json_patch>')
    assert contains_update("_.set(constructor, 1);")  # refused later, but an update is there


def test_patch_blocks_in_thinking_are_skipped_too_even_unsafe_ones() -> None:
    text = '<think><JSONPatch>[{"op":"replace","path":"/__proto__/x","value":1}]</JSONPatch></think>'
    assert parse_commands(text) == []


def test_a_reply_that_is_not_text_is_a_parse_error() -> None:
    with pytest.raises(MvuError) as caught:
        parse_commands(b"_.set(a, 1);")  # type: ignore[arg-type]
    assert caught.value.code == "MVU_PARSE"
    assert contains_update(None) is False  # type: ignore[arg-type]
