"""Smoke tests of ``benchmarks/commit_path.py --quick`` and ``benchmarks/ingest.py --quick``: they run and
their last line carries the figures.

No timing is asserted (the machine is shared and noisy); only that every figure the issue asks
for is there, positive, and that the fork side measured what it claims to.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.benchmark_runs import run_benchmark

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "commit_path.py"
KEYS = (
    "ratio_single", "ratio_single_same_sql", "ratio_concurrent", "ratio_vs_json_file", "fork_cost_growth",
    "raw_sqlite_ops_per_s", "raw_sqlite_same_sql_ops_per_s", "ours_single_ops_per_s", "ours_concurrent_ops_per_s",
    "json_file_ops_per_s", "fork_bytes_ratio", "fork_time_ratio", "fork_bytes_10", "fork_bytes_1000", "fork_ms_10",
    "fork_ms_1000",
)


def test_quick_benchmark_prints_every_figure_as_json_on_its_last_line() -> None:
    _, figures = run_benchmark("commit_path.py", "--quick")
    for key in KEYS:
        assert isinstance(figures[key], int | float), key
        assert figures[key] > 0, key
    assert figures["quick"] is True
    assert figures["state_bytes"] == 4096
    assert figures["synchronous"] == "FULL"
    assert figures["fork_history_versions"] == {"short": 10, "long": 1000}
    assert set(figures["targets_met"]) == {"ratio_single", "ratio_single_same_sql", "ratio_concurrent",
                                           "ratio_vs_json_file", "ratio_concurrent_vs_json_file", "fork_cost_growth"}


INGEST = BENCHMARK.with_name("ingest.py")


def test_quick_ingest_benchmark_prints_both_rates_as_json_on_its_last_line() -> None:
    _, figures = run_benchmark("ingest.py", "--quick")
    for key in ("turns_per_s", "turns_per_s_16_sessions", "state_bytes", "turns", "parallel_turns"):
        assert isinstance(figures[key], int | float), key
        assert figures[key] > 0, key
    assert figures["quick"] is True
    assert figures["sessions"] == 16
    assert figures["commands_per_reply"] == 5
    assert 4 * 1024 <= figures["state_bytes"] <= 6 * 1024, "a ~5 KiB stat_data"
    # The growth session: 40 turns in quick mode, windows k..2k and N-k..N with k = 2.
    for key in ("turn_cost_growth", "read_cost_growth", "history_page_ms", "turn_ms_first", "turn_ms_last",
                "read_ms_first", "read_ms_last"):
        assert isinstance(figures[key], int | float), key
        assert figures[key] > 0, key
    assert figures["growth_turns"] == 40
    assert figures["growth_windows"] == {"first": [2, 4], "last": [38, 40]}
    assert figures["reads_per_sample"] == 20


def test_quick_ingest_benchmark_without_growth_reports_only_the_rates() -> None:
    _, figures = run_benchmark("ingest.py", "--quick", "--skip-growth")
    assert figures["turns_per_s"] > 0 and figures["turns_per_s_16_sessions"] > 0
    assert not {"turn_cost_growth", "read_cost_growth", "history_page_ms"} & set(figures)


def test_the_ingest_benchmark_measures_a_baseline_checkout_side_by_side() -> None:
    root = Path(__file__).resolve().parents[2]  # this checkout as its own baseline
    lines, figures = run_benchmark("ingest.py", "--quick", "--skip-growth", "--baseline", str(root),
                                   "--side-turns", "3", "--rounds", "2")
    assert (figures["side_turns"], figures["rounds"]) == (3, 2)
    for key in ("turn_ms", "turn_cpu_ms"):
        assert figures[key] > 0 and figures[f"baseline_{key}"] > 0, key
    assert figures["ratio_turn_vs_baseline"] > 0 and figures["ratio_turn_cpu_vs_baseline"] > 0
    assert "turn_instructions" not in figures  # only with --instructions
    assert sum("side by side, round" in line for line in lines) == 2


def test_the_ingest_benchmark_counts_instructions_only_beside_a_baseline() -> None:
    done = subprocess.run([sys.executable, str(INGEST), "--instructions"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2
    assert "--instructions needs --baseline" in done.stderr


def test_the_ingest_benchmark_refuses_growth_windows_that_overlap() -> None:
    done = subprocess.run([sys.executable, str(INGEST), "--growth-turns", "6"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2
    assert "--growth-turns must be at least 7" in done.stderr


def load_ingest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ingest_benchmark", INGEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_growth_windows_scale_with_the_session() -> None:
    ingest = load_ingest()
    for turns, first, last in [(1000, (10, 20), (990, 1000)), (40, (2, 4), (38, 40)), (350, (4, 8), (346, 350))]:
        windows = ingest.Windows.for_turns(turns)
        assert (windows.first.start, windows.first.stop - 1) == first, turns
        assert (windows.last.start, windows.last.stop - 1) == last, turns


MISBEHAVING = BENCHMARK.with_name("misbehaving.py")
SOAK_SERVE = BENCHMARK.with_name("soak_serve.py")
STARVATION = BENCHMARK.with_name("starvation.py")


def quick_figures(script: Path, *args: str) -> dict[str, Any]:
    """``script --quick``'s figures, with no traceback in what it ran."""
    _, figures = run_benchmark(script.name, "--quick", *args)
    assert figures["quick"] is True and figures["tracebacks"] == 0
    return figures


def test_quick_misbehaving_benchmark_prints_each_abuse_beside_the_quiet_figures() -> None:
    figures = quick_figures(MISBEHAVING)
    for name in ("quiet", "slowloris", "wrong_tokens", "huge_heads", "hostile_bodies"):
        good = figures[name] if name == "quiet" else figures[name]["goodClient"]
        assert good["requests"] >= 1 and good["median_ms"] > 0 and good["p99_ms"] >= good["median_ms"], name
    assert figures["logLines"] > 0


def test_quick_starvation_benchmark_ends_each_hostile_request_typed_while_the_reader_is_answered() -> None:
    """The reader's requests counted while a hostile request ran were answered during it."""
    figures = quick_figures(STARVATION)
    after = figures["after"]
    assert after["reply"]["answer"] == [["failed", "MVU_LIMIT"]]
    assert after["greeting"]["answer"] == "400 MVU_LIMIT"
    assert after["prompt"]["answer"] == 200
    assert after["reply"]["readerRequests"] >= 1 and after["greeting"]["readerRequests"] >= 1
    assert list(after["readerAnswers"]) == ["200"]
    assert figures["processPool"]["roundTripMs"] > 0


def test_quick_serve_soak_prints_its_samples_and_growth_figures() -> None:
    figures = quick_figures(SOAK_SERVE)
    assert len(figures["samples"]) >= 2 and figures["edits"] >= 1 and figures["reads"] >= 1
    for key in ("rssKib", "dbBytes", "walBytes", "usedBytes", "edits"):
        assert all(sample[key] >= 0 for sample in figures["samples"]), key
    assert isinstance(figures["rssLevelsOff"], bool) and isinstance(figures["walLevelsOff"], bool)
    assert figures["budgetBytesPerEdit"] > 0 and figures["rssKib"]["peak"] >= figures["rssKib"]["start"]
    assert figures["writeFailures"] == [] and figures["budgetMib"] == 1024  # its own ledger, with room to write
    assert figures["writes"] == "edits"


def test_quick_serve_soak_can_play_whole_turns_each_applied() -> None:
    figures = quick_figures(SOAK_SERVE, "--turns")
    # A writer stops at the first batch refused or reply not committed, and says why.
    assert figures["writes"] == "turns" and figures["writeFailures"] == []
    assert figures["edits"] >= 1 and figures["budgetBytesPerEdit"] > 0


def test_quick_memory_benchmark_samples_what_resident_memory_is_made_of() -> None:
    lines, figures = run_benchmark("memory.py", "--quick")
    assert figures["quick"] is True and figures["edits"] == 80 and len(figures["samples"]) == 2
    assert [sample["edits"] for sample in figures["samples"]] == [40, 80]
    for sample in figures["samples"]:
        assert sample["rssKib"] >= sample["anonKib"] > 0 and sample["gcObjects"] > 0
        assert sample["pymallocArenas"] is not None and sample["pymallocArenas"] > 0
        assert sample["mallocInUseKib"] is None or sample["mallocInUseKib"] > 0
    assert all(pace is not None and pace > 0 for pace in figures["secondsPerThousandEdits"])
    assert any("pymalloc arenas" in line for line in lines)
