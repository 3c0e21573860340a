"""Two indexes that no query needs are dropped: every commit paid to keep them.

``ix_versions_session`` (versions by resource and session) served no query: a session's
history is read with its resource's, by the primary key. ``ix_receipts_position`` only
served the next position of a management-mode receipt, a rare operation that now reads the
resource's receipts by their primary key prefix. Each index was one more B-tree page written
per commit (16 writers: about a tenth of the bytes each commit wrote).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 09:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index('ix_versions_session', table_name='versions')
    op.drop_index('ix_receipts_position', table_name='receipts')


def downgrade() -> None:
    op.create_index('ix_receipts_position', 'receipts', ['ledger_id', 'resource_id', 'position'], unique=False)
    op.create_index('ix_versions_session', 'versions', ['ledger_id', 'resource_id', 'session_id'], unique=False)
