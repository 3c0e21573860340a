"""``make soak``: the crash test at scale, outside ``make test``.

SIGKILLs writers at random moments ``MVU_SOAK_KILLS`` times (default 1,000) on an SQLite file
and ``MVU_SOAK_KILLS_PG`` times (default 100) on PostgreSQL (a schema of its own in the test
database, dropped afterwards), checking after every kill that each acknowledged commit is there
and none that was not acknowledged is half there, and auditing (``test_crash.kill_run``). Then
eight processes compare-and-swap one counter on PostgreSQL, to report the rate a single hot
resource sustains. Progress goes to standard error; the figures are one JSON object on the last
line of standard output. Any loss or finding stops it with a failed assertion.
``MVU_SOAK_MINUTES`` / ``MVU_SOAK_MINUTES_PG`` bound each part's time on a machine too busy for
the whole count: no kill starts after it, the final checks run, and the figures say how many
kills there were of how many planned.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from mvu_store.ledger import open_ledger
from tests.reliability.test_crash import CHILD, kill_run

SERVER = os.environ.get("MVU_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
HOT_PROCESSES = 8
HOT_INCREMENTS = 40


def _in_schema(schema: str) -> str:
    separator = "&" if "?" in SERVER else "?"
    return f"{SERVER}{separator}options=-csearch_path%3D{schema}"


def _hot_counter(url: str) -> dict[str, Any]:
    """Eight processes adding 1 to one counter under CAS: all acknowledged, none lost, the rate."""
    started = time.monotonic()
    children = [subprocess.Popen([sys.executable, str(CHILD), "increment", url, "counter", str(HOT_INCREMENTS)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(HOT_PROCESSES)]
    successes = conflicts = 0
    for process in children:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        done = out.split()[-3:]
        assert done[0] == "DONE", out
        successes, conflicts = successes + int(done[1]), conflicts + int(done[2])
    elapsed = time.monotonic() - started

    async def stored() -> int:
        ledger = await open_ledger(url, migrate_to_head=False)
        try:
            return int((await ledger.head("counter")).variables["counter"])
        finally:
            await ledger.close()

    counter = asyncio.run(stored())
    assert counter == successes == HOT_PROCESSES * HOT_INCREMENTS, (counter, successes)
    return {"processes": HOT_PROCESSES, "acknowledged": successes, "lost": successes - counter,
            "conflictsRetried": conflicts, "seconds": round(elapsed, 1),
            "commitsPerSecond": round(successes / elapsed, 1)}


def _audited(figures: dict[str, Any]) -> None:
    """The audits were clean (a run stopped before any ledger existed has nothing to audit)."""
    assert figures["auditClean"] or figures["acknowledgedCommits"] == 0, figures


def _stop_at(variable: str) -> float | None:
    minutes = os.environ.get(variable)
    return None if minutes is None else time.monotonic() + 60 * float(minutes)


def main() -> None:
    sqlite_kills = int(os.environ.get("MVU_SOAK_KILLS", "1000"))
    pg_kills = int(os.environ.get("MVU_SOAK_KILLS_PG", "100"))
    seed = int(os.environ.get("MVU_CRASH_SEED", str(uuid.uuid4().int % 2**32)))
    print(f"MVU_CRASH_SEED={seed}", file=sys.stderr, flush=True)
    figures: dict[str, Any] = {"seed": seed}
    with tempfile.TemporaryDirectory(prefix="mvu-soak-") as directory:
        url = f"sqlite:///{Path(directory) / 'soak.sqlite3'}"
        figures["sqlite"] = kill_run(url, "default", sqlite_kills, seed=seed, full_check_every=100, progress=True,
                                     stop_at=_stop_at("MVU_SOAK_MINUTES"))
        print(f"sqlite: {json.dumps(figures['sqlite'])}", file=sys.stderr, flush=True)
        _audited(figures["sqlite"])
    schema = f"mvu_soak_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(SERVER, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        url = _in_schema(schema)
        figures["postgresql"] = kill_run(url, f"soak-{uuid.uuid4().hex[:12]}", pg_kills, seed=seed,
                                         full_check_every=20, progress=True, stop_at=_stop_at("MVU_SOAK_MINUTES_PG"))
        print(f"postgresql: {json.dumps(figures['postgresql'])}", file=sys.stderr, flush=True)
        _audited(figures["postgresql"])
        figures["postgresqlHotResource"] = _hot_counter(url)
    finally:
        with psycopg.connect(SERVER, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
    figures["loadAverage"] = [round(value, 2) for value in os.getloadavg()]
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
