"""Every command of a reply accounted for (issue 33): applied, refused, ignored, or possible."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang import apply_update, parse_commands
from mvu_store.lang.commands import scan_commands
from mvu_store.lang.outcomes import MAX_IGNORED, MAX_OUTCOME_TEXT, MAX_POSSIBLE

START: dict[str, Any] = {"stat_data": {"hp": 100, "mp": 5}}


def outcomes(text: str, variables: dict[str, Any] = START, **kwargs: Any) -> list[dict[str, JsonValue]]:
    return [outcome.to_json() for outcome in apply_update(variables, text, **kwargs).outcomes]


def reasons(text: str, **kwargs: Any) -> list[tuple[Any, ...]]:
    return [(item["kind"], item.get("reason", item.get("code"))) for item in outcomes(text, **kwargs)]


def test_an_applied_command_names_its_path_and_the_values_before_and_after() -> None:
    [applied] = outcomes("_.set('hp', 80);//hit")
    assert applied == {"kind": "applied", "command": "_.set('hp', 80);//hit", "start": 0, "end": 21, "index": 0,
                       "op": "set", "path": "/hp", "before": 100, "after": 80}


@pytest.mark.parametrize(("text", "reason", "path"), [
    ("_.set('hp', 50\nmore words", "unclosed", None),
    ("_.set('hp', 50)\n", "no_terminator", "/hp"),
    ("_.add('hp');", "arguments", "/hp"),
    ("<thinking>_.set('hp', 1);</thinking>", "thinking", "/hp"),
    ('<JSONPatch>[{"op":"frobnicate","path":"/hp","value":1}]</JSONPatch>', "unknown_op", "/hp"),
    ('<JSONPatch>[{"op":"replace","path":"/hp","value":1}]', "unclosed_block", None),
    ("<JSONPatch>not a patch: [</JSONPatch>", "unreadable_block", None),
    ("_.set('mp', 5);", "no_op", "/mp"),
    ("_.set('__proto__.x', 5)", "no_terminator", None),
])
def test_each_command_that_does_not_run_says_why(text: str, reason: str, path: str | None) -> None:
    [ignored] = outcomes(text)
    assert (ignored["kind"], ignored["reason"], ignored.get("path")) == ("ignored", reason, path)
    assert isinstance(ignored["message"], str) and ignored["message"]
    assert apply_update(START, text).variables["stat_data"] == START["stat_data"]


def test_an_unclosed_call_is_shown_to_the_end_of_its_line() -> None:
    [ignored] = outcomes("_.set('hp', 50\nmore words")
    assert ignored["command"] == "_.set('hp', 50" and ignored["op"] == "set"


def test_a_near_miss_ends_at_its_semicolon_not_over_the_command_after_it() -> None:
    scanned = scan_commands("_.sett('hp', 1); and _.set('hp', 45);")
    [possible] = scanned.notes.possible
    assert (possible.command, possible.end) == ("_.sett('hp', 1);", 16) and len(scanned.commands) == 1
    [unended] = scan_commands("_.Set('hp', 1)\nnext line").notes.possible
    assert unended.command == "_.Set('hp', 1)"


def test_an_unknown_op_leaves_no_change_in_delta_data_and_the_known_ones_still_run() -> None:
    text = '<JSONPatch>[{"op":"frobnicate","path":"/x","value":1},{"op":"replace","path":"/hp","value":3}]</JSONPatch>'
    result = apply_update(START, text)
    assert result.variables["delta_data"]["changes"] == [
        {"op": "set", "path": "/hp", "reason": "json_patch", "previous": 100, "value": 3}]
    assert [(o.kind, o.patch_index, o.reason) for o in result.outcomes] == [
        ("ignored", 0, "unknown_op"), ("applied", 1, None)]


def test_a_no_op_is_not_a_change() -> None:
    result = apply_update(START, "_.set('mp', 5);_.set('hp', 7);")
    assert [change["path"] for change in result.variables["delta_data"]["changes"]] == ["/hp"]
    assert [(o.kind, o.reason) for o in result.outcomes] == [("ignored", "no_op"), ("applied", None)]


def strip_unknown(stat_data: JsonValue) -> JsonValue:
    """A card's z.object root: keys it does not declare are dropped."""
    assert isinstance(stat_data, dict)
    return {key: value for key, value in stat_data.items() if key in ("hp", "mp")}


def test_a_key_the_declaration_strips_is_not_reported_as_changed() -> None:
    result = apply_update(START, "_.insert('', 'extra', 5);_.set('hp', 2);", check=strip_unknown)
    assert result.variables["delta_data"]["changes"] == [
        {"op": "set", "path": "/hp", "reason": "", "previous": 100, "value": 2}]
    assert [(o.kind, o.reason) for o in result.outcomes] == [("ignored", "stripped"), ("applied", None)]
    assert "extra" not in result.variables["stat_data"]


def test_a_refused_command_names_its_path_and_the_version_lists_it() -> None:
    result = apply_update(START, "_.set('gone.deep', 1);_.add('hp', 'x');")
    refused = [o.to_json() for o in result.outcomes]
    assert [(o["kind"], o["code"], o["path"]) for o in refused] == [
        ("refused", "MVU_PATH_MISSING", "/gone/deep"), ("refused", "MVU_SCHEMA", "/hp")]
    assert all("'gone.deep'" in str(refused[0]["message"]) and "'hp'" in str(o["message"]) for o in refused[1:])
    assert result.variables["update_diagnostics"] == refused
    # The legacy diagnostics keep their shape for the greeting and older readers.
    assert [set(item) for item in result.diagnostics] == [{"command", "index", "code", "message"}] * 2


def test_a_prototype_path_names_the_path_in_its_refusal() -> None:
    with pytest.raises(MvuError) as caught:
        apply_update(START, "_.set('__proto__.x', 1);")
    assert caught.value.code == "MVU_PATH" and "'__proto__.x'" in caught.value.message


def test_near_misses_are_possible_commands_counted_beyond_the_cap() -> None:
    text = "_.sett('hp', 1);\n_.set ('hp', 2);\n_.Set('hp', 3);\n" + "_.bump(x);" * (MAX_POSSIBLE + 10)
    result = apply_update(START, text)
    possible = [item for item in result.variables["update_diagnostics"] if item["kind"] == "possible"]
    assert len(possible) == MAX_POSSIBLE and result.notes.possible_total == MAX_POSSIBLE + 13
    assert [item["command"] for item in possible[:3]] == ["_.sett('hp', 1);", "_.set ('hp', 2);", "_.Set('hp', 3);"]
    assert all(item["total"] == MAX_POSSIBLE + 13 for item in possible)
    assert result.variables["stat_data"] == START["stat_data"]


def test_ignored_commands_are_capped_and_counted_and_their_text_is_cut() -> None:
    long_value = "x" * (3 * MAX_OUTCOME_TEXT)
    text = f"_.set('hp', '{long_value}')\n" * (MAX_IGNORED + 5)
    notes = scan_commands(text).notes
    assert len(notes.ignored) == MAX_IGNORED and notes.ignored_total == MAX_IGNORED + 5
    assert all(len(item.command) <= MAX_OUTCOME_TEXT for item in notes.ignored)


def test_scanning_extracts_exactly_what_parsing_extracts() -> None:
    text = ("_.set('hp', 1);_.set('a', 2)\n<think>_.set('b', 3);</think>_.sett(x);"
            '<JSONPatch>[{"op":"test","path":"/a"},{"op":"delta","path":"/hp","value":2}]</JSONPatch>')
    assert list(scan_commands(text).commands) == parse_commands(text)


def test_outcomes_are_json() -> None:
    text = "_.set('hp', 1);_.set('hp', 2\n_.nope(1);_.set('zz', 1);"
    assert json.loads(json.dumps(outcomes(text))) == outcomes(text)
    assert reasons(text) == [("applied", None), ("ignored", "unclosed"), ("refused", "MVU_PATH_MISSING")]


def test_many_unclosed_calls_cost_linear_time() -> None:
    # A quadratic scan would take minutes here; the note cap keeps the outcome small too.
    notes = scan_commands("_.set(" * 150_000).notes
    assert notes.ignored_total == 150_000 and len(notes.ignored) == MAX_IGNORED
