"""``Ledger.session_lock``: one holder per session across ledgers (as across processes), on both engines.

A second ledger opened on the same database has connections (PostgreSQL) and file descriptions
(SQLite) of its own, so it meets the database lock exactly as another process does. The tests
wait for "the hold is waiting" as the database or the kernel reports it (``tests/lock_waits.py``),
never for a time.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.ledger.engine import EngineOptions, create_sync_engine
from mvu_store.ledger.locks import MAX_LOCK_CONNECTIONS, AdvisoryLocks, FileLocks, advisory_key, lock_file
from tests.conftest import POSTGRES_SERVER_URL, POSTGRES_URL, require_postgres
from tests.lock_waits import file_waiters, until, until_waiting

SAFETY = 60  # seconds: turns a lock that is never granted into a failure instead of a hang


@pytest.fixture
async def other(ledger_url: str, ledger_id: str) -> AsyncIterator[Ledger]:
    """The same ledger opened a second time: another process, as far as the database can tell."""
    opened = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        yield opened
    finally:
        await opened.close()


class Holder:
    """A task holding a session lock until told to let go."""

    def __init__(self, ledger: Ledger, session_id: str) -> None:
        self.entered = asyncio.Event()
        self.leave = asyncio.Event()
        self.task = asyncio.ensure_future(self._hold(ledger, session_id))

    async def _hold(self, ledger: Ledger, session_id: str) -> None:
        async with ledger.session_lock(session_id):
            self.entered.set()
            await self.leave.wait()

    async def held(self) -> Holder:
        await asyncio.wait_for(self.entered.wait(), SAFETY)
        return self

    async def release(self) -> None:
        self.leave.set()
        await asyncio.wait_for(self.task, SAFETY)


async def test_a_held_session_waits_for_its_holder_elsewhere_and_other_sessions_do_not(
        ledger: Ledger, other: Ledger, ledger_url: str, ledger_id: str) -> None:
    first = await Holder(ledger, "s1").held()
    waiting = Holder(other, "s1")
    await asyncio.to_thread(until_waiting, ledger_url, ledger_id, "s1")
    assert not waiting.entered.is_set()
    # Another session of the same ledger is free meanwhile, in either ledger.
    await (await Holder(other, "s2").held()).release()
    await (await Holder(ledger, "s2").held()).release()
    assert not waiting.entered.is_set()
    await first.release()
    await (await waiting.held()).release()


async def test_tasks_of_one_ledger_queue_on_the_session_in_order(ledger: Ledger) -> None:
    order: list[str] = []

    async def hold(name: str, leave: asyncio.Event) -> None:
        async with ledger.session_lock("s1"):
            order.append(f"{name} in")
            await leave.wait()
            order.append(f"{name} out")

    leaves = [asyncio.Event() for _ in range(3)]
    tasks = [asyncio.ensure_future(hold(str(n), leave)) for n, leave in enumerate(leaves)]
    for leave in leaves:
        leave.set()
    await asyncio.wait_for(asyncio.gather(*tasks), SAFETY)
    assert order == ["0 in", "0 out", "1 in", "1 out", "2 in", "2 out"]


async def test_a_wait_cancelled_before_the_lock_is_granted_leaves_no_lock_behind(
        ledger: Ledger, other: Ledger, ledger_url: str, ledger_id: str) -> None:
    first = await Holder(ledger, "s1").held()
    cancelled = Holder(other, "s1")
    await asyncio.to_thread(until_waiting, ledger_url, ledger_id, "s1")
    cancelled.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled.task
    assert not cancelled.entered.is_set()
    await first.release()
    # Were the cancelled wait's lock kept once granted, neither ledger could take the session.
    await (await Holder(other, "s1").held()).release()
    await (await Holder(ledger, "s1").held()).release()


async def test_a_hold_takes_no_reader_connection(ledger: Ledger) -> None:
    """More holds at once than the reader pool has connections, each reading inside: every one
    finishes (lock connections taken from the pool would leave the reads waiting for one)."""
    gate = asyncio.Event()

    async def hold(session_id: str) -> int:
        async with ledger.session_lock(session_id):
            await gate.wait()
            usage = await ledger.usage()
            return usage.limit_bytes

    tasks = [asyncio.ensure_future(hold(f"s{n}")) for n in range(24)]
    gate.set()
    limits = await asyncio.wait_for(asyncio.gather(*tasks), SAFETY)
    assert len(set(limits)) == 1


async def test_a_closed_ledger_refuses_a_hold(ledger_url: str, ledger_id: str) -> None:
    closed = await open_ledger(ledger_url, ledger_id=ledger_id)
    await closed.close()
    with pytest.raises(MvuError) as refused:
        closed.session_lock("s1")
    assert refused.value.code == "MVU_DISPOSED"


@pytest.fixture
async def postgres_pair() -> AsyncIterator[tuple[Ledger, Ledger, str]]:
    """One PostgreSQL ledger opened twice, and its id."""
    require_postgres()
    ledger_id = f"t-{uuid.uuid4().hex[:20]}"
    first = await open_ledger(POSTGRES_URL, ledger_id=ledger_id)
    second = await open_ledger(POSTGRES_URL, ledger_id=ledger_id)
    try:
        yield first, second, ledger_id
    finally:
        await first.close()
        await second.close()


def _admin(sql: str, *params: object) -> list[tuple[object, ...]]:
    with psycopg.connect(POSTGRES_SERVER_URL, autocommit=True) as admin:
        return admin.execute(sql, params).fetchall()


@pytest.mark.postgres
async def test_a_lost_lock_connection_releases_the_lock_and_the_release_only_warns(
        postgres_pair: tuple[Ledger, Ledger, str], caplog: pytest.LogCaptureFixture) -> None:
    ledger, other, ledger_id = postgres_pair
    first = await Holder(ledger, "s1").held()
    classid, objid = advisory_key(ledger_id, "s1")
    terminated = _admin("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                        " AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 2",
                        classid & 0xFFFFFFFF, objid & 0xFFFFFFFF)
    assert terminated == [(True,)]
    await (await Holder(other, "s1").held()).release()
    with caplog.at_level(logging.WARNING, logger="mvu_store.ledger.locks"):
        await first.release()
    assert "lost while the lock was held" in caplog.text
    # The ledger goes on taking the session, on a new connection.
    await (await Holder(ledger, "s1").held()).release()


@pytest.mark.postgres
async def test_closing_the_ledger_closes_its_lock_connections(postgres_pair: tuple[Ledger, Ledger, str]) -> None:
    ledger, _, ledger_id = postgres_pair
    holders = [await Holder(ledger, f"s{n}").held() for n in range(3)]
    for holder in holders:
        await holder.release()

    def lock_connections() -> object:
        return _admin("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                      f"mvu-store {ledger_id} locks")[0][0]

    assert lock_connections() == 3  # kept, idle, for the next holds
    await ledger.close()
    # The server ends a closed connection's backend on its own time: wait for that, not a window.
    await asyncio.to_thread(until, lambda: lock_connections() == 0, "the lock connections gone")


def _lock_connections(ledger_id: str) -> int:
    count = _admin("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", f"mvu-store {ledger_id} locks")
    return int(str(count[0][0]))


@pytest.mark.postgres
async def test_a_burst_of_holds_queues_for_a_bounded_number_of_lock_connections(
        postgres_pair: tuple[Ledger, Ledger, str]) -> None:
    ledger, _, ledger_id = postgres_pair
    inside, most = 0, 0
    full, leave = asyncio.Event(), asyncio.Event()

    async def turn(n: int) -> None:
        nonlocal inside, most
        async with ledger.session_lock(f"s{n}"):
            inside += 1
            most = max(most, inside)
            if inside == MAX_LOCK_CONNECTIONS:
                full.set()
            await leave.wait()
            inside -= 1

    burst = [asyncio.create_task(turn(n)) for n in range(120)]  # 120 turns on 120 sessions at once
    try:
        await asyncio.wait_for(full.wait(), SAFETY)
        # The bound's worth hold their sessions; the others queue for a connection, opening none.
        assert await asyncio.to_thread(_lock_connections, ledger_id) == MAX_LOCK_CONNECTIONS
        leave.set()
        await asyncio.wait_for(asyncio.gather(*burst), SAFETY)
    finally:
        leave.set()
        for task in burst:
            task.cancel()
    assert most == MAX_LOCK_CONNECTIONS
    assert await asyncio.to_thread(_lock_connections, ledger_id) <= MAX_LOCK_CONNECTIONS


@pytest.mark.postgres
async def test_a_hold_that_finds_no_lock_connection_in_time_is_storage_busy() -> None:
    require_postgres()
    locks = AdvisoryLocks(POSTGRES_SERVER_URL, max_connections=1, wait_s=0.05)
    try:
        release = await locks.acquire("l", "a")
        with pytest.raises(MvuError) as refused:
            await locks.acquire("l", "b")
        assert refused.value.code == "MVU_STORAGE_BUSY" and refused.value.details == {"limit": 1}
        pending = release()
        assert pending is not None
        await pending
        await_release = await locks.acquire("l", "b")  # the slot came back with the release
        pending = await_release()
        assert pending is not None
        await pending
    finally:
        await locks.close()


@pytest.mark.postgres
def test_a_dead_pooled_connection_is_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    require_postgres()
    engine = create_sync_engine(POSTGRES_SERVER_URL, EngineOptions())
    try:
        connection = engine.raw_connection()  # as the ledger's readers take theirs
        cursor = connection.cursor()
        cursor.execute("SELECT pg_backend_pid()")
        [pid] = cursor.fetchone()  # type: ignore[misc]
        assert _admin("SELECT pg_terminate_backend(%s)", pid) == [(True,)]
        with caplog.at_level(logging.ERROR, logger="sqlalchemy.pool"):
            connection.close()  # returned to the pool: its reset meets the dead connection
    finally:
        engine.dispose()
    records = [record for record in caplog.records if record.name.startswith("sqlalchemy.pool")]
    assert len(records) == 1 and records[0].exc_info is None
    assert "Exception during reset or similar: " in records[0].getMessage()
    assert "\n" not in records[0].getMessage() and "Traceback" not in caplog.text


async def test_the_whole_file_lock_of_other_platforms_excludes_every_other_hold(tmp_path: Path) -> None:
    """Where open-file-description locks do not exist, one ``flock`` on the sidecar file serves
    every session: correct, only coarser."""
    path = tmp_path / "ledger.sqlite3.locks"
    first, second = FileLocks(str(path), lock_file), FileLocks(str(path), lock_file)
    release = await first.acquire("default", "s1")
    waiting = asyncio.ensure_future(second.acquire("default", "s2"))
    await asyncio.to_thread(until, lambda: file_waiters(path, None) >= 1, "the second hold waiting")
    assert not waiting.done()
    assert release() is None  # a file lock goes with its descriptor, at once
    assert (await asyncio.wait_for(waiting, SAFETY))() is None
