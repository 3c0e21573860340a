"""Conditions of the storage that may pass (a full disk, a read-only file, an I/O error) are
refused with a code that names them, never as corruption; a database file deleted or replaced
under a running ledger refuses writes instead of acknowledging them into a lost file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import psycopg
import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger
from mvu_store.ledger.dialect import translate
from mvu_store.ledger.engine import EngineOptions, create_sync_engine

STATE = {"stat_data": {"hp": 1}}


def sqlite_error(code: int, message: str) -> sqlite3.OperationalError:
    """The error sqlite3 raises for a result code (its extended form, as the driver reports it)."""
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code
    error.sqlite_errorname = "test"
    return error


@pytest.mark.parametrize(("code", "expected"), [
    (sqlite3.SQLITE_FULL, "MVU_STORAGE_FULL"),
    (sqlite3.SQLITE_READONLY, "MVU_STORAGE_READ_ONLY"),
    (sqlite3.SQLITE_READONLY | (1 << 8), "MVU_STORAGE_READ_ONLY"),  # SQLITE_READONLY_RECOVERY
    (sqlite3.SQLITE_IOERR, "MVU_STORAGE_IO"),
    (sqlite3.SQLITE_IOERR | (4 << 8), "MVU_STORAGE_IO"),  # SQLITE_IOERR_FSYNC
    (sqlite3.SQLITE_CANTOPEN, "MVU_STORAGE_IO"),
    (sqlite3.SQLITE_CORRUPT, "MVU_STORAGE_CORRUPT"),  # damage stays damage
])
def test_sqlite_conditions_are_named_for_what_happened(code: int, expected: str) -> None:
    mapped = translate(sqlite_error(code, "from the driver"))
    assert isinstance(mapped, MvuError) and mapped.code == expected


@pytest.mark.parametrize(("sqlstate", "expected"), [
    ("53100", "MVU_STORAGE_FULL"), ("25006", "MVU_STORAGE_READ_ONLY"), ("58030", "MVU_STORAGE_IO")])
def test_postgresql_conditions_are_named_for_what_happened(sqlstate: str, expected: str) -> None:
    error = psycopg.errors.lookup(sqlstate)("from the server")
    mapped = translate(error)
    assert isinstance(mapped, MvuError) and mapped.code == expected


async def test_a_read_that_finds_no_free_connection_in_time_is_storage_busy(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    await (await open_ledger(url)).close()
    options = EngineOptions(create_file=False, pool_size=1, max_overflow=0, pool_timeout_s=0.05)
    readers = create_sync_engine(url, options, writer=False)
    ledger = Ledger(writer_engine=create_sync_engine(url, options, writer=True), reader_engine=readers,
                    ledger_id="default", state_limit_bytes=1 << 20)
    try:
        with readers.connect(), pytest.raises(MvuError) as refused:  # the pool's only connection, held
            await ledger.versions("mvu:a")
        assert refused.value.code == "MVU_STORAGE_BUSY"
        assert await ledger.versions("mvu:a") == []  # served again once one is free
    finally:
        await ledger.close()


async def test_a_full_database_refuses_the_write_with_storage_full_and_recovers(tmp_path: Path) -> None:
    """SQLite's own page limit gives the "database or disk is full" a full disk gives."""
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'l.sqlite3'}")
    try:
        await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial=STATE, definition={}))
        pages = await ledger._store.write(lambda tx: int(tx.cursor.execute("PRAGMA page_count").fetchone()[0]))
        await ledger._store.write(lambda tx: tx.cursor.execute(f"PRAGMA max_page_count = {pages}"))
        big = {"stat_data": {"text": "x" * 200_000}}
        with pytest.raises(MvuError) as full:
            await ledger.commit(CommitRequest("mvu:a", 0, "manual", big, "fp", {"manual": True}, operation_id="op"))
        assert full.value.code == "MVU_STORAGE_FULL"
        assert (await ledger.head("mvu:a")).revision == 0

        await ledger._store.write(lambda tx: tx.cursor.execute("PRAGMA max_page_count = 1073741823"))  # space is back
        outcome = await ledger.commit(CommitRequest("mvu:a", 0, "manual", big, "fp", {"manual": True},
                                                    operation_id="op"))
        assert outcome.revision == 1 and await ledger.audit() == []
    finally:
        await ledger.close()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_database_file_gone_from_under_the_ledger_refuses_writes(tmp_path: Path, how: str) -> None:
    path = tmp_path / "l.sqlite3"
    ledger = await open_ledger(f"sqlite:///{path}")
    try:
        await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial=STATE, definition={}))
        moved = tmp_path / "moved.sqlite3"
        os.rename(path, moved)
        if how == "replaced":
            sqlite3.connect(path).close()  # another (empty) database at the same path
        with pytest.raises(MvuError) as gone:
            await ledger.commit(CommitRequest("mvu:a", 0, "manual", STATE, "fp", {"manual": True},
                                              operation_id="op"))
        assert gone.value.code == "MVU_STORAGE_GONE" and gone.value.details["path"] == str(path)
        assert how in str(gone.value)

        if how == "deleted":  # put back, the same file: writes go on
            os.rename(moved, path)
            outcome = await ledger.commit(CommitRequest("mvu:a", 0, "manual", STATE, "fp", {"manual": True},
                                                        operation_id="op"))
            assert outcome.revision == 1
    finally:
        await ledger.close()
    if how == "deleted":
        reopened = await open_ledger(f"sqlite:///{path}")
        try:
            assert (await reopened.head("mvu:a")).revision == 1  # the acknowledged write is there
        finally:
            await reopened.close()


async def damaged_ledger_file(tmp_path: Path) -> Path:
    """A ledger file with history whose versions table's root page has its header overwritten."""
    path = tmp_path / "l.sqlite3"
    ledger = await open_ledger(f"sqlite:///{path}")
    await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial=STATE, definition={}))
    for n in range(40):
        await ledger.commit(CommitRequest("mvu:a", n, "manual", {"stat_data": {"n": n, "pad": "x" * 3000}},
                                          f"fp-{n}", {"manual": True}, operation_id=f"op-{n}"))
    await ledger.close()
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = raw.execute("PRAGMA page_size").fetchone()[0]
        [root] = raw.execute("SELECT rootpage FROM sqlite_master WHERE name = 'versions'").fetchone()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xff" * 64)
    return path


async def test_the_audit_reports_a_damaged_file_as_integrity_findings(tmp_path: Path) -> None:
    path = await damaged_ledger_file(tmp_path)
    damaged = await open_ledger(f"sqlite:///{path}")
    try:
        findings = await damaged.audit()
    finally:
        await damaged.close()
    assert findings and {finding.check for finding in findings} == {"integrity"}
    assert all(finding.subject == str(path) for finding in findings)


async def test_an_import_file_over_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    from mvu_store.ledger import transfer

    ledger = await open_ledger(f"sqlite:///{tmp_path / 'l.sqlite3'}")
    source = tmp_path / "original"
    source.mkdir()
    with (source / "mvu-instances.json").open("wb") as file:
        file.truncate(transfer.MAX_SOURCE_BYTES + 1)  # sparse: nothing to read, only its size counts
    try:
        with pytest.raises(MvuError) as refused:
            await transfer.import_directory(ledger, source)
        assert refused.value.code == "MVU_LIMIT" and refused.value.details["limit"] == transfer.MAX_SOURCE_BYTES
    finally:
        await ledger.close()


@pytest.mark.parametrize("text", [
    '{"version": 1, "resources": {"mvu:a": {}, "mvu:a": {}}}',
    '{"version": 1, "version": 1, "resources": {}}',
])
async def test_an_import_naming_a_key_twice_is_refused(tmp_path: Path, text: str) -> None:
    from mvu_store.ledger import transfer

    ledger = await open_ledger(f"sqlite:///{tmp_path / 'l.sqlite3'}")
    source = tmp_path / "original"
    source.mkdir()
    (source / "mvu-instances.json").write_text(text)
    try:
        with pytest.raises(MvuError) as refused:
            await transfer.import_directory(ledger, source)
        assert refused.value.code == "MVU_JSON" and "twice" in str(refused.value)
    finally:
        await ledger.close()


async def test_an_export_of_a_damaged_state_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    from mvu_store.ledger.transfer import export_directory

    path = tmp_path / "l.sqlite3"
    ledger = await open_ledger(f"sqlite:///{path}")
    try:
        await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {"hp": 10}},
                                                 definition={}))
        with sqlite3.connect(path) as raw:  # a flipped digit: still JSON, no longer what the hash says
            changed = raw.execute("UPDATE blobs SET body = replace(body, '\"hp\":10', '\"hp\":19')").rowcount
        assert changed >= 1
        with pytest.raises(MvuError) as refused:
            await export_directory(ledger, tmp_path / "out")
        assert refused.value.code == "MVU_STORAGE_CORRUPT" and "does not match its hash" in str(refused.value)
        assert not (tmp_path / "out").exists()
    finally:
        await ledger.close()


async def test_an_export_of_a_damaged_file_is_refused(tmp_path: Path) -> None:
    from mvu_store.ledger.transfer import export_directory

    path = await damaged_ledger_file(tmp_path)
    damaged = await open_ledger(f"sqlite:///{path}")
    try:
        with pytest.raises(MvuError) as refused:
            await export_directory(damaged, tmp_path / "out")
        assert refused.value.code == "MVU_STORAGE_CORRUPT" and str(path) in str(refused.value)
        assert not (tmp_path / "out").exists()
    finally:
        await damaged.close()
