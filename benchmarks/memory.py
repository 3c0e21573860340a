"""Where a long run's resident memory goes: the service in one process, without HTTP.

``benchmarks/soak_serve.py``'s load (four writers editing their own session's instance with a
4 KiB state drawn from 32 distinct states, each edit followed by a read of the record's wire
text unless ``--no-reads``) played through ``MvuService`` and ``StoreHost`` directly on a
temporary SQLite ledger. Every ``--every`` edits it samples, after a garbage collection:

- ``rssKib`` / ``anonKib`` / ``fileKib``: resident memory, its anonymous and file-backed parts;
- ``gcObjects``: the objects Python's collector tracks (a leak of Python objects grows it);
- ``sqliteBytes``: SQLite's own allocations, all connections (``sqlite3_memory_used``; None where
  the library cannot be loaded);
- ``pymallocArenas`` / ``pymallocUnusedPools``: Python's small-object allocator (free space it
  keeps shows as unused pools in arenas it cannot return);
- ``mallocInUseKib`` / ``mallocFreeKib``: the C allocator's bytes in use and free bytes it keeps
  (glibc's ``mallinfo2``; None elsewhere);
- ``seconds``: time since the first edit (an edit whose cost grows with the history shows as
  intervals that lengthen: ``secondsPerThousandEdits`` for the first and the last interval).

Human lines first; the LAST line is one JSON object. ``--quick`` makes a short run.

    python benchmarks/memory.py [--edits 12000] [--every 4000] [--no-reads] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import ctypes.util
import gc
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from soak_serve import CARD, WRITERS, resident_kib, state  # the same card, states and probe

from mvu_store.cards import read_card
from mvu_store.ledger import open_ledger
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost

STATES = 32
# Room for any run (the default 32 MiB is spent after about 40,000 edits of repeated states).
BUDGET_BYTES = 1 << 30


def _sqlite_bytes() -> int | None:
    name = ctypes.util.find_library("sqlite3")
    if name is None:
        return None
    try:
        library = ctypes.CDLL(name)
    except OSError:
        return None
    library.sqlite3_memory_used.restype = ctypes.c_int64
    return int(library.sqlite3_memory_used())


def _pymalloc() -> dict[str, int | None]:
    """Arenas and unused pools, from ``sys._debugmallocstats()`` (it writes to descriptor 2)."""
    with tempfile.TemporaryFile() as written:
        saved = os.dup(2)
        os.dup2(written.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        written.seek(0)
        text = written.read().decode(errors="replace")
    arenas = re.search(r"# arenas allocated current\s*=\s*([\d,]+)", text)
    pools = re.search(r"([\d,]+) unused pools \*", text)
    return {"pymallocArenas": int(arenas.group(1).replace(",", "")) if arenas else None,
            "pymallocUnusedPools": int(pools.group(1).replace(",", "")) if pools else None}


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _malloc() -> dict[str, int | None]:
    """glibc's bytes in use (its heap's and mmapped chunks) and free bytes it keeps, in KiB."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except AttributeError:  # not glibc 2.33 or later
        return {"mallocInUseKib": None, "mallocFreeKib": None}
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return {"mallocInUseKib": (info.uordblks + info.hblkhd) // 1024, "mallocFreeKib": info.fordblks // 1024}


def sample(edits: int, seconds: float) -> dict[str, Any]:
    gc.collect()
    return {"edits": edits, "seconds": round(seconds, 2), **resident_kib(), "gcObjects": len(gc.get_objects()),
            "sqliteBytes": _sqlite_bytes(), **_pymalloc(), **_malloc()}


async def run(url: str, edits: int, every: int, reads: bool) -> list[dict[str, Any]]:
    ledger = await open_ledger(url, ledger_limit_bytes=BUDGET_BYTES)
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    try:
        await service.discover(definition=read_card(json.dumps(CARD).encode()).definition("soak"))
        instances: dict[str, str] = {}
        for writer in range(WRITERS):
            session = f"w{writer}"
            await host.create_session(session, created_at=1000)
            chosen = await service.select_character(session_id=session, character_id="soak")
            assert chosen.instance_id is not None
            instances[session] = chosen.instance_id
        revisions = dict.fromkeys(instances, 0)
        samples: list[dict[str, Any]] = []
        done = 0
        started = time.monotonic()
        while done < edits:
            for writer, (session, instance) in enumerate(instances.items()):
                scope = {"authority": "local", "session_id": session}
                receipt = await service.update(id=instance, content={"stat_data": state(writer, done % STATES)},
                                               expected_revision=revisions[session], operation_id=f"edit-{done}",
                                               scope=scope)
                revisions[session] = receipt.revision
                if reads:
                    await service.read_json(id=instance, scope=scope)
                done += 1
            if done % every < WRITERS:
                samples.append(sample(done, time.monotonic() - started))
                taken = samples[-1]
                print(f"{done:>7} edits  {taken['seconds']:>7} s  rss {taken['rssKib']:>7} KiB  "
                      f"anon {taken['anonKib']:>7} KiB  gc objects {taken['gcObjects']:>7}  "
                      f"sqlite {taken['sqliteBytes']} B  pymalloc arenas {taken['pymallocArenas']} "
                      f"(unused pools {taken['pymallocUnusedPools']})  malloc in use {taken['mallocInUseKib']} KiB "
                      f"(free {taken['mallocFreeKib']} KiB)", flush=True)
        return samples
    finally:
        await service.close()
        await ledger.close()


def _pace(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Seconds per 1,000 edits between two samples."""
    return round(1000 * (b["seconds"] - a["seconds"]) / (b["edits"] - a["edits"]), 2)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=12_000)
    parser.add_argument("--every", type=int, default=4_000)
    parser.add_argument("--no-reads", action="store_true", help="edits only, no read after each")
    parser.add_argument("--quick", action="store_true", help="a short run (a smoke test)")
    args = parser.parse_args(argv)
    edits, every = (80, 40) if args.quick else (args.edits, args.every)
    if edits < every or every < WRITERS:
        parser.error("--edits must be at least --every, which must be at least the number of writers")
    with tempfile.TemporaryDirectory(prefix="mvu-bench-memory-") as temp:
        samples = asyncio.run(run(f"sqlite:///{Path(temp) / 'ledger.sqlite3'}", edits, every, not args.no_reads))
    first, last = samples[0], samples[-1]
    thousands = (last["edits"] - first["edits"]) / 1000 or 1
    result = {
        "edits": last["edits"], "reads": not args.no_reads, "quick": args.quick,
        "rssKibPerThousandEdits": round((last["rssKib"] - first["rssKib"]) / thousands, 1),
        "anonKibPerThousandEdits": round((last["anonKib"] - first["anonKib"]) / thousands, 1),
        "gcObjectsGrowth": last["gcObjects"] - first["gcObjects"],
        "sqliteBytesGrowth": None if last["sqliteBytes"] is None or first["sqliteBytes"] is None
        else last["sqliteBytes"] - first["sqliteBytes"],
        "secondsPerThousandEdits": [_pace(samples[0], samples[1]) if len(samples) > 1 else None,
                                    _pace(samples[-2], samples[-1]) if len(samples) > 1 else None],
        "samples": samples,
        "loadAverage1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, sort_keys=True), flush=True)
    return result


if __name__ == "__main__":
    main()
