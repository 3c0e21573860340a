"""Each SQL audit view catches the damage it exists for (tampered on SQLite, behind our back)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mvu_store.ledger import CommitRequest, NewResource, open_ledger

TAMPERING = {
    "blobs": "UPDATE blobs SET body = body || ' ' WHERE hash = (SELECT head_hash FROM resources)",
    "heads": "UPDATE resources SET head_key = (SELECT key FROM versions WHERE revision = 1)",
    "revisions": "UPDATE versions SET parent_key = NULL WHERE revision = 2",
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
        assert check in {finding.check for finding in findings}, findings
    finally:
        await ledger.close()
