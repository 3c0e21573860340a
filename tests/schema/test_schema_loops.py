"""`while` and `do…while` in declarations: JavaScript's semantics (test first or body first,
`break`, `continue`, `return` from inside), at most 1,000 passes, and the shared fuel budget."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.schema import compile_schema, validate


def run(source: str, value: Any) -> Any:
    result = validate(compile_schema(source), value, now_ms=0)
    assert result.ok, result.issues
    return result.value


def refusal(source: str, value: Any) -> MvuError:
    with pytest.raises(MvuError) as refused:
        validate(compile_schema(source), value, now_ms=0)
    return refused.value


def test_a_while_loop_tests_before_each_pass() -> None:
    source = "export default z.number().transform(n => { let i = 0; while (i < n) { i += 2 } return i });"
    assert run(source, 7) == 8
    assert run(source, 0) == 0  # the test fails first: the body never runs


def test_a_do_while_loop_runs_its_body_once_before_the_test() -> None:
    source = "export default z.number().transform(n => { let runs = 0; do { runs++ } while (runs < n); return runs });"
    assert run(source, 0) == 1
    assert run(source, 3) == 3


def test_break_continue_and_return_leave_a_while_loop_as_in_javascript() -> None:
    # A card's level table in Chinese: 经验 (experience) buys 等级 (levels); 10 is the cap.
    source = """
export const Schema = z.object({ 经验: z.number(), 等级: z.number().prefault(1) }).transform(v => {
  let 等级 = 1, 剩余 = v.经验;
  while (true) {
    const 需要 = 等级 * 100;
    if (剩余 < 需要) break;
    剩余 -= 需要;
    等级++;
    if (等级 >= 10) return { ...v, 等级, 经验: 0 };
  }
  return { ...v, 等级, 经验: 剩余 };
});
"""
    assert run(source, {"经验": 350}) == {"经验": 50, "等级": 3}
    assert run(source, {"经验": 99_999}) == {"经验": 0, "等级": 10}
    evens = "export default z.number().transform(n => { let i = 0, sum = 0; do { i++; if (i % 2) continue; " \
            "sum += i } while (i < n); return sum });"
    assert run(evens, 6) == 2 + 4 + 6  # `continue` in a do…while goes to the test, not the top


def test_a_switch_break_inside_a_loop_leaves_the_switch_only() -> None:
    source = """export default z.array(z.string()).transform(words => {
      let i = 0, out = '';
      while (i < words.length) {
        switch (words[i]) { case 'skip': i++; continue; case 'stop': i = words.length; break; default: out += words[i] }
        i++;
      }
      return out;
    });"""
    assert run(source, ["a", "skip", "b", "stop", "c"]) == "ab"


def test_each_pass_gets_its_own_let_bindings() -> None:
    source = "export default z.number().transform(n => { const fs = []; let i = 0; " \
             "while (i < n) { const j = i * 10; fs.push(() => j); i++ } return fs.map(f => f()) });"
    assert run(source, 3) == [0, 10, 20]


@pytest.mark.parametrize("loop", ["while (true) {}", "do {} while (1)", "while (i < 5000) i++", "for (;;) {}",
                                  "for (let k = 0; ; k++) i++"])
def test_a_loop_passes_at_most_a_thousand_times(loop: str) -> None:
    error = refusal(f"export default z.any().transform(v => {{ let i = 0; {loop}; return i }});", None)
    assert error.code == "MVU_LIMIT"
    assert error.details["kind"] == "loop"


def test_a_thousand_passes_are_allowed() -> None:
    source = "export default z.number().transform(n => { let i = 0; while (i < n) i++; return i });"
    assert run(source, 1000) == 1000
    assert refusal(source, 1001).details["kind"] == "loop"


@pytest.mark.parametrize("inner", ["let j = 0; while (j < 1000) j++;", "let j = 0; do { j++ } while (j < 1000);",
                                   "for (const j of _.range(1000)) {}"])
def test_nested_loops_share_the_fuel_budget_like_for_of(inner: str) -> None:
    source = f"export default z.any().transform(v => {{ let i = 0; while (i < 1000) {{ {inner} i++ }} return i }});"
    error = refusal(source, None)
    assert error.code == "MVU_LIMIT"
    assert error.details["kind"] == "fuel"


def test_a_top_level_while_runs_once_at_compile_time() -> None:
    source = "let total = 0, n = 0;\nwhile (n < 4) { n++; total += n }\n" \
             "export default z.object({ t: z.number().default(total) });"
    assert run(source, {}) == {"t": 10}
    with pytest.raises(MvuError) as refused:
        compile_schema("let n = 0;\nwhile (n >= 0) n++;\nexport default z.any();")
    assert refused.value.details["kind"] == "loop"


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 1000), step=st.integers(1, 9))
def test_while_counts_as_for_of_does(n: int, step: int) -> None:
    """Property: a `while` and a `do…while` stepping through 0..n visit what `for…of` visits."""
    by_while = f"export default z.number().transform(n => {{ const seen = []; let i = 0; " \
               f"while (i < n) {{ seen.push(i); i += {step} }} return seen }});"
    by_do = f"export default z.number().transform(n => {{ const seen = []; let i = 0; " \
            f"if (n > 0) do {{ seen.push(i); i += {step} }} while (i < n); return seen }});"
    by_for = f"export default z.number().transform(n => {{ const seen = []; " \
             f"for (const i of _.range(0, n, {step})) seen.push(i); return seen }});"
    expected = list(range(0, n, step))
    assert run(by_while, n) == expected
    assert run(by_do, n) == expected
    assert run(by_for, n) == expected
