"""Getters in object literals, Zod 4's recursive objects built on them, and `this`.

Real Zod's answers for recursive declarations are in zod_api_parity.json (`recursive-*`); these
tests pin the JavaScript around them: when a getter runs, what `this` is, what is refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.schema import compile_schema
from mvu_store.schema.descriptor import validate
from mvu_store.schema.syntax import parse_program

CATEGORY = "const Category = z.object({ name: z.string(), get subcategories() { return z.array(Category) } });\n"


def _value(source: str, value: Any = 1) -> Any:
    result = validate(compile_schema(source), value, now_ms=0)
    assert result.ok, result.issues
    return result.value


def _refusal(source: str, value: Any = 1) -> MvuError:
    with pytest.raises(MvuError) as caught:
        validate(compile_schema(source), value, now_ms=0)
    return caught.value


def test_a_getter_runs_on_every_read_with_the_object_as_this() -> None:
    source = """const o = { n: 2, get double() { return this.n * 2 }, get fresh() { return [] } };
export default z.any().transform(v => [o.double, o['double'], o.fresh === o.fresh, typeof o, 'double' in o]);"""
    assert _value(source) == [4, 4, False, "object", True]


def test_spread_and_object_entries_run_each_getter_once() -> None:
    source = """const o = { a: 1, get b() { return this.a + 1 }, c: 3 };
export default z.any().transform(v => [{ ...o }, Object.keys(o), Object.values(o), Object.entries(o)]);"""
    assert _value(source) == [{"a": 1, "b": 2, "c": 3}, ["a", "b", "c"], [1, 2, 3], [["a", 1], ["b", 2], ["c", 3]]]


def test_a_later_entry_replaces_a_getter_and_the_object_is_read_only() -> None:
    assert _value("const o = { get a() { return 1 }, a: 2 };\nexport default z.any().transform(v => o.a);") == 2
    assert _value("const o = { a: 2, get a() { return 1 } };\nexport default z.any().transform(v => o.a);") == 1
    written = "const o = { get a() { return 1 } };\nexport default z.any().transform(v => { o.b = 1; return 0; });"
    assert _refusal(written).code == "MVU_UNSUPPORTED"


def test_a_reader_without_a_budget_refuses_a_getters_key_by_name() -> None:
    refused = _refusal("const o = { get a() { return 1 } };\nexport default z.any().transform(v => _.get(o, 'a'));")
    assert refused.code == "MVU_UNSUPPORTED" and "`a`" in refused.message


def test_this_is_the_receiver_of_a_method_call_and_undefined_elsewhere() -> None:
    source = """const counter = { step: 3, add(v) { return v + this.step }, later() { return () => this.step } };
function plain() { return this }
const add = counter.add;
export default z.number().transform(v => [counter.add(v), counter.later()(), plain() === undefined,
  typeof this, (() => { try { return add(v) } catch (e) { return 'TypeError' } })()]);"""
    assert _value(source, 1) == [4, 3, True, "undefined", "TypeError"]


def test_setters_and_computed_getters_are_refused_by_name() -> None:
    with pytest.raises(MvuError) as setter:
        compile_schema("const o = { set x(v) {} };\nexport default z.any();")
    assert setter.value.code == "MVU_UNSUPPORTED" and "set x" in setter.value.message
    with pytest.raises(MvuError) as computed:
        compile_schema("const k = 'a';\nconst o = { get [k]() { return 1 } };\nexport default z.any();")
    assert computed.value.code == "MVU_SCHEMA_CODE"


def test_the_original_interpreter_still_refuses_this() -> None:
    with pytest.raises(MvuError) as caught:
        parse_program("const o = { m() { return this } };", original=True)
    assert caught.value.code == "MVU_SCHEMA_CODE" and "`this`" in caught.value.message


def test_a_recursive_object_parses_trees_and_reports_deep_paths() -> None:
    source = CATEGORY + "export default Category;"
    tree = {"name": "a", "subcategories": [{"name": "b", "subcategories": [{"name": "c", "subcategories": []}]}]}
    assert _value(source, tree) == tree
    broken = {"name": "a", "subcategories": [{"name": "b", "subcategories": [{"name": 3}]}]}
    issues = validate(compile_schema(source), broken, now_ms=0).issues
    assert [issue.path for issue in issues] == [["subcategories", 0, "subcategories", 0, "name"],
                                                ["subcategories", 0, "subcategories", 0, "subcategories"]]


def test_a_deep_recursive_input_meets_the_depth_limit() -> None:
    tree: dict[str, Any] = {"name": "0", "subcategories": []}
    node = tree
    for depth in range(1, 400):
        child: dict[str, Any] = {"name": str(depth), "subcategories": []}
        node["subcategories"].append(child)
        node = child
    refused = _refusal(CATEGORY + "export default Category;", tree)
    assert refused.code == "MVU_LIMIT" and refused.details["kind"] == "depth"


def test_shape_runs_the_getter_and_methods_read_the_shape_late() -> None:
    source = CATEGORY + """const Named = Category.pick({ name: true });
export default z.any().transform(v => [Category.shape.subcategories.element === Category,
  Object.keys(Named.shape), Category.keyof().options, Category.partial().safeParse({}).success]);"""
    assert _value(source) == [True, ["name"], ["name", "subcategories"], True]


def test_a_getter_that_needs_its_own_shape_hits_a_limit_not_python() -> None:
    looping = "const Loop = z.object({ get a() { return Loop.shape.a } });\nexport default Loop;"
    with pytest.raises(MvuError) as caught:
        compile_schema(looping)
    assert caught.value.code == "MVU_LIMIT"


def test_a_getter_that_returns_no_schema_is_refused_at_compile() -> None:
    with pytest.raises(MvuError) as caught:
        compile_schema("const X = z.object({ get a() { return 5 } });\nexport default X;")
    assert caught.value.code == "MVU_SCHEMA" and "`a`" in caught.value.message


def test_a_computed_method_call_passes_its_object_as_this() -> None:
    source = """const counter = { step: 3, add(v) { return v + this.step } };
const name = 'add';
export default z.any().transform(v => [counter['add'](1), counter[name](2), counter?.['add'](3)]);"""
    assert _value(source) == [4, 5, 6]


@pytest.mark.parametrize("call", ["_.keys(o)", "_.values(o)", "_.size(o)", "_.pick(o, 'a')", "_.cloneDeep(o)",
                                  "_.isEmpty(o)", "_.merge({}, o)", "_(o).keys().value()"])
def test_a_lodash_helper_refuses_an_object_with_getters_by_name(call: str) -> None:
    """lodash would run the getters; an answer from the plain data alone (`_.keys` giving [])
    would be silently wrong, so each helper that looks inside refuses and names itself."""
    source = f"const o = {{ a: 1, get b() {{ return 2 }} }};\nexport default z.any().transform(v => {call});"
    refused = _refusal(source)
    assert refused.code == "MVU_UNSUPPORTED" and "_." in refused.message and "getters" in refused.message


def test_lodash_helpers_that_do_not_look_inside_take_an_object_with_getters() -> None:
    source = """const o = { a: 1, get b() { return 2 } };
export default z.any().transform(v => [_.isObject(o), _.isNil(o), _.identity(o) === o, _.keys({ ...o })]);"""
    assert _value(source) == [True, False, True, ["a", "b"]]
