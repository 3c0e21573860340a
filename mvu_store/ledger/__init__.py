"""Persistence: the relational ledger (SQLite embedded, PostgreSQL for scale)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

from sqlalchemy import Engine, insert, select, update

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import MAX_STATE_BYTES
from mvu_store.ledger import migrate
from mvu_store.ledger import tables as t
from mvu_store.ledger.change_log import MAX_VERSION_CHANGES
from mvu_store.ledger.chat_rows import ChatExportRows, ChatImportRows, ImportedVersion
from mvu_store.ledger.database_file import LEFTOVERS, create_if_missing, ledger_file, refuse_a_lost_file
from mvu_store.ledger.dialect import dialect_of, translated
from mvu_store.ledger.engine import EngineOptions, Synchronous, create_sync_engine
from mvu_store.ledger.facade import Ledger
from mvu_store.ledger.fact_log import FACTS_MAX_RECORDS
from mvu_store.ledger.host_sessions import Appended, StoredSession
from mvu_store.ledger.migrate import check as check_schema
from mvu_store.ledger.migrate import current_revision, head_revision
from mvu_store.ledger.records import (
    ChangeEntry,
    ChangePage,
    CheckpointRecord,
    CommitOutcome,
    CommitRequest,
    Finding,
    Head,
    NewResource,
    ResourceRecord,
    SessionRows,
    SessionRowsQuery,
    StatePoint,
    Usage,
    VersionRecord,
)
from mvu_store.ledger.tables import FORMAT_VERSION
from mvu_store.ledger.transfer import Step, export_directory, import_directory

DEFAULT_LEDGER_LIMIT_BYTES = 32 * 1024 * 1024
_LEDGER_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

__all__ = [
    "DEFAULT_LEDGER_LIMIT_BYTES",
    "FACTS_MAX_RECORDS",
    "FORMAT_VERSION",
    "LEFTOVERS",
    "MAX_VERSION_CHANGES",
    "Appended",
    "ChangeEntry",
    "ChangePage",
    "ChatExportRows",
    "ChatImportRows",
    "CheckpointRecord",
    "CommitOutcome",
    "CommitRequest",
    "EngineOptions",
    "Finding",
    "Head",
    "ImportedVersion",
    "Ledger",
    "NewResource",
    "ResourceRecord",
    "SessionRows",
    "SessionRowsQuery",
    "StatePoint",
    "Step",
    "StoredSession",
    "Usage",
    "VersionRecord",
    "check_schema",
    "create_sync_engine",
    "current_revision",
    "export_directory",
    "head_revision",
    "import_directory",
    "ledger_file",
    "open_ledger",
    "refuse_a_lost_file",
]


async def open_ledger(
    url: str,
    *,
    state_limit_bytes: int | None = None,
    ledger_limit_bytes: int | None = None,
    ledger_id: str = "default",
    synchronous: Synchronous = "FULL",
    busy_timeout_ms: int = 5_000,
    migrate_to_head: bool = True,
    read_only: bool = False,
) -> Ledger:
    """Open (creating and migrating to head) the ledger at ``url``.

    ``sqlite:///path`` opens an embedded file (WAL, ``synchronous=FULL`` unless told otherwise);
    ``postgresql://...`` a server database, where many ledgers (``ledger_id``) may live side by
    side, each its own budget domain. The limits are the ledger's configuration: they are stored
    on open, so a later open with other limits changes them (lowering one below the current usage
    refuses new writes, it never trims).

    ``read_only``: for commands that only inspect (``mvu status``, ``audit``, ``export``): nothing
    is created, migrated or configured, and the database is opened so that it cannot be written
    (``engine.EngineOptions.read_only``); a file on a read-only file system can be read.
    """
    if read_only and (migrate_to_head or state_limit_bytes is not None or ledger_limit_bytes is not None):
        raise MvuError(Code.CONFIG, "a read-only open neither migrates nor sets limits")
    if not _LEDGER_ID.match(ledger_id):
        raise MvuError(Code.CONFIG, f"ledger id {ledger_id!r} must be 1-64 letters, digits or _.:-")
    if (state_limit_bytes is not None and state_limit_bytes <= 0) or (
        ledger_limit_bytes is not None and ledger_limit_bytes <= 0
    ):
        raise MvuError(Code.CONFIG, "limits must be positive")
    options = EngineOptions(
        synchronous=synchronous, busy_timeout_ms=busy_timeout_ms, application_name=f"mvu-store {ledger_id}",
        read_only=read_only, create_file=False,
    )
    writer_engine = create_sync_engine(url, options, writer=True)
    reader_engine = create_sync_engine(url, options, writer=False)
    try:
        # Connection and schema failures surface as typed errors, like everything else.
        with translated():
            state_limit = await asyncio.to_thread(
                _prepare, writer_engine, ledger_id, state_limit_bytes, ledger_limit_bytes, migrate_to_head
            )
    except BaseException:
        writer_engine.dispose()
        reader_engine.dispose()
        raise
    return Ledger(
        writer_engine=writer_engine, reader_engine=reader_engine, ledger_id=ledger_id, state_limit_bytes=state_limit
    )


def _prepare(
    engine: Engine, ledger_id: str, state_limit: int | None, ledger_limit: int | None, migrate_to_head: bool
) -> int:
    """Migrate (or check) the schema and create or configure the ledger row; returns the state limit."""
    if dialect_of(engine).embedded and engine.url.database:
        path = Path(engine.url.database)
        if not migrate_to_head and not path.exists():
            # A read-only open must not leave an empty database file behind.
            raise MvuError(Code.MISSING, f"there is no ledger at {path}: run `mvu db upgrade`", path=str(path))
        if migrate_to_head:
            create_if_missing(path)
    if migrate_to_head:
        migrate.upgrade(engine)
    elif migrate.current_revision(engine) != migrate.head_revision():
        raise MvuError(Code.VERSION, "the database is not at the current schema: run `mvu db upgrade`")
    with engine.begin() as connection:
        row = connection.execute(
            select(t.ledger.c.format_version, t.ledger.c.state_limit_bytes).where(t.ledger.c.ledger_id == ledger_id)
        ).first()
        if row is None:
            if not migrate_to_head:
                raise MvuError(Code.MISSING, f"there is no ledger {ledger_id!r} here: run "
                                            f"`mvu db upgrade --ledger-id {ledger_id}`")
            connection.execute(
                insert(t.ledger).values(
                    ledger_id=ledger_id,
                    format_version=t.FORMAT_VERSION,
                    used_bytes=0,
                    limit_bytes=ledger_limit or DEFAULT_LEDGER_LIMIT_BYTES,
                    state_limit_bytes=state_limit or MAX_STATE_BYTES,
                    created_at=int(time.time() * 1000),
                )
            )
            return state_limit or MAX_STATE_BYTES
        if row[0] != t.FORMAT_VERSION:
            raise MvuError(Code.VERSION, f"ledger format {row[0]} is not {t.FORMAT_VERSION}", format_version=row[0])
        changes = {
            name: value
            for name, value in (("limit_bytes", ledger_limit), ("state_limit_bytes", state_limit))
            if value is not None
        }
        if changes:
            connection.execute(update(t.ledger).where(t.ledger.c.ledger_id == ledger_id).values(**changes))
        return state_limit or int(row[1])
