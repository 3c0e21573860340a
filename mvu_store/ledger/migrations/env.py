"""Alembic environment: the ledger's tables, batch mode (SQLite), our naming convention.

``open_ledger`` and ``mvu db`` pass an open connection in ``config.attributes["connection"]``;
the ``alembic`` command line uses ``sqlalchemy.url`` (or ``MVU_DATABASE_URL``) instead.
"""

from __future__ import annotations

import os

from alembic import context
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from mvu_store.ledger import audit
from mvu_store.ledger.dialect import dialect_of
from mvu_store.ledger.engine import EngineOptions, create_sync_engine
from mvu_store.ledger.tables import metadata

config = context.config


def run_with(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,
        compare_type=True,
        compare_server_default=True,
    )
    with context.begin_transaction():
        lock = dialect_of(connection).migration_lock
        if lock is not None:
            # Two processes opening one database at once must not both create the tables.
            connection.exec_driver_sql(lock)
        head = ScriptDirectory.from_config(config).get_current_head()
        pending = context.get_context().get_current_revision() != head
        if pending:
            # The audit views are not part of any one migration: they follow the tables, and
            # SQLite's batch migrations cannot rebuild a table a view refers to.
            audit.drop_views(connection)
        context.run_migrations()
        if pending and context.get_context().get_current_revision() is not None:
            audit.create_views(connection)


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_with(connection)
        return
    url = os.environ.get("MVU_DATABASE_URL") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("set MVU_DATABASE_URL or sqlalchemy.url")
    engine = create_sync_engine(url, EngineOptions())
    try:
        with engine.begin() as connection:  # committed at the end, views included
            run_with(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_online()
