"""Property tests: whatever the text, path, value or envelope, only MvuError escapes and the
input is never mutated."""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lang_support import Recorder, text_of

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import normalize
from mvu_store.lang import apply_greeting, apply_update, contains_update, initialize_variables, parse_commands
from mvu_store.lang.apply import private_envelope, run_commands
from mvu_store.lang.jsonrepair import repair_json
from mvu_store.lang.literals import parse_value
from mvu_store.lang.paths import parse_path, parse_pointer
from mvu_store.lang.restricted_yaml import load_yaml

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

keys = st.sampled_from(["a", "b", "0", "1", "hp", "技能", "$meta", "required", "type", "extensible", "x y"])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=20
)
stat_datas = st.dictionaries(keys, json_values, max_size=5)

# Fragments that make the extractor, paths and executors do real work when glued at random.
fragments = st.sampled_from(
    [
        "_.set(",
        "_.add(",
        "_.insert(",
        "_.assign(",
        "_.remove(",
        "_.unset(",
        "_.delete(",
        ")",
        "(",
        ";",
        "//",
        "\n",
        ",",
        " ",
        "'",
        '"',
        "`",
        "\\",
        "[",
        "]",
        "{",
        "}",
        ".",
        "..",
        "a",
        "b",
        "hp",
        "0",
        "1",
        "-1",
        "'a'",
        "a.b",
        "a[0]",
        "['x y']",
        "技能",
        "length",
        "__proto__",
        "10+2",
        "1/0",
        "2024-01-01",
        "{a:1}",
        "[1,2]",
        "true",
        "null",
        "'5'",
        "-",
        "~",
        "key: v",
        "<JSONPatch>",
        "</JSONPatch>",
        "<json_patch>",
        "</json_patch>",
        "```",
        "<thinking>",
        "</thinking>",
        '[{"op":"replace","path":"/a","value":1}]',
        '[{"op":"add","path":"/b/-","value":[1]}]',
        '[{"op":"remove","path":"/a/0"}]',
        '[{"op":"delta","path":"/hp","value":2}]',
        '[{"op":"move","path":"/a"}]',
        "$__META_EXTENSIBLE__$",
        "{$meta: {extensible: true}}",
    ]
)
replies = st.lists(fragments | st.text(max_size=5), max_size=60).map("".join)

schemas = st.none() | st.recursive(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["object", "array", "number", "any", 5])},
        optional={
            "extensible": json_values,
            "required": json_values,
            "template": json_values,
            "strictSet": json_values,
        },
    ),
    lambda inner: st.fixed_dictionaries(
        {"type": st.sampled_from(["object", "array"])},
        optional={
            "properties": st.dictionaries(keys, inner, max_size=3) | json_values,
            "elementType": inner | json_values,
            "extensible": st.booleans(),
        },
    ),
    max_leaves=8,
)
envelopes = st.fixed_dictionaries(
    {"stat_data": stat_datas},
    optional={
        "schema": schemas,
        "mvu_schema": st.fixed_dictionaries({"interpreterVersion": st.sampled_from([1, 2, "2", None])}),
        "display_data": json_values,
    },
)


class AcceptEverything:
    def validate(self, stat_data: Any) -> Any:
        from mvu_store.lang import Validation

        return Validation(True)


# Every code point, lone surrogates included (st.text leaves them out by default).
any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=400)


@SETTINGS
@given(st.text(max_size=400) | any_text)
def test_any_text_parses_or_raises_mvu_error(text: str) -> None:
    with contextlib.suppress(MvuError):
        parse_commands(text)
    assert isinstance(contains_update(text), bool)


@SETTINGS
@given(replies)
def test_command_soup_parses_or_raises_mvu_error(text: str) -> None:
    try:
        commands = parse_commands(text)
    except MvuError:
        return
    for command in commands:
        assert text[command.start : command.end] == command.full_match or command.source == "json_patch"


@SETTINGS
@given(envelopes, replies, st.booleans())
def test_updates_raise_only_mvu_error_and_never_mutate(envelope: dict[str, Any], text: str, validate: bool) -> None:
    frozen = copy.deepcopy(envelope)
    try:
        result = apply_update(envelope, text, validator=AcceptEverything() if validate else None)
    except MvuError:
        result = None
    if result is not None:
        normalize(result.variables)  # always plain JSON
        assert isinstance(result.variables["stat_data"], dict)
    assert envelope == frozen


# Well-formed commands on paths the random states are likely to have.
command_paths = st.lists(keys.filter(lambda key: key != "$meta"), min_size=1, max_size=2)
command_values = st.sampled_from(
    ["1", "-3", "0.5", "'x'", "true", "null", "undefined", "[1, 2]", "{a: 1}", "{$meta: {extensible: true}, b: {c: 2}}"]
)
command_keys = st.sampled_from(["'k'", "'a'", "0", "1", "'-'"])


def _pointer(path: list[str]) -> str:
    return "".join("/" + part for part in path)


well_formed_commands = st.one_of(
    st.builds(lambda p, v: f"_.set('{'.'.join(p)}', {v});", command_paths, command_values),
    st.builds(lambda p, v: f"_.add('{'.'.join(p)}', {v});", command_paths, st.sampled_from(["1", "-2", "0.5"])),
    st.builds(lambda p, k, v: f"_.insert('{'.'.join(p)}', {k}, {v});", command_paths, command_keys, command_values),
    st.builds(lambda p, v: f"_.insert('{'.'.join(p)}', {v});", command_paths, command_values),
    st.builds(lambda p: f"_.delete('{'.'.join(p)}');", command_paths),
    st.builds(lambda p, v: f"_.delete('{'.'.join(p)}', {v});", command_paths, command_values | command_keys),
    st.builds(
        lambda op, p, v: f"<JSONPatch>[{json.dumps({'op': op, 'path': _pointer(p), 'value': v})}]</JSONPatch>",
        st.sampled_from(["replace", "delta", "add", "insert", "remove", "move"]),
        command_paths,
        json_values,
    ),
)
command_replies = st.lists(well_formed_commands, min_size=1, max_size=8).map("\n".join)


@SETTINGS
@given(envelopes, command_replies, st.integers(1, 6))
def test_states_stay_as_built_and_a_refused_command_leaves_no_trace(
    envelope: dict[str, Any], text: str, refused: int
) -> None:
    try:
        commands = parse_commands(text)
        recorder = Recorder(refuse_call=refused)
        result = run_commands(private_envelope(envelope), commands, recorder, recorder)
    except MvuError:
        return
    recorder.assert_unchanged()
    if recorder.checks < refused:
        return
    # The refused command is the one whose check call was number `refused`; without it, the
    # same run (its diagnostic aside) must come out.
    index = next((entry["index"] for entry in result.diagnostics if entry["message"] == "refused by the test"), None)
    if index is None:
        # Only an insert creating its container under a declaration asks again after a refusal
        # (an object first, then an array), so the refusal left no diagnostic of its own.
        assert any(command.type == "insert" for command in commands)
        return
    rerun = run_commands(private_envelope(envelope), commands[:index] + commands[index + 1 :], Recorder(), Recorder())

    def kept(variables: dict[str, Any]) -> str:
        return text_of({key: value for key, value in variables.items() if key != "update_diagnostics"})

    assert kept(result.variables) == kept(rerun.variables)


@SETTINGS
@given(st.text(max_size=80))
def test_any_path_parses_or_raises_mvu_error(raw: str) -> None:
    for parse in (parse_path, parse_pointer):
        try:
            parse(raw)
        except MvuError as error:
            code = error.code
        else:
            code = "MVU_PATH"
        assert code == "MVU_PATH"


@SETTINGS
@given(st.text(max_size=80) | fragments)
def test_any_value_reads_as_json_or_raises_mvu_error(raw: str) -> None:
    try:
        value = parse_value(raw)
    except MvuError:
        return
    normalize(value)


@SETTINGS
@given(json_values)
def test_valid_json_needs_no_repair(value: Any) -> None:
    assert repair_json(json.dumps(value, ensure_ascii=False)) is None
    assert repair_json(json.dumps(value, ensure_ascii=False, indent=1)) is None


@SETTINGS
@given(st.text(alphabet='[]{}",:\\ \nab1', max_size=60))
def test_a_repair_is_none_or_text(text: str) -> None:
    repaired = repair_json(text)
    assert repaired is None or isinstance(repaired, str)


@SETTINGS
@given(st.text(max_size=200) | replies | any_text)
def test_any_yaml_or_initvar_loads_or_raises_mvu_error(text: str) -> None:
    with contextlib.suppress(MvuError):
        load_yaml(text)
    with contextlib.suppress(MvuError):
        initialize_variables([text])


schema_keys = st.sampled_from(["type", "properties", "elementType", "extensible", "required", "template", "a", "k"])
junk_schemas = st.recursive(
    scalars | st.sampled_from(["object", "array"]),
    lambda inner: st.dictionaries(schema_keys, inner, max_size=5) | st.lists(inner, max_size=2),
    max_leaves=15,
)
targeted = st.lists(
    st.sampled_from(
        [
            "_.insert(a, 'k', 1);",
            "_.insert(a.b, 1);",
            "_.insert(a, {x: 1});",
            "_.remove(a.k);",
            "_.remove(a, 0);",
            "_.set(a.k, 2);",
            "_.add(a.k, 1);",
            "_.insert(a.l, 0, 1);",
            "_.remove(a.l[0]);",
            "_.insert(a.l, 5);",
        ]
    ),
    max_size=6,
).map("".join)


@SETTINGS
@given(junk_schemas, targeted)
def test_a_malformed_stored_schema_never_crashes(schema: Any, text: str) -> None:
    envelope = {"stat_data": {"a": {"k": 1, "l": [1, 2]}}, "schema": schema}
    frozen = copy.deepcopy(envelope)
    with contextlib.suppress(MvuError):
        apply_update(envelope, text)
    assert envelope == frozen


@SETTINGS
@given(envelopes, replies)
def test_greetings_raise_only_mvu_error_and_never_mutate(envelope: dict[str, Any], text: str) -> None:
    frozen = copy.deepcopy(envelope)
    with contextlib.suppress(MvuError):
        apply_greeting(envelope, "<UpdateVariable>" + text + "</UpdateVariable>")
    with contextlib.suppress(MvuError):
        apply_greeting(envelope, "<initvar>" + text + "</initvar>")
    assert envelope == frozen
