"""What every part of the ledger shares: its engines, writer and session locks, the boundaries
every write and read crosses, and the row-level steps every write is made of (blobs, rows and their bytes,
append positions, the budget).

Every write is one unit of work on the single writer (``writer.py``) and follows one order:
receipt check -> row-version CAS -> writes -> budget -> commit. A unit that raises leaves
nothing behind (its SAVEPOINT or transaction rolls back). Reads run on their own connections
and see committed data only. Driver errors are translated on both paths by
``dialect.translate``: a busy or lost database is ``MVU_STORAGE_BUSY``, never a raw exception.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from sqlalchemy import Engine, Table, bindparam, func, insert, select, update

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, measure_state, over_state_limit
from mvu_store.ledger import tables as t
from mvu_store.ledger.audit import row_bytes
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.checkpointer import Checkpointer
from mvu_store.ledger.database_file import DatabaseFile
from mvu_store.ledger.dialect import dialect_of, translated
from mvu_store.ledger.engine import lock_conninfo
from mvu_store.ledger.locks import AdvisoryLocks, DatabaseLocks, FileLocks, SessionLocks
from mvu_store.ledger.query import LEDGER, Query, ReadRows, Row, Statements
from mvu_store.ledger.records import Usage
from mvu_store.ledger.rows import columns
from mvu_store.ledger.writer import Writer, WriteTx

T = TypeVar("T")

USAGE = Query("usage", lambda: select(*columns(t.ledger, Usage)).where(t.ledger.c.ledger_id == LEDGER))
_LOCK_LEDGER = Query(
    "lock-ledger", lambda: select(t.ledger.c.ledger_id).where(t.ledger.c.ledger_id == LEDGER).with_for_update()
)
_BUDGET = Query(
    "budget",
    lambda: update(t.ledger)
    .where(t.ledger.c.ledger_id == LEDGER)
    .where(t.ledger.c.used_bytes + bindparam("delta") <= t.ledger.c.limit_bytes)
    .values(used_bytes=t.ledger.c.used_bytes + bindparam("delta")),
)


def now_ms() -> int:
    return int(time.time() * 1000)


class Store:
    """One budget domain's storage, private to the ledger: its repositories (``Commits``,
    ``Resources``, ...) hold it and run their units of work and reads through it."""

    def __init__(self, *, writer_engine: Engine, reader_engine: Engine, ledger_id: str, state_limit_bytes: int) -> None:
        self.ledger_id = ledger_id
        self._dialect = dialect_of(writer_engine)
        self.dialect = self._dialect.name
        self._writer_engine = writer_engine
        self._reader_engine = reader_engine
        self._checkpointer = Checkpointer(reader_engine, ledger_id) if self._dialect.embedded else None
        self._file = DatabaseFile(writer_engine.url.database) if self._dialect.embedded else None
        self._writer = Writer(writer_engine, ledger_id, self._settle,
                              serialize=self._serialize if self._dialect.locks_ledger_row else None,
                              committed=self._checkpointer.committed if self._checkpointer else None,
                              admit=self._file.check if self._file else None)
        self._read_statements = Statements(reader_engine.dialect)
        self._put_blob = Query(
            "insert-ignore:blobs", lambda: self._dialect.insert_ignore(t.blobs), _column_names(t.blobs)
        )
        self._state_limit = state_limit_bytes
        self._locks = SessionLocks(_database_locks(writer_engine, ledger_id), ledger_id)
        # A reader connection kept out of the pool for brief reads on the loop (embedded engines
        # only): they are synchronous, so one serves them all, and a pool checkout and reset
        # per read cost about as much as the read.
        self._loop_reader: Any = None
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Finish queued writes, stop the writer and dispose both engines (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self._locks.close()
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        self._writer.close()
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._drop_loop_reader()
        self._writer_engine.dispose()
        self._reader_engine.dispose()

    @property
    def url(self) -> str:
        return self._writer_engine.url.render_as_string(hide_password=True)

    @property
    def state_limit_bytes(self) -> int:
        return self._state_limit

    @property
    def embedded(self) -> bool:
        """Whether the database is an embedded file (SQLite)."""
        return self._dialect.embedded

    @property
    def file_path(self) -> str | None:
        """The embedded database's file, None for a server database."""
        return self._file.path if self._file is not None else None

    # -- the session lock ---------------------------------------------------------------------

    def session_lock(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """Hold ``session_id`` alone among every task and process using this ledger (``locks.py``).

        ``async with ledger.session_lock(session_id): ...`` waits for the session's current
        holder, in this process or another. Not re-entrant: never nest two holds (a task asking
        again for a session it holds waits for itself forever).
        """
        if self._closed:
            raise MvuError(Code.DISPOSED, "the ledger is closed")
        return self._locks.hold(session_id)

    # -- the boundaries -----------------------------------------------------------------------

    async def write(self, work: Callable[[WriteTx], T]) -> T:
        """Run ``work`` as one atomic unit on the writer: the body of each repository method that
        writes (the transaction never leaves the ledger package)."""
        if self._closed:
            raise MvuError(Code.DISPOSED, "the ledger is closed")
        return await self._writer.submit(work)

    async def read(self, work: Callable[[Any], T]) -> T:
        """Run ``work(connection)`` on a reader connection (committed data only), off the loop.

        A driver error is translated as on the writer: a locked or lost database is
        ``MVU_STORAGE_BUSY``, a damaged one ``MVU_STORAGE_CORRUPT``.
        """
        if self._closed:
            raise MvuError(Code.DISPOSED, "the ledger is closed")

        def run() -> T:
            with self._reader_engine.connect() as connection:
                return work(connection)

        with translated():
            return await asyncio.to_thread(run)

    async def read_rows(self, work: Callable[[ReadRows], T], *, brief: bool = False) -> T:
        """Run ``work`` on a reader's raw cursor, as :class:`ReadRows` (queries by name, rows by
        column), off the loop: one round trip for all the statements ``work`` runs.

        On SQLite they see one snapshot (the reader's ``BEGIN``); on PostgreSQL each sees what was
        committed when it started. Driver errors are translated as in :meth:`read`.

        ``brief``: ``work`` is a few lookups by key (a session's read). On SQLite, a local file
        whose readers never wait for the writer, it then runs on the event loop itself: a thread
        hop costs more than such a read, and reader threads take the GIL from the loop in the
        middle of its work (16 concurrent reads ran 1.6 times as fast on the loop). A server
        database is always waited for off the loop.
        """
        if self._closed:
            raise MvuError(Code.DISPOSED, "the ledger is closed")
        with translated():
            if brief and self._dialect.embedded:
                return self._read_on_loop(work)
            return await asyncio.to_thread(self._read_rows, work)

    def _read_on_loop(self, work: Callable[[ReadRows], T]) -> T:
        """A brief read on the loop's own reader connection (see :meth:`read_rows`)."""
        connection = self._loop_reader
        if connection is None:
            connection = self._loop_reader = self._reader_engine.raw_connection()
        try:
            try:
                return self._in_snapshot(connection, work)
            finally:
                connection.driver_connection.rollback()  # ends the read's snapshot (a no-op without one)
        except self._reader_engine.dialect.loaded_dbapi.Error:
            # A connection that failed under a read is not trusted with the next: that one opens anew.
            self._drop_loop_reader(invalidate=True)
            raise

    def _drop_loop_reader(self, *, invalidate: bool = False) -> None:
        connection, self._loop_reader = self._loop_reader, None
        if connection is None:
            return
        if invalidate:
            connection.invalidate()
        connection.close()

    def _read_rows(self, work: Callable[[ReadRows], T]) -> T:
        connection = self._reader_engine.raw_connection()
        try:
            return self._in_snapshot(connection, work)
        finally:
            # Back to the pool, whose reset rolls the read's transaction back (and drops a
            # connection that cannot).
            connection.close()

    def _in_snapshot(self, connection: Any, work: Callable[[ReadRows], T]) -> T:
        """``work`` on a cursor of ``connection``, in a read transaction where the dialect has one."""
        cursor = connection.cursor()
        try:
            if self._dialect.read_begin is not None:
                cursor.execute(self._dialect.read_begin)
            return work(ReadRows(cursor, self._read_statements, self.ledger_id))
        finally:
            cursor.close()

    async def read_one(self, query: Query, **params: Any) -> Row | None:
        return await self.read_rows(lambda rows: rows.one(query, **params))

    async def read_all(self, query: Query, **params: Any) -> list[Row]:
        return await self.read_rows(lambda rows: rows.all(query, **params))

    # -- the steps of a write -----------------------------------------------------------------

    def prepare_state(self, variables: JsonValue, encoded: bytes | None = None, text: str | None = None) -> Blob:
        """Check a variables envelope against the state budget (MVU_LIMIT) and encode it
        (``encoded``: its canonical bytes, already measured; only their size is checked;
        ``text``: the same as text, when the caller has it: not decoded again)."""
        if encoded is None:
            _, encoded, _ = measure_state(variables, max_bytes=self._state_limit)
        elif len(encoded) > self._state_limit:
            raise over_state_limit(len(encoded), self._state_limit)
        return Blob(encoded.decode() if text is None else text, encoded)

    def put_blob(self, tx: WriteTx, blob: Blob) -> str:
        """Store a payload once; only the first copy is charged to the budget."""
        if tx.execute(self._put_blob, hash=blob.hash, size=blob.size, body=blob.text).rowcount == 1:
            tx.charge(blob.size)
        return blob.hash

    def insert_row(self, tx: WriteTx, table: Table, values: dict[str, Any]) -> int:
        """Insert one row, computing and charging its ``bytes``; returns them.

        Facts are the exception: they are bounded on their own (DIGEST A-5), not charged.
        """
        row = {"ledger_id": self.ledger_id, **values}
        size = 0
        if _counted(table):
            size = row["bytes"] = row_bytes(table, row)
            if table is not t.facts:
                tx.charge(size)
        tx.execute_row(_insert_query(table), row)
        return size

    def insert_rows(self, tx: WriteTx, table: Table, rows: list[dict[str, Any]]) -> None:
        """:meth:`insert_row` for many rows of ``table`` in one driver call (``executemany``):
        one statement's Python cost instead of one per row. Each row gets ``ledger_id`` and, for
        a charged table, its ``bytes`` unless already measured."""
        charged = _counted(table)
        for row in rows:
            row["ledger_id"] = self.ledger_id
            if charged and "bytes" not in row:
                row["bytes"] = row_bytes(table, row)
        tx.execute_many(_insert_query(table), rows)
        if charged and table is not t.facts:
            tx.charge(sum(row["bytes"] for row in rows))

    def update_row(self, tx: WriteTx, table: Table, key: dict[str, Any], values: dict[str, Any]) -> bool:
        """Set ``values`` (uncharged, ``MUTABLE`` columns) on the row at ``key``; whether there was one."""
        return bool(tx.execute(_update_query(table, tuple(key), tuple(values)), **key, **values).rowcount == 1)

    def upsert_row(self, tx: WriteTx, table: Table, key: dict[str, Any], values: dict[str, Any],
                   new: Callable[[], dict[str, Any]] | None = None) -> None:
        """Set ``values`` on the row at ``key``, or insert that row (``new``: the columns only a
        new row gets, computed only then)."""
        if not self.update_row(tx, table, key, values):
            self.insert_row(tx, table, {**key, **values, **(new() if new is not None else {})})

    def next_position(self, tx: WriteTx, table: Table, owner_column: str | None, owner: str | None) -> int:
        row = tx.one(_next_position_query(table, owner_column), owner=owner)
        return int(row["position"]) if row else 0

    def _serialize(self, tx: WriteTx) -> None:
        """Make every transaction of this ledger run one at a time, across processes too.

        Units of work read, then write (next positions, receipts, fact counters). SQLite's
        ``BEGIN IMMEDIATE`` already serialises writers of the file; on PostgreSQL the ledger's
        usage row is the lock: every charged unit updates it anyway, so taking it at the start
        costs no concurrency within a ledger and rules out write skew between processes.
        The writer runs it only where the dialect locks that row (PostgreSQL, see ``__init__``).
        """
        tx.execute(_LOCK_LEDGER)

    def _settle(self, tx: WriteTx) -> None:
        """Charge a unit's bytes with one conditional UPDATE: over budget refuses the unit."""
        if tx.charged == 0:
            return
        if tx.execute(_BUDGET, delta=tx.charged).rowcount == 1:
            return
        row = tx.one(USAGE)
        used, limit = (row["used_bytes"], row["limit_bytes"]) if row else (0, 0)
        raise MvuError(
            Code.STORAGE_LIMIT,
            f"storing {tx.charged} more bytes would exceed the ledger's {limit}-byte budget ({used} used)",
            limit=limit,
            used=used,
            requested=tx.charged,
        )


def _database_locks(engine: Engine, ledger_id: str) -> DatabaseLocks:
    if dialect_of(engine).embedded:
        return FileLocks(f"{engine.url.database}.locks")
    return AdvisoryLocks(lock_conninfo(engine, f"mvu-store {ledger_id} locks"))


@functools.cache
def _column_names(table: Table) -> list[str]:
    return [column.name for column in table.columns]


@functools.cache
def _counted(table: Table) -> bool:
    """Whether ``table``'s rows carry their ``bytes`` (asked once per table: a column lookup by
    name costs more than the row's insert preparation)."""
    return "bytes" in table.c


@functools.cache
def _insert_query(table: Table) -> Query:
    return Query(f"insert:{table.name}", lambda: insert(table), _column_names(table))


@functools.cache
def _update_query(table: Table, key: tuple[str, ...], values: tuple[str, ...]) -> Query:
    def build() -> Any:
        where = [table.c[name] == bindparam(name) for name in key]
        return update(table).where(table.c.ledger_id == LEDGER, *where).values(
            {name: bindparam(name) for name in values}
        )

    return Query(f"update:{table.name}:{','.join(key)}:{','.join(values)}", build)


@functools.cache
def _next_position_query(table: Table, owner_column: str | None) -> Query:
    def build() -> Any:
        query = select(func.coalesce(func.max(table.c.position) + 1, 0).label("position")).where(
            table.c.ledger_id == LEDGER
        )
        if owner_column:
            query = query.where(table.c[owner_column] == bindparam("owner"))
        return query

    return Query(f"next-position:{table.name}:{owner_column}", build)
