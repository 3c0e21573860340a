"""Running a benchmark script for a smoke test: its human lines, then its figures (the JSON of
its last line), once it exited cleanly. Smoke tests check what the figures say they measured,
never a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run_benchmark(name: str, *args: str, timeout: float = 300) -> tuple[list[str], dict[str, Any]]:
    """``benchmarks/<name> *args``: its human lines (at least one) and its last line's figures."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / name), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) > 1, "human lines come before the JSON"
    figures: dict[str, Any] = json.loads(lines[-1])
    return lines[:-1], figures
