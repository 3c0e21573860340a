"""Adversarial declarations (S-7, S-8, S-9): each is refused with a clean MvuError, and nothing
escapes the interpreter. Budgets are asserted through the error code, never through timing."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.schema import compile_schema, validate


def refusal(source: str, value: Any = None) -> MvuError:
    with pytest.raises(MvuError) as refused:
        validate(compile_schema(source), value, now_ms=0)
    return refused.value


@pytest.mark.parametrize("expression", [
    "v.__proto__", "v['__proto__']", "v['constr' + 'uctor']", "v.constructor", "v.prototype",
    "[].constructor", "'s'.constructor", "z.constructor", "_.__proto__", "Math.constructor",
    "(() => 1).constructor", "v.hasOwnProperty('a')",
])
def test_prototype_access_is_refused(expression: str) -> None:
    error = refusal(f"export default z.any().transform(v => {expression});", {"a": 1})
    assert error.code in {"MVU_SCHEMA", "MVU_UNSUPPORTED"}


def test_prototype_keys_cannot_be_written_or_built() -> None:
    assert refusal("export default z.any().transform(v => { v['__proto__'] = 1; return v });", {}).code == "MVU_SCHEMA"
    assert refusal("export default z.any().transform(v => ({ ['__pro' + 'to__']: 1 }));", {}).code == "MVU_SCHEMA"
    assert refusal("export default z.any().transform(v => Object.fromEntries([['constructor', 1]]));", {}).code == \
        "MVU_SCHEMA"
    with pytest.raises(MvuError) as literal:
        compile_schema("export default z.any().transform(v => ({ __proto__: 1 }));")
    assert literal.value.code == "MVU_SCHEMA_CODE"


def test_the_explicit_own_property_primitive_works() -> None:
    source = "export default z.any().transform(v => [Object.prototype.hasOwnProperty.call(v, 'a'), " \
             "Object.prototype.hasOwnProperty.call(v, 'toString')]);"
    assert validate(compile_schema(source), {"a": 1}).value == [True, False]


@pytest.mark.parametrize("body", [
    "v.length = 0", "v['length'] = 0", "v.length += 1", "v[5] = 1", "delete v[0]",
])
def test_array_length_writes_and_holes_are_refused(body: str) -> None:
    assert refusal(f"export default z.array(z.number()).transform(v => {{ {body}; return v }});", [1]).code == \
        "MVU_SCHEMA"


@pytest.mark.parametrize("body", ["delete v.__proto__", "delete v['const' + 'ructor']", "delete D.a"])
def test_deleting_prototype_names_or_constants_is_refused(body: str) -> None:
    source = f"const D = {{ a: 1 }};\nexport default z.any().transform(v => {{ {body}; return v }});"
    assert refusal(source, {"a": 1}).code == "MVU_SCHEMA"


def test_declaration_constants_are_read_only_during_validation() -> None:
    source = "const D = { hits: [] };\nexport default z.any().transform(v => { D.hits.push(v); return D.hits.length });"
    assert refusal(source, 1).code == "MVU_SCHEMA"


def test_values_cannot_hold_functions_or_schemas() -> None:
    assert refusal("export default z.any().transform(v => () => 1);", 1).code == "MVU_SCHEMA"
    assert refusal("export default z.any().transform(v => ({ s: z.string() }));", 1).code == "MVU_SCHEMA"
    assert refusal("export default z.any().transform(v => { v.f = x => x; return v });", {}).code == "MVU_SCHEMA"


def test_implicit_object_conversion_is_refused() -> None:
    assert refusal("export default z.any().transform(v => v + 1);", {"a": 1}).code == "MVU_SCHEMA"
    assert refusal("export default z.any().transform(v => v * 2);", [1, 2]).code == "MVU_SCHEMA"
    assert refusal("export default z.any().transform(v => v < 3);", {"a": 1}).code == "MVU_SCHEMA"


@pytest.mark.parametrize("source", [
    "export default z.array(z.number()).transform(a => { let s = 0; for (const x of a) { for (const y of a) "
    "{ for (const w of a) { s += x } } } return s });",
    "const f = n => n <= 0 ? 0 : f(n - 1) + f(n - 1) + 1;\nexport default z.number().transform(f);",
    "export default z.any().transform(v => 'x'.repeat(1e9));",
    "export default z.any().transform(v => _.range(1e9).length);",
    "export default z.any().transform(v => 'ab'.padStart(1e9));",
])
def test_runaway_computation_exhausts_the_budget(source: str) -> None:
    value: Any = [1] * 1000 if "for (const" in source else 40
    assert refusal(source, value).code == "MVU_LIMIT"


def test_unbounded_recursion_hits_the_call_depth() -> None:
    error = refusal("const f = n => f(n + 1);\nexport default z.number().transform(f);", 1)
    assert error.code == "MVU_LIMIT"
    assert error.details["kind"] == "call_depth"


@pytest.mark.parametrize("loop", ["for (const x of a)", "for (const k in a)"])
def test_loops_are_capped_at_a_thousand_items(loop: str) -> None:
    source = f"export default z.array(z.number()).transform(a => {{ let n = 0; {loop} n++; return n }});"
    assert validate(compile_schema(source), [0] * 1000).value == 1000
    error = refusal(source, [0] * 1001)
    assert error.code == "MVU_LIMIT"
    assert error.details["kind"] == "loop"


@pytest.mark.parametrize(("source", "code"), [
    ("while (true) {}", "MVU_LIMIT"),
    ("do {} while (true)", "MVU_LIMIT"),
    ("a: while (true) { continue a }", "MVU_LIMIT"),
    ("for (k in {}) {}", "MVU_SCHEMA_CODE"),
    ("function* g() { yield 1 }", "MVU_SCHEMA_CODE"),
    ("export default z.object({ set x(v) {} });", "MVU_UNSUPPORTED"),
    ("const f = function () { return arguments };", "MVU_SCHEMA_CODE"),
    ("const f = ({ a, ...rest }) => rest;", "MVU_SCHEMA_CODE"),
    ("const f = ({ a, ...others }) => a;", "MVU_SCHEMA_CODE"),
    ("const { a: { b, ...inner } } = { a: { b: 1 } };", "MVU_SCHEMA_CODE"),
    ("const { ...[first] } = [1];", "MVU_SCHEMA_CODE"),
    ("import fs from 'fs';", "MVU_SCHEMA_CODE"),
    ("import { z } from 'https://esm.sh/zod@3';", "MVU_SCHEMA_CODE"),
    ("const isObject = s => s instanceof z.ZodObject;", "MVU_SCHEMA_CODE"),
    ("class A {}\nconst isA = v => v instanceof A;", "MVU_SCHEMA_CODE"),
    ("const m = import('zod');", "MVU_SCHEMA_CODE"),
    ("const d = new Date();", "MVU_SCHEMA"),  # no clock while compiling
    ("class A {}", "MVU_SCHEMA_CODE"),
    ("eval('1')", "MVU_SCHEMA_CODE"),
    ("globalThis.z = 1", "MVU_SCHEMA_CODE"),
    ("const d = new WeakMap();", "MVU_SCHEMA_CODE"),
    ("throw new Error('stop')", "MVU_SCHEMA"),
    ("with (z) {}", "MVU_SCHEMA_CODE"),
    ("const = ;", "MVU_SCHEMA_CODE"),
    ("const a = (1;", "MVU_SCHEMA_CODE"),
    ("const c = new Intl.Collator();", "MVU_UNSUPPORTED"),
    ("const r = Math.random();", "MVU_UNSUPPORTED"),
    ("const e = z.bigint();", "MVU_UNSUPPORTED"),
    ("const t = Date.now();", "MVU_SCHEMA"),
    ("undefinedName.x", "MVU_SCHEMA"),
])
def test_unsupported_syntax_and_capabilities_are_refused(source: str, code: str) -> None:
    with pytest.raises(MvuError) as refused:
        compile_schema(source)
    assert refused.value.code == code


@pytest.mark.parametrize("guarded", [
    "v.__proto__", "v.constructor", "C.push(1)", "'x'.repeat(1e9)", "Math.random()",
    "(() => { for (const i of _.range(5000)) {} })()",
])
def test_a_catch_never_swallows_isolation_or_budget_refusals(guarded: str) -> None:
    source = f"const C = [1];\nexport default z.any().transform(v => {{ try {{ return {guarded} }} " \
             "catch (e) { return 'caught' } });"
    assert refusal(source, {}).code in {"MVU_SCHEMA", "MVU_LIMIT", "MVU_UNSUPPORTED"}


@pytest.mark.parametrize("guarded", ["v.__proto__", "(() => { for (const i of _.range(5000)) {} })()"])
def test_a_finally_return_never_swallows_isolation_or_budget_refusals(guarded: str) -> None:
    source = f"export default z.any().transform(v => {{ try {{ return {guarded} }} finally {{ return 'kept' }} }});"
    assert refusal(source, {}).code in {"MVU_SCHEMA", "MVU_LIMIT"}


def test_a_finally_completion_replaces_the_try_as_in_javascript() -> None:
    source = """export default z.any().transform(v => {
  const f = () => { try { return 1 } finally { return 2 } };
  const g = () => { try { throw new Error('x') } finally { return 'swallowed' } };
  const h = () => { try { return 'body' } finally { console.log('no completion') } };
  return [f(), g(), h()];
});"""
    assert validate(compile_schema(source), 0).value == [2, "swallowed", "body"]


def test_a_catch_handles_the_declarations_own_errors() -> None:
    source = "export default z.any().transform(v => { try { if (v === 5) throw new Error('big'); return v.x.y } " \
             "catch (e) { return e.message } finally { console.log('done') } });"
    descriptor = compile_schema(source)
    assert validate(descriptor, 5).value == "big"
    assert validate(descriptor, {}).value == "cannot read property `y` of undefined"


def test_syntax_refusals_carry_line_and_column() -> None:
    with pytest.raises(MvuError) as refused:
        compile_schema("const a = 1;\n  function* g() {}\n")
    assert refused.value.details == {"line": 2, "column": 3}


def test_deep_nesting_is_a_limit_not_a_crash() -> None:
    source = "export default " + "z.array(" * 400 + "z.number()" + ")" * 400 + ";"
    with pytest.raises(MvuError) as refused:
        compile_schema(source)
    assert refused.value.code == "MVU_LIMIT"


def test_deeply_nested_values_are_a_limit() -> None:
    source = "export default z.any().transform(v => { let x = 1; for (const i of _.range(200)) { x = [x] } return x });"
    assert refusal(source, 1).code == "MVU_LIMIT"


def test_huge_sources_and_literals_are_limits() -> None:
    for source in ["const s = '" + "x" * 70_000 + "';", "// " + "x" * 140_000]:
        with pytest.raises(MvuError) as refused:
            compile_schema(source)
        assert refused.value.code == "MVU_LIMIT"


def test_refusals_are_cached_and_raised_again() -> None:
    for _ in range(2):
        with pytest.raises(MvuError) as refused:
            compile_schema("function* g() {}")
        assert refused.value.code == "MVU_SCHEMA_CODE"


@pytest.mark.parametrize("source", [
    "let hits = 0;\nexport default z.any().transform(v => ++hits);",
    "let last = null;\nexport default z.any().transform(v => { last = v; return v });",
    "const make = () => { let n = 0; return v => { n += 1; return n } };\nexport default z.any().transform(make());",
    "const seen = new Set();\nexport default z.any().transform(v => seen.add(v).size);",
])
def test_validations_cannot_carry_state_between_runs(source: str) -> None:
    assert refusal(source, 1).code == "MVU_SCHEMA"


def test_local_variables_of_a_call_stay_writable() -> None:
    source = "export default z.array(z.number()).transform(a => { let total = 0; for (const x of a) total += x; " \
             "const box = { n: total }; box.n *= 2; return box.n });"
    assert validate(compile_schema(source), [1, 2]).value == 6


@pytest.mark.parametrize("body", [
    "let s = 'ab'; for (const i of _.range(40)) s = s + s; return s.length",
    "let s = 'ab'; for (const i of _.range(40)) s = `${s}${s}`; return s.length",
    "let a = [1]; for (const i of _.range(40)) a.push(...a); return a.length",
    "let a = [1]; for (const i of _.range(40)) a = a.concat(a); return a.length",
    "let s = 'ab'; for (const i of _.range(40)) s = [s, s].join(''); return s.length",
    "const big = _.range(5000); let n = 0; for (const i of _.range(1000)) { if (big.includes(-1)) n++ } return n",
    "const big = _.range(5000); let n = 0; for (const i of _.range(1000)) n += _.compact(big).length; return n",
    "const big = _.range(2000); let n = 0; for (const i of _.range(1000)) n += JSON.stringify([big]).length; return n",
])
def test_growth_and_repeated_scans_are_bounded(body: str) -> None:
    assert refusal(f"export default z.any().transform(v => {{ {body} }});", 1).code == "MVU_LIMIT"


def test_sets_and_uniq_scale_linearly() -> None:
    source = "export default z.any().transform(v => [new Set(_.range(200000)).size, _.uniq(_.range(200000)).length]);"
    assert validate(compile_schema(source), 1).value == [200000, 200000]


def test_self_referencing_lazy_schemas_hit_a_limit() -> None:
    source = "const Loop = z.lazy(() => Loop);\nexport default Loop;"
    assert refusal(source, 1).code == "MVU_LIMIT"


def test_an_object_rest_copies_own_data_only() -> None:
    source = """export default z.any().transform(v => {
  const { a, ...rest } = v;
  return [rest.__proto__ === undefined, Object.keys(rest), rest.constructor];
});"""
    assert refusal(source, {"a": 1, "b": 2}).code == "MVU_SCHEMA"  # `constructor` stays refused
    copied = "export default z.any().transform(v => { const { a, ...rest } = v; return Object.keys(rest); });"
    assert validate(compile_schema(copied), {"a": 1, "b": 2, "1": 3}, now_ms=0).value == ["1", "b"]


def test_an_object_rest_over_a_large_value_shares_the_budget() -> None:
    source = """export default z.any().transform(v => {
  for (const i of _.range(1000)) { for (const j of _.range(1000)) { const { a, ...rest } = v; } }
});"""
    assert refusal(source, {str(i): i for i in range(500)}).code == "MVU_LIMIT"


def test_an_array_rest_over_a_large_value_shares_the_budget() -> None:
    source = """export default z.any().transform(v => {
  for (const i of _.range(1000)) { for (const j of _.range(1000)) { const [a, ...rest] = v; } }
});"""
    assert refusal(source, list(range(500))).code == "MVU_LIMIT"


@pytest.mark.parametrize("work", [
    "_.difference(v, v)", "_.without(v, ...v.slice(0, 100))", "v.includes(-1)", "v.lastIndexOf(-1)",
    "String(v)", "`${v}`", "v + ''", "_.toString(v)",
])
def test_builtins_pay_for_the_data_they_walk(work: str) -> None:
    """Each call walks a 3,000-item input; a thousand of them must run out of fuel (these once ran
    for seconds uncharged, or charged a fraction of a pairwise scan)."""
    source = f"export default z.any().transform(v => {{ for (const i of _.range(1000)) {{ {work}; }} return 1; }});"
    assert refusal(source, list(range(3000))).code == "MVU_LIMIT"


@pytest.mark.parametrize("schema", [
    "z.looseObject({})", "z.object({}).passthrough()", "z.object({ a: z.number() }).catch(ctx => ctx.input)",
    "z.any()", "z.record(z.string(), z.any())",
])
def test_a_transform_never_changes_the_callers_input(schema: str) -> None:
    """Frozen input: loose objects once handed unknown keys' values through uncopied, so a
    transform that mutated them changed the caller's state."""
    value = {"a": {"b": 1}}
    result = validate(compile_schema(f"export default {schema}.transform(v => {{ v.a.b = 2; return v; }});"), value)
    assert result.ok and result.value == {"a": {"b": 2}}
    assert value == {"a": {"b": 1}}
