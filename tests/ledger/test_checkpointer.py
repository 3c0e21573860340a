"""SQLite's WAL is checkpointed by a thread of the ledger's own, after commits and off the
writer's path; the writer finishes a pass so the WAL starts over; a failing checkpoint is
reported once and tried again; SQLite's own checkpoint in a commit is only the fallback."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger
from mvu_store.ledger.checkpointer import FALLBACK_AUTOCHECKPOINT_PAGES, RESTART_PAGES
from mvu_store.ledger.engine import WAL_SIZE_LIMIT_BYTES
from tests.lock_waits import until

STATE_TEXT = 64 * 1024  # each version stores this much new text, so pages reach the file only by checkpoints


def size_of(path: Path) -> int:
    return path.stat().st_size


def database_file(ledger_url: str) -> Path:
    database = make_url(ledger_url).database
    assert database is not None
    return Path(database)


async def commit_states(ledger: Ledger, count: int, *, start: int = 0) -> None:
    for n in range(start, start + count):
        variables = {"stat_data": {"n": n, "text": f"{n:08d}" * (STATE_TEXT // 8)}}
        await ledger.commit(CommitRequest("mvu:a", n, "manual", variables, f"fp-{n}", {"manual": True},
                                          operation_id=f"op-{n}"))


@pytest.fixture
async def sqlite_ledger(tmp_path: Path) -> Any:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    ledger = await open_ledger(url)
    await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}}, definition={}))
    yield ledger, url
    await ledger.close()


async def test_commits_reach_the_database_file_through_the_background_checkpoint(
        sqlite_ledger: tuple[Ledger, str]) -> None:
    ledger, url = sqlite_ledger
    path = database_file(url)
    before = path.stat().st_size
    await commit_states(ledger, 32)  # about 2 MiB: far below the writer's own checkpoint mark

    until(lambda: path.stat().st_size >= before + 32 * STATE_TEXT, "the WAL checkpointed into the file")
    with sqlite3.connect(path) as outside:
        assert outside.execute("SELECT count(*) FROM versions WHERE resource_id = 'mvu:a'").fetchone() == (32,)


def wal_restarts(wal: Path) -> int:
    """How many times the WAL was started over from its beginning: its header's checkpoint
    sequence number (bytes 12-15, big-endian), which SQLite increments at each restart."""
    with wal.open("rb") as handle:
        return int.from_bytes(handle.read(16)[12:16], "big")


async def test_the_writer_finishes_a_pass_so_the_wal_starts_over(sqlite_ledger: tuple[Ledger, str]) -> None:
    """A pass on the thread over a WAL past the restart mark leaves what it could not copy (here:
    what a long read still sees the WAL without); the writer copies the rest after its next
    commit, so the write after that starts the WAL over (a WAL that only grows makes every
    commit's sync write its size too)."""
    ledger, url = sqlite_ledger
    checkpointer = ledger._store._checkpointer
    assert checkpointer is not None
    wal = Path(f"{database_file(url)}-wal")
    reader = sqlite3.connect(database_file(url), isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM versions").fetchone()  # no pass copies what is committed after this
    states = RESTART_PAGES * 4096 // STATE_TEXT + 1  # each state takes more than STATE_TEXT of WAL
    await commit_states(ledger, states)
    until(lambda: checkpointer._restart_due, "a background pass over the commits")
    reader.execute("COMMIT")
    reader.close()
    checkpointer.close()  # from here on only the writer can copy the WAL back
    restarts = wal_restarts(wal)
    # The writer copies what is left after the first commit (unless a last pass of the thread,
    # which closing let finish, did), so the second writes the WAL from its beginning at the latest.
    await commit_states(ledger, 2, start=states)
    assert wal_restarts(wal) > restarts


async def test_sqlite_checkpoints_inside_a_commit_only_at_the_fallback_mark(sqlite_ledger: tuple[Ledger, str]) -> None:
    ledger, _ = sqlite_ledger

    def pages(tx: Any) -> int:
        return int(tx.cursor.execute("PRAGMA wal_autocheckpoint").fetchone()[0])

    assert await ledger._store.write(pages) == FALLBACK_AUTOCHECKPOINT_PAGES


async def test_a_wal_grown_in_a_burst_is_cut_back_once_checkpointed(sqlite_ledger: tuple[Ledger, str]) -> None:
    """A long read holds the WAL while commits pile up in it; once the read ends and a
    checkpoint has copied everything back, the next write restarts the WAL and truncates
    the file to the limit instead of keeping its largest size."""
    ledger, url = sqlite_ledger
    wal = Path(f"{database_file(url)}-wal")
    reader = sqlite3.connect(database_file(url), isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM versions").fetchone()  # holds its snapshot: no checkpoint can finish
    await commit_states(ledger, 24 * 1024 * 1024 // STATE_TEXT)  # well past the limit
    assert size_of(wal) > WAL_SIZE_LIMIT_BYTES
    reader.execute("COMMIT")
    reader.close()

    def cut_back() -> bool:
        return size_of(wal) <= WAL_SIZE_LIMIT_BYTES

    # Each commit may restart the WAL once the background checkpoint has copied it all back.
    n = 24 * 1024 * 1024 // STATE_TEXT
    deadline = time.monotonic() + 60
    while not cut_back():
        assert time.monotonic() < deadline, "the WAL kept its size"
        await commit_states(ledger, 1, start=n)
        n += 1
        await asyncio.sleep(0.02)  # lets the checkpoint thread take its turn


async def test_a_failing_checkpoint_warns_once_and_the_next_commits_try_again(
        sqlite_ledger: tuple[Ledger, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    ledger, url = sqlite_ledger
    path = database_file(url)
    checkpointer = ledger._store._checkpointer
    assert checkpointer is not None
    refusals = [sqlite3.OperationalError("disk I/O error") for _ in range(3)]
    real = checkpointer._checkpoint
    passed = threading.Event()

    def observed(connection: Any) -> Any:
        """The first three passes find their connection failing, as on a failing disk."""
        try:
            if not refusals:
                return real(connection)
            if connection is not None:
                connection.close()
            return real(_Failing(refusals.pop()))
        finally:
            passed.set()

    monkeypatch.setattr(checkpointer, "_checkpoint", observed)
    before = path.stat().st_size
    with caplog.at_level(logging.WARNING, logger="mvu_store.ledger.checkpointer"):
        for n in range(4):  # each commit wakes one pass
            passed.clear()
            await commit_states(ledger, 1, start=n)
            until(passed.is_set, f"checkpoint pass {n + 1}")
    messages = [record.getMessage() for record in caplog.records]
    assert refusals == []
    assert sum("checkpoints fail" in message for message in messages) == 1
    assert sum("work again" in message for message in messages) == 1
    assert path.stat().st_size >= before + 4 * STATE_TEXT


async def test_closing_the_ledger_stops_the_thread(tmp_path: Path) -> None:
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    checkpointer = ledger._store._checkpointer
    assert checkpointer is not None and checkpointer._thread.is_alive()
    await ledger.close()
    assert not checkpointer._thread.is_alive()


class _Failing:
    """A connection whose every use fails with ``error``."""

    def __init__(self, error: Exception) -> None:
        self._error = error

    def cursor(self) -> Any:
        raise self._error

    def invalidate(self) -> None:
        """Nothing to drop."""
