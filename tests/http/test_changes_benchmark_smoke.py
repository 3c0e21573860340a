"""Smoke test of ``benchmarks/changes.py``: it runs and its last line carries the figures (no
timing is asserted)."""

from __future__ import annotations

from pathlib import Path

from tests.benchmark_runs import run_benchmark


def test_the_changes_benchmark_prints_its_ratios_as_json_on_its_last_line() -> None:
    lines, figures = run_benchmark("changes.py", "--quick", "--turns", "12", "--requests", "2")
    for name in ("story_page", "story_whole", "diff", "story_page_first", "story_whole_first", "diff_first"):
        assert figures[f"{name}_ms"] > 0 and figures[f"ratio_{name}"] > 0, name
    assert (figures["turns"], figures["requests"], figures["server_exit"]) == (12, 2, 0)
    assert any("GET diff" in line for line in lines)


def test_a_baseline_checkout_is_served_and_measured_side_by_side() -> None:
    root = Path(__file__).resolve().parents[2]  # this checkout as its own baseline: the same answers
    lines, figures = run_benchmark("changes.py", "--quick", "--turns", "6", "--requests", "1",
                                   "--baseline", str(root))
    for name in ("read", "story_page", "story_whole", "diff"):
        assert figures[f"baseline_{name}_ms"] > 0 and figures[f"{name}_ms"] > 0, name
    assert figures["baseline_ratio_story_whole"] > 0 and figures["server_exit"] == 0
    assert any(line.startswith("baseline ") for line in lines)
