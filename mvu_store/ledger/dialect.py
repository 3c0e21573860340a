"""What differs between SQLite and PostgreSQL, in one place.

Connecting (URLs, pragmas, pools) is ``engine.py``'s job and the schema's per-backend options are
written with the tables; everything else the ledger does differently per backend is here: how the
writer begins and serialises its transactions, an insert that keeps an existing row, the
isolation of a consistent multi-query read, the migration lock, the SQL functions the audit views
use, the planner hint of a seek (:func:`seek_on`), and what the drivers' errors mean
(:func:`translate`, for writes and reads alike).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy import ColumnElement, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.visitors import InternalTraversal, _TraverseInternalsType
from sqlalchemy.types import NullType

from mvu_store.errors import Code, MvuError


@dataclass(frozen=True, slots=True)
class Dialect:
    """One backend's answers; the SQL templates take their argument as ``{}``."""

    name: str
    embedded: bool
    """The database is a file beside the program (SQLite): opening it may create it."""
    begin: str | None
    """What the writer runs to open a transaction (None: the driver begins one implicitly)."""
    read_begin: str | None
    """What a reader runs first so that its statements see one snapshot (None: the driver
    begins a transaction implicitly)."""
    locks_ledger_row: bool
    """Whether writers serialise on the ledger's usage row (SQLite's ``begin`` already does)."""
    snapshot_isolation: str | None
    """The isolation a read of many queries needs to see one snapshot (None: the reader's BEGIN gives one)."""
    migration_lock: str | None
    """A statement that keeps two processes from migrating one database at once."""
    octets: str
    text_sha256: str
    bytes_sha256: str
    versions_by_key: str
    """What follows ``versions`` in a query that finds a version by its key alone (an audit
    view): SQLite's planner, with no statistics, would search the primary key by the ledger
    alone, a scan of the whole history for every row asking."""
    _insert: Callable[[Table], Any]

    def insert_ignore(self, table: Table) -> Any:
        """An INSERT that does nothing when the primary key exists (content-addressed rows)."""
        return self._insert(table).on_conflict_do_nothing()


SQLITE = Dialect(
    name="sqlite",
    embedded=True,
    # Take the write lock up front (see engine.py).
    begin="BEGIN IMMEDIATE",
    # Deferred: under WAL a reader never waits for the writer.
    read_begin="BEGIN",
    locks_ledger_row=False,
    snapshot_isolation=None,
    migration_lock=None,
    octets="COALESCE(length(CAST({} AS BLOB)), 0)",
    # engine.py registers sha256() on every connection; the stock sqlite3 shell lacks it.
    text_sha256="sha256({})",
    bytes_sha256="sha256({})",
    versions_by_key="INDEXED BY uq_versions_key",
    _insert=sqlite.insert,
)

POSTGRESQL = Dialect(
    name="postgresql",
    embedded=False,
    begin=None,
    read_begin=None,
    locks_ledger_row=True,
    snapshot_isolation="REPEATABLE READ",
    migration_lock="SELECT pg_advisory_xact_lock(7243019)",
    octets="COALESCE(octet_length({}), 0)",
    text_sha256="encode(sha256(convert_to({}, 'UTF8')), 'hex')",
    bytes_sha256="encode(sha256({}), 'hex')",
    versions_by_key="",
    _insert=postgresql.insert,
)

_DIALECTS = {dialect.name: dialect for dialect in (SQLITE, POSTGRESQL)}


class _Seek(ColumnElement[Any]):
    """A condition the planner should seek an index on (see :func:`seek_on`)."""

    inherit_cache = True
    _traverse_internals: _TraverseInternalsType = [(  # noqa: RUF012 (SQLAlchemy declares it a list)
        "condition", InternalTraversal.dp_clauseelement)]
    # No type: SQLAlchemy writes a Boolean term as `... = 1` on SQLite, which no index serves.
    type = NullType()

    def __init__(self, condition: ColumnElement[bool]) -> None:
        self.condition = condition


def seek_on(condition: ColumnElement[bool]) -> ColumnElement[Any]:
    """``condition``, marked as one that keeps few rows: SQLite's planner, with no statistics,
    reads a table's rows of one resource in primary-key order rather than seek an index on a
    further equality (a path's story would read every change of the resource to find one
    path's); wrapped in SQLite's ``unlikely()`` the term makes it seek. PostgreSQL keeps
    statistics: the condition as is."""
    return _Seek(condition)


@compiles(_Seek)
def _seek(element: _Seek, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.condition, **kw))


@compiles(_Seek, "sqlite")
def _seek_sqlite(element: _Seek, compiler: Any, **kw: Any) -> str:
    return f"unlikely({compiler.process(element.condition, **kw)})"


def dialect_of(bind: Any) -> Dialect:
    """The dialect of an engine or connection (``engine.normalize_url`` admits no others)."""
    return _DIALECTS[bind.dialect.name]


def translate(error: BaseException) -> BaseException:
    """Driver errors become MvuError here, and only here (by class and SQLSTATE, not text).

    Writes (raw driver errors on the writer's cursor) and reads (the same errors wrapped by
    SQLAlchemy) alike; an error that is not the driver's comes back as it is.
    """
    if isinstance(error, MvuError):
        return error
    if isinstance(error, PoolTimeout):
        # Every connection of the pool stayed in use past its timeout: load that may pass.
        return MvuError(Code.STORAGE_BUSY, "no database connection came free in time; nothing was written")
    cause = error.orig if isinstance(error, DBAPIError) and isinstance(error.orig, Exception) else error
    # Python reports SQLite's extended codes (SQLITE_BUSY_SNAPSHOT is 517): the primary code is
    # the low byte.
    # Errors pysqlite raises itself (a stored text that is not UTF-8, a failing SQL function of
    # ours) carry no SQLite code: they are never assumed to.
    sqlite_code = getattr(cause, "sqlite_errorcode", None)
    if isinstance(cause, sqlite3.OperationalError) and sqlite_code is None:
        return MvuError(Code.STORAGE_CORRUPT, f"a stored value could not be read (run mvu audit): {_brief(cause)}")
    if isinstance(cause, sqlite3.OperationalError) and sqlite_code is not None and (sqlite_code & 0xFF) in (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
    ):
        return MvuError(Code.STORAGE_BUSY, "the ledger stayed busy past its timeout; nothing was written")
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate in ("40001", "40P01", "55P03"):  # serialization failure, deadlock, lock not available
        return MvuError(Code.STORAGE_BUSY, "the ledger stayed busy; nothing was written", sqlstate=sqlstate)
    if isinstance(cause, psycopg.OperationalError) and (sqlstate is None or sqlstate[:2] in ("08", "57")):
        # The connection failed (08) or the server is shutting down or restarting (57):
        # retrying later may succeed.
        return MvuError(Code.STORAGE_BUSY, f"the database is unavailable; nothing was written: {cause}")
    condition = _storage_condition(cause, sqlstate)
    if condition is not None:
        return condition
    constraint = getattr(getattr(cause, "diag", None), "constraint_name", None)
    if constraint == "uq_versions_revision":
        return MvuError(Code.REVISION_CONFLICT, "another version already claims this revision; nothing was written")
    duplicate_key = sqlstate == "23505" or (
        isinstance(cause, sqlite3.IntegrityError)
        and getattr(cause, "sqlite_errorname", None) in ("SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE")
    )
    if duplicate_key:
        # A concurrent writer stored the same key first (an import racing another, say).
        return MvuError(Code.ID_CONFLICT, "a row with this key already exists; nothing was written",
                        constraint=constraint)
    if isinstance(cause, sqlite3.IntegrityError) or (sqlstate or "").startswith("23"):
        return MvuError(Code.STORAGE_CORRUPT, f"a stored row broke an integrity rule: {_brief(cause)}",
                        constraint=constraint)
    # psycopg raises some errors itself, without a SQLSTATE (a text holding NUL, a misused
    # connection): typed like the server's own refusals.
    if isinstance(cause, sqlite3.Error | psycopg.Error) or sqlstate is not None:
        return MvuError(Code.STORAGE_CORRUPT, f"the database refused the statement: {_brief(cause)}")
    return error


def _brief(cause: BaseException) -> str:
    """The driver's message, bounded: pysqlite's decode error quotes the whole damaged value."""
    message = str(cause)
    return message if len(message) <= 300 else message[:297] + "..."


# SQLite's primary result codes and PostgreSQL's SQLSTATEs for conditions of the storage that may
# pass (a full disk, a read-only file, an I/O error): retried later, a write can succeed.
_SQLITE_CONDITIONS = {
    sqlite3.SQLITE_FULL: (Code.STORAGE_FULL, "the disk or file system holding the ledger is full"),
    sqlite3.SQLITE_READONLY: (Code.STORAGE_READ_ONLY, "the ledger's database cannot be written (read-only)"),
    sqlite3.SQLITE_IOERR: (Code.STORAGE_IO, "an I/O error on the ledger's database"),
    sqlite3.SQLITE_CANTOPEN: (Code.STORAGE_IO, "the ledger's database file cannot be opened"),
}
_POSTGRES_CONDITIONS = {
    "53100": (Code.STORAGE_FULL, "the database server's disk is full"),
    "25006": (Code.STORAGE_READ_ONLY, "the database server only takes reads"),
    "58030": (Code.STORAGE_IO, "an I/O error on the database server"),
}


def _storage_condition(cause: BaseException, sqlstate: str | None) -> MvuError | None:
    found = None
    if isinstance(cause, sqlite3.Error) and getattr(cause, "sqlite_errorcode", None) is not None:
        found = _SQLITE_CONDITIONS.get(cause.sqlite_errorcode & 0xFF)
    elif sqlstate is not None:
        found = _POSTGRES_CONDITIONS.get(sqlstate)
    if found is None:
        return None
    code, what = found
    return MvuError(code, f"{what}; nothing was written: {cause}")


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Raise what :func:`translate` makes of an error escaping the block (the driver's cause dropped)."""
    try:
        yield
    except Exception as error:
        mapped = translate(error)
        if mapped is error:
            raise
        raise mapped from None
