"""A read that meets a busy, lost or damaged database is a typed MvuError, as a write is.

Reads run on reader connections (``Ledger.read``), not on the writer, so their driver errors
need the same translation: busy, locked or disconnected is ``MVU_STORAGE_BUSY`` (nothing was
written, retry later), a damaged database ``MVU_STORAGE_CORRUPT``; never a raw
``sqlalchemy.exc.OperationalError`` (an HTTP 500).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy.exc
from sqlalchemy import Connection, text

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger, NewResource, open_ledger
from mvu_store.ledger.query import Query, ReadRows

ON_SQLITE = pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)

PUBLIC_READS: dict[str, Callable[[Ledger], Awaitable[object]]] = {
    "resource": lambda ledger: ledger.resource("mvu:a"),
    "resources": lambda ledger: ledger.resources(session_id="s1", kinds=("instance",)),
    "head": lambda ledger: ledger.head("mvu:a"),
    "blob": lambda ledger: ledger.blob("0" * 64),
    "blobs": lambda ledger: ledger.blobs(["0" * 64]),
    "versions": lambda ledger: ledger.versions("mvu:a", after_position=0),
    "checkpoints": lambda ledger: ledger.checkpoints("mvu:a"),
    "checkpoint": lambda ledger: ledger.checkpoint("mvu:a", session_id="s1", turn=1),
    "selection": lambda ledger: ledger.selection("s1"),
    "activations": lambda ledger: ledger.activations("s1"),
    "templates": lambda ledger: ledger.templates(),
    "template": lambda ledger: ledger.template("mvu:t"),
    "legacy_digest": lambda ledger: ledger.legacy_digest("mvu-state.json"),
    "legacy_file": lambda ledger: ledger.legacy_file("mvu-state.json"),
    "seed": lambda ledger: ledger.seed("ticket"),
    "seed_pending": lambda ledger: ledger.seed_pending("s1"),
    "facts": lambda ledger: ledger.facts(session_id="s1"),
    "usage": lambda ledger: ledger.usage(),
    "audit": lambda ledger: ledger.audit(),
}


def sqlite_path(ledger_url: str) -> str:
    return ledger_url.removeprefix("sqlite:///")


def sqlite_busy(path: Path) -> sqlite3.OperationalError:
    """The error SQLite raises when another connection holds the lock past the busy timeout."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder, \
            contextlib.closing(sqlite3.connect(path, isolation_level=None, timeout=0)) as waiter:
        holder.execute("BEGIN IMMEDIATE")
        try:
            waiter.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            return error
    raise AssertionError("the second writer was not refused")


def postgres_unreachable() -> psycopg.OperationalError:
    """The error psycopg raises when no server answers (nothing listens on port 1)."""
    try:
        psycopg.connect("postgresql://postgres@127.0.0.1:1/test", connect_timeout=3).close()
    except psycopg.OperationalError as error:
        return error
    raise AssertionError("something answered on port 1")


@ON_SQLITE
@pytest.mark.parametrize("contention", ["the write lock is held", "the read's snapshot went stale"])
async def test_a_read_kept_from_its_lock_past_the_busy_timeout_is_busy(ledger_url: str, contention: str) -> None:
    ledger = await open_ledger(ledger_url, busy_timeout_ms=50)
    other = sqlite3.connect(sqlite_path(ledger_url), isolation_level=None, check_same_thread=False)

    def work(connection: Connection) -> None:
        connection.exec_driver_sql("SELECT count(*) FROM facts").all()  # the read's snapshot begins
        if contention == "the write lock is held":
            other.execute("BEGIN IMMEDIATE")
        else:
            other.execute("UPDATE ledger SET created_at = created_at + 1")  # a commit after the snapshot
        connection.exec_driver_sql("DELETE FROM facts")  # needs the write lock

    try:
        with pytest.raises(MvuError) as busy:
            await ledger._store.read(work)
        assert busy.value.code == "MVU_STORAGE_BUSY"
        if other.in_transaction:
            other.execute("ROLLBACK")
        assert (await ledger.usage()).facts_count == 0  # the next read goes on
    finally:
        other.close()
        await ledger.close()


@ON_SQLITE
async def test_a_brief_read_whose_kept_connection_broke_is_refused_and_the_next_opens_another(
        ledger: Ledger) -> None:
    await ledger.create_resource(NewResource(id="mvu:a", kind="instance", initial={}, definition={}))
    assert (await ledger.head("mvu:a")).revision == 0  # a brief read: it keeps its connection
    kept = ledger._store._loop_reader
    assert kept is not None
    kept.driver_connection.close()  # as a connection the driver lost under us

    with pytest.raises(MvuError) as refused:
        await ledger.head("mvu:a")
    assert refused.value.code == "MVU_STORAGE_CORRUPT"
    assert (await ledger.head("mvu:a")).revision == 0
    assert ledger._store._loop_reader is not None and ledger._store._loop_reader is not kept


@ON_SQLITE
async def test_a_public_read_of_a_damaged_database_is_storage_corrupt(ledger: Ledger, ledger_url: str) -> None:
    with contextlib.closing(sqlite3.connect(sqlite_path(ledger_url), isolation_level=None)) as outside:
        outside.execute("DROP VIEW audit_findings")
    with pytest.raises(MvuError) as corrupt:
        await ledger.audit()
    assert corrupt.value.code == "MVU_STORAGE_CORRUPT"


async def test_every_public_read_whose_connection_fails_is_storage_busy(
    ledger: Ledger, ledger_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ledger.create_resource(NewResource(id="mvu:a", kind="instance", initial={}, definition={}))
    driver_error = sqlite_busy(tmp_path / "scratch.sqlite3") if ledger.dialect == "sqlite" else postgres_unreachable()

    def connect() -> Any:
        # What SQLAlchemy raises when the driver cannot give it a connection.
        raise sqlalchemy.exc.OperationalError("connect", None, driver_error)

    # Reads take a Core connection (``read``) or a raw one (``read_rows``): both fail.
    monkeypatch.setattr(ledger._store._reader_engine, "connect", connect)
    monkeypatch.setattr(ledger._store._reader_engine, "raw_connection", connect)
    ledger._store._drop_loop_reader()  # brief reads keep the connection they opened: make them open one
    for name, read in PUBLIC_READS.items():
        with pytest.raises(MvuError) as busy:
            await read(ledger)
        assert busy.value.code == "MVU_STORAGE_BUSY", name
    monkeypatch.undo()
    assert (await ledger.head("mvu:a")).revision == 0


@pytest.mark.postgres
@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
async def test_a_read_blocked_past_its_lock_timeout_is_storage_busy(ledger: Ledger, ledger_url: str) -> None:
    def work(connection: Connection) -> object:
        connection.exec_driver_sql("SET LOCAL lock_timeout = '50ms'")
        return connection.exec_driver_sql("SELECT count(*) FROM facts").all()

    with psycopg.connect(ledger_url) as holder:
        holder.execute("LOCK TABLE facts IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(MvuError) as busy:
            await ledger._store.read(work)
        holder.rollback()
    assert busy.value.code == "MVU_STORAGE_BUSY"
    assert await ledger.facts() == []


@pytest.mark.postgres
@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
async def test_a_read_whose_connection_is_lost_is_storage_busy_and_the_next_reconnects(ledger: Ledger) -> None:
    await ledger.create_resource(NewResource(id="mvu:a", kind="instance", initial={}, definition={}))
    with pytest.raises(MvuError) as lost:
        await ledger._store.read(lambda c: c.exec_driver_sql("SELECT pg_terminate_backend(pg_backend_pid())").all())
    assert lost.value.code == "MVU_STORAGE_BUSY"
    assert (await ledger.head("mvu:a")).revision == 0


@pytest.mark.postgres
@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
async def test_a_round_trip_whose_connection_is_lost_is_storage_busy_and_the_next_reconnects(ledger: Ledger) -> None:
    await ledger.create_resource(NewResource(id="mvu:a", kind="instance", initial={}, definition={}))
    terminate = Query("test-terminate", lambda: text("SELECT pg_terminate_backend(pg_backend_pid())"))
    for _ in range(2):  # every pooled connection may be the one taken next
        with pytest.raises(MvuError) as lost:
            await ledger._store.read_rows(lambda rows: rows.all(terminate))
        assert lost.value.code == "MVU_STORAGE_BUSY"
        assert (await ledger.head("mvu:a")).revision == 0


@ON_SQLITE
@pytest.mark.parametrize("brief", [False, True])
async def test_a_round_trip_on_a_damaged_database_is_storage_corrupt_on_the_loop_or_off_it(
        ledger: Ledger, ledger_url: str, brief: bool) -> None:
    findings = Query("test-findings", lambda: text("SELECT * FROM audit_findings WHERE ledger_id = :ledger_id"))
    with contextlib.closing(sqlite3.connect(sqlite_path(ledger_url), isolation_level=None)) as outside:
        outside.execute("DROP VIEW audit_findings")
    with pytest.raises(MvuError) as corrupt:
        await ledger._store.read_rows(lambda rows: rows.all(findings), brief=brief)
    assert corrupt.value.code == "MVU_STORAGE_CORRUPT"


@ON_SQLITE
@pytest.mark.parametrize("brief", [False, True])
async def test_the_statements_of_one_round_trip_see_one_snapshot(ledger: Ledger, ledger_url: str,
                                                                 brief: bool) -> None:
    usage = Query("test-usage", lambda: text("SELECT created_at FROM ledger WHERE ledger_id = :ledger_id"))
    other = sqlite3.connect(sqlite_path(ledger_url), isolation_level=None, check_same_thread=False)

    def work(rows: ReadRows) -> tuple[Any, Any]:
        first = rows.one(usage)
        other.execute("UPDATE ledger SET created_at = created_at + 1")  # committed after the first statement
        return first, rows.one(usage)

    try:
        first, second = await ledger._store.read_rows(work, brief=brief)
        assert first == second
        assert await ledger._store.read_one(usage) != first  # the next round trip sees the commit
    finally:
        other.close()
