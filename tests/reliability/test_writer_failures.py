"""The single writer thread must survive what happens around it, or no write ever finishes again.

Every write of a ledger goes through one thread (``mvu_store/ledger/writer.py``). If that thread
dies, ``Writer.submit`` still queues work and awaits a future nobody will resolve: every later
write of the process hangs forever. These tests provoke the two ways found to kill it:

- PostgreSQL drops the writer's connection (server restart, failover, idle timeout,
  ``pg_terminate_backend``);
- a caller's event loop closes while its write is on the writer thread (``asyncio.run`` ending
  with a write in flight, e.g. a sync facade or a CLI timing out), so resolving its future with
  ``loop.call_soon_threadsafe`` raises ``RuntimeError: Event loop is closed``.

The writer fails such a batch (``MVU_STORAGE_BUSY`` for a lost connection), reconnects, and goes on.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import psycopg
import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import CommitOutcome, CommitRequest, Ledger, NewResource
from mvu_store.ledger.writer import WriteTx

WAIT = 60.0  # seconds a write may take here before it counts as hung (a loaded CI machine is slow)


def commit_request(op: str, expected: int) -> CommitRequest:
    return CommitRequest(
        resource_id="w", expected_revision=expected, kind="manual", variables={"op": op},
        fingerprint=op.ljust(64, "0"), source={"manual": True}, operation_id=op,
    )


async def create(ledger: Ledger) -> None:
    await ledger.create_resource(NewResource(id="w", kind="instance", initial={"op": None}, definition={}))


@pytest.mark.postgres
@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
async def test_writer_survives_a_dropped_postgresql_connection(ledger: Ledger, ledger_url: str) -> None:
    await create(ledger)

    def backend_pid(tx: WriteTx) -> int:
        tx.cursor.execute("SELECT pg_backend_pid()")
        return int(tx.cursor.fetchone()[0])

    pid = await ledger._store.write(backend_pid)
    with psycopg.connect(ledger_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))

    # The write that meets the dead connection may fail, but as a (retryable) MvuError.
    outcomes: list[Any] = []
    for _attempt in range(3):
        try:
            outcomes.append(await asyncio.wait_for(ledger.commit(commit_request("after-drop", 0)), WAIT))
            break
        except TimeoutError:
            raise
        except Exception as error:
            outcomes.append(error)
    raw = [error for error in outcomes if isinstance(error, Exception) and not isinstance(error, MvuError)]
    assert not raw, f"a dropped connection surfaced as a driver error, not an MvuError: {raw!r}"
    # The ledger recovers (a new connection): the retried operation lands, exactly once.
    assert isinstance(outcomes[-1], CommitOutcome), outcomes
    assert outcomes[-1].revision == 1
    head = await asyncio.wait_for(ledger.head("w"), WAIT)
    assert head.revision == 1


async def test_writer_survives_a_caller_whose_event_loop_closed(ledger: Ledger) -> None:
    await create(ledger)

    inside = threading.Event()
    release = threading.Event()

    def slow(_tx: WriteTx) -> None:
        inside.set()
        assert release.wait(WAIT), "never released"

    async def leave_with_a_write_in_flight() -> None:
        asyncio.ensure_future(ledger._store.write(slow))  # noqa: RUF006 - abandoned on purpose
        assert await asyncio.to_thread(inside.wait, WAIT), "the writer never took the write"
        # Returning ends asyncio.run: the pending write is cancelled and the loop closed while
        # the writer thread is still inside ``slow``.

    other = threading.Thread(target=asyncio.run, args=(leave_with_a_write_in_flight(),))
    other.start()
    await asyncio.to_thread(other.join)
    # The loop is closed: now the writer leaves ``slow`` and resolves its future (or fails to).
    # The next write queues behind it on the same thread, so it answers only if the thread lived.
    release.set()

    outcome = await asyncio.wait_for(ledger.commit(commit_request("after-loop", 0)), WAIT)
    assert outcome.revision == 1
