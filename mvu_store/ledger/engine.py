"""Engines per dialect: URLs, SQLite pragmas and ``BEGIN IMMEDIATE``.

Everything dialect-specific about *connecting* lives here; the rest of the ledger speaks
SQLAlchemy Core and runs unchanged on SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import urllib.parse
from dataclasses import dataclass
from typing import Any, Literal

from psycopg.conninfo import make_conninfo
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import QueuePool

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import pool_log
from mvu_store.ledger.checkpointer import FALLBACK_AUTOCHECKPOINT_PAGES

WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024
"""What a restarted WAL file is truncated to (SQLite's ``journal_size_limit``)."""

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

# sqlite3 binds an exact int, float, str or bytes directly; for any other parameter (None, a
# bool) it searches for an adapter and, finding none, raises and swallows an AttributeError
# (``__conform__``): about 1.8 µs a parameter, most of a ``changes`` row's insert, whose unused
# columns are NULL. An adapter for each skips the search. Both are identities (None binds as
# NULL, True as 1, as without them) and C callables (``{}.get(None)`` is None), so they cost
# no Python frame either. sqlite3's adapters are process-wide; these change no value it binds.
_NO_ADAPTATION: dict[None, None] = {}
sqlite3.register_adapter(type(None), _NO_ADAPTATION.get)
sqlite3.register_adapter(bool, int)


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Connection settings that are not part of the URL."""

    synchronous: Synchronous = "FULL"
    busy_timeout_ms: int = 5_000
    pool_size: int = 4
    max_overflow: int = 10
    """Connections each engine (the writer's, the readers') keeps open, and how many more it
    opens under load (closed when returned): at most 14 each."""
    pool_timeout_s: float = 30.0
    """How long a caller that finds every connection in use waits for one (then ``MVU_STORAGE_BUSY``)."""
    # PostgreSQL: shown in pg_stat_activity, so operators see which ledger a session serves.
    application_name: str = "mvu-store"
    create_file: bool = True
    """SQLite: a connection to a missing file creates it (SQLite's default). The ledger's own
    engines say no: a file deleted under a running ledger must not come back empty at the next
    connection of a pool (``MVU_STORAGE_GONE`` instead); ``open_ledger`` creates it once, on
    purpose."""
    read_only: bool = False
    """Connections that can only read (the commands that inspect a ledger): an SQLite file is
    opened ``mode=ro`` and works on a read-only file or file system; a PostgreSQL session
    defaults to read-only transactions."""


def normalize_url(url: str | URL) -> URL:
    """Accept ``sqlite:///path`` and ``postgresql://...``; pick our drivers; refuse others."""
    try:
        parsed = make_url(url)
    except Exception as error:  # SQLAlchemy raises ArgumentError with no common base we need
        raise MvuError(Code.CONFIG, f"not a database URL: {url!r} ({error})") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+pysqlite")
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    raise MvuError(Code.CONFIG, f"unsupported database {backend!r}: use sqlite:/// or postgresql://")


def _sqlite_sha256(value: str | bytes | None) -> str | None:
    if value is None:
        return None
    return hashlib.sha256(value.encode() if isinstance(value, str) else value).hexdigest()


def create_sync_engine(url: str | URL, options: EngineOptions, *, writer: bool = True) -> Engine:
    """A synchronous engine with the pragmas and transaction behaviour the ledger relies on.

    ``writer=True`` engines take SQLite's write lock at BEGIN (``BEGIN IMMEDIATE``); reader
    engines use a deferred BEGIN, so under WAL a reader never blocks or waits for the writer.
    """
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, options, writer=writer)
    role = "writer" if writer else "reader"
    pool_log.install()  # a dead connection's failed reset is one log line, not a traceback
    engine = create_engine(
        _with_connect_timeout(parsed, options),
        poolclass=QueuePool,
        pool_size=options.pool_size,
        max_overflow=options.max_overflow,
        pool_timeout=options.pool_timeout_s,
        pool_pre_ping=True,
        connect_args={"application_name": f"{options.application_name} {role}"[:63]},
    )
    if options.read_only:
        @event.listens_for(engine, "connect")
        def read_only(dbapi_connection: Any, _record: Any) -> None:
            # The server refuses any write of this session (SQLSTATE 25006, MVU_STORAGE_READ_ONLY).
            with dbapi_connection.cursor() as cursor:
                cursor.execute("SET default_transaction_read_only = on")
            dbapi_connection.commit()

    return engine


def _with_connect_timeout(url: URL, options: EngineOptions) -> URL:
    """The URL with libpq's ``connect_timeout`` (whole seconds, at least 2) set from the busy
    timeout, unless it sets one. libpq has none by default: a server that stops answering (a
    host gone, packets dropped) would hold a connection attempt for the system's TCP timeout,
    minutes, instead of an ``MVU_STORAGE_BUSY`` after the time the ledger waits for a busy
    database. In the URL, not the connect arguments, so the session locks' connections
    (:func:`lock_conninfo`) have it too."""
    if "connect_timeout" in url.query:
        return url
    return url.update_query_dict({"connect_timeout": str(max(2, math.ceil(options.busy_timeout_ms / 1000)))})


def lock_conninfo(engine: Engine, application_name: str) -> str:
    """A libpq connection string for a PostgreSQL engine's database, as the engine connects
    (for the session locks' own connections, which are psycopg's async ones, outside the pools)."""
    args, params = engine.dialect.create_connect_args(engine.url)
    # SQLAlchemy passes its adapters along as ``context``: not a connection parameter.
    params = {name: value for name, value in params.items() if name != "context"}
    return make_conninfo(*args, **params, application_name=application_name[:63])


def read_only_uri(path: str) -> str:
    """The URI that opens the SQLite file at ``path`` for reading only.

    ``mode=ro`` never writes the file, but a ledger in WAL mode still needs its ``-shm`` index
    beside it (created when missing). Where the directory cannot take one (a read-only file
    system or folder) and no ``-wal`` holds commits the file lacks, the file is opened
    ``immutable``: no locks, no index, read as it is. With a ``-wal`` present the file is not
    whole without it, so it is opened ``mode=ro`` only, and SQLite says so if it cannot read it.
    """
    absolute = os.path.abspath(path)
    uri = _file_uri(absolute, "ro")
    directory_writable = os.access(os.path.dirname(absolute), os.W_OK)
    if not directory_writable and not os.path.exists(f"{absolute}-wal"):
        uri += "&immutable=1"
    return uri


def _file_uri(path: str, mode: str) -> str:
    """SQLite's URI for the file at ``path`` opened in ``mode`` (``ro``, ``rw``)."""
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?mode={mode}"


def _open_existing(path: str, connect_args: dict[str, Any]) -> sqlite3.Connection:
    """A read-write connection to the file at ``path``, never creating it."""
    try:
        connection: sqlite3.Connection = sqlite3.connect(
            _file_uri(path, "rw"), uri=True, **connect_args)
    except sqlite3.Error as error:
        if getattr(error, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_CANTOPEN or os.path.lexists(path):
            raise
        raise MvuError(Code.STORAGE_GONE, f"the ledger's database file {path} is missing (deleted or moved); "
                                          "nothing was written and nothing was created in its place",
                       path=path) from None
    return connection


def _open_read_only(path: str, connect_args: dict[str, Any]) -> sqlite3.Connection:
    """A read-only connection to ``path``, or a typed refusal that says why it cannot be read.

    SQLite opens the file lazily: the first statement is what finds a ``-wal`` it cannot use."""
    connection: sqlite3.Connection = sqlite3.connect(read_only_uri(path), uri=True, **connect_args)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except sqlite3.Error as error:
        connection.close()
        if getattr(error, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_CANTOPEN:
            raise
        raise MvuError(Code.STORAGE_READ_ONLY, f"the ledger's database file {path} cannot be read without writing "
                                               f"beside it: its {path}-wal journal holds commits and needs an index "
                                               "file its directory cannot take (open it once where it can be "
                                               "written, or copy the file and its -wal elsewhere)", path=path) from None
    return connection


def _sqlite_engine(url: URL, options: EngineOptions, *, writer: bool) -> Engine:
    if not url.database or url.database == ":memory:":
        # A memory database is private to one connection; the ledger uses several.
        raise MvuError(Code.CONFIG, "SQLite ledgers need a file path (sqlite:///path/to/ledger.sqlite3)")
    connect_args: dict[str, Any] = {"check_same_thread": False, "timeout": options.busy_timeout_ms / 1000}
    extra: dict[str, Any] = {}
    if options.read_only or not options.create_file:
        # The URL stays the file's path (the ledger names it in errors and findings); each
        # connection opens it by a URI that says how.
        database = url.database

        def connect() -> sqlite3.Connection:
            if options.read_only:
                return _open_read_only(database, connect_args)
            return _open_existing(database, connect_args)

        extra["creator"] = connect
    engine = create_engine(
        url,
        poolclass=QueuePool,
        pool_size=options.pool_size,
        max_overflow=options.max_overflow,
        pool_timeout=options.pool_timeout_s,
        # Named parameters, like psycopg's pyformat: the writer passes dicts on both dialects.
        paramstyle="named",
        connect_args=connect_args,
        **extra,
    )
    # A read-only connection takes no write lock: it would be refused, and nothing here writes.
    begin_statement = "BEGIN IMMEDIATE" if writer and not options.read_only else "BEGIN"

    @event.listens_for(engine, "connect")
    def configure(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        # pysqlite's own transaction handling issues BEGIN lazily (not before SELECT) and keeps
        # released savepoints across an outer rollback; we take control of BEGIN ourselves.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if writer and not options.read_only:
            cursor.execute("PRAGMA journal_mode=WAL")
            # Checkpoints run on a thread of their own (checkpointer.py); this is the fallback.
            cursor.execute(f"PRAGMA wal_autocheckpoint={FALLBACK_AUTOCHECKPOINT_PAGES}")
            # A WAL that grew during a burst (or while a long read held it) is cut back to this
            # when it is next restarted, instead of keeping its largest size on disk for ever.
            cursor.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT_BYTES}")
        cursor.execute(f"PRAGMA synchronous={options.synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(options.busy_timeout_ms)}")
        cursor.close()
        # The audit view of blob hashes calls sha256(); PostgreSQL has it built in.
        dbapi_connection.create_function("sha256", 1, _sqlite_sha256, deterministic=True)

    @event.listens_for(engine, "begin")
    def begin(connection: Any) -> None:
        # A deferred BEGIN in a writer upgrades to a write lock mid-transaction and fails at
        # once with "database is locked" under contention; IMMEDIATE takes the lock up front.
        connection.exec_driver_sql(begin_statement)

    return engine
