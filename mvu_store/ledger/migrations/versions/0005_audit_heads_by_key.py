"""The audit views are made again: the head check finds an inherited head's version by its key.

No table changes. On SQLite, ``audit_heads`` looked an inherited head's version up by its key
with a plan that searched the versions' primary key by the ledger alone: a scan of the whole
history for every forked resource, which stalled ``mvu audit`` on a ledger of 15,000 forks and
300,000 versions. The view now names the key index. Views follow the tables and are made again
after any migration (``env.py``), so this revision exists to make them again on ledgers that
were already at the head.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05 19:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Nothing but the views, which env.py makes again."""


def downgrade() -> None:
    """Nothing but the views, which env.py makes again."""
