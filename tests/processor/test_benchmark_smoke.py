"""Smoke test of ``benchmarks/processor.py --quick``: it runs and its last line carries the
figures (no timing is asserted: on a loaded machine the ratio may be anything)."""

from __future__ import annotations

from tests.benchmark_runs import run_benchmark


def test_quick_processor_benchmark_prints_its_figures_as_json_on_its_last_line() -> None:
    _, figures = run_benchmark("processor.py", "--quick")
    assert isinstance(figures["added_cost_ratio"], float | int)
    assert isinstance(figures["added_cost_ratio_filtering"], float | int)
    assert figures["first_turn_ms"] > 0 and figures["turn_ms_plain"] > 0 and figures["turn_ms_processor"] > 0
    assert figures["turn_ms_processor_filtering"] > 0
    assert (figures["rounds"], figures["turns_per_round"], figures["listener_count"], figures["quick"]) == (
        2, 3, 1, True)
