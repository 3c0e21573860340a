"""Smoke test of ``benchmarks/http.py --quick``: it runs and its last line carries the figures
(no timing is asserted: on a loaded machine every client still does its one operation, so there is
always a rate), and a window in which nothing finished says so instead of dividing by zero."""

from __future__ import annotations

from typing import Any

from tests.benchmark_runs import run_benchmark

RATES = ("update_rps", "read_rps", "inprocess_update_rps", "ratio_update", "turns_per_s_http",
         "inprocess_turns_per_s", "ratio_turn_http")


def run(*args: str) -> tuple[list[str], dict[str, Any]]:
    return run_benchmark("http.py", "--quick", *args)


def test_quick_http_benchmark_prints_its_figures_as_json_on_its_last_line() -> None:
    _, figures = run("--seconds", "0.5")
    for key in RATES:
        assert isinstance(figures[key], int | float) and figures[key] > 0, key
    assert (figures["clients"], figures["server_exit"], figures["quick"], figures["at_least"]) == (16, 0, True, 1)


def test_a_window_in_which_nothing_finished_says_so() -> None:
    lines, figures = run("--seconds", "0", "--at-least", "0")
    assert {key: figures[key] for key in RATES} == dict.fromkeys(RATES)
    # The five measurements, each one line.
    assert sum("measured nothing" in line for line in lines) == 5, lines
    assert figures["server_exit"] == 0
