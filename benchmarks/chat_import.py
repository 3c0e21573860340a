"""Chat import benchmark: MB/s of SillyTavern chat file imported, and the resident memory it takes.

A synthetic chat of ``--mib`` MiB (100 by default; ``--quick``: 4) is written to a temporary
directory (``tests/chats/synthetic.py``: a Chinese chat whose states carry ``--padding`` items,
about 8 KiB each, swipes on every other reply, hidden messages). Then, each in a fresh child
process so that its peak resident memory (``VmHWM``) is its own, in one run:

- ``json_loads``: the file read line by line with ``json.loads`` per line (the floor any reader
  of the format pays);
- ``import``: ``mvu_store.chats.importer.import_chat`` into a fresh SQLite ledger (WAL,
  ``synchronous=FULL``, budget raised to hold the file), every reply re-applied and compared;
- ``import_unverified``: the same with ``verify=False``.

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

    python benchmarks/chat_import.py [--mib N] [--padding N] [--quick] [--repeat N] [--baseline DIR]
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
        result = asyncio.run(_import(path, db, verify=kind == "import"))
    print(json.dumps({**result, "peak_rss_kib": _peak_rss_kib()}))


def _measure(kind: str, path: Path, db: Path, code: Path = ROOT) -> dict[str, Any]:
    """One child's figures; ``code``: the checkout whose ``mvu_store`` it imports."""
    done = subprocess.run([sys.executable, __file__, "--child", kind, str(path), str(db), "--code", str(code)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=float, default=100.0, help="the chat file's size in MiB (default 100)")
    parser.add_argument("--padding", type=int, default=100, help="items per state (default 100: about 8 KiB)")
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
    from tests.chats.synthetic import ChatSpec, write_large_chat

    mib = 4.0 if args.quick else args.mib
    with tempfile.TemporaryDirectory(prefix="mvu-chat-bench-") as folder:
        path = Path(folder, "chat.jsonl")
        # Size the chat from a small sample: bytes per turn at this padding.
        sample = write_large_chat(path, ChatSpec(turns=40, padding=args.padding, metadata_variables=False))
        turns = max(4, int(mib * 1024 * 1024 / (sample / 40)))
        size = write_large_chat(path, ChatSpec(turns=turns, padding=args.padding, hidden=(3, 17),
                                               metadata_variables=False))
        megabytes = size / 1e6
        print(f"chat file: {size / 1024 / 1024:.1f} MiB, {turns} turns")
        figures: dict[str, Any] = {"file_mib": round(size / 1024 / 1024, 1), "turns": turns, "quick": args.quick}
        runs: list[tuple[str, str, Path]] = [("json_loads", "json_loads", ROOT)]
        for kind in ("import", "import_unverified"):
            if args.baseline is not None:  # just before the same run with this code: the same load
                runs.append((f"baseline_{kind}", kind, args.baseline.resolve()))
            runs.append((kind, kind, ROOT))
        for name, kind, code in runs:
            db = Path(folder, f"{name}.sqlite3")
            result = min((_measure(kind, path, db, code) for _ in range(args.repeat)),
                         key=lambda run: float(run["seconds"]))
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
            db.unlink(missing_ok=True)
        for prefix in ("", "baseline_") if args.baseline is not None else ("",):
            figures[f"ratio_{prefix}import_vs_json_loads"] = round(
                figures[f"{prefix}import_mb_s"] / figures["json_loads_mb_s"], 3)
            figures[f"ratio_{prefix}unverified_vs_json_loads"] = round(
                figures[f"{prefix}import_unverified_mb_s"] / figures["json_loads_mb_s"], 3)
        if args.baseline is not None:
            for kind in ("import", "import_unverified"):
                figures[f"speedup_{kind}"] = round(figures[f"{kind}_mb_s"] / figures[f"baseline_{kind}_mb_s"], 2)
                figures[f"cpu_speedup_{kind}"] = round(
                    figures[f"{kind}_cpu_mb_s"] / figures[f"baseline_{kind}_cpu_mb_s"], 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
