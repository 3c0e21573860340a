"""A child process driving ``MvuService`` for ``test_service_processes.py`` (run with ``sys.executable``).

``ingest DB HOSTDIR SESSIONS``
    Opens the SQLite ledger at DB and a ``MemoryHost(path=HOSTDIR)`` (loading the session logs
    the parent wrote), prints ``READY``, waits for one line on standard input (so both children
    start together), then ingests every session of SESSIONS (comma separated) at once with
    ``asyncio.gather``, retrying a call that met ``MVU_STORAGE_BUSY`` as a host would. Prints
    ``DONE`` and the JSON list of ``[resource, turn, status]`` of its outcomes (``replayed``: the
    other process committed that reply first).

``select DB HOSTDIR SESSIONS CHARACTER``
    The same, but selects CHARACTER for every session of SESSIONS; prints ``DONE`` and the JSON
    object ``{session: instance id}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService

T = TypeVar("T")


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def retried(call: Callable[[], Awaitable[T]]) -> T:
    for _attempt in range(50):
        try:
            return await call()
        except MvuError as error:
            if error.code != Code.STORAGE_BUSY:
                raise
    raise SystemExit("the ledger stayed busy")


async def run(mode: str, db: str, host_dir: str, sessions: list[str], character: str | None) -> None:
    ledger = await open_ledger(f"sqlite:///{db}")
    try:
        service = MvuService(ledger=ledger, host=MemoryHost(path=host_dir))
        emit("READY")
        await asyncio.to_thread(sys.stdin.readline)
        if mode == "ingest":
            reports = await asyncio.gather(*(retried(lambda s=s: service.ingest(session_id=s)) for s in sessions))
            done: object = [[o.resource_id, o.turn, o.status] for report in reports for o in report.outcomes]
        else:
            selections = await asyncio.gather(*(
                retried(lambda s=s: service.select_character(session_id=s, character_id=character))
                for s in sessions))
            done = {result.session_id: result.instance_id for result in selections}
        emit("DONE " + json.dumps(done))
    finally:
        await ledger.close()


def main(argv: list[str]) -> None:
    mode, db, host_dir, sessions = argv[:4]
    if mode not in ("ingest", "select"):
        raise SystemExit(f"unknown mode {mode!r}")
    asyncio.run(run(mode, db, host_dir, sessions.split(","), argv[4] if mode == "select" else None))


if __name__ == "__main__":
    main(sys.argv[1:])
