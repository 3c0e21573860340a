"""Chat import benchmark: MB/s of SillyTavern chat file imported, and the resident memory it takes.

A synthetic chat of ``--mib`` MiB (100 by default; ``--quick``: 4) is written to a temporary
directory (``tests/chats/synthetic.py``: a Chinese chat whose states carry ``--padding`` items,
about 8 KiB each, swipes on every other reply, hidden messages). Then, each in a fresh child
process so that its peak resident memory (``VmHWM``) is its own, in one run:

- ``json_loads``: the file read line by line with ``json.loads`` per line (the floor any reader
  of the format pays);
- ``import``: ``mvu_store.chats.importer.import_chat`` into a fresh SQLite ledger (WAL,
  ``synchronous=FULL``, budget raised to hold the file), every reply re-applied and compared;
- ``import_unverified``: the same with ``verify=False``;
- ``import_long_line``: the import of a short chat whose longest line (a reply of five swipes, each
  with a large state) is as long as a line may be (``mvu_store.chats.reader.MAX_LINE_BYTES``,
  or ``--long-line`` MiB): the memory a line at the cap takes.

With ``--baseline DIR`` (another checkout of this repository, e.g. ``git worktree add DIR
COMMIT``), each import is also measured with that checkout's ``mvu_store`` (imported by this
script's child), right before the same import with this one: ``baseline_import*`` figures and
``speedup_import*`` ratios, side by side in the same run.

Each child also reports its CPU time (``*_cpu_mb_s``: MB per second of CPU time, the figure
to compare on a machine other work shares); ``--repeat N`` keeps the fastest of N runs.

Human lines first; the LAST line is one JSON object: ``file_mib``, the rates in MB/s
(``*_mb_s``, 10^6 bytes a second of chat file), ``ratio_import_vs_json_loads`` and
``ratio_unverified_vs_json_loads`` (and ``ratio_baseline_*`` with a baseline), and the peak
resident memory of each child in MiB (``*_peak_rss_mib``).

    python benchmarks/chat_import.py [--mib N] [--padding N] [--long-line MIB] [--quick] [--repeat N]
                                     [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BUDGET = 64 * 1024**3
"""The ledger's byte budget for the run: room for every state of the file."""


def _peak_rss_kib() -> int:
    """This process's peak resident memory since its ``exec``, in KiB (``VmHWM``): not
    ``getrusage``'s ``ru_maxrss``, which Linux carries over an ``exec`` from the process that
    forked, here the parent holding the generated chat (a ``json.loads`` child showed its 104 MiB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _json_loads(path: Path) -> None:
    with path.open("rb") as stream:
        for line in stream:
            json.loads(line)


async def _import(path: Path, db: Path, verify: bool) -> dict[str, Any]:
    from mvu_store.chats.importer import import_chat
    from mvu_store.ledger import open_ledger

    ledger = await open_ledger(f"sqlite:///{db}", ledger_limit_bytes=BUDGET)
    try:
        started, cpu = time.perf_counter(), time.process_time()  # the import alone: not the ledger's creation
        summary = await import_chat(ledger, path, verify=verify)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        await ledger.close()
    return {"seconds": seconds, "cpu_seconds": cpu, "states": summary.states, "agreed": summary.agreed,
            "differed": summary.differed}


def child(kind: str, path: Path, db: Path) -> None:
    """One measurement; prints its JSON line."""
    if kind == "json_loads":
        started, cpu = time.perf_counter(), time.process_time()
        _json_loads(path)
        result: dict[str, Any] = {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu}
    else:
        result = asyncio.run(_import(path, db, verify=kind != "import_unverified"))
    print(json.dumps({**result, "peak_rss_kib": _peak_rss_kib()}))


def _measure(kind: str, path: Path, db: Path, code: Path = ROOT) -> dict[str, Any]:
    """One child's figures; ``code``: the checkout whose ``mvu_store`` it imports."""
    done = subprocess.run([sys.executable, __file__, "--child", kind, str(path), str(db), "--code", str(code)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _runs(baseline: Path | None) -> list[tuple[str, str, str, Path]]:
    """(figure name, child kind, file, checkout) of each measurement, in order: a baseline's run
    right before the same run with this checkout, under the same load."""
    runs: list[tuple[str, str, str, Path]] = [("json_loads", "json_loads", "chat", ROOT)]
    for name, kind, file in (("import", "import", "chat"), ("import_unverified", "import_unverified", "chat"),
                             ("import_long_line", "import", "long")):
        if baseline is not None:
            runs.append((f"baseline_{name}", kind, file, baseline.resolve()))
        runs.append((name, kind, file, ROOT))
    return runs


def _measure_all(files: dict[str, tuple[Path, float]], folder: str, args: argparse.Namespace,
                 figures: dict[str, Any]) -> None:
    for name, kind, file, code in _runs(args.baseline):
        path, megabytes = files[file]
        result = min((_measure_once(kind, path, Path(folder, f"{name}-{run}.sqlite3"), code)
                      for run in range(args.repeat)), key=lambda run: float(run["seconds"]))
        rate = megabytes / result["seconds"]
        figures[f"{name}_cpu_mb_s"] = round(megabytes / result["cpu_seconds"], 1)
        peak = result["peak_rss_kib"] / 1024
        figures[f"{name}_mb_s"] = round(rate, 1)
        figures[f"{name}_peak_rss_mib"] = round(peak, 1)
        details = {key: result[key] for key in ("states", "agreed", "differed") if key in result}
        if details:
            figures[f"{name}_summary"] = details
        print(f"{name:27} {rate:7.1f} MB/s  {result['seconds']:6.2f} s  {figures[f'{name}_cpu_mb_s']:7.1f} MB/s of "
              f"CPU time  peak RSS {peak:6.1f} MiB  {details}")


def _measure_once(kind: str, path: Path, db: Path, code: Path) -> dict[str, Any]:
    """One run into a fresh ledger, removed after: a run into the ledger of the one before would
    find the file imported and write nothing."""
    try:
        return _measure(kind, path, db, code)
    finally:
        for leftover in (db, *(Path(f"{db}{suffix}") for suffix in ("-wal", "-shm", ".locks"))):
            leftover.unlink(missing_ok=True)


def _ratios(figures: dict[str, Any], baseline: bool) -> None:
    for prefix in ("", "baseline_") if baseline else ("",):
        figures[f"ratio_{prefix}import_vs_json_loads"] = round(
            figures[f"{prefix}import_mb_s"] / figures["json_loads_mb_s"], 3)
        figures[f"ratio_{prefix}unverified_vs_json_loads"] = round(
            figures[f"{prefix}import_unverified_mb_s"] / figures["json_loads_mb_s"], 3)
    if baseline:
        for kind in ("import", "import_unverified", "import_long_line"):
            figures[f"speedup_{kind}"] = round(figures[f"{kind}_mb_s"] / figures[f"baseline_{kind}_mb_s"], 2)
            figures[f"cpu_speedup_{kind}"] = round(
                figures[f"{kind}_cpu_mb_s"] / figures[f"baseline_{kind}_cpu_mb_s"], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=float, default=100.0, help="the chat file's size in MiB (default 100)")
    parser.add_argument("--padding", type=int, default=100, help="items per state (default 100: about 8 KiB)")
    parser.add_argument("--long-line", type=float, help="the long line's size in MiB (default: the line cap)")
    parser.add_argument("--quick", action="store_true", help="a 4 MiB file (smoke runs)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each measurement, the fastest kept")
    parser.add_argument("--baseline", type=Path, help="another checkout whose import to measure side by side")
    parser.add_argument("--code", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=3, metavar=("KIND", "FILE", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(args.code or ROOT))  # before mvu_store is first imported
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    from mvu_store.chats.reader import MAX_LINE_BYTES
    from tests.chats.synthetic import ChatSpec, write_large_chat, write_long_line_chat

    mib = 4.0 if args.quick else args.mib
    with tempfile.TemporaryDirectory(prefix="mvu-chat-bench-") as folder:
        path, long_path = Path(folder, "chat.jsonl"), Path(folder, "long.jsonl")
        # Size the chat from a small sample: bytes per turn at this padding.
        sample = write_large_chat(path, ChatSpec(turns=40, padding=args.padding, metadata_variables=False))
        turns = max(4, int(mib * 1024 * 1024 / (sample / 40)))
        size = write_large_chat(path, ChatSpec(turns=turns, padding=args.padding, hidden=(3, 17),
                                               metadata_variables=False))
        line = write_long_line_chat(long_path, int(args.long_line * 1024 * 1024) if args.long_line else MAX_LINE_BYTES)
        print(f"chat file: {size / 1024 / 1024:.1f} MiB, {turns} turns; a chat whose longest line is "
              f"{line / 1024 / 1024:.1f} MiB")
        figures: dict[str, Any] = {"file_mib": round(size / 1024 / 1024, 1), "turns": turns, "quick": args.quick,
                                   "long_line_mib": round(line / 1024 / 1024, 2)}
        files = {"chat": (path, size / 1e6), "long": (long_path, long_path.stat().st_size / 1e6)}
        _measure_all(files, folder, args, figures)
        _ratios(figures, args.baseline is not None)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
