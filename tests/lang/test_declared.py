"""Commands under a card's declaration (interpreter v2), as the mvu_zod helper runs them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mvu_store.lang import UpdateResult, apply_update
from mvu_store.schema import compile_schema
from mvu_store.service.initial import OPEN_SCHEMA, DeclaredSchema

URL = "https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js"


def declaration(body: str) -> str:
    return f"import {{ registerMvuSchema }} from '{URL}';\nexport const Schema = {body};\n" \
           "$(() => { registerMvuSchema(Schema); });\n"


CARD = declaration("""z.object({
  主角: z.object({
    生命值: z.coerce.number().transform(v => _.clamp(v, 0, 100)).prefault(100),
    金钱: z.number(),
    名字: z.string().prefault(''),
    _内部: z.number().prefault(0),
    $标记: z.array(z.string()).prefault([]),
  }),
  背包: z.array(z.string()).prefault([]),
  角色: z.record(z.string(), z.object({ 好感度: z.coerce.number().prefault(0) })).prefault({}),
  时间: z.string().prefault('08:00'),
})""")
PIPE = declaration("z.object({ hp: z.number(), stage: z.string().prefault('') })"
                   ".transform(d => ({ ...d, stage: d.hp > 50 ? 'high' : 'low' }))")
STATE = {"主角": {"生命值": 80, "金钱": 10, "名字": "艾琳", "_内部": 0, "$标记": []}, "背包": ["面包", "火把"],
         "角色": {"雷恩": {"好感度": 5}}, "时间": "08:00"}


def run(text: str, state: dict[str, Any] | None = None, source: str = CARD, version: int = 2) -> UpdateResult:
    descriptor = {**compile_schema(source), "interpreterVersion": version}
    declared = DeclaredSchema(descriptor, 0)
    envelope = {"stat_data": STATE if state is None else state, "mvu_schema": descriptor, "schema": OPEN_SCHEMA}
    return apply_update(envelope, text, validator=declared, check=declared.check)


def stat(text: str, state: dict[str, Any] | None = None, source: str = CARD) -> Any:
    return run(text, state, source).variables["stat_data"]


def codes(result: UpdateResult) -> list[str]:
    return [entry["code"] for entry in result.diagnostics]


@pytest.mark.parametrize("path", ["stat_data.主角.金钱", "status_current_variables.主角.金钱", "'stat_data.主角.金钱'"])
def test_a_state_prefix_is_dropped(path: str) -> None:
    assert stat(f"_.set({path}, 42);")["主角"]["金钱"] == 42


def test_a_json_patch_path_drops_the_prefix_too() -> None:
    patch = '<JSONPatch>[{"op": "replace", "path": "/stat_data/主角/金钱", "value": 7}]</JSONPatch>'
    assert stat(patch)["主角"]["金钱"] == 7


@pytest.mark.parametrize("text", ["_.set('主角._内部', 5);", "_.add('主角._内部', 1);", "_.delete('主角._内部');",
                                  "_.insert('主角._内部', 'x');"])
def test_an_underscore_segment_is_read_only_and_ignored_silently(text: str) -> None:
    result = run(text)
    assert result.diagnostics == ()
    assert result.variables["stat_data"] == STATE


def test_a_dollar_key_is_writable() -> None:
    assert stat("_.insert('主角.$标记', 'seen');")["主角"]["$标记"] == ["seen"]


@pytest.mark.parametrize("raw", ["120+30", "2025-06-02", "10:30"])
def test_values_are_read_without_arithmetic(raw: str) -> None:
    assert stat(f"_.set('时间', {raw});")["时间"] == raw


def test_arithmetic_text_for_a_number_is_the_schemas_to_refuse() -> None:
    result = run("_.set('主角.金钱', 120+30);")
    assert codes(result) == ["MVU_SCHEMA"]


@pytest.mark.parametrize(("delta", "expected"), [("'15'", 25), ('"+5"', 15), ("true", 11), ("[5]", 15), ("-3", 7)])
def test_add_converts_its_delta_like_number(delta: str, expected: int) -> None:
    assert stat(f"_.add('主角.金钱', {delta});")["主角"]["金钱"] == expected


def test_a_json_patch_delta_given_as_text_is_a_number() -> None:
    patch = '<JSONPatch>[{"op": "delta", "path": "/主角/金钱", "value": "1500"}]</JSONPatch>'
    assert stat(patch)["主角"]["金钱"] == 1510


def test_add_needs_an_existing_number() -> None:
    assert codes(run("_.add('主角.名字', 1); _.add('主角.体力', 1); _.add('主角.金钱', 'x');")) == [
        "MVU_SCHEMA", "MVU_PATH_MISSING", "MVU_SCHEMA"]


def test_set_ignores_the_old_value_and_uses_the_second_of_four() -> None:
    assert stat("_.set('主角.金钱', 999, 45);")["主角"]["金钱"] == 45
    assert stat("_.set('主角.金钱', 45, 999, 1);")["主角"]["金钱"] == 45


@pytest.mark.parametrize(("text", "bag"), [
    ("_.insert('背包', '钥匙');", ["面包", "火把", "钥匙"]),
    ("_.insert('背包', 0, '钥匙');", ["钥匙", "面包", "火把"]),
    ("_.insert('背包', '-', '钥匙');", ["面包", "火把", "钥匙"]),
    ("_.insert('背包', -1, '钥匙');", ["面包", "钥匙", "火把"]),
    ("_.insert('背包', 'x', '钥匙');", ["钥匙", "面包", "火把"]),  # a non-number index is 0
    ("_.insert('背包', 9, '钥匙');", ["面包", "火把", "钥匙"]),
])
def test_insert_into_an_array_splices(text: str, bag: list[str]) -> None:
    assert stat(text)["背包"] == bag


def test_insert_into_an_object_assigns_a_key_or_merges_shallowly() -> None:
    assert stat("_.insert('角色', '艾琳', {好感度: '20'});")["角色"] == {"雷恩": {"好感度": 5}, "艾琳": {"好感度": 20}}
    assert stat("_.insert('角色', {雷恩: {}});")["角色"] == {"雷恩": {"好感度": 0}}  # shallow: replaced


def test_insert_creates_a_missing_container_object_first_then_array() -> None:
    schema = declaration("z.object({ tags: z.array(z.string()).optional(), notes: z.record(z.string(), z.string())"
                         ".optional() })")
    assert stat("_.insert('tags', 'new');", {}, schema) == {"tags": ["new"]}
    assert stat("_.insert('notes', 'k', 'v');", {}, schema) == {"notes": {"k": "v"}}


def test_delete_joins_its_arguments_into_one_path() -> None:
    assert stat("_.remove('角色', '雷恩');")["角色"] == {}


def test_deleting_by_value_under_an_array_deletes_nothing() -> None:
    result = run("_.remove('背包', '面包'); _.remove('背包', 1);")
    assert codes(result) == ["MVU_PATH_MISSING"]
    assert result.variables["stat_data"]["背包"] == ["面包"]


def test_deleting_a_prefaulted_key_resets_it_and_a_required_one_is_refused() -> None:
    assert stat("_.delete('主角.名字');")["主角"]["名字"] == ""
    assert codes(run("_.delete('主角.金钱');")) == ["MVU_SCHEMA"]


def test_move_is_a_delete_then_a_set() -> None:
    patch = '<JSONPatch>[{"op": "move", "from": "/角色/雷恩", "path": "/角色/雷恩二号"}]</JSONPatch>'
    assert stat(patch)["角色"] == {"雷恩二号": {"好感度": 5}}
    to = '<JSONPatch>[{"op": "move", "from": "/背包/0", "to": "/主角/名字"}]</JSONPatch>'
    assert stat(to)["背包"] == ["火把"] and stat(to)["主角"]["名字"] == "面包"


def test_a_moved_text_is_read_again() -> None:
    schema = declaration("z.object({ a: z.any().optional(), b: z.any().optional() })")
    patch = '<JSONPatch>[{"op": "move", "from": "/a", "path": "/b"}]</JSONPatch>'
    assert stat(patch, {"a": "123"}, schema) == {"b": 123}


def test_a_move_the_schema_refuses_half_way_changes_nothing() -> None:
    patch = '<JSONPatch>[{"op": "move", "from": "/主角/金钱", "path": "/主角/存款"}]</JSONPatch>'
    result = run(patch)
    assert codes(result) == ["MVU_SCHEMA"] and result.variables["stat_data"] == STATE


def test_the_parsed_state_is_merged_shallowly_at_the_top() -> None:
    # A transform root is no plain object: it strips unknown keys, but the merge keeps them.
    result = stat("_.set('hp', 80); _.set('note', 'kept');", {"hp": 10, "stage": "low", "extra": 1}, PIPE)
    assert result == {"hp": 80, "stage": "high", "extra": 1}
    assert stat("_.delete('extra');", {"hp": 10, "stage": "low", "extra": 1}, PIPE) == {"hp": 10, "stage": "low"}


def test_a_plain_object_root_is_loose() -> None:
    assert stat("_.set('新键', 1);")["新键"] == 1


def test_a_v1_descriptor_keeps_v1_rules() -> None:
    descriptor_v1 = run("_.set('stat_data.主角.金钱', 1); _.set('时间', 120+30);", version=1)
    assert codes(descriptor_v1) == ["MVU_PATH_MISSING", "MVU_SCHEMA"]  # no prefix rule; 150 is no string


def test_delta_data_records_the_value_after_the_clamp() -> None:
    for version in (1, 2):
        changes = run("_.set('主角.生命值', 150);//治疗", version=version).variables["delta_data"]["changes"]
        assert changes == [{"op": "set", "path": "/主角/生命值", "reason": "治疗", "previous": 80, "value": 100}]


def test_an_inserted_key_is_recorded_with_the_value_it_ended_with() -> None:
    [change] = run("_.insert('角色', '艾琳', {好感度: '20'});").variables["delta_data"]["changes"]
    assert change == {"op": "insert", "path": "/角色", "reason": "", "key": "艾琳", "value": {"好感度": 20}}
    assert stat("_.insert('背包', 'length', '绳子');")["背包"] == ["绳子", "面包", "火把"]


def test_a_json_patch_diagnostic_names_the_failing_operation() -> None:
    patch = ('<JSONPatch>[{"op": "replace", "path": "/时间", "value": "09:00"},'
             ' {"op": "delta", "path": "/主角/名字", "value": 1}]</JSONPatch>')
    [diagnostic] = run(patch).diagnostics
    assert diagnostic["patchIndex"] == 1
    assert diagnostic["command"] == '{"op":"delta","path":"/主角/名字","value":1}'
    assert diagnostic["index"] == 1


keys = st.text(st.sampled_from("ab_$x"), min_size=1, max_size=4)


@given(st.lists(keys, min_size=1, max_size=4), st.integers(-5, 5))
def test_a_path_through_an_underscore_segment_never_changes_the_state(path: list[str], value: int) -> None:
    source = declaration("z.object({}).passthrough()")
    state = {"a": {"_b": 1}, "_x": 2}
    text = f"_.set('{'.'.join(path)}', {value}); _.add('{'.'.join(path)}', {value});"
    result = run(text, state, source)
    if any(segment.startswith("_") for segment in path):
        assert result.variables["stat_data"] == state and result.diagnostics == ()


@given(st.integers(-1000, 1000), st.integers(-1000, 1000))
def test_a_text_delta_adds_like_its_number(start: int, delta: int) -> None:
    state = {**STATE, "主角": {**STATE["主角"], "金钱": start}}
    assert stat(f"_.add('主角.金钱', '{delta}');", state) == stat(f"_.add('主角.金钱', {delta});", state)
