"""The single writer: one thread, one connection, group commit.

Python pays far more per statement than SQLite does, and an async engine pays it twice
(``benchmarks/commit_path.py`` compares our commit path with raw sqlite3 doing the same SQL).
So every write of a ledger runs on one dedicated thread that owns one raw DB-API connection:
callers submit a *unit of work* (a plain function taking a :class:`WriteTx`) and await a future.
The thread drains whatever is queued, runs the units in one transaction and commits once: one
fsync for the whole batch. A failing unit rolls back alone: on SQLite one that failed before
writing (the usual case) leaves nothing to undo, and one that failed after has the batch run
again with a SAVEPOINT per unit; on PostgreSQL every unit of a batch has its savepoint.
Futures resolve only after COMMIT returned, so an acknowledged write is durable.

Statements are SQLAlchemy Core queries (``query.py``), compiled once per dialect into driver SQL
and executed on the raw cursor: Core stays the one place the schema is written, and the hot path
costs what the driver costs. Driver errors are translated by ``dialect.translate``.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Engine

from mvu_store.errors import Code, MvuError
from mvu_store.ledger.dialect import dialect_of, translate
from mvu_store.ledger.query import Query, Row, Statements

T = TypeVar("T")


@dataclass(slots=True)
class WriteTx:
    """What a unit of work sees: a cursor inside the open transaction, and a byte counter.

    ``charge`` adds to the bytes this unit stores; the writer settles them against the ledger's
    budget with one conditional UPDATE when the unit ends (O(1), whatever the ledger's size).
    """

    cursor: Any
    statements: Statements
    ledger_id: str
    charged: int = 0

    def execute(self, query: Query, **params: Any) -> Any:
        """Run ``query`` (``ledger_id`` bound to this ledger's); returns the cursor (``rowcount``)."""
        params.setdefault("ledger_id", self.ledger_id)  # ``params`` is this call's own dict
        return self.execute_row(query, params)

    def execute_row(self, query: Query, row: dict[str, Any]) -> Any:
        """:meth:`execute` with the parameters in a dict that already binds ``ledger_id`` (a row
        to insert, passed on without a copy)."""
        sql = self.statements.sql(query)
        self.cursor.execute(sql.text, sql.params(row))
        return self.cursor

    def execute_many(self, query: Query, rows: list[dict[str, Any]]) -> None:
        """Run ``query`` once per row of ``rows`` (each with its ``ledger_id``) in one driver call."""
        sql = self.statements.sql(query)
        self.cursor.executemany(sql.text, [sql.params(row) for row in rows] if sql.defaults else rows)

    def one(self, query: Query, **params: Any) -> Row | None:
        row = self.execute(query, **params).fetchone()
        if row is None:
            return None
        return dict(zip(map(_name, self.cursor.description), row, strict=True))

    def all(self, query: Query, **params: Any) -> list[Row]:
        rows = self.execute(query, **params).fetchall()
        names = list(map(_name, self.cursor.description))
        return [dict(zip(names, row, strict=True)) for row in rows]

    def charge(self, size: int) -> None:
        self.charged += size


_name = operator.itemgetter(0)
"""A result column's name, from its DB-API description."""

Work = Callable[[WriteTx], T]
Settle = Callable[[WriteTx], None]


@dataclass(slots=True)
class _Job(Generic[T]):
    work: Work[T]
    future: asyncio.Future[T]
    loop: asyncio.AbstractEventLoop


_STOP = object()


class Writer:
    """Runs units of work on one thread, batching whatever is queued into one transaction."""

    def __init__(
        self, engine: Engine, ledger_id: str, settle: Settle, *, serialize: Settle | None = None, max_batch: int = 64,
        committed: Callable[[Any], None] | None = None, admit: Callable[[], None] | None = None,
    ) -> None:
        self.statements = Statements(engine.dialect)
        self._engine = engine
        self._ledger_id = ledger_id
        self._settle = settle
        # Run first in every transaction (None: the dialect's BEGIN already serialises writers).
        self._serialize = serialize
        self._max_batch = max_batch
        # Told after every batch that committed, with the connection, once the batch's callers
        # have their answers (the WAL checkpointer, which may finish a checkpoint there).
        self._committed = committed
        self._unreported = False  # a COMMIT not yet told to ``committed``
        # Asked before every batch: an MvuError it raises refuses the whole batch, and the
        # connection is kept as it is (the database file check: reconnecting could create one).
        self._admit = admit
        self._begin_sql = dialect_of(engine).begin
        # Items are lists of jobs (one per loop iteration that submitted), then _STOP.
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending: dict[asyncio.AbstractEventLoop, list[_Job[Any]]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"mvu-writer-{ledger_id}", daemon=True)
        self._thread.start()

    async def submit(self, work: Work[T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise MvuError(Code.DISPOSED, "the ledger is closed")
            pending = self._pending.get(loop)
            if pending is None:
                # Hand the writer everything this loop submits in one iteration at once: callers
                # resumed together (a batch's results) submit together, so the writer wakes once
                # and runs them as one batch, instead of waking at the first one and taking the
                # GIL from the loop while the others are still being prepared.
                pending = self._pending[loop] = []
                loop.call_soon(self._flush, loop)
            pending.append(_Job(work, future, loop))
        return await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            jobs = self._pending.pop(loop, None)
            if jobs:
                self._queue.put(jobs)

    def close(self) -> None:
        """Finish queued work, then stop the thread and release its connection."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # Work submitted before the close is finished, even if its loop has not flushed it yet.
            for jobs in self._pending.values():
                self._queue.put(jobs)
            self._pending.clear()
            self._queue.put(_STOP)
        self._thread.join()

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        connection: Any = None
        backlog: list[_Job[Any]] = []
        try:
            stopping = False
            while True:
                if not stopping:
                    stopping = self._take(backlog)
                if not backlog:
                    return
                batch = backlog[: self._max_batch]
                del backlog[: self._max_batch]
                connection = self._run_batch(connection, batch)
        finally:
            if connection is not None:
                connection.close()
            self._refuse_leftovers(backlog)

    def _refuse_leftovers(self, backlog: list[_Job[Any]]) -> None:
        """Work the thread did not run (it is ending on an error that escaped a batch) is refused,
        never left waiting."""
        closed = MvuError(Code.DISPOSED, "the ledger is closed")
        while True:
            for job in backlog:
                with contextlib.suppress(RuntimeError):
                    job.loop.call_soon_threadsafe(_resolve_all, [(job.future, False, closed)])
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            backlog = item if isinstance(item, list) else []

    def _take(self, backlog: list[_Job[Any]]) -> bool:
        """Add queued jobs to ``backlog`` (waiting for some while it is empty) until it holds a
        batch or the queue is empty; whether the stop was reached (nothing is queued after it)."""
        while len(backlog) < self._max_batch:
            try:
                item = self._queue.get() if not backlog else self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is _STOP:
                return True
            backlog.extend(item)
        return False

    def _run_batch(self, connection: Any, batch: list[_Job[Any]]) -> Any:
        """Run a batch in one transaction; return the connection to use next (None: reconnect).

        A caller cancelled before COMMIT gets nothing written: the transaction is rolled back and
        the batch runs again without it (units are functions of the database state, so running
        one again is safe). Only a cancellation in the instant between the last check and COMMIT
        can still see its write land; a replay of the same operation then returns it.
        """
        live = [job for job in batch if not job.future.cancelled()]
        if not live:
            return connection  # every caller gave up before its turn: nothing to run
        outcomes: list[tuple[bool, Any]] = []
        try:
            if self._admit is not None:
                self._admit()
        except MvuError as refusal:
            self._resolve(live, [(False, refusal)] * len(live))
            return connection
        try:
            if connection is None:
                connection = self._engine.raw_connection()
            dbapi = connection.dbapi_connection
            # Sharing the transaction needs a driver that tells whether a failed unit wrote.
            isolate = not hasattr(dbapi, "total_changes")
            while live:
                attempt = self._attempt(dbapi, live, isolate=isolate)
                if attempt is not None and not any(job.future.cancelled() for job in live):
                    outcomes = attempt
                    break
                # A unit failed after writing (run again, each unit in its own savepoint), or a
                # caller gave up (run again without it).
                isolate = isolate or attempt is None
                live = [job for job in live if not job.future.cancelled()]
        except Exception as error:  # the transaction itself failed: nothing was written
            outcomes = [(False, translate(error))] * len(live)
            # The connection may be broken (server gone, disk error): start afresh next time.
            if connection is not None:
                with contextlib.suppress(Exception):
                    connection.invalidate()
                connection = None
        self._resolve(live, outcomes)
        if self._unreported and connection is not None and self._committed is not None:
            self._unreported = False
            self._committed(connection.dbapi_connection)
        return connection

    @staticmethod
    def _resolve(live: list[_Job[Any]], outcomes: list[tuple[bool, Any]]) -> None:
        # One wake-up per event loop for the whole batch, not one per caller.
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
        for job, (ok, value) in zip(live, outcomes, strict=True):
            by_loop.setdefault(job.loop, []).append((job.future, ok, value))
        for loop, results in by_loop.items():
            # The caller's loop may be gone (it stopped while waiting): nobody is left to tell.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve_all, results)

    def _attempt(self, dbapi: Any, live: list[_Job[Any]], *, isolate: bool) -> list[tuple[bool, Any]] | None:
        """One transaction over ``live``; commits unless a caller was cancelled meanwhile.

        ``isolate``: each unit runs in its own savepoint. Otherwise they share the transaction,
        and None (rolled back) means one failed after writing something: run the batch isolated.
        """
        cursor = dbapi.cursor()
        try:
            if self._begin_sql is not None:
                cursor.execute(self._begin_sql)
            try:
                if self._serialize is not None:
                    self._serialize(WriteTx(cursor, self.statements, self._ledger_id))
                outcomes: list[tuple[bool, Any]] | None
                if len(live) == 1:
                    outcomes = [self._run_alone(cursor, live[0])]
                elif isolate:
                    outcomes = [self._run_in_savepoint(cursor, job) for job in live]
                else:
                    outcomes = self._run_shared(dbapi, cursor, live)
                if outcomes and any(ok for ok, _ in outcomes) and not any(job.future.cancelled() for job in live):
                    dbapi.commit()
                    self._unreported = True
                else:
                    dbapi.rollback()
                return outcomes
            except BaseException:
                with contextlib.suppress(Exception):
                    dbapi.rollback()
                raise
        finally:
            cursor.close()

    def _run_shared(self, dbapi: Any, cursor: Any, live: list[_Job[Any]]) -> list[tuple[bool, Any]] | None:
        """Run the units one after the other in the open transaction, without a savepoint each.

        A savepoint costs two statements and a copy of every page the unit changes, and the
        usual failures (a stale revision, a replay conflict, a missing resource) are found by
        reads, before the unit writes anything: they leave nothing to undo. sqlite3 tells: it
        counts the rows every statement changed (``total_changes``, triggers and foreign-key
        actions included; a failed statement undoes its own changes) and whether the
        transaction is still open (an I/O or memory error ends it). A unit that failed after
        changing rows gives None: the batch is rolled back and run again, isolated.
        """
        outcomes: list[tuple[bool, Any]] = []
        for job in live:
            changes = dbapi.total_changes
            ok, value = self._run_alone(cursor, job)
            if not ok and (dbapi.total_changes != changes or not dbapi.in_transaction):
                return None
            outcomes.append((ok, value))
        return outcomes

    def _run_alone(self, cursor: Any, job: _Job[Any]) -> tuple[bool, Any]:
        tx = WriteTx(cursor, self.statements, self._ledger_id)
        try:
            result = job.work(tx)
            self._settle(tx)
        # Anything a unit raises fails that unit alone, never the writer thread.
        except BaseException as error:
            return False, translate(error)
        return True, result

    def _run_in_savepoint(self, cursor: Any, job: _Job[Any]) -> tuple[bool, Any]:
        # One name serves: each savepoint is released before the next one is taken, and a
        # constant text keeps the statements in the driver's cache.
        cursor.execute("SAVEPOINT mvu_unit")
        ok, value = self._run_alone(cursor, job)
        if not ok:
            cursor.execute("ROLLBACK TO SAVEPOINT mvu_unit")
        cursor.execute("RELEASE SAVEPOINT mvu_unit")
        return ok, value


def _resolve_all(results: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in results:
        if future.done():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
