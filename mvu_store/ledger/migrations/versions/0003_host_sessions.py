"""The store-backed host: sessions and their events in the ledger's own database.

``mvu serve`` keeps the chats it is fed over HTTP here (``mvu_store.store_host``), so every
process on the database sees the same sessions. Only the fields the service consumes are kept;
the tables are outside the ledger's byte budget (see ``tables.py``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 01:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TURN_MARKS = "type IN ('turn/start', 'turn/end')"


def upgrade() -> None:
    op.create_table('host_sessions',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('format_version', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=True),
    sa.Column('parent_session', sa.String(length=200), nullable=True),
    sa.Column('origin', sa.String(length=64), nullable=True),
    sa.Column('inherited_event_count', sa.BigInteger(), nullable=True),
    sa.Column('last_seq', sa.BigInteger(), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('recorded_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'id', name=op.f('pk_host_sessions')),
    sqlite_with_rowid=False
    )
    op.create_table('host_events',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('type', sa.String(length=64), nullable=False),
    sa.Column('turn', sa.BigInteger(), nullable=True),
    sa.Column('data', sa.Text(), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'session_id'], ['host_sessions.ledger_id', 'host_sessions.id'],
                            name=op.f('fk_host_events_ledger_id_session_id_host_sessions')),
    sa.PrimaryKeyConstraint('ledger_id', 'session_id', 'seq', name=op.f('pk_host_events')),
    sqlite_with_rowid=False
    )
    op.create_index('uq_host_events_turn', 'host_events', ['ledger_id', 'session_id', 'type', 'turn'], unique=True,
                    sqlite_where=sa.text(_TURN_MARKS), postgresql_where=sa.text(_TURN_MARKS))


def downgrade() -> None:
    op.drop_index('uq_host_events_turn', table_name='host_events', sqlite_where=sa.text(_TURN_MARKS),
                  postgresql_where=sa.text(_TURN_MARKS))
    op.drop_table('host_events')
    op.drop_table('host_sessions')
