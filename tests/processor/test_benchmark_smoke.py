"""Smoke tests of ``benchmarks/processor.py --quick`` and ``processor_share.py --quick``: they run
and their last line carries the figures (no timing is asserted: on a loaded machine the ratio may
be anything)."""

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


def test_quick_processor_share_benchmark_measures_both_orders() -> None:
    _, figures = run_benchmark("processor_share.py", "--quick")
    for mode in ("one_queue", "per_card"):
        run = figures[mode]
        assert run["replies"] == 3 and 0 < run["medianMs"] <= run["worstMs"], mode
        assert set(run["slowAnswers"]) == {"MVU_COMMAND_HOOK_LIMIT"}, mode
    assert figures["worst_ratio"] > 0 and figures["quick"] is True
