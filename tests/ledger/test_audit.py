"""Each SQL audit view catches the damage it exists for (tampered on SQLite, behind our back)."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from mvu_store.ledger import CommitRequest, NewResource, open_ledger

TAMPERING = {
    "blobs": "UPDATE blobs SET body = body || ' ' WHERE hash = (SELECT head_hash FROM resources)",
    "heads": "UPDATE resources SET head_key = (SELECT key FROM versions WHERE revision = 1)",
    "revisions": "UPDATE versions SET parent_key = NULL WHERE revision = 2",
    "revision_hole": "UPDATE resources SET revision = revision + 1",
    "references": "UPDATE receipts SET version_key = 'f' || substr(version_key, 2) WHERE revision = 2",
    "row_bytes": "UPDATE versions SET meta = '{\"x\":1}' WHERE revision = 1",
    "usage": "UPDATE ledger SET used_bytes = used_bytes + 1",
    "legacy": "INSERT INTO legacy_files VALUES ('default', 'mvu-state.json', 'abc', 3, X'7B7D0A')",
}


@pytest.mark.parametrize("check", sorted(TAMPERING))
async def test_audit_view_catches(check: str, tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite3"
    ledger = await open_ledger(f"sqlite:///{path}")
    try:
        await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}}, definition={}))
        for revision in range(2):
            await ledger.commit(CommitRequest("mvu:a", revision, "manual", {"stat_data": {"n": revision}}, "f",
                                              {"sessionId": "s", "manual": True}, operation_id=f"op{revision}"))
        assert await ledger.audit() == []
        with sqlite3.connect(path) as raw:
            raw.create_function("sha256", 1, lambda _: None)
            raw.execute(TAMPERING[check])
        findings = await ledger.audit()
        expected = "revisions" if check == "revision_hole" else check
        assert expected in {finding.check for finding in findings}, findings
    finally:
        await ledger.close()


PORTABLE_VIEWS = ("audit_revisions", "audit_heads", "audit_references", "audit_row_bytes", "audit_usage")


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 shell is not installed")
async def test_audit_views_run_in_the_stock_sqlite3_shell(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite3"
    ledger = await open_ledger(f"sqlite:///{path}")
    try:
        await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}}, definition={}))
        await ledger.commit(CommitRequest("mvu:a", 0, "manual", {"stat_data": {"n": 1}}, "f",
                                          {"sessionId": "s", "manual": True}, operation_id="op"))
    finally:
        await ledger.close()
    queries = " ".join(f"SELECT '{view}', count(*) FROM {view};" for view in PORTABLE_VIEWS)
    shell = await asyncio.to_thread(
        subprocess.run, ["sqlite3", str(path), queries], capture_output=True, text=True, timeout=60, check=False
    )
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.split() == [f"{view}|0" for view in PORTABLE_VIEWS]
