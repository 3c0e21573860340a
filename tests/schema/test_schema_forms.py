"""The declaration forms real cards ship, the S-2 registration rule, versions and descriptors."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.schema import Issue, ValidationResult, compile_schema, validate
from mvu_store.schema.program import MVU_ZOD_URL

HELPER_IMPORT = f"import {{ registerMvuSchema }} from '{MVU_ZOD_URL}';\n"
OTHER_URL = "https://cdn.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js"


def run(source: str, value: object, *, version: int = 2, now_ms: int | None = None) -> ValidationResult:
    return validate(compile_schema(source, interpreter_version=version), value, now_ms=now_ms)


def test_descriptor_keeps_the_source_verbatim() -> None:
    source = "export const Schema = z.object({ hp: z.number() });\n"
    assert compile_schema(source) == {"mvuSchema": 1, "interpreterVersion": 2, "source": source}
    assert compile_schema(source, interpreter_version=1)["interpreterVersion"] == 1


def test_full_helper_script_registers_a_loose_root() -> None:
    source = HELPER_IMPORT + """
const Schema = z.object({ hp: z.coerce.number().transform(v => _.clamp(v, 0, 100)).prefault(100) });
$(() => { registerMvuSchema(Schema); });
"""
    result = run(source, {"hp": "250", "note": "kept by the loose root"})
    assert result == ValidationResult(True, {"hp": 100, "note": "kept by the loose root"}, ())


def test_loose_root_does_not_loosen_nested_objects() -> None:
    source = HELPER_IMPORT + "registerMvuSchema(z.object({ inner: z.object({ a: z.number() }) }));"
    assert run(source, {"inner": {"a": 1, "b": 2}, "c": 3}).value == {"inner": {"a": 1}, "c": 3}


def test_loose_root_drops_the_root_strictness_and_checks() -> None:
    source = HELPER_IMPORT + """
const refuseAll = (v, ctx) => ctx.addIssue({ code: 'custom', message: 'x' });
registerMvuSchema(z.strictObject({ a: z.number() }).superRefine(refuseAll));"""
    assert run(source, {"a": 1, "b": 2}) == ValidationResult(True, {"a": 1, "b": 2}, ())


@pytest.mark.parametrize("root", [
    "z.object({ a: z.number() }).transform(v => v)",
    "z.object({ a: z.number() }).prefault({ a: 1 })",
    "z.object({ a: z.number() }).optional()",
    "z.union([z.object({ a: z.number() }), z.object({ b: z.number() })])",
])
def test_only_a_direct_root_object_is_loosened(root: str) -> None:
    source = HELPER_IMPORT + f"registerMvuSchema({root});"
    result = run(source, {"a": 1, "extra": True})
    assert result.ok
    assert "extra" not in result.value


def test_other_urls_and_plain_declarations_keep_the_root_as_declared() -> None:
    other = f"import {{ registerMvuSchema }} from '{OTHER_URL}';\nregisterMvuSchema(z.object({{ a: z.number() }}));"
    bare = "export const Schema = z.object({ a: z.number() });"
    assert run(other, {"a": 1, "b": 2}).value == {"a": 1}
    assert run(bare, {"a": 1, "b": 2}).value == {"a": 1}


def test_version_one_never_loosens_and_lacks_v2_constructors() -> None:
    source = HELPER_IMPORT + "registerMvuSchema(z.object({ a: z.number() }));"
    assert run(source, {"a": 1, "b": 2}, version=1).value == {"a": 1}
    with pytest.raises(MvuError) as refused:
        compile_schema("export const Schema = z.looseObject({});", interpreter_version=1)
    assert refused.value.code == "MVU_UNSUPPORTED"
    assert run("export const Schema = z.looseObject({});", {"k": 1}).value == {"k": 1}


def test_a_factory_can_be_registered() -> None:
    source = HELPER_IMPORT + "const make = () => z.object({ n: z.coerce.number() });\n$(() => registerMvuSchema(make));"
    assert run(source, {"n": "4", "x": 1}).value == {"n": 4, "x": 1}


def test_ready_callbacks_run_after_the_top_level() -> None:
    # jQuery's $(fn) runs fn later, so a card may register before it declares.
    source = HELPER_IMPORT + "$(() => { registerMvuSchema(Schema); });\nconst Schema = z.object({ a: z.number() });"
    assert run(source, {"a": 1}).ok


def test_minified_bundle_shape() -> None:
    source = (f"import{{registerMvuSchema as e}}from'{MVU_ZOD_URL}';"
              "const r=z,t=r.z.object({a:r.z.boolean().default(!0),b:r.z.number().default(void 0===1?1:2)});"
              "$(()=>{e(t)});")
    assert run(source, {"c": 1}).value == {"a": True, "b": 2, "c": 1}


def test_typescript_source_with_types_erased() -> None:
    source = HELPER_IMPORT + """
type Mood = 'calm' | 'angry';
const clamp100 = (v: number): number => _.clamp(v, 0, 100);
export const Schema = z.object({
  mood: z.enum(['calm', 'angry']).prefault('calm' as Mood),
  hp: z.coerce.number().transform(clamp100).prefault(100),
});
export type Schema = z.output<typeof Schema>;
$(() => registerMvuSchema(Schema));
"""
    assert run(source, {"hp": "300"}).value == {"mood": "calm", "hp": 100}


def test_default_export_and_last_expression_are_found() -> None:
    assert run("export default z.array(z.number());", [1, 2]).value == [1, 2]
    assert run("z.string().max(2)", "abc").issues[0].code == "too_big"


def test_import_of_zod_and_lodash_binds_local_capabilities() -> None:
    source = ("import { z } from 'zod';\nimport _ from 'lodash';\n"
              "export const Schema = z.number().transform(v => _.clamp(v, 0, 1));")
    assert run(source, 5).value == 1


def test_missing_schema_is_refused() -> None:
    with pytest.raises(MvuError) as refused:
        compile_schema("const helper = 1;")
    assert refused.value.code == "MVU_SCHEMA"


def test_registering_something_else_is_refused() -> None:
    with pytest.raises(MvuError) as refused:
        compile_schema(HELPER_IMPORT + "registerMvuSchema({ hp: 1 });")
    assert refused.value.code == "MVU_SCHEMA"


def test_unknown_interpreter_version_is_refused() -> None:
    with pytest.raises(MvuError) as refused:
        compile_schema("export default z.any();", interpreter_version=3)
    assert refused.value.code == "MVU_VERSION"
    with pytest.raises(MvuError):
        validate({"mvuSchema": 1, "interpreterVersion": 7, "source": "export default z.any();"}, 1)


@pytest.mark.parametrize("descriptor", [None, {}, {"mvuSchema": 2, "interpreterVersion": 2, "source": ""},
                                        {"mvuSchema": 1, "interpreterVersion": 2, "source": 5}])
def test_malformed_descriptors_are_refused(descriptor: object) -> None:
    with pytest.raises(MvuError) as refused:
        validate(descriptor, {})  # type: ignore[arg-type]
    assert refused.value.code == "MVU_SCHEMA"


def test_date_now_reads_the_callers_clock() -> None:
    source = "export const Schema = z.object({ at: z.number().default(() => Date.now()) });"
    assert run(source, {}, now_ms=1234).value == {"at": 1234}
    with pytest.raises(MvuError) as refused:
        run(source, {})
    assert refused.value.code == "MVU_SCHEMA"


def test_compiled_forms_are_cached_but_validations_do_not_share_state() -> None:
    source = ("export const Schema = z.object({ list: z.array(z.number()).default([]) })"
              ".transform(v => { v.list.push(1); return v });")
    descriptor = compile_schema(source)
    assert validate(descriptor, {}).value == {"list": [1]}
    assert validate(descriptor, {}).value == {"list": [1]}  # the default was not mutated in place


def test_non_json_input_is_refused() -> None:
    with pytest.raises(MvuError) as refused:
        validate(compile_schema("export default z.any();"), {1: "x"})
    assert refused.value.code == "MVU_JSON"


def test_issues_carry_code_path_and_message() -> None:
    result = run("export const Schema = z.object({ a: z.array(z.number()) });", {"a": [1, "x"]})
    assert result.ok is False
    assert result.value is None
    assert result.issues == (Issue("invalid_type", ["a", 1], "Invalid input: expected number, received string"),)
    assert result.issues[0].to_dict() == {"code": "invalid_type", "path": ["a", 1],
                                          "message": "Invalid input: expected number, received string"}


@pytest.mark.parametrize(("schema", "value", "message"), [
    ("z.string().min(2)", "a", "Too small: expected string to have >=2 characters"),
    ("z.number().max(3)", 4, "Too big: expected number to be <=3"),
    ("z.number().gt(3)", 3, "Too small: expected number to be >3"),
    ("z.enum(['a', 'b'])", "c", 'Invalid option: expected one of "a"|"b"'),
    ("z.literal('a')", "c", 'Invalid input: expected "a"'),
    ("z.strictObject({})", {"x": 1, "y": 2}, 'Unrecognized keys: "x", "y"'),
    ("z.string().regex(/^a\\d$/)", "ab", "Invalid string: must match pattern /^a\\d$/"),
    ("z.number().min(5, 'too low')", 1, "too low"),
    ("z.number().int({ message: 'whole' })", 1.5, "whole"),
    ("z.coerce.number()", "abc", "Invalid input: expected number, received NaN"),
    ("z.array(z.any()).max(1)", [1, 2], "Too big: expected array to have <=1 items"),
])
def test_messages_follow_zod_english_defaults(schema: str, value: object, message: str) -> None:
    result = run(f"export default {schema};", value)
    assert [issue.message for issue in result.issues] == [message]


def test_string_lengths_count_code_points_like_zod() -> None:
    assert run("export default z.string().max(1);", "😀").ok
    assert not run("export default z.string().min(2);", "😀").ok
    assert run("export default z.any().transform(s => s.length);", "😀").value == 2  # JavaScript's own length


@pytest.mark.parametrize("schema", [
    "z.any().transform(v => { v.a.push(2); v.b = 1; return v })",
    "z.preprocess(v => { v.a.push(2); return v }, z.object({ a: z.array(z.number()) }))",
    "z.object({ a: z.array(z.number()) }).transform(v => { v.a.push(2); return v })",
    "z.record(z.string(), z.any()).transform(v => { v.a.push(2); return v })",
])
def test_the_callers_value_is_never_changed(schema: str) -> None:
    value = {"a": [1]}
    result = run(f"export default {schema};", value)
    assert result.ok
    assert result.value["a"] == [1, 2]
    assert value == {"a": [1]}


@pytest.mark.parametrize(("value", "code"), [
    ({"a": float("nan")}, "MVU_JSON"), ({"a": (1, 2)}, "MVU_JSON"), ({"a": {1, 2}}, "MVU_JSON"),
    ({1: "a"}, "MVU_JSON"), (float("inf"), "MVU_JSON"),
])
def test_inputs_must_be_json(value: object, code: str) -> None:
    with pytest.raises(MvuError) as refused:
        run("export default z.any();", value)
    assert refused.value.code == code


def test_input_size_limits_hold() -> None:
    deep: object = 1
    for _ in range(80):
        deep = [deep]
    with pytest.raises(MvuError) as refused:
        run("export default z.any();", deep)
    assert refused.value.code == "MVU_LIMIT"
    with pytest.raises(MvuError) as wide:
        run("export default z.any();", list(range(100_001)))
    assert wide.value.code == "MVU_LIMIT"


def test_integral_floats_come_out_as_integers() -> None:
    value = run("export default z.object({ a: z.number(), b: z.any() });", {"a": 5.0, "b": [2.0, 2.5]}).value
    assert [type(value["a"]), type(value["b"][0]), type(value["b"][1])] == [int, int, float]


def test_export_lists_and_a_lone_schema_constant_are_found() -> None:
    assert run("const S = z.number();\nexport { S as Schema };", "x").issues[0].code == "invalid_type"
    assert run("const Schema = z.string();", 1).issues[0].code == "invalid_type"


def test_document_ready_registration() -> None:
    source = HELPER_IMPORT + "const Schema = z.object({ a: z.number() });\n" \
        "$(document).ready(() => registerMvuSchema(Schema));"
    assert run(source, {"a": 1, "b": 2}).value == {"a": 1, "b": 2}


def test_awaited_dynamic_import_of_the_helper_binds_registration() -> None:
    source = f"""
let registerMvuSchema;
try {{
  ({{ registerMvuSchema }} = await import('{OTHER_URL}'));
}} catch (error) {{
  ({{ registerMvuSchema }} = await import('{MVU_ZOD_URL}'));
}}
const Schema = z.object({{ a: z.number() }});
$(() => {{ registerMvuSchema(Schema); }});
"""
    assert run(source, {"a": 1, "b": 2}).value == {"a": 1}  # the first URL is not the verified one
    verified = f"const {{ registerMvuSchema }} = await import('{MVU_ZOD_URL}');\nregisterMvuSchema(z.object({{}}));"
    assert run(verified, {"b": 2}).value == {"b": 2}


def test_a_top_level_wait_for_the_mvu_runtime_is_a_no_op() -> None:
    source = HELPER_IMPORT + """await waitGlobalInitialized('Mvu');
registerMvuSchema(z.object({ hp: z.number().prefault(1) }));"""
    assert run(source, {"extra": 2}).value == {"hp": 1, "extra": 2}


def test_a_declaration_may_drop_keys_with_an_object_rest() -> None:
    source = """export default z.object({ a: z.number(), old: z.any() }).passthrough()
  .transform(value => { const { old: _retired, ...rest } = value; return rest; });"""
    assert run(source, {"a": 1, "old": 2, "b": 3}).value == {"a": 1, "b": 3}


@pytest.mark.parametrize("source", [
    "const m = await import('https://example.com/evil.js');",
    "const m = import('zod');",
    "function* g() { yield 1; }",
])
def test_other_dynamic_imports_and_generators_are_refused(source: str) -> None:
    with pytest.raises(MvuError) as refused:
        compile_schema(source)
    assert refused.value.code == "MVU_SCHEMA_CODE"


@pytest.mark.parametrize("source", ["await fetch('https://example.com');", "window.fetch('https://example.com');"])
def test_the_browser_network_is_not_defined(source: str) -> None:
    with pytest.raises(MvuError) as failed:
        compile_schema(source)
    assert failed.value.code == "MVU_SCHEMA"
    assert "is not defined" in str(failed.value)


def test_named_lodash_imports() -> None:
    source = "import { clamp } from 'lodash';\nexport default z.number().transform(v => clamp(v, 0, 1));"
    assert run(source, 3).value == 1


def test_typescript_type_only_imports_and_exports_are_erased() -> None:
    source = """import type { Mood } from './types';
import { type Helper, z } from 'zod';
const Schema = z.object({ mood: z.string() as z.ZodType<Mood> });
export type { Mood };
export { Schema };
"""
    assert run(source, {"mood": "calm"}).value == {"mood": "calm"}


def test_an_interpreter_defect_still_surfaces_as_mvu_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from mvu_store.schema import descriptor

    def broken(source: str, version: int) -> None:
        raise KeyError("defect")

    monkeypatch.setattr(descriptor, "build", broken)
    with pytest.raises(MvuError) as refused:
        compile_schema("export default z.never(); // a source no other test compiles")
    assert refused.value.code == "MVU_SCHEMA"
    assert refused.value.details == {"internal": "KeyError"}
