"""Bytes flipped inside a row of a real SQLite file (bit rot): SQLite's structural check passes,
so the damage must be a typed error where the row is read, an audit finding naming the table
and key, a status that is not clean, and an export that refuses naming the row."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from mvu_api.cli import main
from mvu_store.errors import MvuError
from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger
from mvu_store.ledger.dialect import translate
from mvu_store.ledger.engine import EngineOptions, create_sync_engine
from tests.http.support import MVU, Server

MARKER = "bit-rot-lands-here"
MARKER_OFFSET = len('{"stat_data":{"note":"')  # where it is in the state's canonical JSON


async def ledger_with_marker(path: Path) -> str:
    """A ledger whose head state holds ``MARKER`` (and no other row does); its state's hash."""
    ledger = await open_ledger(f"sqlite:///{path}")
    try:
        await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}}, definition={}))
        await ledger.commit(CommitRequest("mvu:a", 0, "manual", {"stat_data": {"note": MARKER}}, "fp",
                                          {"manual": True}, operation_id="op"))
        assert await ledger.audit() == []
    finally:
        await ledger.close()
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        [head_hash] = raw.execute("SELECT head_hash FROM resources").fetchone()
    return str(head_hash)


def flip(path: Path, replacement: bytes) -> None:
    """Overwrite the marker's first two bytes in place."""
    data = path.read_bytes()
    found = MARKER.encode()
    assert data.count(found) == 1, "the marker is in one row of the file"
    path.write_bytes(data.replace(found, replacement + found[2:]))
    with sqlite3.connect(path) as raw:  # the structure is intact: only the value changed
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


@pytest.mark.parametrize(("replacement", "detail"), [(b"\xff\xfe", "body is not UTF-8 text (byte"),
                                                     (b'"}', "body is not JSON"),
                                                     (b"BI", "body does not match its hash")])
async def test_a_damaged_state_is_typed_and_an_audit_finding(tmp_path: Path, replacement: bytes, detail: str) -> None:
    path = tmp_path / "l.sqlite3"
    state_hash = await ledger_with_marker(path)
    flip(path, replacement)
    ledger = await open_ledger(f"sqlite:///{path}")
    try:
        if detail.startswith("body is not UTF-8"):
            with pytest.raises(MvuError) as caught:
                await ledger.head("mvu:a")
            assert caught.value.code == "MVU_STORAGE_CORRUPT" and len(caught.value.message) < 400
        findings = await ledger.audit()
        damaged = [finding for finding in findings if finding.check == "damaged_row"]
        assert [(finding.subject, finding.detail[:len(detail)]) for finding in damaged] == [
            (f"blobs hash={state_hash}", detail)]
    finally:
        await ledger.close()


async def test_rows_damaged_through_sql_are_findings_on_either_database(ledger: Ledger, ledger_url: str,
                                                                         ledger_id: str) -> None:
    """A JSON column that is not JSON and a state that is not what its hash says, written by SQL
    (as a hand edit or a faulty tool would) on SQLite and PostgreSQL alike: findings naming the row."""
    await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}}, definition={}))
    await ledger.commit(CommitRequest("mvu:a", 0, "manual", {"stat_data": {"note": MARKER}}, "fp",
                                      {"manual": True}, operation_id="op"))
    assert await ledger.audit() == []
    engine = create_sync_engine(ledger_url, EngineOptions())
    try:
        with engine.begin() as connection:
            [head_hash] = connection.execute(text("SELECT head_hash FROM resources WHERE ledger_id = :l"),
                                             {"l": ledger_id}).one()
            connection.execute(text("UPDATE resources SET meta = '{not json' WHERE ledger_id = :l"), {"l": ledger_id})
            connection.execute(text("UPDATE blobs SET body = :b WHERE ledger_id = :l AND hash = :h"),
                               {"b": json.dumps({"stat_data": {"note": "edited"}}), "l": ledger_id, "h": head_hash})
    finally:
        engine.dispose()
    damaged = [(finding.subject, finding.detail) for finding in await ledger.damaged_rows()]
    assert damaged == [(f"blobs hash={head_hash}", "body does not match its hash"),
                       ("resources id=mvu:a", "meta is not JSON")]


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = main(["--json", *args])
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_status_is_not_clean_and_export_refuses_naming_the_row(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.sqlite3"
    state_hash = asyncio.run(ledger_with_marker(path))
    flip(path, b"\xff\xfe")
    db = f"sqlite:///{path}"
    code, status = cli("status", "--db", db, capsys=capsys)
    assert code == 1 and status["audit"] == "1 finding(s)"
    code, audit = cli("audit", "--db", db, capsys=capsys)
    assert code == 1 and audit["findings"] == [
        {"check": "damaged_row", "ledgerId": "default", "subject": f"blobs hash={state_hash}",
         "detail": f"body is not UTF-8 text (byte {MARKER_OFFSET})"}]
    code = main(["--json", "export", "--db", db, str(tmp_path / "out")])
    *message, error_code = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and error_code == "MVU_STORAGE_CORRUPT"
    assert f"blobs hash={state_hash} is damaged" in message[-1] and not (tmp_path / "out").exists()


def test_driver_errors_without_a_sqlite_code_are_typed() -> None:
    """pysqlite's own errors (a text that is not UTF-8, a failing function) carry no SQLite code."""
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (x TEXT)")
    connection.execute("INSERT INTO t VALUES (CAST(X'61FF62' AS TEXT))")
    connection.create_function("broken", 1, lambda _: 1 / 0)
    for statement in ("SELECT x FROM t", "SELECT broken(1)"):
        with pytest.raises(sqlite3.Error) as caught:
            connection.execute(statement).fetchall()
        mapped = translate(caught.value)
        assert isinstance(mapped, MvuError) and mapped.code == "MVU_STORAGE_CORRUPT"


@pytest.mark.parametrize("error", [psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"),
                                   psycopg.InterfaceError("the connection is in a wrong state"),
                                   psycopg.ProgrammingError("no result available")])
def test_driver_errors_without_a_sqlstate_are_typed(error: psycopg.Error) -> None:
    """psycopg's own errors (as the one for a NUL in a text parameter) carry no SQLSTATE."""
    assert error.sqlstate is None
    mapped = translate(error)
    assert isinstance(mapped, MvuError) and mapped.code == "MVU_STORAGE_CORRUPT", mapped


def test_a_read_over_http_meets_the_damage_as_a_typed_problem(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite3"
    asyncio.run(ledger_with_marker(path))
    flip(path, b"\xff\xfe")
    server = Server.start(f"sqlite:///{path}")
    try:
        with server.client() as client:
            scope = json.dumps({"authority": "local", "sessionId": "s"})
            answer = client.get(f"{MVU}/resource", params={"id": "mvu:a", "scope": scope})
    finally:
        code, _, log = server.stop()
    assert (answer.status_code, answer.json()["code"]) == (500, "MVU_STORAGE_CORRUPT"), answer.text
    assert code == 0 and "AttributeError" not in log
