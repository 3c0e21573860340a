"""Seeing from outside that a hold waits for a session's database lock.

A test that needs "this hold is now waiting" waits for that event instead of sleeping: the
kernel lists a blocked open-file-description lock in ``/proc/locks`` (SQLite's sidecar file), the
server lists an ungranted advisory lock in ``pg_locks`` (PostgreSQL). Neither tells anyone when
it happens, so :func:`until_waiting` looks again until it has, within a deadline that only
turns a hang into a failure.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from mvu_store.ledger.locks import advisory_key, lock_offset
from tests.conftest import POSTGRES_SERVER_URL

DEADLINE_SECONDS = 60.0


def file_waiters(path: Path, offset: int | None) -> int:
    """How many locks wait on ``path`` (on its byte ``offset``; None: on the whole file)."""
    if not path.exists():
        return 0
    status = path.stat()
    inode = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
    count = 0
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" not in fields or inode not in fields:
            continue
        start = fields[fields.index(inode) + 1]
        if offset is None or start == str(offset):
            count += 1
    return count


def waiters(url: str, ledger_id: str, session_id: str) -> int:
    """How many holds wait for the database lock of ``session_id`` in the ledger at ``url``."""
    if url.startswith("sqlite"):
        database = make_url(url).database
        assert database is not None
        return file_waiters(Path(f"{database}.locks"), lock_offset(ledger_id, session_id))
    first, second = advisory_key(ledger_id, session_id)
    with psycopg.connect(POSTGRES_SERVER_URL, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 2",
            (first & 0xFFFFFFFF, second & 0xFFFFFFFF)).fetchone()
    assert row is not None
    return int(row[0])


def until(condition: Callable[[], bool], what: str) -> None:
    """Return once ``condition()`` holds (looked at again every 10 ms); fail past the deadline."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {DEADLINE_SECONDS} s")
        time.sleep(0.01)


def until_waiting(url: str, ledger_id: str, session_id: str, count: int = 1) -> None:
    """Return once ``count`` holds wait for the session's database lock."""
    until(lambda: waiters(url, ledger_id, session_id) >= count, f"{count} holds of {session_id!r} waiting")
