"""Smoke test of ``benchmarks/regex.py --quick``: it runs and its last line carries the figures
(no timing is asserted: on a loaded machine the ratios may be anything)."""

from __future__ import annotations

from tests.benchmark_runs import run_benchmark


def test_quick_regex_benchmark_prints_its_figures_as_json_on_its_last_line() -> None:
    lines, figures = run_benchmark("regex.py", "--quick")
    assert [row["n"] for row in figures["hostile"]] == [12, 16]
    assert all(row["oursUs"] > 0 and row["backtrackingUs"] > 0 for row in figures["hostile"])
    assert figures["cardWork"]["replaceOursUs"] > 0 and figures["cardWork"]["matchOursUs"] > 0
    assert len(lines) == 3
