"""Smoke test of ``benchmarks/http.py --quick``: it runs and its last line carries the figures
(no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "http.py"


def test_quick_http_benchmark_prints_its_figures_as_json_on_its_last_line() -> None:
    done = subprocess.run([sys.executable, str(BENCHMARK), "--quick", "--seconds", "0.5"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) > 1, "human lines come before the JSON"
    figures = json.loads(lines[-1])
    for key in ("update_rps", "read_rps", "inprocess_update_rps", "ratio_update", "turns_per_s_http",
                "inprocess_turns_per_s", "ratio_turn_http"):
        assert isinstance(figures[key], int | float) and figures[key] > 0, key
    assert (figures["clients"], figures["server_exit"], figures["quick"]) == (16, 0, True)
