"""A ValidationMemo never changes a result: memo runs equal fresh runs, step after step.

States evolve as the service's do: each edit copies the containers along one path (never
mutating), so untouched subtrees stay the identical objects the memo saw. Declarations are the
test corpus (every Zod parity fixture) and the benchmarks' declarations.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.schema import ValidationMemo, compile_schema, validate
from mvu_store.schema.native import CLOCK, IMPURE, PURE, purity
from mvu_store.schema.program import MVU_ZOD_URL

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _benchmark(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def _corpus() -> list[tuple[str, list[Any]]]:
    cases: list[tuple[str, list[Any]]] = []
    for path in sorted(HERE.glob("zod_*parity.json")):
        for case in json.loads(path.read_text()):
            cases.append((case["source"], list(case["inputs"])))
    schema_bench, ingest_bench = _benchmark("schema"), _benchmark("ingest")
    cases.append((schema_bench.sixty_field_declaration(), [schema_bench.five_kib_state(), {}]))
    cases.append((ingest_bench.SCHEMA, [ingest_bench.initial_state(), {}]))
    cases.append((PREDICATES, [{"a": {"x": {"count": "2"}, "y": {"count": 0, "note": "n"}, "10": {"count": -1}},
                                "b": {"x": 1, "y": 0, "z": "s"}, "c": [0, 1, "a", None], "d": {"p": 1, "q": 2.5},
                                "e": {"p": None, "q": 3}, "f": {"k": {"n": 1}, "m": {"n": 0}}}, {}]))
    return cases


# lodash predicates the fast path compiles into pick_by's loop (inline.py), and one it leaves to
# the interpreter (three parameters)
PREDICATES = f"""import {{ registerMvuSchema }} from '{MVU_ZOD_URL}';
export const Schema = z.object({{
  a: z.record(z.string(), z.object({{ count: z.coerce.number(), note: z.string().prefault('') }}))
    .transform(items => _.omitBy(items, ({{ count }}) => count <= 0)).prefault({{}}),
  b: z.record(z.string(), z.any()).transform(items => _.pickBy(items, (v, k) => k !== 'x' && v)).prefault({{}}),
  c: z.array(z.any()).transform(list => _.pickBy(list, v => v)).prefault([]),
  d: z.record(z.string(), z.number()).transform(items => _.pickBy(items, (v, k, extra) => v > 1)).prefault({{}}),
  e: z.record(z.string(), z.any()).transform(items => _.omitBy(items, v => v == null)).prefault({{}}),
  f: z.any().transform(items => _.pickBy(items, ({{ n }}) => n)).prefault({{}}),
}});
$(() => {{ registerMvuSchema(Schema); }});
"""


CORPUS = _corpus()
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-200, 200) | st.floats(-1e3, 1e3, allow_nan=False)
    | st.sampled_from(["", "a", "calm", "happy", "12", "top", "sun", "x" * 30]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "hp", "count", "b"]), inner,
                                                                  max_size=3),
    max_leaves=6,
)


def _outcome(descriptor: dict[str, Any], state: Any, now_ms: int, memo: ValidationMemo | None) -> Any:
    try:
        result = validate(descriptor, state, now_ms=now_ms, memo=memo)
    except MvuError as error:
        return ("error", error.code, error.message, error.details)
    return (result.ok, json.dumps(result.value, sort_keys=True), [issue.to_dict() for issue in result.issues])


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if type(value) is dict:
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif type(value) is list:
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """``value`` with ``path`` set to ``new``: the containers along the path are copied."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy: Any = dict(value) if type(value) is dict else list(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


def _delete(value: Any, path: tuple[Any, ...]) -> Any:
    if len(path) == 1:
        copy: Any = dict(value) if type(value) is dict else list(value)
        del copy[path[0]]
        return copy
    return _replace(value, path[:1], _delete(value[path[0]], path[1:]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CORPUS), data=st.data())
def test_memo_results_equal_fresh_runs(case: tuple[str, list[Any]], data: st.DataObject) -> None:
    source, inputs = case
    try:
        descriptor = compile_schema(source)
    except MvuError:
        return
    memo = ValidationMemo()
    state = data.draw(st.sampled_from(inputs)) if inputs else {}
    now_ms = 1_700_000_000_000
    for _ in range(data.draw(st.integers(1, 6))):
        fresh = _outcome(descriptor, state, now_ms, None)
        assert _outcome(descriptor, state, now_ms, memo) == fresh
        move = data.draw(st.sampled_from(["edit", "edit", "delete", "output", "clock", "again"]))
        if move == "output" and fresh[0] is True:
            state = json.loads(fresh[1])  # the service goes on from the parsed state
        elif move == "clock":
            now_ms += data.draw(st.integers(1, 10**6))
        elif move in {"edit", "delete"}:
            paths = _paths(state)
            path = data.draw(st.sampled_from(paths))
            if move == "delete" and path:
                state = _delete(state, path)
            else:
                state = _replace(state, path, data.draw(JSON | st.sampled_from(
                    [item for item in inputs if item is not state] or [None])))


def test_a_one_path_change_reuses_the_rest() -> None:
    bench = _benchmark("schema")
    descriptor = compile_schema(bench.sixty_field_declaration())
    state = bench.five_kib_state()
    memo = ValidationMemo()
    first = validate(descriptor, state, now_ms=1, memo=memo)
    edited = _replace(state, ("alice", "hp"), 7)
    second = validate(descriptor, edited, now_ms=1, memo=memo)
    assert second == validate(descriptor, edited, now_ms=1)
    assert second.value["alice"]["hp"] == 7
    assert second.value["bob"] is first.value["bob"]  # untouched: the very same result
    assert second.value["alice"] is not first.value["alice"]


def _root(source: str) -> Any:
    from mvu_store.schema import descriptor as module

    return module._compiled(source, 2).root


def test_purity_is_decided_conservatively() -> None:
    assert purity(_root("export const Schema = z.number().transform(v => _.clamp(v, 0, 9));")) == PURE
    assert purity(_root("export const Schema = z.number().transform(v => v + Date.now());")) == CLOCK
    assert purity(_root("const now = () => Date.now();\n"
                        "export const Schema = z.number().default(now);")) == CLOCK
    assert purity(_root("let n = 0;\nexport const Schema = z.number().refine(v => v > n);")) == PURE  # sealed
    assert purity(_root("export const Schema = z.lazy(() => z.number());")) == IMPURE
    assert purity(_root("const cap = {max: 3};\n"
                        "export const Schema = z.number().transform(v => { cap.max = v; return v; });")) == IMPURE


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CORPUS), data=st.data())
def test_the_fast_path_answers_as_the_interpreter(case: tuple[str, list[Any]], data: st.DataObject) -> None:
    """Every validation first tries the compiled fast path: with it or without, the same outcome."""
    source, inputs = case
    try:
        descriptor = compile_schema(source)
    except MvuError:
        return
    state = data.draw(st.sampled_from(inputs)) if inputs else {}
    paths = _paths(state)
    state = _replace(state, data.draw(st.sampled_from(paths)), data.draw(JSON)) if data.draw(st.booleans()) else state
    assert_fast_path_answers_as_the_interpreter(descriptor, state)


def assert_fast_path_answers_as_the_interpreter(descriptor: dict[str, Any], state: Any) -> None:
    from mvu_store.schema import descriptor as module

    fast = _outcome(descriptor, state, 5, None)
    native, module._native = module._native, lambda key, compiled: None  # type: ignore[assignment]
    try:
        assert _outcome(descriptor, state, 5, None) == fast
    finally:
        module._native = native
