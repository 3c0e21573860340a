"""initialize_variables and the restricted YAML loader (MagVarUpdate's observed behaviour; DIGEST U-2)."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.lang import initialize_variables
from mvu_store.lang.restricted_yaml import load_yaml


def test_yaml_json5_and_objects_merge_in_order_objects_deep_arrays_replace() -> None:
    variables = initialize_variables(
        ["a: {x: 1, l: [1, 2]}\nb: 1", "{a: {y: 2, l: [3]}, // json5\n c: 'z'}", {"b": 5}]
    )
    assert variables["stat_data"] == {"a": {"x": 1, "l": [3], "y": 2}, "b": 5, "c": "z"}
    assert variables["display_data"] == variables["stat_data"]
    assert variables["delta_data"] == {}


def test_initvar_wrapper_and_code_fence_are_stripped() -> None:
    text = "<initvar>\n```yaml\nhp: 10\n```\n</initvar>"
    assert initialize_variables([text])["stat_data"] == {"hp": 10}


def test_a_fence_after_a_line_of_prose_is_still_the_body() -> None:
    text = "Variables of the card:\n```yaml\nhp: 10\nnote: |\n  x\n```\ntrailing words"
    assert initialize_variables([text])["stat_data"] == {"hp": 10, "note": "x"}


def test_existing_top_level_keys_win_and_other_fields_stay() -> None:
    existing = {"stat_data": {"hp": 3}, "extra": "kept"}
    variables = initialize_variables(["hp: 10\nmp: 5"], existing=existing)
    assert variables["stat_data"] == {"hp": 3, "mp": 5}
    assert variables["extra"] == "kept"
    assert existing == {"stat_data": {"hp": 3}, "extra": "kept"}


def test_meta_becomes_the_schema_and_leaves_stat_data() -> None:
    variables = initialize_variables(
        ["$meta: {strictSet: true, strictTemplate: true, concatTemplateArray: false}\n"
         "o: {$meta: {extensible: true, required: [k], template: {t: 1}}, k: 1}\n"
         "l: ['$__META_EXTENSIBLE__$', a]"]
    )
    schema = variables["schema"]
    assert variables["stat_data"] == {"o": {"k": 1}, "l": ["a"]}
    assert (schema["strictSet"], schema["strictTemplate"], schema["concatTemplateArray"]) == (True, True, False)
    assert schema["properties"]["o"]["extensible"] is True
    assert schema["properties"]["o"]["template"] == {"t": 1}
    assert schema["properties"]["o"]["properties"]["k"]["required"] is True
    assert schema["properties"]["l"]["extensible"] is True
    assert schema["properties"]["l"]["elementType"] == {"type": "string"}


def test_recursive_extensible_propagates_until_a_node_says_no() -> None:
    variables = initialize_variables(
        ["r: {$meta: {recursiveExtensible: true}, a: {b: {}}, c: {$meta: {extensible: false}, d: {}}}"]
    )
    r = variables["schema"]["properties"]["r"]
    assert r["properties"]["a"]["extensible"] is True
    assert r["properties"]["a"]["properties"]["b"]["extensible"] is True
    assert r["properties"]["a"]["properties"]["b"]["required"] is False


def test_array_meta_element_sets_extensible_and_template() -> None:
    variables = initialize_variables(['l: [{"$arrayMeta": true, "$meta": {"extensible": true, "template": [0]}}, 1]'])
    node = variables["schema"]["properties"]["l"]
    assert variables["stat_data"] == {"l": [1]}
    assert (node["extensible"], node["template"], node["elementType"]) == (True, [0], {"type": "number"})


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x",  # anchors and aliases
        "a: !!binary aGk=",  # explicit tags
        "<<: {a: 1}",  # merge keys
        "%YAML 1.1\n---\na: yes",  # directives
        "a: .inf",
        "a: .nan",
        "a: 1\na: 2",  # duplicate keys
        "- 1\n- 2",  # not an object
        "a: [1",  # syntax
    ],
)
def test_refused_yaml_is_initialization_invalid(text: str) -> None:
    with pytest.raises(MvuError) as caught:
        initialize_variables(["ok: 1", text])
    assert caught.value.code == "MVU_INITIALIZATION_INVALID"
    assert caught.value.details["entry"] == 1


def test_timestamps_stay_strings_and_yaml_1_2_words_stay_words() -> None:
    assert load_yaml("t: 2024-04-08 10:45\nd: 2024-04-08\ny: yes\nn: no\no: on") == {
        "t": "2024-04-08 10:45",
        "d": "2024-04-08",
        "y": "yes",
        "n": "no",
        "o": "on",
    }


def test_yaml_caps_size_depth_and_nodes() -> None:
    for text, kwargs in [
        ("a: " + "x" * 100, {"max_bytes": 50}),
        ("[" * 70 + "]" * 70, {}),
        ("[" + ", ".join(["1"] * 50) + "]", {"max_nodes": 10}),
    ]:
        with pytest.raises(MvuError) as caught:
            load_yaml(text, **kwargs)  # type: ignore[arg-type]
        assert caught.value.code == "MVU_LIMIT"


def test_a_prototype_key_in_initvar_is_refused() -> None:
    with pytest.raises(MvuError) as caught:
        initialize_variables(['{"a": {"__proto__": 1}}'])
    assert caught.value.code == "MVU_PATH"


def test_an_empty_entry_contributes_nothing() -> None:
    assert initialize_variables(["", "a: 1", "# only a comment"])["stat_data"] == {"a": 1}


@pytest.mark.parametrize("entries", [None, 5, [5], [["a"]], [{"a": {1, 2}}]])
def test_entries_that_are_not_texts_or_objects_are_refused(entries: object) -> None:
    with pytest.raises(MvuError) as caught:
        initialize_variables(entries)  # type: ignore[arg-type]
    assert caught.value.code == "MVU_INITIALIZATION_INVALID"
