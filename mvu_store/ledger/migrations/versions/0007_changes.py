"""Each variable's story: the ``changes`` table, one row per path a version changed or per
command it refused or ignored (``mvu_store.ledger.tables.changes``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06 18:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

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
    sa.ForeignKeyConstraint(['ledger_id', 'resource_id', 'position'],
                            ['versions.ledger_id', 'versions.resource_id', 'versions.position'],
                            name=op.f('fk_changes_ledger_id_resource_id_position_versions')),
    sa.PrimaryKeyConstraint('ledger_id', 'resource_id', 'position', 'seq', name=op.f('pk_changes')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('changes', schema=None) as batch_op:
        batch_op.create_index('ix_changes_path', ['ledger_id', 'resource_id', 'path', 'position'], unique=False)
        batch_op.create_index('ix_changes_session_turn', ['ledger_id', 'session_id', 'turn'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('changes', schema=None) as batch_op:
        batch_op.drop_index('ix_changes_session_turn')
        batch_op.drop_index('ix_changes_path')
    op.drop_table('changes')
