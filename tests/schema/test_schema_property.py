"""Random source text never crashes the interpreter: only MvuError escapes, within the budget."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import normalize
from mvu_store.schema import ValidationResult, compile_schema, validate

# Fragments of real declarations, so random programs often parse and reach the interpreter.
TOKENS = [
    "z", ".", "object", "array", "record", "string", "number", "coerce", "transform", "prefault", "default",
    "optional", "union", "enum", "(", ")", "{", "}", "[", "]", ",", ":", ";", "=>", "v", "x", "const", "let",
    "=", "+", "-", "*", "/", "%", "?", "??", "?.", "&&", "||", "!", "===", "<", ">", "1", "0", "-1", "1e400",
    "'a'", "`t${v}`", "_.clamp", "Math.max", "return", "if", "else", "for", "of", "...", "export", "default",
    "registerMvuSchema", "$", "__proto__", "length", "constructor", "/^a{1,3}$/", "Date.now()", "\n",
]
SOURCES = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(TOKENS), max_size=60).map(" ".join),
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


def attempt(source: str, value: object) -> str | None:
    """The code of the MvuError the pair raises, or None when it compiles and validates.

    An interpreter defect also surfaces as MvuError (the public contract), marked ``internal``:
    that fails the test, so the net never hides a bug from it.
    """
    try:
        validate(compile_schema(source), value, now_ms=0)
    except MvuError as error:
        return "INTERNAL" if "internal" in error.details else error.code
    return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=SOURCES, value=VALUES)
def test_random_sources_only_raise_mvu_errors(source: str, value: object) -> None:
    code = attempt(source, value)  # any other exception fails the test
    assert code is None or code.startswith("MVU_")


@settings(max_examples=200, deadline=None)
@given(body=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=30).map(" ".join), value=VALUES)
def test_random_transform_bodies_only_raise_mvu_errors(body: str, value: object) -> None:
    code = attempt(f"export const Schema = z.any().transform(v => {{ {body} }});", value)
    assert code is None or code.startswith("MVU_")


# Random but well-formed declarations: the interpreter must be deterministic (no state carried
# between validations), answer with JSON, and refuse only through MvuError.
LEAVES = st.sampled_from([
    "z.number()", "z.coerce.number()", "z.string()", "z.coerce.string()", "z.boolean()", "z.any()",
    "z.enum(['a', 'b'])", "z.literal(1)", "z.number().int().min(0).max(9)", "z.string().max(3)",
    "z.coerce.number().transform(v => _.clamp(v, 0, 10))", "z.string().regex(/^[a-c]{1,3}$/)",
])
WRAPPERS = st.sampled_from([
    "{}.optional()", "{}.nullable()", "{}.default(1)", "{}.prefault(2)", "{}.catch(0)",
    "z.array({})", "z.record(z.string(), {})", "z.union([{}, z.string()])", "{}.transform(v => [v])",
    "z.object({{ k: {} }})", "z.looseObject({{ k: {} }})", "z.strictObject({{ k: {} }})",
    "z.preprocess(v => v ?? 0, {})", "{}.refine(v => v !== 3, 'three')",
])


def _nest(leaf: str, wrappers: list[str]) -> str:
    for wrapper in wrappers:
        leaf = wrapper.replace("{{", "\0").replace("}}", "\1").format(leaf).replace("\0", "{").replace("\1", "}")
    return leaf


@settings(max_examples=300, deadline=None)
@given(leaf=LEAVES, wrappers=st.lists(WRAPPERS, max_size=4), value=VALUES)
def test_generated_declarations_are_deterministic_json_and_only_refuse_cleanly(
    leaf: str, wrappers: list[str], value: object
) -> None:
    source = f"export default {_nest(leaf, wrappers)};"
    descriptor = compile_schema(source)
    first, second = attempt_result(descriptor, value), attempt_result(descriptor, value)
    assert first == second
    assert first != "INTERNAL"
    if isinstance(first, ValidationResult) and first.ok:
        assert normalize(first.value)[0] == first.value


def attempt_result(descriptor: dict[str, object], value: object) -> ValidationResult | str:
    try:
        return validate(descriptor, value, now_ms=0)
    except MvuError as error:
        return "INTERNAL" if "internal" in error.details else error.code
