"""SillyTavern chats imported: versions of kind ``import``, and the chat files' lines.

An imported chat's recorded states are versions of a new committed kind, ``import``: they move
the head and claim a revision like a reply, so the unique index on claimed revisions covers
them. ``chat_imports`` and ``chat_lines`` keep what an export needs to give the file back
(``mvu_store.chats``); both are charged to the budget.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06 12:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEFORE = "kind IN ('reply', 'manual', 'card', 'initial', 'failed')"
_AFTER = "kind IN ('reply', 'manual', 'card', 'initial', 'import', 'failed')"


def _claims(batch_op: object, old: str, new: str) -> None:
    batch_op.drop_index('uq_versions_revision', sqlite_where=sa.text(old),  # type: ignore[attr-defined]
                        postgresql_where=sa.text(old))
    batch_op.create_index('uq_versions_revision', ['ledger_id', 'resource_id', 'revision'],  # type: ignore[attr-defined]
                          unique=True, sqlite_where=sa.text(new), postgresql_where=sa.text(new))


def upgrade() -> None:
    with op.batch_alter_table('versions', schema=None) as batch_op:
        _claims(batch_op, _BEFORE, _AFTER)
    op.create_table('chat_imports',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('summary', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'session_id'], ['host_sessions.ledger_id', 'host_sessions.id'],
                            name=op.f('fk_chat_imports_ledger_id_session_id_host_sessions')),
    sa.PrimaryKeyConstraint('ledger_id', 'session_id', name=op.f('pk_chat_imports')),
    sqlite_with_rowid=False
    )
    op.create_table('chat_lines',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('states', sa.Text(), nullable=True),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'session_id'], ['host_sessions.ledger_id', 'host_sessions.id'],
                            name=op.f('fk_chat_lines_ledger_id_session_id_host_sessions')),
    sa.PrimaryKeyConstraint('ledger_id', 'session_id', 'position', name=op.f('pk_chat_lines')),
    sqlite_with_rowid=False
    )


def downgrade() -> None:
    op.drop_table('chat_lines')
    op.drop_table('chat_imports')
    with op.batch_alter_table('versions', schema=None) as batch_op:
        _claims(batch_op, _AFTER, _BEFORE)
