"""``changes`` rows written the way the ledger's commit writes them, for tests of their reads.

A test writes a version's rows here in a unit of work of its own, in place of those its commit
wrote (theirs are deleted and their bytes given back): each row takes the version's revision,
session and message from its ``versions`` row and its bytes are charged to the budget, as a
commit's are.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, func, select

from mvu_store.jsonvalue import canonical_text
from mvu_store.ledger import Ledger
from mvu_store.ledger import tables as t
from mvu_store.ledger.query import LEDGER, Query
from mvu_store.ledger.records import ChangeRow
from mvu_store.ledger.writer import WriteTx


async def write_changes(ledger: Ledger, resource_id: str, revision: int, rows: list[ChangeRow], *,
                        omitted: bool = False, derived: bool = False) -> None:
    """Write ``rows`` as the changes of ``resource_id``'s own version of ``revision``."""
    store = ledger._store

    def work(tx: WriteTx) -> None:
        found = tx.one(_VERSION, resource_id=resource_id, revision=revision)
        assert found is not None, f"{resource_id} has no revision {revision}"
        written = tx.one(_WRITTEN, resource_id=resource_id, position=found["position"])
        tx.execute(_DELETE, resource_id=resource_id, position=found["position"])
        tx.charge(-int(written["bytes"]) if written else 0)
        store.insert_rows(tx, t.changes, [_row(resource_id, revision, found, seq, row, omitted, derived)
                                          for seq, row in enumerate(rows)])

    await store.write(work)


_v, _c = t.versions.c, t.changes.c
_WRITTEN = Query("test-changes-bytes", lambda: select(func.coalesce(func.sum(_c.bytes), 0).label("bytes")).where(
    _c.ledger_id == LEDGER, _c.resource_id == bindparam("resource_id"), _c.position == bindparam("position")))
_DELETE = Query("test-changes-delete", lambda: delete(t.changes).where(
    _c.ledger_id == LEDGER, _c.resource_id == bindparam("resource_id"), _c.position == bindparam("position")))
_VERSION = Query("test-version-of-revision", lambda: select(_v.position, _v.session_id, _v.message_seq).where(
    _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), _v.revision == bindparam("revision")))


def _row(resource_id: str, revision: int, version: Any, seq: int, row: ChangeRow, omitted: bool,
         derived: bool) -> dict[str, Any]:
    return {
        "resource_id": resource_id, "position": version["position"], "seq": seq, "revision": revision,
        "session_id": version["session_id"], "turn": row.turn, "message_seq": version["message_seq"],
        "path": row.path, "op": row.op, "status": row.status, "actor": row.actor,
        "before": canonical_text(row.before[0]) if row.before else None,
        "after": canonical_text(row.after[0]) if row.after else None,
        "omitted": omitted, "command": row.command, "code": row.code, "reason": row.reason,
        "message": row.message, "derived": derived,
    }
