"""set and add: MagVarUpdate's observed behaviour, one test per rule and quirk."""

from __future__ import annotations

from lang_support import codes, stat, update


def test_set_uses_the_last_argument_and_ignores_a_stale_old_value() -> None:
    assert stat({"hp": 50}, "_.set(hp, 999, 45);") == {"hp": 45}


def test_set_on_a_missing_path_is_a_diagnostic_and_processing_continues() -> None:
    result = update({"hp": 50}, "_.set(mp, 1); _.set(hp, 40);")
    assert codes(result) == ["MVU_PATH_MISSING"]
    assert result.variables["stat_data"] == {"hp": 40}
    assert result.diagnostics[0]["command"] == "_.set(mp, 1);"


def test_set_out_of_range_index_is_missing() -> None:
    assert codes(update({"a": [1]}, "_.set(a[3], 1);")) == ["MVU_PATH_MISSING"]


def test_set_on_a_value_with_description_writes_only_the_value() -> None:
    assert stat({"hp": [50, "health"]}, "_.set(hp, 45);") == {"hp": [45, "health"]}


def test_set_vwd_number_coerces_the_new_value() -> None:
    assert stat({"hp": [50, "health"]}, "_.set(hp, '45');") == {"hp": [45, "health"]}


def test_set_vwd_number_with_a_non_number_stores_nan_as_null() -> None:
    assert stat({"hp": [50, "health"]}, "_.set(hp, 'dead');") == {"hp": [None, "health"]}


def test_set_vwd_number_accepts_null() -> None:
    assert stat({"hp": [50, "health"]}, "_.set(hp, null);") == {"hp": [None, "health"]}


def test_two_strings_are_treated_as_value_with_description() -> None:
    assert stat({"技能": ["火球术", "治疗术"]}, "_.set('技能', ['x']);") == {"技能": [["x"], "治疗术"]}


def test_set_vwd_rule_is_off_when_the_first_item_is_an_array() -> None:
    assert stat({"bag": [["a"], "items"]}, "_.set(bag, 1);") == {"bag": 1}


def test_strict_set_disables_the_vwd_rule() -> None:
    schema = {"type": "object", "properties": {}, "extensible": True, "strictSet": True}
    assert stat({"hp": [50, "health"]}, "_.set(hp, 45);", schema=schema) == {"hp": 45}


def test_set_number_from_string_coerces() -> None:
    assert stat({"a": 1, "b": 1, "c": 1, "d": 1}, "_.set(a, '7'); _.set(b, ''); _.set(c, 'abc'); _.set(d, '+5');") == {
        "a": 7,
        "b": 0,
        "c": None,
        "d": 5,
    }


def test_set_allows_any_other_type_change() -> None:
    data = {"n": 1, "o": {"x": 1}, "arr": [1]}
    assert stat(data, "_.set(n, true); _.set(o, 3); _.set(arr, 'text');") == {"n": True, "o": 3, "arr": "text"}


def test_set_on_the_root_replaces_stat_data() -> None:
    assert stat({"a": 1}, "_.set('', {b: 2});") == {"b": 2}


def test_set_on_the_root_must_keep_an_object() -> None:
    assert codes(update({"a": 1}, "_.set('', 5);")) == ["MVU_SCHEMA"]


def test_set_has_no_schema_check() -> None:
    schema = {"type": "object", "extensible": False, "properties": {"hp": {"type": "number", "required": True}}}
    assert stat({"hp": 1}, "_.set(hp, 'high');", schema=schema) == {"hp": None}


def test_add_adds_numbers_with_twelve_digit_rounding() -> None:
    assert stat({"a": 0.1}, "_.add(a, 0.2);") == {"a": 0.3}


def test_add_requires_an_existing_path() -> None:
    assert codes(update({}, "_.add(a, 1);")) == ["MVU_PATH_MISSING"]


def test_add_on_a_value_with_description_keeps_the_description() -> None:
    assert stat({"hp": [50, "health"]}, "_.add(hp, -5);") == {"hp": [45, "health"]}


def test_add_refuses_a_quoted_delta() -> None:
    result = update({"a": 1}, "_.add(a, '5');")
    assert codes(result) == ["MVU_SCHEMA"]
    assert result.variables["stat_data"] == {"a": 1}


def test_add_accepts_an_arithmetic_delta() -> None:
    assert stat({"a": 1}, "_.add(a, 2*3);") == {"a": 7}


def test_add_refuses_numeric_strings_booleans_and_number_pairs() -> None:
    result = update({"s": "15", "b": True, "p": [1, 2]}, "_.add(s, 1); _.add(b, 1); _.add(p, 1);")
    assert codes(result) == ["MVU_SCHEMA"] * 3


def test_add_moves_a_date_by_milliseconds() -> None:
    assert stat({"世界": {"时间": "2025-06-02T08:00:00Z"}}, "_.add('世界.时间', 1800000);") == {
        "世界": {"时间": "2025-06-02T08:30:00.000Z"}}


def test_add_refuses_a_text_delta_on_a_date() -> None:
    assert codes(update({"t": "2024-01-01"}, "_.add(t, '1000');")) == ["MVU_SCHEMA"]


def test_add_ignores_strict_set() -> None:
    schema = {"type": "object", "properties": {}, "extensible": True, "strictSet": True}
    assert stat({"hp": [50, "health"]}, "_.add(hp, 1);", schema=schema) == {"hp": [51, "health"]}


def test_add_vwd_detection_needs_a_non_object_first_item() -> None:
    assert codes(update({"x": [{"a": 1}, "desc"]}, "_.add(x, 1);")) == ["MVU_SCHEMA"]
    assert codes(update({"x": [None, "desc"]}, "_.add(x, 1);")) == ["MVU_SCHEMA"]


def test_a_root_meta_in_stat_data_does_not_switch_strict_set_during_the_update() -> None:
    # Without a schema, MagVarUpdate reads strictSet only when it rebuilds the schema afterwards.
    result = update({"$meta": {"strictSet": True}, "level": [5, "desc"]}, "_.set(level, [5, 'desc'], 6);")
    assert result.variables["stat_data"]["level"] == [6, "desc"]
    assert result.variables["schema"]["strictSet"] is True


def test_arithmetic_functions_and_constants_evaluate() -> None:
    text = "_.set(a, log(10^3, 10) * sqrt(144)); _.set(b, cos(pi) + 2); _.set(c, 10 + 2 * 5 - 3 / 3);"
    assert stat({"a": 0, "b": 0, "c": 0}, text) == {"a": 36, "b": 1, "c": 19}


def test_quoted_arithmetic_stays_text() -> None:
    assert stat({"note": ""}, "_.set(note, 'old', '10 + 2');") == {"note": "10 + 2"}


def test_template_literals_keep_their_text() -> None:
    assert stat({"t": ""}, "_.set(t, `Hello ${name}`);") == {"t": "Hello ${name}"}


def test_set_vwd_number_with_an_array_becomes_null() -> None:
    assert stat({"hp": [50, "health"]}, "_.set(hp, [1, 2]);") == {"hp": [None, "health"]}


def test_mixed_quotes_and_parentheses_inside_values() -> None:
    text = "_.set(a, \"x\", 'old\"value'); _.set(b, [\"item with ); inside\"]);"
    assert stat({"a": "", "b": []}, text) == {"a": 'old"value', "b": ["item with ); inside"]}


def test_an_unquoted_identifier_inside_a_literal_is_read_as_yaml() -> None:
    assert stat({"o": {}}, "_.set(o, {a: b});") == {"o": {"a": "b"}}


def test_a_whole_top_level_key_with_a_dot_wins_over_splitting_as_in_lodash() -> None:
    data = {"Lv.2": 1, "Lv": {"2": 5}, "a": {"b": 1}}
    assert stat(data, "_.set('Lv.2', 3); _.add(Lv.2, 1); _.set(a.b, 2);") == {"Lv.2": 4, "Lv": {"2": 5}, "a": {"b": 2}}
