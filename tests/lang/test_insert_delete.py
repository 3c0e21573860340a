"""insert/assign and delete/remove/unset: MagVarUpdate's observed behaviour, one test per rule and quirk."""

from __future__ import annotations

from typing import Any

import pytest
from lang_support import codes, stat, update

from mvu_store.errors import MvuError
from mvu_store.lang import apply_update, initialize_variables


def open_schema(**flags: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {}, "extensible": True, **flags}


# ---- insert -----------------------------------------------------------------------------


def test_insert_into_a_primitive_is_refused() -> None:
    assert codes(update({"a": {"n": 1}}, "_.insert(a.n, 'k', 1);")) == ["MVU_SCHEMA"]


def test_a_three_argument_insert_to_a_missing_path_fails() -> None:
    assert codes(update({"a": {}}, "_.insert(a.b, 'k', 1);")) == ["MVU_PATH_MISSING"]


def test_a_null_target_becomes_an_object() -> None:
    assert stat({"a": {"b": None}}, "_.insert(a.b, 'k', 1);") == {"a": {"b": {"k": 1}}}


@pytest.mark.parametrize(("state", "reply"), [
    ({"npc": {}}, "_.insert(npc.Bob, {hp: 1});"),
    ({"a": {"list": []}}, "_.assign('a.list[0]', {hp: 1});"),
    ({"a": {"list": [1]}}, "_.assign('a.list[1]', 2);"),
])
def test_a_two_argument_insert_never_creates_its_target(state: dict[str, Any], reply: str) -> None:
    # MagVarUpdate reads a missing target as the primitive `undefined` and skips the command.
    assert codes(update(state, reply)) == ["MVU_PATH_MISSING"]


def test_a_top_level_insert_without_schema_fails() -> None:
    assert codes(update({}, "_.insert(npc, {hp: 1});")) == ["MVU_PATH_MISSING"]


def test_an_insert_under_a_falsy_parent_fails() -> None:
    assert codes(update({"a": {"b": 0}}, "_.insert(a.b.c, 1);")) == ["MVU_PATH_MISSING"]


def test_two_argument_insert_pushes_to_arrays_even_an_array_value() -> None:
    assert stat({"a": {"l": [1]}}, "_.insert(a.l, 2); _.insert(a.l, [3, 4]);") == {"a": {"l": [1, 2, [3, 4]]}}


def test_two_argument_insert_merges_objects_deeply() -> None:
    data = {"w": {"o": {"x": {"p": 1}, "y": 2}}}
    assert stat(data, "_.insert(w.o, {x: {q: 3}});") == {"w": {"o": {"x": {"p": 1, "q": 3}, "y": 2}}}


def test_two_argument_insert_of_a_primitive_into_an_object_is_refused() -> None:
    assert codes(update({"w": {"o": {}}}, "_.insert(w.o, 5); _.insert(w.o, [1]);")) == ["MVU_SCHEMA", "MVU_SCHEMA"]


def test_three_argument_insert_splices_arrays_at_an_index() -> None:
    assert stat({"a": {"l": [1, 2, 3]}}, "_.insert(a.l, 1, 'x');") == {"a": {"l": [1, "x", 2, 3]}}


def test_a_negative_index_splices_before_the_last_element() -> None:
    assert stat({"a": {"l": [1, 2, 3]}}, "_.insert(a.l, -1, 'x');") == {"a": {"l": [1, 2, "x", 3]}}


def test_an_index_past_the_end_appends() -> None:
    assert stat({"a": {"l": [1]}}, "_.insert(a.l, 10, 'x');") == {"a": {"l": [1, "x"]}}


def test_a_quoted_index_overwrites_like_an_object_key() -> None:
    assert stat({"a": {"l": [1, 2, 3]}}, "_.insert(a.l, '1', 'x');") == {"a": {"l": [1, "x", 3]}}


def test_three_argument_insert_sets_an_object_key_overwriting() -> None:
    data = {"w": {"o": {"k": 1}}}
    assert stat(data, "_.insert(w.o, 'k', 2); _.insert(w.o, 'n', 3);") == {"w": {"o": {"k": 2, "n": 3}}}


def test_without_a_schema_node_even_an_existing_top_level_target_needs_a_parent() -> None:
    # lodash's _.get(data, '') is undefined, so MagVarUpdate refuses this when no schema knows 'o'.
    assert codes(update({"o": {}}, "_.insert(o, 'k', 1);")) == ["MVU_PATH_MISSING"]


def test_assign_is_insert() -> None:
    assert stat({"w": {"o": {}}}, "_.assign(w.o, 'k', 1);") == {"w": {"o": {"k": 1}}}


def test_non_extensible_object_refuses_merge_and_new_keys_but_overwrites_known_ones() -> None:
    variables = initialize_variables(["o: {k: 1}"])
    result = update(
        variables["stat_data"],
        "_.insert(o, {n: 1}); _.insert(o, 'n', 1); _.insert(o, 'k', 5);",
        schema=variables["schema"],
    )
    assert codes(result) == ["MVU_SCHEMA", "MVU_SCHEMA"]
    assert result.variables["stat_data"] == {"o": {"k": 5}}


def test_array_without_extensible_refuses_both_insert_forms() -> None:
    variables = initialize_variables(["l: [1]"])
    result = update(variables["stat_data"], "_.insert(l, 2); _.insert(l, 0, 2);", schema=variables["schema"])
    assert codes(result) == ["MVU_SCHEMA", "MVU_SCHEMA"]


def test_a_two_argument_insert_to_an_unknown_path_is_refused_under_a_schema_too() -> None:
    variables = initialize_variables(["npc: {$meta: {extensible: true}, Bob: {hp: 1}}"])
    result = update(variables["stat_data"], "_.insert(npc.Amy, {hp: 2});", schema=variables["schema"])
    assert codes(result) == ["MVU_PATH_MISSING"]
    assert result.variables["stat_data"] == {"npc": {"Bob": {"hp": 1}}}


def test_array_template_fills_pushed_objects() -> None:
    variables = initialize_variables(
        ['l: [{"$arrayMeta": true, "$meta": {"extensible": true, "template": {"hp": 10}}}]']
    )
    assert variables["stat_data"] == {"l": []}
    result = update(variables["stat_data"], "_.insert(l, {name: 'a'});", schema=variables["schema"])
    assert result.variables["stat_data"] == {"l": [{"hp": 10, "name": "a"}]}


def test_object_template_fills_new_keys() -> None:
    variables = initialize_variables(["npc: {$meta: {extensible: true, template: {好感: 0}}}"])
    result = update(variables["stat_data"], "_.insert(npc, 'Bob', {身份: '商人'});", schema=variables["schema"])
    assert result.variables["stat_data"] == {"npc": {"Bob": {"好感": 0, "身份": "商人"}}}


def test_array_templates_concatenate_by_default_and_merge_when_asked() -> None:
    concat = initialize_variables(["t: {$meta: {extensible: true, template: [0, 0]}}"])
    merged = initialize_variables(
        ["$meta: {concatTemplateArray: false}\nt: {$meta: {extensible: true, template: [0, 0]}}"]
    )
    assert stat(concat["stat_data"], "_.insert(t, 'k', [1]);", schema=concat["schema"]) == {"t": {"k": [1, 0, 0]}}
    assert stat(merged["stat_data"], "_.insert(t, 'k', [1]);", schema=merged["schema"]) == {"t": {"k": [1, 0]}}
    assert stat(merged["stat_data"], "_.insert(t, 'k', 7);", schema=merged["schema"]) == {"t": {"k": [7, 0]}}


def test_a_primitive_with_an_array_template_is_prefixed_unless_strict_template() -> None:
    loose = initialize_variables(["t: {$meta: {extensible: true, template: ['desc']}}"])
    strict = initialize_variables(["$meta: {strictTemplate: true}\nt: {$meta: {extensible: true, template: ['d']}}"])
    assert stat(loose["stat_data"], "_.insert(t, 'k', 5);", schema=loose["schema"]) == {"t": {"k": [5, "desc"]}}
    assert stat(strict["stat_data"], "_.insert(t, 'k', 5);", schema=strict["schema"]) == {"t": {"k": 5}}


def test_a_template_type_mismatch_leaves_the_value_unchanged() -> None:
    variables = initialize_variables(["t: {$meta: {extensible: true, template: {a: 1}}}"])
    assert stat(variables["stat_data"], "_.insert(t, 'k', 5);", schema=variables["schema"]) == {"t": {"k": 5}}


def test_meta_in_an_inserted_value_takes_effect_and_is_removed() -> None:
    variables = initialize_variables(["npc: {$meta: {extensible: true}}"])
    first = update(
        variables["stat_data"],
        "_.insert(npc, 'Bob', {$meta: {extensible: true}, bag: {}});",
        schema=variables["schema"],
    )
    assert first.variables["stat_data"] == {"npc": {"Bob": {"bag": {}}}}
    second = update(first.variables["stat_data"], "_.insert(npc.Bob, 'gold', 1);", schema=first.variables["schema"])
    assert second.variables["stat_data"] == {"npc": {"Bob": {"bag": {}, "gold": 1}}}


def test_a_new_child_without_meta_under_a_plain_parent_is_not_extensible() -> None:
    variables = initialize_variables(["npc: {$meta: {extensible: true}}"])
    first = update(variables["stat_data"], "_.insert(npc, 'Bob', {hp: 1});", schema=variables["schema"])
    second = update(first.variables["stat_data"], "_.insert(npc.Bob, 'mp', 1);", schema=first.variables["schema"])
    assert codes(second) == ["MVU_SCHEMA"]


# ---- delete ------------------------------------------------------------------------------


def test_delete_by_index_path_skips_schema_checks() -> None:
    variables = initialize_variables(["l: [1, 2, 3]"])
    assert stat(variables["stat_data"], "_.remove(l[1]);", schema=variables["schema"]) == {"l": [1, 3]}


def test_delete_requires_an_existing_path() -> None:
    assert codes(update({"a": 1}, "_.unset(b);")) == ["MVU_PATH_MISSING"]


def test_delete_a_key() -> None:
    assert stat({"a": {"b": 1, "c": 2}}, "_.delete(a.b);") == {"a": {"c": 2}}


def test_delete_by_value_on_an_extensible_array_removes_the_first_match() -> None:
    variables = initialize_variables(["l: ['$__META_EXTENSIBLE__$', a, b, a]"])
    assert stat(variables["stat_data"], "_.remove(l, 'a');", schema=variables["schema"]) == {"l": ["b", "a"]}


def test_delete_from_a_non_extensible_array_is_refused_by_value_and_index_argument() -> None:
    variables = initialize_variables(["l: [a, b]"])
    result = update(variables["stat_data"], "_.remove(l, 'a'); _.remove(l, 0);", schema=variables["schema"])
    assert codes(result) == ["MVU_SCHEMA", "MVU_SCHEMA"]


def test_delete_of_a_required_key_is_refused() -> None:
    variables = initialize_variables(["o: {$meta: {extensible: true, required: [k]}, k: 1, j: 2}"])
    result = update(variables["stat_data"], "_.delete(o.k); _.delete(o.j);", schema=variables["schema"])
    assert codes(result) == ["MVU_SCHEMA"]
    assert result.variables["stat_data"] == {"o": {"k": 1}}


def test_keys_of_a_non_extensible_object_are_required_by_default() -> None:
    variables = initialize_variables(["o: {k: 1}"])
    assert codes(update(variables["stat_data"], "_.delete(o.k);", schema=variables["schema"])) == ["MVU_SCHEMA"]


def test_delete_by_number_on_arrays_is_an_index_and_out_of_range_fails() -> None:
    assert stat({"l": [5, 6, 7]}, "_.remove(l, 1);") == {"l": [5, 7]}
    assert codes(update({"l": [5]}, "_.remove(l, -1); _.remove(l, 3);")) == ["MVU_SCHEMA", "MVU_SCHEMA"]


def test_a_quoted_number_deletes_by_value_not_index() -> None:
    assert stat({"l": [1, "2", 2]}, "_.remove(l, '2');") == {"l": [1, 2]}


def test_delete_by_value_uses_deep_equality() -> None:
    assert stat({"l": [{"a": 1}, {"a": 2}]}, "_.remove(l, {a: 2});") == {"l": [{"a": 1}]}


def test_delete_by_number_on_objects_is_the_nth_key_in_javascript_order() -> None:
    assert stat({"o": {"b": 1, "2": 2, "a": 3, "1": 4}}, "_.remove(o, 1);") == {"o": {"b": 1, "a": 3, "1": 4}}


def test_delete_by_name_on_objects() -> None:
    assert stat({"o": {"k": 1, "j": 2}}, "_.remove(o, 'k');") == {"o": {"j": 2}}


def test_delete_from_a_primitive_container_is_refused() -> None:
    assert codes(update({"n": 5}, "_.remove(n, 1);")) == ["MVU_SCHEMA"]


def test_move_is_a_diagnosed_no_op() -> None:
    result = update({"a": 1}, '<JSONPatch>[{"op":"move","from":"/a","path":"/b"}]</JSONPatch>')
    assert codes(result) == ["MVU_UNSUPPORTED"]
    assert result.variables["stat_data"] == {"a": 1}
    assert not result.changed


def test_a_word_key_on_an_array_is_refused_to_keep_arrays_plain() -> None:
    result = update({"w": {"l": [1]}}, "_.insert(w.l, 'x', 2); _.insert(w.l, '5', 2);")
    assert codes(result) == ["MVU_SCHEMA", "MVU_SCHEMA"]
    assert result.variables["stat_data"] == {"w": {"l": [1]}}


def test_setting_undefined_removes_the_key_as_magvarupdates_saved_json_does() -> None:
    result = update({"flag": True, "n": 1}, "_.set(flag, undefined); _.set(n, undefined);")
    assert result.variables["stat_data"] == {}
    first = result.variables["delta_data"]["changes"][0]
    assert first == {"op": "set", "path": "/flag", "reason": "", "previous": True}  # no value: gone


def test_undefined_in_an_array_or_a_description_pair_is_null() -> None:
    text = "_.set(l[0], undefined); _.set(hp, undefined);"
    assert stat({"l": [1, 2], "hp": [5, "health"]}, text) == {"l": [None, 2], "hp": [None, "health"]}


def test_removing_undefined_is_refused_while_null_removes_the_first_null() -> None:
    variables = initialize_variables(["l: [$__META_EXTENSIBLE__$, 1, null, null]"])
    result = apply_update(variables, "_.remove(l, undefined); _.remove(l, null);")
    assert codes(result) == ["MVU_SCHEMA"]
    assert result.variables["stat_data"] == {"l": [1, None]}


def test_inserting_undefined_under_a_key_leaves_no_key_but_pushes_null() -> None:
    variables = initialize_variables(["o: {$meta: {extensible: true}, k: 1}\nl: [$__META_EXTENSIBLE__$]"])
    text = "_.insert(o, 'k', undefined); _.insert(o, 'j', undefined); _.insert(l, undefined);"
    assert stat(variables["stat_data"], text, schema=variables["schema"]) == {"o": {}, "l": [None]}


def test_unsupported_mathjs_stays_text() -> None:
    text = "_.set(z, (2+3i)*(1-2i)); _.set(t, 10:30);"
    assert stat({"z": "", "t": ""}, text) == {"z": "(2+3i)*(1-2i)", "t": "10:30"}


def test_a_prototype_key_argument_refuses_the_update() -> None:
    with pytest.raises(MvuError) as caught:
        update({"w": {"o": {}}}, "_.insert(w.o, '__proto__', {x: 1});")
    assert caught.value.code == "MVU_PATH"


def test_a_null_member_is_a_primitive_to_templates_as_in_javascript() -> None:
    meta = '{"$arrayMeta": true, "$meta": {"extensible": true, "template": ["d"]}}'
    variables = initialize_variables([f"l: [{meta}]\no: {{$meta: {{extensible: true, template: {{x: 1}}}}}}"])
    text = "_.insert(l, null); _.insert(o, 'k', null);"
    assert stat(variables["stat_data"], text, schema=variables["schema"]) == {"l": [[None, "d"]], "o": {"k": None}}


def test_templates_apply_only_to_new_members_not_to_set() -> None:
    meta = '{"$arrayMeta": true, "$meta": {"extensible": true, "template": {"rarity": 1}}}'
    variables = initialize_variables([f"l: [{{name: a, dmg: 1}}, {meta}]"])
    assert stat(variables["stat_data"], "_.set(l[0].dmg, 2);", schema=variables["schema"]) == {
        "l": [{"name": "a", "dmg": 2}]
    }


def test_insert_at_the_root_follows_the_root_schema_node() -> None:
    open_root = initialize_variables(["$meta: {extensible: true}\na: 1"])
    closed_root = initialize_variables(["a: 1"])
    text = "_.insert('', 'element', [15, 'count']);"
    assert stat(open_root["stat_data"], text, schema=open_root["schema"]) == {"a": 1, "element": [15, "count"]}
    assert codes(update(closed_root["stat_data"], text, schema=closed_root["schema"])) == ["MVU_SCHEMA"]
