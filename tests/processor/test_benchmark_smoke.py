"""Smoke test of ``benchmarks/processor.py --quick``: it runs and its last line carries the
figures (no timing is asserted: on a loaded machine the ratio may be anything)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "processor.py"


def test_quick_processor_benchmark_prints_its_figures_as_json_on_its_last_line() -> None:
    done = subprocess.run([sys.executable, str(BENCHMARK), "--quick"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) > 1, "human lines come before the JSON"
    figures = json.loads(lines[-1])
    assert isinstance(figures["added_cost_ratio"], float | int)
    assert figures["first_turn_ms"] > 0 and figures["turn_ms_plain"] > 0 and figures["turn_ms_processor"] > 0
    assert (figures["rounds"], figures["turns_per_round"], figures["listener_count"], figures["quick"]) == (
        2, 3, 1, True)
