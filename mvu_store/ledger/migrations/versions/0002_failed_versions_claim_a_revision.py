"""Failed versions claim a revision (as the original's poison receipts do); versions by session.

The partial unique index ``uq_versions_revision`` now covers ``failed`` rows too, so no two
rows of a resource claim one revision, whatever their kind. ``ix_versions_session`` serves
per-session history reads. (The audit views, which count failed versions as claims from now
on, are recreated by env.py.)

A failed row written before this revision sits at the revision its resource already had, which
another row claims (or at 0): no numbering of it agrees with the new rule, and renumbering the
history would invalidate revisions clients hold. Such a ledger is refused (``MVU_VERSION``)
rather than migrated into one that fails its audit.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 22:05:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mvu_store.errors import Code, MvuError

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEFORE = "kind IN ('reply', 'manual', 'card', 'initial')"
_AFTER = "kind IN ('reply', 'manual', 'card', 'initial', 'failed')"


def upgrade() -> None:
    failed = op.get_bind().execute(sa.text("SELECT COUNT(*) FROM versions WHERE kind = 'failed'")).scalar_one()
    if failed:
        raise MvuError(
            Code.VERSION,
            f"{failed} failed versions were written before failed replies claimed a revision; "
            "this database cannot be migrated in place",
            failed_versions=int(failed),
        )
    with op.batch_alter_table('versions', schema=None) as batch_op:
        batch_op.drop_index('uq_versions_revision', sqlite_where=sa.text(_BEFORE), postgresql_where=sa.text(_BEFORE))
        batch_op.create_index('uq_versions_revision', ['ledger_id', 'resource_id', 'revision'], unique=True,
                              sqlite_where=sa.text(_AFTER), postgresql_where=sa.text(_AFTER))
        batch_op.create_index('ix_versions_session', ['ledger_id', 'resource_id', 'session_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('versions', schema=None) as batch_op:
        batch_op.drop_index('ix_versions_session')
        batch_op.drop_index('uq_versions_revision', sqlite_where=sa.text(_AFTER), postgresql_where=sa.text(_AFTER))
        batch_op.create_index('uq_versions_revision', ['ledger_id', 'resource_id', 'revision'], unique=True,
                              sqlite_where=sa.text(_BEFORE), postgresql_where=sa.text(_BEFORE))
