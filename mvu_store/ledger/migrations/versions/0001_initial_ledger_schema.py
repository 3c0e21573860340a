"""Initial ledger schema: the tables of mvu_store.ledger.tables (the audit views: see env.py).

Revision ID: 0001
Revises: 
Create Date: 2026-11-29 19:36:48.879423
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('activations',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('owner_id', sa.String(length=200), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'owner_id', 'session_id', name=op.f('pk_activations')),
    sqlite_with_rowid=False
    )
    op.create_table('blobs',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('hash', sa.String(length=64), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'hash', name=op.f('pk_blobs'))
    )
    op.create_table('facts',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('phase', sa.String(length=16), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('recorded_at', sa.BigInteger(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'seq', name=op.f('pk_facts')),
    sqlite_with_rowid=False
    )
    op.create_table('ledger',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('format_version', sa.Integer(), nullable=False),
    sa.Column('used_bytes', sa.BigInteger(), nullable=False),
    sa.Column('limit_bytes', sa.BigInteger(), nullable=False),
    sa.Column('state_limit_bytes', sa.BigInteger(), nullable=False),
    sa.Column('facts_count', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('facts_bytes', sa.BigInteger(), server_default=sa.text('0'), nullable=False),
    sa.Column('facts_next_seq', sa.BigInteger(), server_default=sa.text('1'), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', name=op.f('pk_ledger')),
    sqlite_with_rowid=False
    )
    op.create_table('legacy_files',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('body', sa.LargeBinary(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'name', name=op.f('pk_legacy_files'))
    )
    op.create_table('selections',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('template_id', sa.String(length=200), nullable=True),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'session_id', name=op.f('pk_selections')),
    sqlite_with_rowid=False
    )
    op.create_table('resources',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('template_id', sa.String(length=200), nullable=True),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('session_created_at', sa.Text(), nullable=True),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('head_key', sa.String(length=64), nullable=True),
    sa.Column('head_hash', sa.String(length=64), nullable=False),
    sa.Column('definition_hash', sa.String(length=64), nullable=False),
    sa.Column('initial_hash', sa.String(length=64), nullable=False),
    sa.Column('management_mode', sa.String(length=16), nullable=True),
    sa.Column('parent_id', sa.String(length=200), nullable=True),
    sa.Column('parent_position', sa.Integer(), nullable=True),
    sa.Column('meta', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'definition_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_resources_ledger_id_definition_hash_blobs')),
    sa.ForeignKeyConstraint(['ledger_id', 'head_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_resources_ledger_id_head_hash_blobs')),
    sa.ForeignKeyConstraint(['ledger_id', 'initial_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_resources_ledger_id_initial_hash_blobs')),
    sa.ForeignKeyConstraint(['ledger_id', 'parent_id'], ['resources.ledger_id', 'resources.id'], name=op.f('fk_resources_ledger_id_parent_id_resources')),
    sa.PrimaryKeyConstraint('ledger_id', 'id', name=op.f('pk_resources')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.create_index('ix_resources_position', ['ledger_id', 'position'], unique=False)
        batch_op.create_index('ix_resources_session', ['ledger_id', 'session_id'], unique=False)

    op.create_table('seeds',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('ticket', sa.String(length=64), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('source_session_id', sa.String(length=200), nullable=False),
    sa.Column('target_session_id', sa.String(length=200), nullable=True),
    sa.Column('installed', sa.Boolean(), nullable=False),
    sa.Column('body_hash', sa.String(length=64), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'body_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_seeds_ledger_id_body_hash_blobs')),
    sa.PrimaryKeyConstraint('ledger_id', 'ticket', name=op.f('pk_seeds')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('seeds', schema=None) as batch_op:
        batch_op.create_index('ix_seeds_position', ['ledger_id', 'position'], unique=False)
        batch_op.create_index('ix_seeds_target', ['ledger_id', 'target_session_id'], unique=False)

    op.create_table('templates',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('definition_hash', sa.String(length=64), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'definition_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_templates_ledger_id_definition_hash_blobs')),
    sa.PrimaryKeyConstraint('ledger_id', 'id', name=op.f('pk_templates')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('templates', schema=None) as batch_op:
        batch_op.create_index('ix_templates_position', ['ledger_id', 'position'], unique=False)

    op.create_table('checkpoints',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('resource_id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('turn', sa.BigInteger(), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('version_key', sa.String(length=64), nullable=True),
    sa.Column('variables_hash', sa.String(length=64), nullable=False),
    sa.Column('meta', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'resource_id'], ['resources.ledger_id', 'resources.id'], name=op.f('fk_checkpoints_ledger_id_resource_id_resources')),
    sa.ForeignKeyConstraint(['ledger_id', 'variables_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_checkpoints_ledger_id_variables_hash_blobs')),
    sa.PrimaryKeyConstraint('ledger_id', 'resource_id', 'position', name=op.f('pk_checkpoints')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.create_index('uq_checkpoints_turn', ['ledger_id', 'resource_id', 'session_id', 'turn'], unique=True)

    op.create_table('receipts',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('resource_id', sa.String(length=200), nullable=False),
    sa.Column('operation_id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('version_key', sa.String(length=64), nullable=True),
    sa.Column('result', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'resource_id'], ['resources.ledger_id', 'resources.id'], name=op.f('fk_receipts_ledger_id_resource_id_resources')),
    sa.PrimaryKeyConstraint('ledger_id', 'resource_id', 'operation_id', name=op.f('pk_receipts')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('receipts', schema=None) as batch_op:
        batch_op.create_index('ix_receipts_position', ['ledger_id', 'resource_id', 'position'], unique=False)

    op.create_table('versions',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('resource_id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('parent_key', sa.String(length=64), nullable=True),
    sa.Column('variables_hash', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('message_seq', sa.BigInteger(), nullable=True),
    sa.Column('operation_id', sa.String(length=200), nullable=True),
    sa.Column('fingerprint', sa.String(length=64), nullable=True),
    sa.Column('error', sa.String(length=64), nullable=True),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('meta', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'resource_id'], ['resources.ledger_id', 'resources.id'], name=op.f('fk_versions_ledger_id_resource_id_resources')),
    sa.ForeignKeyConstraint(['ledger_id', 'variables_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_versions_ledger_id_variables_hash_blobs')),
    sa.PrimaryKeyConstraint('ledger_id', 'resource_id', 'position', name=op.f('pk_versions')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('versions', schema=None) as batch_op:
        batch_op.create_index('uq_versions_key', ['ledger_id', 'key', 'resource_id'], unique=True)
        batch_op.create_index('uq_versions_revision', ['ledger_id', 'resource_id', 'revision'], unique=True, sqlite_where=sa.text("kind IN ('reply', 'manual', 'card', 'initial')"), postgresql_where=sa.text("kind IN ('reply', 'manual', 'card', 'initial')"))



def downgrade() -> None:
    with op.batch_alter_table('versions', schema=None) as batch_op:
        batch_op.drop_index('uq_versions_revision', sqlite_where=sa.text("kind IN ('reply', 'manual', 'card', 'initial')"), postgresql_where=sa.text("kind IN ('reply', 'manual', 'card', 'initial')"))
        batch_op.drop_index('uq_versions_key')

    op.drop_table('versions')
    with op.batch_alter_table('receipts', schema=None) as batch_op:
        batch_op.drop_index('ix_receipts_position')

    op.drop_table('receipts')
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.drop_index('uq_checkpoints_turn')

    op.drop_table('checkpoints')
    with op.batch_alter_table('templates', schema=None) as batch_op:
        batch_op.drop_index('ix_templates_position')

    op.drop_table('templates')
    with op.batch_alter_table('seeds', schema=None) as batch_op:
        batch_op.drop_index('ix_seeds_target')
        batch_op.drop_index('ix_seeds_position')

    op.drop_table('seeds')
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.drop_index('ix_resources_session')
        batch_op.drop_index('ix_resources_position')

    op.drop_table('resources')
    op.drop_table('selections')
    op.drop_table('legacy_files')
    op.drop_table('ledger')
    op.drop_table('facts')
    op.drop_table('blobs')
    op.drop_table('activations')
