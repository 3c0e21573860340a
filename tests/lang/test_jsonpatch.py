"""JSON Patch blocks: as MagVarUpdate reads them, plus our pointer decoding."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lang_support import codes, stat, update

from mvu_store.lang import apply_update, initialize_variables, parse_commands


def block(ops: list[dict[str, Any]], tag: str = "JSONPatch") -> str:
    return f"<{tag}>{json.dumps(ops, ensure_ascii=False)}</{tag}>"


@pytest.mark.parametrize("tag", ["JSONPatch", "jsonpatch", "json_patch", "JSON_PATCH", "JsonPatch"])
def test_tag_names_are_case_insensitive_with_or_without_underscore(tag: str) -> None:
    assert stat({"a": 1}, block([{"op": "replace", "path": "/a", "value": 2}], tag)) == {"a": 2}


def test_open_and_close_names_must_match() -> None:
    assert parse_commands('<jsonpatch>[{"op":"remove","path":"/a"}]</json_patch>') == []


def test_the_innermost_last_opening_tag_is_used() -> None:
    text = (
        '<JsonPatch> <JsonPatch>[{"op": "replace", "path": "/a", "value": 1}]</JsonPatch>\n'
        '<json_patch> df<JsonPatch>[{"op": "replace", "path": "/b", "value": 2}]</JsonPatch>'
    )
    assert [c.path for c in parse_commands(text)] == [("a",), ("b",)]


def test_a_code_fence_around_the_body_is_dropped() -> None:
    text = '<JSONPatch>\n```json\n[{"op":"replace","path":"/a","value":3}]\n```\n</JSONPatch>'
    assert stat({"a": 1}, text) == {"a": 3}


def test_a_yaml_body_is_accepted() -> None:
    text = "<JSONPatch>\n- op: replace\n  path: /a\n  value: 4\n</JSONPatch>"
    assert stat({"a": 1}, text) == {"a": 4}


def test_a_json5_body_is_accepted() -> None:
    assert stat({"a": 1}, "<JSONPatch>[{op: 'replace', path: '/a', value: 5,},]</JSONPatch>") == {"a": 5}


@pytest.mark.parametrize(
    "body",
    [
        '{"op":"replace","path":"/a","value":2}',  # a single object
        '[{"op":"replace","path":"/a","value":2}, 5]',  # not all objects
        '[{"op":"replace","value":2}]',  # no path
        '[{"op":1,"path":"/a"}]',  # op not a string
        '[{"op":"replace","path":"/a","value":2}]]',  # mismatched brackets are not guessed at
        '[{"op":"replace","path":"/a","value":2},{"op":"rep',  # cut inside an operation
    ],
)
def test_a_malformed_block_is_ignored_whole(body: str) -> None:
    assert parse_commands(f"<JSONPatch>{body}</JSONPatch>") == []


def test_op_translation() -> None:
    data = {"n": 1, "o": {"k": 1}, "w": {"l": [1, 2]}, "x": 0}
    ops = [
        {"op": "replace", "path": "/n", "value": 5},
        {"op": "delta", "path": "/x", "value": 3},
        {"op": "add", "path": "/w/l/1", "value": 9},
        {"op": "insert", "path": "/w/l/-", "value": 7},
        {"op": "remove", "path": "/o/k"},
        {"op": "copy", "from": "/n", "path": "/m"},
        {"op": "test", "path": "/n", "value": 5},
    ]
    commands = parse_commands(block(ops))
    assert [c.type for c in commands] == ["set", "add", "insert", "insert", "delete"]
    assert all(c.reason == "json_patch" for c in commands)
    assert stat(data, block(ops)) == {"n": 5, "o": {}, "w": {"l": [1, 9, 2, 7]}, "x": 3}


def test_add_with_a_word_key_sets_an_object_key() -> None:
    assert stat({"主角": {"备忘录": {}}}, block([{"op": "add", "path": "/主角/备忘录/任务", "value": "x"}])) == {
        "主角": {"备忘录": {"任务": "x"}}
    }


def test_a_missing_leading_slash_is_tolerated() -> None:
    assert stat({"a": {"b": {}}}, block([{"op": "insert", "path": "a/b/c", "value": 1}])) == {"a": {"b": {"c": 1}}}


def test_a_path_without_any_slash_is_read_as_a_command_path() -> None:
    ops = [{"op": "replace", "path": "角色.好感度", "value": 5}, {"op": "delta", "path": "list[0]", "value": 1}]
    assert stat({"角色": {"好感度": 1}, "list": [1]}, block(ops)) == {"角色": {"好感度": 5}, "list": [2]}


def test_pointers_decode_escapes_and_keep_dots_inside_keys() -> None:
    data = {"a/b": 1, "c": {"x.y": {}}}
    ops = [{"op": "replace", "path": "/a~1b", "value": 2}, {"op": "add", "path": "/c/x.y/line\nbreak", "value": 3}]
    assert stat(data, block(ops)) == {"a/b": 2, "c": {"x.y": {"line\nbreak": 3}}}


def test_a_slash_alone_is_the_root() -> None:
    assert stat({"a": 1}, block([{"op": "replace", "path": "/", "value": {"b": 2}}])) == {"b": 2}


def test_a_patch_command_sorts_at_its_block_start() -> None:
    text = '<JSONPatch>[{"op":"replace","path":"/a","value":2}]</JSONPatch> _.set(a, 3);'
    assert stat({"a": 1}, text) == {"a": 3}


def test_patch_failures_are_diagnostics_like_any_command() -> None:
    assert codes(update({}, block([{"op": "replace", "path": "/missing", "value": 1}]))) == ["MVU_PATH_MISSING"]


def test_delta_adds() -> None:
    assert stat({"测试": 10}, block([{"op": "delta", "path": "/测试", "value": 10}])) == {"测试": 20}


def test_a_one_line_fenced_block_reads_as_empty() -> None:
    assert parse_commands('<JSONPatch>```[{"op":"remove","path":"/a"}]```</JSONPatch>') == []


def test_an_all_digit_key_splices_into_an_array() -> None:
    ops = [{"op": "add", "path": "/w/l/01", "value": "x"}]
    assert stat({"w": {"l": [1, 2]}}, block(ops)) == {"w": {"l": [1, "x", 2]}}


def test_a_missing_value_is_undefined_so_the_key_goes_as_in_magvarupdates_saved_json() -> None:
    ops = [{"op": "replace", "path": "/a"}, {"op": "add", "path": "/l/0"}, {"op": "delta", "path": "/n"}]
    variables = initialize_variables(["a: 1\nl: [$__META_EXTENSIBLE__$, 1]\nn: 1"])
    result = apply_update(variables, block(ops))
    assert result.variables["stat_data"] == {"l": [None, 1], "n": 1}
    assert codes(result) == ["MVU_SCHEMA"]  # delta needs a number


@pytest.mark.parametrize(
    "body",
    [
        '[{"op":"replace","path":"/a","value":2}',  # the final ] is missing
        '[{"op":"replace","path":"/a","value":2},',  # cut after a complete operation
        '[{"op":"replace","path":"/a","value":2},\n',
    ],
)
def test_a_cut_off_end_is_closed(body: str) -> None:
    assert stat({"a": 1}, f"<JSONPatch>{body}</JSONPatch>") == {"a": 2}


def test_an_unescaped_quote_inside_a_value_is_kept_as_a_character() -> None:
    body = (
        '[{"op": "replace", "path": "/said", "value": "他说"你好"然后走了"}, '
        '{"op": "delta", "path": "/n", "value": 1}]'
    )
    assert stat({"said": "", "n": 1}, f"<JSONPatch>{body}</JSONPatch>") == {"said": '他说"你好"然后走了', "n": 2}


def test_a_missing_comma_between_operations_is_supplied() -> None:
    body = '[\n{"op": "delta", "path": "/n", "value": 1}\n{"op": "delta", "path": "/n", "value": 2}\n]'
    assert stat({"n": 0}, f"<JSONPatch>{body}</JSONPatch>") == {"n": 3}


@pytest.mark.parametrize(
    "body", ['[{"op": "delta", "path": "/n", "value": 1}]]', '[{"op": "delta", "path": "/n", "value": 1)]']
)
def test_mismatched_brackets_are_not_guessed_at(body: str) -> None:
    assert parse_commands(f"<JSONPatch>{body}</JSONPatch>") == []


def test_raw_newlines_inside_strings_are_accepted() -> None:
    text = '<JSONPatch>[{"op":"replace","path":"/a","value":"l1\nl2"}]</JSONPatch>'  # a real newline
    assert "\n" in text
    assert stat({"a": ""}, text) == {"a": "l1\nl2"}


def test_yaml_blocks_beyond_the_slow_parse_budget_are_ignored() -> None:
    body = "- op: replace\n  path: /a\n  value: '" + "x" * 2000 + "'\n"
    commands = parse_commands(f"<JSONPatch>\n{body}</JSONPatch>\n" * 60)
    assert 0 < len(commands) < 60  # the first blocks are read, the rest cost nothing
