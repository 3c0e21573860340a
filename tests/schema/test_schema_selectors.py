"""Transforms that select parts of their input skip the normalising walk only when it is a no-op.

A compiled `x => _.pickBy(x, literal)` or `list => list.slice(n)` returns parts of its parsed
input; the fast path writes that result without to_json's walk unless raw-mode code made a value
the walk could change while the input was parsed (a float such as 1.0 or -0.0, a default, any
declaration code's result, an interpreter-parsed node ...). Here every such road sits beneath a
selector, fed random values (integral floats, -0, NaN-free floats, huge ints, wrong types), and
the answer is compared with the interpreter's, number types included.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mvu_store.schema import compile_schema
from mvu_store.schema.descriptor import _compiled
from mvu_store.schema.native import _Generator
from mvu_store.schema.program import MVU_ZOD_URL
from tests.schema.test_schema_memo import _benchmark, assert_fast_path_answers_as_the_interpreter

PICK = ".transform(x => _.pickBy(x, v => v !== 'drop'))"
FIELDS = {
    "numbers": f"z.record(z.string(), z.number()){PICK}",
    "coerced": "z.array(z.coerce.number()).transform(list => list.slice(0, 3))",
    "defaults": f"z.record(z.string(), z.object({{ n: z.number().prefault(-0), s: z.string().prefault('') }})){PICK}",
    "literal": f"z.record(z.string(), z.literal(1)){PICK}",
    "any": f"z.record(z.string(), z.any()){PICK}",
    "nested": "z.array(z.number().transform(v => v / 2)).transform(list => list.slice(-2))",
    "loose": f"z.record(z.string(), z.looseObject({{ n: z.number() }})){PICK}",
    "enum": f"z.record(z.enum(['p', 'q']), z.number().prefault(-0)){PICK}",
    "union": "z.array(z.union([z.number(), z.string()])).transform(list => list.slice(1))",
    "checked": f"z.record(z.string(), z.number().refine(v => v > -1e9)){PICK}",
    "omit": "z.record(z.string(), z.object({ n: z.coerce.number() })).transform(x => _.omitBy(x, ({ n }) => n === 0))",
    "plain": "z.array(z.string()).transform(list => list.slice(-2))",
}
SOURCE = f"""import {{ registerMvuSchema }} from '{MVU_ZOD_URL}';
export const Schema = z.object({{
{",".join(f"  {name}: {schema}.prefault({'[]' if schema.startswith('z.array') else '{}'})"
          for name, schema in FIELDS.items())}
}});
$(() => {{ registerMvuSchema(Schema); }});
"""

NUMBER = (st.integers(-5, 5) | st.integers(-2**60, 2**60) | st.floats(-1e3, 1e3, allow_nan=False)
          | st.sampled_from([-0.0, 0.0, 1.0, 2.0, 2.5, -3.0, 1e21, 1e300]))
TEXT = st.sampled_from(["drop", "a", "12", "1.0", "-0", ""])
LEAF = NUMBER | TEXT | st.booleans() | st.none()
KEYS = st.sampled_from(["a", "b", "p", "q", "10", "2"])


def _records(item: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.dictionaries(KEYS, item, max_size=4)


# values each field mostly accepts (the fast path answers them), and sometimes anything at all
FITTING: dict[str, st.SearchStrategy[Any]] = {
    "numbers": _records(NUMBER),
    "coerced": st.lists(NUMBER | TEXT, max_size=5),
    "defaults": _records(st.fixed_dictionaries({}, optional={"n": NUMBER, "s": TEXT})),
    "literal": _records(st.sampled_from([1, 1.0])),
    "any": _records(LEAF | st.lists(NUMBER, max_size=2) | _records(NUMBER)),
    "nested": st.lists(NUMBER, max_size=5),
    "loose": _records(st.fixed_dictionaries({"n": NUMBER}, optional={"extra": LEAF})),
    "enum": st.fixed_dictionaries({}, optional={"p": NUMBER, "q": NUMBER}),
    "union": st.lists(NUMBER | TEXT, max_size=5),
    "checked": _records(NUMBER),
    "omit": _records(st.fixed_dictionaries({"n": NUMBER | TEXT})),
    "plain": st.lists(TEXT, max_size=5),
}
ANYTHING = _records(LEAF | _records(LEAF)) | st.lists(LEAF, max_size=5) | LEAF


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=st.fixed_dictionaries({}, optional={name: fitting | ANYTHING if name == "any" else fitting
                                                 for name, fitting in FITTING.items()}) | st.dictionaries(
    st.sampled_from(sorted(FIELDS)), ANYTHING, max_size=3))
def test_selected_parts_are_written_as_the_interpreter_writes_them(state: dict[str, Any]) -> None:
    assert_fast_path_answers_as_the_interpreter(compile_schema(SOURCE), state)


def test_every_selector_here_and_in_the_benchmark_is_recognised() -> None:
    generator = _Generator(memo=False)
    generator.build(_compiled(SOURCE, 2).root)
    assert len(generator.functions.selectors) == len(FIELDS)
    bench = _benchmark("schema")
    generator = _Generator(memo=False)
    generator.build(_compiled(bench.sixty_field_declaration(), 2).root)
    assert len(generator.functions.selectors) == 2  # the inventory's pickBy, the log's slice
