"""Compiled transforms (mvu_store.schema.inline) return what the interpreter's call returns.

Every transform of the test corpus (the Zod parity fixtures and the benchmarks' declarations)
that the fast path compiles is called both ways on random values: JSON values, NaN, the
infinities, -0, integers past 2**53, undefined, at call depths near the limit. When the
interpreter answers, the compiled function answers the same value (types included: an int stays
an int, -0.0 stays -0.0) and charges the same fuel, or gives up with Bail (the fast path then
runs the interpreter); when the interpreter refuses, the compiled function never answers.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.js.values import UNDEFINED, Budget
from mvu_store.schema.descriptor import _compiled
from mvu_store.schema.inline import Bail, compile_transform
from mvu_store.schema.runtime import JsFunction
from mvu_store.schema.types import Schema, Transform
from tests.schema.test_schema_memo import CORPUS, _benchmark


def _transforms(root: Schema) -> Iterator[JsFunction]:
    seen: set[int] = set()
    stack: list[Any] = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Schema):
            stack.extend(item.refs())
            if isinstance(item, Transform) and not item.wants_ctx and isinstance(item.fn, JsFunction):
                yield item.fn
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())


def _cases() -> list[tuple[JsFunction, Any, frozenset[int]]]:
    cases = []
    for source, _ in CORPUS:
        try:
            compiled = _compiled(source, 2)
        except MvuError:
            continue
        for fn in _transforms(compiled.root):
            fast = compile_transform(fn)
            if fast is not None:
                cases.append((fn, fast, compiled.frozen))
    return cases


CASES = _cases()
NUMBERS = (st.integers(-300, 300) | st.integers(-2**60, 2**60)
           | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([-0.0, 0.0, 0.5, -1.5, 100.0]))
LEAVES = (st.none() | st.booleans() | NUMBERS | st.just(UNDEFINED)
          | st.sampled_from(["", "a", "12", "-3.5", "abc", " 7 ", "NaN", "Infinity"]) | st.text(max_size=6))
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=25)
    | st.dictionaries(st.sampled_from(["a", "b", "c", "count", "xenon2", "length", "0", "10"]), inner, max_size=5),
    max_leaves=30,
)


def _typed(value: Any) -> Any:
    """A comparable picture of a value, exact about number types, -0 and NaN."""
    if type(value) is float:
        return ("float", repr(value))
    if type(value) is list:
        return ("list", [_typed(item) for item in value])
    if type(value) is dict:
        return ("dict", [(key, _typed(item)) for key, item in value.items()])
    if isinstance(value, (str, int, bool)) or value is None or value is UNDEFINED:
        return (type(value).__name__, repr(value))
    return ("opaque", type(value).__name__)


def test_the_benchmark_transforms_compile() -> None:
    bench = _benchmark("schema")
    root = _compiled(bench.sixty_field_declaration(), 2).root
    functions = list(_transforms(root))
    assert len(functions) >= 20
    assert all(compile_transform(fn) is not None for fn in functions)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), value=VALUES, depth=st.sampled_from([0, 0, 1, 62, 63, 64]))
def test_compiled_transforms_equal_the_interpreters_call(case: tuple[JsFunction, Any, frozenset[int]],
                                                          value: Any, depth: int) -> None:
    fn, fast, frozen = case
    slow_budget, fast_budget = Budget(0, frozen=frozen), Budget(0, frozen=frozen)
    slow_budget.depth = fast_budget.depth = depth
    try:
        expected: Any = ("value", fn.call(slow_budget, [copy.deepcopy(value)]))
    except Exception as error:  # any refusal: the compiled form must not answer
        expected = ("raised", error)
    try:
        got: Any = ("value", fast(fast_budget, copy.deepcopy(value)))
    except Exception as error:
        got = ("raised", error)
    if expected[0] == "raised":
        assert got[0] == "raised"
        return
    if got[0] == "raised":
        assert isinstance(got[1], Bail), got[1]
        return
    assert _typed(got[1]) == _typed(expected[1])
    assert fast_budget.fuel == slow_budget.fuel
    assert fast_budget.depth == slow_budget.depth

