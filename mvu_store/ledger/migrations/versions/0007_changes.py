"""Each variable's story: the ``changes`` table, one row per path a version changed or per
command it refused or ignored (``mvu_store.ledger.tables.changes``), back-filled for the versions
a ledger already holds.

The back-fill walks each resource's versions in position order, a page of rows at a time and one
state in memory besides the previous one, and writes what two consecutive states show: each path
of ``stat_data`` that differs (``change_rows.derived_changes``), marked ``derived``, the actor by
the version's kind; a failed version gets its one refusal. A resource's first version is compared
with its initial state, or, for a fork child, with its parent's version at the fork point.
Nothing is back-filled for an instance's opening (the rows a creation writes at position -1):
the ledger keeps the state an instance started from, not its template's data before the
greeting, so no two stored states show what the opening changed. The rows are charged to
``ledger.used_bytes`` like any row. A ledger whose budget cannot take them all
gets them in resource creation order until the next version's rows would not fit, and none after:
upgrading never refuses, nor leaves a ledger over its budget (docs/storage.md, "Each variable's
story").

The downgrade gives back the bytes the rows were charged and recreates the audit views without
the table (the views are the migration environment's, see ``audit.py``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06 18:10:00.000000
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Connection, and_, bindparam, insert, select, update

from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import audit
from mvu_store.ledger import tables as t
from mvu_store.ledger.change_rows import derived_changes, table_rows

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('changes',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('resource_id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('turn', sa.BigInteger(), nullable=True),
    sa.Column('message_seq', sa.BigInteger(), nullable=True),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('op', sa.String(length=32), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('actor', sa.String(length=16), nullable=False),
    sa.Column('before', sa.Text(), nullable=True),
    sa.Column('after', sa.Text(), nullable=True),
    sa.Column('omitted', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('command', sa.Text(), nullable=True),
    sa.Column('code', sa.String(length=64), nullable=True),
    sa.Column('reason', sa.String(length=32), nullable=True),
    sa.Column('message', sa.Text(), nullable=True),
    sa.Column('derived', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'resource_id'], ['resources.ledger_id', 'resources.id'],
                            name=op.f('fk_changes_ledger_id_resource_id_resources')),
    sa.PrimaryKeyConstraint('ledger_id', 'resource_id', 'position', 'seq', name=op.f('pk_changes')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('changes', schema=None) as batch_op:
        batch_op.create_index('ix_changes_path', ['ledger_id', 'resource_id', 'path', 'position'], unique=False)
        batch_op.create_index('ix_changes_session_turn', ['ledger_id', 'session_id', 'turn'], unique=False)
    _Backfill(op.get_bind()).run()


def downgrade() -> None:
    bind = op.get_bind()
    audit.drop_views(bind)  # they read the table (and PostgreSQL will not drop what a view reads)
    changes, ledger = t.changes.c, t.ledger.c
    bind.execute(update(t.ledger).values(used_bytes=ledger.used_bytes - sa.func.coalesce(
        select(sa.func.sum(changes.bytes)).where(changes.ledger_id == ledger.ledger_id).scalar_subquery(), 0)))
    with op.batch_alter_table('changes', schema=None) as batch_op:
        batch_op.drop_index('ix_changes_session_turn')
        batch_op.drop_index('ix_changes_path')
    op.drop_table('changes')
    audit.create_views(bind, without=(t.changes,))


_PAGE = 256
"""Versions read per statement (their columns, not their states)."""
_FLUSH = 512
"""Rows inserted per statement."""

_v, _b, _r = t.versions.c, t.blobs.c, t.resources.c
_VERSIONS = (select(_v.position, _v.kind, _v.revision, _v.session_id, _v.message_seq, _v.error, _v.variables_hash,
                    _v.source)
             .where(_v.ledger_id == bindparam("ledger_id"), _v.resource_id == bindparam("resource_id"),
                    _v.position > bindparam("after"))
             .order_by(_v.position).limit(_PAGE))
_BODY = select(_b.body).where(_b.ledger_id == bindparam("ledger_id"), _b.hash == bindparam("hash"))
_FORK_POINT = select(_v.variables_hash).where(
    and_(_v.ledger_id == bindparam("ledger_id"), _v.resource_id == bindparam("resource_id"),
         _v.position == bindparam("position")))


class _Backfill:
    """The rows of every version already stored, ledger by ledger, within each one's budget."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._pending: list[dict[str, Any]] = []

    def run(self) -> None:
        ledgers = self._connection.execute(select(t.ledger.c.ledger_id, t.ledger.c.used_bytes,
                                                  t.ledger.c.limit_bytes)).all()
        for ledger_id, used, limit in ledgers:
            room = int(limit) - int(used)
            charged = 0
            resources = self._connection.execute(
                select(_r.id, _r.initial_hash, _r.parent_id, _r.parent_position)
                .where(_r.ledger_id == ledger_id).order_by(_r.position)).all()
            for resource_id, initial_hash, parent_id, parent_position in resources:
                cost, fits = self._resource(ledger_id, resource_id, self._start(
                    ledger_id, initial_hash, parent_id, parent_position), room - charged)
                charged += cost
                if not fits:
                    break  # out of room: no rows past this point (see the module's docstring)
            self._flush()
            if charged:
                self._connection.execute(update(t.ledger).where(t.ledger.c.ledger_id == ledger_id)
                                         .values(used_bytes=t.ledger.c.used_bytes + charged))

    def _start(self, ledger_id: str, initial_hash: str, parent_id: str | None, parent_position: int | None) -> str:
        """The state a resource's first version is compared with (a hash)."""
        if parent_id is not None and parent_position is not None:
            found = self._connection.execute(_FORK_POINT, {"ledger_id": ledger_id, "resource_id": parent_id,
                                                           "position": parent_position}).first()
            if found is not None:
                return str(found[0])
        return initial_hash

    def _resource(self, ledger_id: str, resource_id: str, previous_hash: str, room: int) -> tuple[int, bool]:
        """Write the rows of one resource's versions; their bytes, and False when the rows of a
        version did not fit in ``room`` (that version's and the later ones are not written)."""
        previous: JsonValue = None
        charged, after = 0, -1
        while True:
            page = self._connection.execute(_VERSIONS, {"ledger_id": ledger_id, "resource_id": resource_id,
                                                        "after": after}).all()
            for position, kind, revision, session_id, message_seq, error, variables_hash, source in page:
                after = position
                if kind != "failed" and variables_hash == previous_hash:
                    continue  # the same state: nothing changed
                state: JsonValue = None
                if kind != "failed":
                    if previous is None:
                        previous = self._state(ledger_id, previous_hash)
                    state = self._state(ledger_id, variables_hash)
                rows = table_rows(derived_changes(previous, state, kind=kind, error=error, source=source),
                                  resource_id=resource_id, position=position, revision=revision,
                                  session_id=session_id, message_seq=message_seq, derived=True)
                for row in rows:
                    row["ledger_id"] = ledger_id
                    row["bytes"] = audit.row_bytes(t.changes, row)
                cost = sum(row["bytes"] for row in rows)
                if charged + cost > room:
                    return charged, False
                charged += cost
                self._pending.extend(rows)
                if len(self._pending) >= _FLUSH:
                    self._flush()
                if kind != "failed":
                    previous, previous_hash = state, variables_hash
            if len(page) < _PAGE:
                return charged, True

    def _state(self, ledger_id: str, variables_hash: str) -> JsonValue:
        found = self._connection.execute(_BODY, {"ledger_id": ledger_id, "hash": variables_hash}).first()
        return json.loads(found[0]) if found is not None else {}

    def _flush(self) -> None:
        if self._pending:
            self._connection.execute(insert(t.changes), self._pending)
            self._pending = []
