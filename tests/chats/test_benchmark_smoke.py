"""Smoke test of ``benchmarks/chat_import.py`` on a small file: it runs and its last line carries
the figures it says it measured (never a timing)."""

from __future__ import annotations

from pathlib import Path

from tests.benchmark_runs import run_benchmark


def test_the_chat_import_benchmark_prints_its_figures_as_json_on_its_last_line() -> None:
    lines, figures = run_benchmark("chat_import.py", "--mib", "0.3", "--padding", "20", "--long-line", "0.5")
    assert lines[0].startswith("chat file:") and 0.4 < figures["long_line_mib"] <= 0.5
    for kind in ("json_loads", "import", "import_unverified", "import_long_line"):
        assert figures[f"{kind}_mb_s"] > 0 and figures[f"{kind}_peak_rss_mib"] > 0, kind
    # Both imports stored every state; only the verified one checked the replies, all agreeing.
    verified, unverified = figures["import_summary"], figures["import_unverified_summary"]
    assert verified["states"] == unverified["states"] > 0
    assert verified["agreed"] > 0 and verified["differed"] == 0 and unverified["agreed"] == 0
    assert figures["ratio_import_vs_json_loads"] > 0 and figures["ratio_unverified_vs_json_loads"] > 0


def test_a_baseline_checkout_is_measured_side_by_side() -> None:
    root = Path(__file__).resolve().parents[2]  # this checkout as its own baseline: the same states
    _, figures = run_benchmark("chat_import.py", "--mib", "0.2", "--padding", "10", "--long-line", "0.3",
                               "--baseline", str(root))
    for kind in ("import", "import_unverified", "import_long_line"):
        assert figures[f"baseline_{kind}_summary"] == figures[f"{kind}_summary"]
        assert figures[f"speedup_{kind}"] > 0 and figures[f"cpu_speedup_{kind}"] > 0
    assert figures["ratio_baseline_import_vs_json_loads"] > 0
