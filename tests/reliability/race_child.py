"""A child process for ``test_session_races.py`` (run with ``sys.executable``, never imported by pytest).

Every mode opens the ledger at URL (ledger id LEDGER), prints ``READY`` and waits for one line on
standard input before it acts, so the parent decides when each child starts. Results are printed
as ``DONE`` and one JSON value; a refusal as ``FAILED`` and its code.

``hold URL LEDGER SESSION``
    Takes the session's lock, prints ``HELD``, and keeps it until a second line (or its death).

``discover URL LEDGER CARD SESSIONS``
    Discovers the card (CARD is its JSON text) once per session of SESSIONS (comma separated), all
    at once; prints the JSON list of ``rejectedError`` per call.

``select URL LEDGER HOSTDIR SESSION CHARACTER``
    Selects CHARACTER for SESSION. The service's command processor stops at the first reply it
    sees (the outgoing character's, applied before the selection moves): it prints ``PAUSED``
    and goes on after another line. Prints ``{instanceId, boundary}``.

``ingest URL LEDGER HOSTDIR SESSION``
    Ingests SESSION; prints the JSON list of ``[resource, turn, status]``.

The sessions come from :class:`SharedLogHost`: the JSONL logs in HOSTDIR, read afresh on every
inspection, as a host whose sessions several processes share would answer.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence

from mvu_store.errors import MvuError
from mvu_store.host import Lease, SessionSnapshot
from mvu_store.lang import Command
from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.processor.port import ProcessorTurn
from mvu_store.service import MvuService


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def line() -> None:
    await asyncio.to_thread(sys.stdin.readline)


class SharedLogHost:
    """Sessions in JSONL logs another process appends to (``MemoryHost(path=DIR)``'s format).

    Every inspection reads the logs again. A lease stays valid: no process sees another's append
    synchronously, so only the session lock orders them.
    """

    def __init__(self, path: str) -> None:
        self._path = path

    async def inspect(self, session_id: str) -> SessionSnapshot | None:
        return await MemoryHost(path=self._path).inspect(session_id)

    async def capture_session_lease(self, session_id: str) -> Lease:
        return lambda: True


class PausingProcessor:
    """Stops at the first reply until the parent says go on; passes every command through."""

    def __init__(self) -> None:
        self._paused = False

    async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
        if not self._paused:
            self._paused = True
            emit("PAUSED")
            await line()
        return commands


async def run(mode: str, url: str, ledger_id: str, args: list[str]) -> None:
    ledger = await open_ledger(url, ledger_id=ledger_id)
    try:
        if mode == "hold":
            emit("READY")
            await line()
            async with ledger.session_lock(args[0]):
                emit("HELD")
                await line()
            emit("DONE null")
            return
        if mode == "discover":
            card = json.loads(args[0])
            service = MvuService(ledger=ledger, host=MemoryHost())
            emit("READY")
            await line()
            records = await asyncio.gather(*(service.discover(definition=card, session_id=session)
                                             for session in args[1].split(",")))
            emit("DONE " + json.dumps([record.rejected_error for record in records]))
            return
        host_dir, session_id = args[0], args[1]
        if mode == "select":
            service = MvuService(ledger=ledger, host=SharedLogHost(host_dir), processor=PausingProcessor())
            emit("READY")
            await line()
            selection = await service.select_character(session_id=session_id, character_id=args[2])
            emit("DONE " + json.dumps({"instanceId": selection.instance_id, "boundary": selection.boundary}))
            return
        service = MvuService(ledger=ledger, host=SharedLogHost(host_dir))
        emit("READY")
        await line()
        report = await service.ingest(session_id=session_id)
        emit("DONE " + json.dumps([[o.resource_id, o.turn, o.status] for o in report.outcomes]))
    except MvuError as error:
        emit(f"FAILED {error.code}")
    finally:
        await ledger.close()


def main(argv: list[str]) -> None:
    mode, url, ledger_id, *args = argv
    if mode not in ("hold", "discover", "select", "ingest"):
        raise SystemExit(f"unknown mode {mode!r}")
    asyncio.run(run(mode, url, ledger_id, args))


if __name__ == "__main__":
    main(sys.argv[1:])
