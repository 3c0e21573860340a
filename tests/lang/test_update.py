"""apply_update as a whole: the envelope, diagnostics, atomicity, schema upkeep, greeting, v2."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from lang_support import codes, update

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang import Validation, apply_greeting, apply_update, initialize_variables


def test_the_input_is_never_mutated() -> None:
    variables = initialize_variables(["hp: [1, d]\nnpc: {$meta: {extensible: true}}\nl: ['$__META_EXTENSIBLE__$']"])
    frozen = copy.deepcopy(variables)
    apply_update(variables, "_.set(hp, 5); _.insert(npc, 'a', {b: 1}); _.insert(l, 1); _.remove(l, 0);")
    assert variables == frozen


def test_display_data_copies_results_and_delta_data_records_changes() -> None:
    result = update({"hp": 10, "l": [1]}, "_.set(hp, 9);//hit\n_.remove(l[0]);")
    variables = result.variables
    assert variables["display_data"] == variables["stat_data"] == {"hp": 9, "l": []}
    assert variables["delta_data"]["changes"] == [
        {"op": "set", "path": "/hp", "reason": "hit", "previous": 10, "value": 9},
        {"op": "delete", "path": "/l/0", "reason": "", "previous": 1},
    ]
    assert variables["update_diagnostics"] == []
    assert result.changed


def test_nothing_to_do_is_not_a_change() -> None:
    result = update({"a": 1}, "no commands here; _.set(a, 1);")
    assert not result.changed
    assert result.variables["stat_data"] == {"a": 1}


def test_true_is_not_one() -> None:
    assert update({"a": 1}, "_.set(a, true);").changed


def test_a_fatal_error_applies_nothing() -> None:
    with pytest.raises(MvuError) as caught:
        update({"a": 1}, "_.set(a, 2); _.set(b, {'__proto__': 1});")
    assert caught.value.code == "MVU_PATH"


def test_the_result_is_held_to_the_state_budget() -> None:
    big = "x" * (1024 * 1024)
    with pytest.raises(MvuError) as caught:
        # display_data doubles the state, so a 1.5 MiB value breaks the 2 MiB budget.
        update({"a": "", "b": big}, f"_.set(a, '{'y' * (512 * 1024)}');")
    assert caught.value.code == "MVU_LIMIT"


@pytest.mark.parametrize("variables", [[], {"stat_data": []}, {"stat_data": {"a": float("nan")}}])
def test_malformed_envelopes_are_refused(variables: Any) -> None:
    with pytest.raises(MvuError):
        apply_update(variables, "_.set(a, 1);")


def test_the_schema_is_regenerated_after_a_change_keeping_decisions() -> None:
    variables = initialize_variables(["$meta: {strictSet: true}\nnpc: {$meta: {extensible: true}}"])
    result = apply_update(variables, "_.insert(npc, 'Bob', {hp: 1});")
    schema = result.variables["schema"]
    assert schema["strictSet"] is True
    assert schema["properties"]["npc"]["extensible"] is True
    assert schema["properties"]["npc"]["properties"]["Bob"]["required"] is False


@pytest.mark.parametrize("schema", ["没有用别管这个", "junk", 5, ["x"]])
def test_a_schema_that_is_no_object_is_no_native_schema(schema: Any) -> None:
    # Newer MagVarUpdate stores a placeholder string there under a Zod schema and ignores it:
    # nothing is refused on its account (an object schema would refuse the insert into `a.l`).
    variables = {"stat_data": {"hp": 1, "a": {"l": [1]}}, "schema": schema}
    result = apply_update(variables, "_.set(hp, 2); _.insert(a.l, 2);")
    assert result.variables["stat_data"] == {"hp": 2, "a": {"l": [1, 2]}}
    assert result.diagnostics == ()
    if schema == "没有用别管这个":  # MagVarUpdate keeps its placeholder; anything else is regenerated
        assert result.variables["schema"] == schema
    else:
        assert result.variables["schema"]["properties"]["hp"]["type"] == "number"


def test_an_unchanged_state_keeps_the_placeholder_schema() -> None:
    result = apply_update({"stat_data": {"hp": 1}, "schema": "junk"}, "_.set(hp, 1);")
    assert result.variables["schema"] == "junk"


def test_an_envelope_without_schema_gets_one_after_a_change() -> None:
    result = update({"a": {"b": 1}}, "_.set(a.b, 2);")
    assert result.variables["schema"]["properties"]["a"]["extensible"] is False


@pytest.mark.parametrize(
    "call",
    [
        lambda: apply_update({"stat_data": {"a": 1}}, "_.set(a, x\ud800y);"),
        lambda: apply_update({"stat_data": {"a\ud800": 1}}, "_.set(a, 1);"),
        lambda: initialize_variables(["a: \ud800"]),
        lambda: apply_greeting({"stat_data": {}}, "<initvar>a: '\udc00'</initvar>"),
    ],
)
def test_a_lone_surrogate_is_an_mvu_error_not_a_crash(call: Any) -> None:
    # No UTF-8 JSON can carry one, so the text or state is refused as a whole.
    with pytest.raises(MvuError) as caught:
        call()
    assert caught.value.code in ("MVU_JSON", "MVU_INITIALIZATION_INVALID")


# ---- greeting (U-7) ---------------------------------------------------------------------


def test_a_greeting_applies_its_blocks() -> None:
    variables = initialize_variables(["hp: 10\nplace: home"])
    greeting = 'Hello!\n<JSONPatch>[{"op":"replace","path":"/place","value":"inn"}]</JSONPatch>'
    result = apply_greeting(variables, greeting)
    assert result.variables["stat_data"] == {"hp": 10, "place": "inn"}


def test_a_greeting_with_any_failure_is_refused_whole() -> None:
    variables = initialize_variables(["hp: 10"])
    with pytest.raises(MvuError) as caught:
        apply_greeting(variables, "<UpdateVariable>_.set(hp, 5); _.set(mp, 1);</UpdateVariable>")
    assert caught.value.code == "MVU_INITIALIZATION_INVALID"
    assert [d["code"] for d in caught.value.details["diagnostics"]] == ["MVU_PATH_MISSING"]


def test_a_greeting_applies_only_explicit_blocks() -> None:
    variables = initialize_variables(["hp: 10\nmp: 1"])
    greeting = "The tale begins. _.set(mp, 99);\n<UpdateVariable>\n_.set(hp, 5);\n</UpdateVariable>"
    assert apply_greeting(variables, greeting).variables["stat_data"] == {"hp": 5, "mp": 1}


def test_greeting_initvar_blocks_replace_the_lorebook_data_then_the_blocks_run() -> None:
    variables = initialize_variables(["$meta: {strictSet: true}\nhp: 10\nlore_only: 1"])
    greeting = (
        "Day one.\n<initvar>\n```yaml\nhp: 50\nbag:\n  - $__META_EXTENSIBLE__$\n```\n</initvar>\n"
        "<InitVar>{mood: 'calm', hp: 60}</InitVar>\n"
        "<UpdateVariable>_.insert(bag, 'rope');</UpdateVariable>"
    )
    result = apply_greeting(variables, greeting)
    assert result.variables["stat_data"] == {"hp": 60, "bag": ["rope"], "mood": "calm"}
    assert result.variables["schema"]["strictSet"] is True  # the earlier root flags carry over
    assert result.changed
    assert variables["stat_data"] == {"hp": 10, "lore_only": 1}


def test_greeting_initvar_meta_becomes_schema_and_leaves_the_data() -> None:
    variables = initialize_variables(["hp: 10"])
    greeting = (
        "<initvar>npc:\n  $meta: {extensible: true}\n</initvar>"
        "<UpdateVariable>_.insert(npc, 'Bob', 1);</UpdateVariable>"
    )
    result = apply_greeting(variables, greeting)
    assert result.variables["stat_data"] == {"npc": {"Bob": 1}}
    assert result.variables["schema"]["properties"]["npc"]["extensible"] is True


@pytest.mark.parametrize("body", ["a: [1", "base: &b {hp: 1}", "- 1\n- 2", "a: !!str 1"])
def test_an_unreadable_greeting_initvar_block_refuses_the_opening(body: str) -> None:
    variables = initialize_variables(["hp: 10"])
    with pytest.raises(MvuError) as caught:
        apply_greeting(variables, f"<initvar>ok: 1</initvar><initvar>{body}</initvar>")
    assert caught.value.code == "MVU_INITIALIZATION_INVALID"
    assert caught.value.details["entry"] == 1
    assert "greeting <initvar> block 1" in caught.value.message


def test_a_greeting_without_initvar_keeps_the_lorebook_data() -> None:
    variables = initialize_variables(["hp: 10"])
    result = apply_greeting(variables, "Hello. <initvar is not a tag here")
    assert result.variables["stat_data"] == {"hp": 10}
    assert not result.changed


# ---- interpreter v2 path creation (U-6) ----------------------------------------------------


class FakeValidator:
    """Accepts a candidate when ``accept`` says so; records what it saw."""

    def __init__(self, accept: Any, transform: Any = None) -> None:
        self.accept = accept
        self.transform = transform
        self.seen: list[JsonValue] = []

    def validate(self, stat_data: JsonValue) -> Validation:
        self.seen.append(stat_data)
        if not self.accept(stat_data):
            return Validation(False, issues=("refused",))
        return Validation(True, self.transform(stat_data) if self.transform else None)


V2 = {"mvu_schema": {"mvuSchema": 1, "interpreterVersion": 2, "source": "..."}}


def v2(stat_data: dict[str, Any], text: str, validator: Any) -> Any:
    return apply_update({"stat_data": stat_data, **V2}, text, validator=validator)


def test_v2_set_creates_missing_paths_when_the_schema_accepts() -> None:
    result = v2({}, "_.set(a.b, 1);", FakeValidator(lambda data: True))
    assert result.variables["stat_data"] == {"a": {"b": 1}}


def test_v2_set_refused_by_the_schema_is_a_diagnostic() -> None:
    result = v2({"x": 1}, "_.set(a.b, 1); _.set(x, 2);", FakeValidator(lambda data: "a" not in data))
    assert codes(result) == ["MVU_SCHEMA"]
    assert result.variables["stat_data"] == {"x": 2}


def test_v2_insert_tries_an_object_then_an_array() -> None:
    wants_list = FakeValidator(lambda data: isinstance(data.get("bag"), list))
    result = v2({}, "_.insert(bag, 'k', 'sword');", wants_list)
    assert result.variables["stat_data"] == {"bag": ["sword"]}
    assert wants_list.seen == [{"bag": {"k": "sword"}}, {"bag": ["sword"]}]


def test_v2_keeps_the_parsed_candidate() -> None:
    validator = FakeValidator(lambda data: True, transform=lambda data: {**data, "added": True})
    assert v2({}, "_.set(a, 1);", validator).variables["stat_data"] == {"a": 1, "added": True}


def test_v2_set_does_not_coerce_numbers_itself() -> None:
    assert v2({"hp": 1}, "_.set(hp, '5');", FakeValidator(lambda d: True)).variables["stat_data"] == {"hp": "5"}


def test_v2_add_still_needs_an_existing_number() -> None:
    assert codes(v2({}, "_.add(hp, 1);", FakeValidator(lambda d: True))) == ["MVU_PATH_MISSING"]


def test_v2_arrays_stay_dense() -> None:
    result = v2({"l": []}, "_.set(l[2], 1); _.set(l[0], 1);", FakeValidator(lambda d: True))
    assert codes(result) == ["MVU_PATH_MISSING"]
    assert result.variables["stat_data"] == {"l": [1]}


def test_v2_without_a_validator_nothing_refuses_a_created_path() -> None:
    result = apply_update({"stat_data": {}, **V2}, "_.set(a.b, 1); _.set(l.0, 'x');")
    assert codes(result) == []
    assert result.variables["stat_data"] == {"a": {"b": 1}, "l": ["x"]}


def test_v1_never_creates_paths() -> None:
    validator = FakeValidator(lambda d: True)
    assert codes(apply_update({"stat_data": {}}, "_.set(a, 1);", validator=validator)) == ["MVU_PATH_MISSING"]
    assert validator.seen == []


def test_a_crashing_validator_surfaces_as_mvu_error() -> None:
    def boom(data: Any) -> bool:
        raise RuntimeError("bug")

    with pytest.raises(MvuError) as caught:
        v2({}, "_.set(a, 1);", FakeValidator(boom))
    assert caught.value.code == "MVU_SCHEMA_CODE"


def test_v2_object_insertion_is_shallow() -> None:
    data = {"w": {"o": {"x": {"p": 1}}}}
    result = v2(data, "_.insert(w.o, {x: {q: 2}});", FakeValidator(lambda d: True))
    assert result.variables["stat_data"] == {"w": {"o": {"x": {"q": 2}}}}
    assert stat_v1(data, "_.insert(w.o, {x: {q: 2}});") == {"w": {"o": {"x": {"p": 1, "q": 2}}}}


def stat_v1(stat_data: dict[str, Any], text: str) -> Any:
    return apply_update({"stat_data": stat_data}, text).variables["stat_data"]


@pytest.mark.parametrize("reply", [
    "_.set('hp', 5.0);",  # an integral float: the bytes hold 5, as the state does
    "_.set('名前', '白娅');_.add('hp', 2.5);",
    "<JSONPatch>[{\"op\": \"replace\", \"path\": \"/gold\", \"value\": 1e3}]</JSONPatch>",
    "no commands at all",
])
def test_the_encoded_bytes_are_the_canonical_text_of_the_new_state(reply: str) -> None:
    from mvu_store.jsonvalue import canonical_text

    result = apply_update({"stat_data": {"hp": 1, "gold": 2, "名前": ""}}, reply)
    assert result.encoded == canonical_text(result.variables).encode()
