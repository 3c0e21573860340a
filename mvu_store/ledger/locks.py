"""Session locks: one holder of a session at a time, in this process and in every other process
on the same database.

``Ledger.session_lock(session_id)`` is what the service holds around everything that reads a
session and then writes what it read (a checkpoint, an ingest, a selection, an edit, a seed), and
what a host that stores its sessions in the ledger holds around an append. Version keys, the
row-version compare-and-swap and the writer's serialisation already keep each *write* exact
across processes; the session lock makes each *sequence* of reads and writes on one session run
alone, so that, for example, a selection cannot slip between an ingest's reading of the
selection and its commits in another process.

A hold takes two locks, in this order:

1. an :class:`asyncio.Lock` per session, so the tasks of this ledger queue among themselves
   without touching the database;
2. a database lock, so the processes sharing the database queue too:

   - **PostgreSQL**: the session-level advisory lock ``pg_advisory_lock(ledger key, session
     key)`` (two 32-bit hashes of the ledger id and the session id), taken on a connection used
     by this hold alone. One connection per hold, because a connection shared by the holds of a
     process would deadlock: a wait for a lock another process holds would block the shared
     connection, and with it the release of every lock this process holds. The connections are
     not the reader pool's (a holder needs reader connections for its work: holds taking them
     could exhaust the pool with work waiting behind them); this part keeps a few idle ones for
     the next holds. At most :data:`MAX_LOCK_CONNECTIONS` are open at once in one process (held,
     waiting or idle): a burst of holds on many sessions queues for one instead of taking the
     database's last connections, and a hold that finds none free within
     :data:`LOCK_CONNECTION_WAIT_S` is ``MVU_STORAGE_BUSY``. Holds never nest, so a queued hold
     only waits for holds that end. A connection lost during a hold releases the lock by itself
     (the server ends the session), and the release then only logs a warning.
   - **SQLite**: a write lock on one byte (at a 62-bit hash of the ledger id and session id) of
     a sidecar file beside the database, ``<database>.locks``, taken through its own open file
     description (Linux's ``F_OFD_SETLKW``), so that holds conflict whichever process or thread
     they are in; the kernel releases it when the descriptor is closed or the process dies.
     Several processes may open one SQLite file (two servers by mistake, a server and a CLI
     command, the tests), and SQLite's own locks cover one transaction, not a sequence of them:
     this lock covers the sequence, at the cost of a system call when nobody else holds the
     session. Where open-file-description locks do not exist, the whole sidecar file is locked
     (``flock``): every session of the file then waits for every other, which is correct, only
     slower.

A wait for the database lock can be cancelled: a lock granted after its waiter was cancelled is
released at once (PostgreSQL: the wait is cancelled on the server and the connection closed;
SQLite: whoever finishes last of the waiting thread and the cancelled task closes the
descriptor). A release that must wait (PostgreSQL's unlock) is shielded from a second
cancellation; one that cannot (SQLite's close) happens at once, with no task and no loop turn.

Two sessions whose hashes collide share one database lock: they wait for each other, nothing
more. A hold is **not re-entrant**: a task that holds a session and asks for it again waits for
itself forever; never nest two holds of one session (nor, since hashes can collide, two holds
at all).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import functools
import hashlib
import logging
import os
import struct
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import psycopg
from psycopg import pq

from mvu_store.errors import Code, MvuError
from mvu_store.ledger.dialect import translated

log = logging.getLogger(__name__)

Release = Callable[[], Awaitable[None] | None]
"""Gives a database lock back (never raises): at once (returns None), or by the awaitable it returns."""


class DatabaseLocks(Protocol):
    """One engine's database locks (one per hold: waits conflict between holds, not processes)."""

    async def acquire(self, ledger_id: str, session_id: str) -> Release: ...

    async def close(self) -> None: ...


class SessionLocks:
    """The session locks of one ledger: a process-local lock per session, then the database's."""

    def __init__(self, database: DatabaseLocks, ledger_id: str) -> None:
        self._database = database
        self._ledger_id = ledger_id
        # One lock per session in use; a lock nobody holds or awaits is dropped with its last user.
        self._local: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        # Releases running on their own (their caller was cancelled again): kept alive until done.
        self._releasing: set[asyncio.Task[None]] = set()

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        if not isinstance(session_id, str):
            raise MvuError(Code.OPERATION, "a session lock needs a session id string")
        lock = self._local.get(session_id)
        if lock is None:
            lock = self._local[session_id] = asyncio.Lock()
        async with lock:
            release = await self._database.acquire(self._ledger_id, session_id)
            try:
                yield
            finally:
                pending = release()
                if pending is not None:
                    task = asyncio.ensure_future(pending)
                    self._releasing.add(task)
                    task.add_done_callback(self._releasing.discard)
                    await asyncio.shield(task)

    async def close(self) -> None:
        await self._database.close()


# -- PostgreSQL ----------------------------------------------------------------------------------

_LOCK = "SELECT pg_advisory_lock(%s, %s)"
_UNLOCK = "SELECT pg_advisory_unlock(%s, %s)"


def _sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def advisory_key(ledger_id: str, session_id: str) -> tuple[int, int]:
    """The two keys of a session's advisory lock: ``classid`` and ``objid`` in ``pg_locks``."""
    return (int.from_bytes(_sha256(f"mvu-ledger\0{ledger_id}")[:4], "big", signed=True),
            int.from_bytes(_sha256(session_id)[:4], "big", signed=True))


MAX_LOCK_CONNECTIONS = 16
"""Session lock connections one process opens to PostgreSQL at most (one ledger's)."""
LOCK_CONNECTION_WAIT_S = 30.0
"""How long a hold queues for a lock connection before it is ``MVU_STORAGE_BUSY`` (the pools' timeout)."""


class AdvisoryLocks:
    """PostgreSQL's session-level advisory locks, each on a connection of its own, at most
    ``max_connections`` of them open at once."""

    def __init__(self, conninfo: str, *, max_connections: int = MAX_LOCK_CONNECTIONS,
                 wait_s: float = LOCK_CONNECTION_WAIT_S) -> None:
        self._conninfo = conninfo
        self._max_connections = max_connections
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._closed = False
        # A slot per hold under way. A hold opens a connection only when none is idle, and only a
        # hold's release makes one idle, so held and idle connections together stay within the bound.
        self._slots = asyncio.Semaphore(max_connections)
        self._wait_s = wait_s

    async def acquire(self, ledger_id: str, session_id: str) -> Release:
        try:
            async with asyncio.timeout(self._wait_s):
                await self._slots.acquire()
        except TimeoutError:
            raise MvuError(Code.STORAGE_BUSY, "no session lock connection came free in time; nothing was written",
                           limit=self._max_connections) from None
        try:
            return await self._lock(ledger_id, session_id)
        except BaseException:
            self._slots.release()
            raise

    async def _lock(self, ledger_id: str, session_id: str) -> Release:
        key = advisory_key(ledger_id, session_id)
        with translated():
            while True:
                reused = bool(self._idle)
                connection = self._idle.pop() if reused else await self._connect()
                try:
                    await connection.execute(_LOCK, key)
                except BaseException as error:
                    # Whatever the connection holds goes with it, a lock granted as the wait was
                    # cancelled included (psycopg cancels the wait on the server first).
                    await connection.close()
                    if reused and isinstance(error, psycopg.OperationalError):
                        # An idle connection the server dropped (a restart drops them all): once
                        # more, on a new connection.
                        await self._close_idle()
                        continue
                    raise
                return functools.partial(self._release, connection, key)

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        if self._closed:
            raise MvuError(Code.DISPOSED, "the ledger is closed")
        return await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)

    async def _release(self, connection: psycopg.AsyncConnection[Any], key: tuple[int, int]) -> None:
        held = False
        try:
            row = await (await connection.execute(_UNLOCK, key)).fetchone()
            held = row is not None and row[0] is True
        except psycopg.Error:
            pass  # the connection is gone, and the lock went with it
        finally:
            try:
                if held and not self._closed and connection.info.transaction_status == pq.TransactionStatus.IDLE:
                    self._idle.append(connection)
                else:
                    await connection.close()
            finally:
                self._slots.release()
        if not held:
            log.warning("a session lock's connection was lost while the lock was held; the server released "
                        "the lock with it")

    async def close(self) -> None:
        self._closed = True
        await self._close_idle()

    async def _close_idle(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.close()


# -- SQLite --------------------------------------------------------------------------------------

LockFile = Callable[[int, int, bool], None]
"""``lock(descriptor, offset, wait)``: take the write lock (waiting for it, or raising ``EAGAIN``)."""

# struct flock on 64-bit Linux: l_type, l_whence, l_start, l_len, l_pid (0 for an OFD lock), padding.
_FLOCK = "hhqqi4x"
_OFFSETS = (1 << 62) - 1


def lock_file(descriptor: int, _offset: int, wait: bool) -> None:
    """The whole file, for platforms without open-file-description locks."""
    fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))


if sys.platform == "linux":
    def lock_byte(descriptor: int, offset: int, wait: bool) -> None:
        """One byte, as an open-file-description lock."""
        command = fcntl.F_OFD_SETLKW if wait else fcntl.F_OFD_SETLK
        fcntl.fcntl(descriptor, command, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0))

    LOCK: LockFile = lock_byte
else:
    LOCK = lock_file


def lock_offset(ledger_id: str, session_id: str) -> int:
    """The byte of the sidecar file a session's lock covers."""
    return int.from_bytes(_sha256(f"{ledger_id}\0{session_id}")[:8], "big") & _OFFSETS


class FileLocks:
    """Write locks on a sidecar file's bytes, each through an open file description of its own."""

    def __init__(self, path: str, lock: LockFile = LOCK) -> None:
        self._path = path
        self._lock = lock

    async def acquire(self, ledger_id: str, session_id: str) -> Release:
        offset = lock_offset(ledger_id, session_id)
        try:
            descriptor = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise self._unavailable(error) from None
        try:
            self._lock(descriptor, offset, False)  # the usual case: nobody holds it, no thread
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(descriptor)
                raise self._unavailable(error) from None
            await self._wait(descriptor, offset)

        def release() -> None:
            os.close(descriptor)  # the last reference to the description: the lock goes with it

        return release

    async def _wait(self, descriptor: int, offset: int) -> None:
        """Wait for the lock on a thread of its own (a wait may last as long as another process's
        work: it must not take one of the default executor's few threads)."""
        wait = _Wait(self._lock, descriptor, offset, asyncio.get_running_loop())
        threading.Thread(target=wait.run, name="mvu-session-lock", daemon=True).start()
        try:
            await wait.done
        except BaseException as error:
            if wait.abandon():
                os.close(descriptor)
            if isinstance(error, OSError):
                raise self._unavailable(error) from None
            raise

    def _unavailable(self, error: OSError) -> MvuError:
        return MvuError(Code.STORAGE_BUSY, f"the session lock file {self._path} is unavailable; nothing was "
                                           f"written: {error.strerror}", path=self._path)

    async def close(self) -> None:
        """Nothing to close: every descriptor belongs to a hold."""


class _Wait:
    """A blocking lock wait on a thread. Whichever of the thread and the waiting task finishes
    last owns the descriptor: a task that went away (cancelled) leaves a lock granted later to the
    thread, which closes the descriptor at once."""

    def __init__(self, lock: LockFile, descriptor: int, offset: int, loop: asyncio.AbstractEventLoop) -> None:
        self._lock = lock
        self._descriptor = descriptor
        self._offset = offset
        self._loop = loop
        self._mutex = threading.Lock()
        self._finished = False
        self._abandoned = False
        self.done: asyncio.Future[None] = loop.create_future()

    def run(self) -> None:
        error: OSError | None = None
        try:
            self._lock(self._descriptor, self._offset, True)
        except OSError as failure:
            error = failure
        with self._mutex:
            self._finished = True
            abandoned = self._abandoned
        if abandoned:
            os.close(self._descriptor)
            return
        try:
            self._loop.call_soon_threadsafe(_settle, self.done, error)
        except RuntimeError:  # the loop is gone: nobody is left to hold the lock
            os.close(self._descriptor)

    def abandon(self) -> bool:
        """The task stops waiting; whether the thread has finished (the task then closes)."""
        with self._mutex:
            self._abandoned = True
            return self._finished


def _settle(future: asyncio.Future[None], error: OSError | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
