"""Smoke test of ``benchmarks/prompt_lease.py``: it runs small and its last line carries the
figures (no timing is asserted); the script itself asserts the tolerant lease stayed current
after a logged system message and the strict one did not."""

from __future__ import annotations

from tests.benchmark_runs import run_benchmark


def test_the_prompt_lease_benchmark_prints_its_figures_as_json_on_its_last_line() -> None:
    lines, figures = run_benchmark("prompt_lease.py", "--rounds", "2", "--turns", "3", "--reads", "2")
    assert any("request-lease" in line for line in lines)
    assert figures["read_ratio"] > 0 and figures["check_us"] > 0
    assert (figures["rounds"], figures["turns"], figures["reads"]) == (2, 3, 2)
