"""What every part of the service shares: the ledger, the host, the caches and the session locks.

The parts (:mod:`allocation`, :mod:`pipeline`, :mod:`reads`, :mod:`editing`, :mod:`branching`)
each take this one object instead of callbacks into the front class. Everything durable is in the
ledger; the context keeps only caches of immutable or re-checkable data (definitions by hash, the
parsed legacy file, session logs, what was verified). Work on a session that reads, then writes
what it read, runs holding the ledger's session lock (:meth:`Ledger.session_lock`), which orders
it among the tasks of this process and every other process on the database; each write is exact
on its own anyway (unique version keys, row-versioned compare-and-swap, derived instance ids).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from mvu_store.bounded import Generations
from mvu_store.errors import Code, MvuError
from mvu_store.host import Host, Lease
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import Ledger
from mvu_store.processor.port import CommandProcessor
from mvu_store.service.catalog import Catalog
from mvu_store.service.identity import session_identity
from mvu_store.service.models import ResourceConfig
from mvu_store.service.selection_views import ViewGenerations
from mvu_store.service.session_cache import DEFAULT_MEMORY_BYTES, SessionCache, SessionLog
from mvu_store.service.usage import Usage
from mvu_store.service.verification import Verifier

T = TypeVar("T")
Signal = asyncio.Event
"""A caller's cancellation: once set, nothing more is committed (the call raises CancelledError)."""


def now_ms() -> int:
    return int(time.time() * 1000)


def check_signal(signal: Signal | None) -> None:
    if signal is not None and not isinstance(signal, asyncio.Event):
        raise MvuError(Code.OPERATION, "signal must be an asyncio.Event")
    if signal is not None and signal.is_set():
        raise asyncio.CancelledError("cancelled by the caller's signal")


SESSION_CHANGES = 65_536
"""Sessions whose count of changing work is remembered; one forgotten reads as changed."""


class _Closed:
    """Whether the service was closed: the one switch of the context, and it only turns on."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = False


@dataclass(frozen=True, slots=True)
class ServiceContext:
    """The pieces every part shares; frozen, so no part swaps one for the others. What changes
    changes inside its own piece (the caches, the usage registrations, the generations), and
    closing is one switch (:meth:`close`). Made by :meth:`open`."""

    ledger: Ledger
    host: Host
    configs: tuple[ResourceConfig, ...]
    processor: CommandProcessor
    catalog: Catalog
    sessions: SessionCache
    verifier: Verifier
    usage: Usage
    views: ViewGenerations
    """Each session's selection generation (greeting views; docs/cards.md)."""
    session_changes: Generations[str]
    """Each session's generation of work that may change its state (a selection, a reply, an
    edit): a prompt read stays current only while its session's generation stands (bounded: a
    session forgotten reads as changed, never as unchanged)."""
    _closed: _Closed

    @staticmethod
    def open(*, ledger: Ledger, host: Host, configs: Sequence[ResourceConfig], processor: CommandProcessor,
             session_memory_bytes: int = DEFAULT_MEMORY_BYTES) -> ServiceContext:
        """A context over ``ledger`` and ``host``; ``session_memory_bytes``: what the copies of
        the sessions in use may hold in memory (:class:`SessionCache`)."""
        sessions = SessionCache(host, memory_bytes=session_memory_bytes)
        return ServiceContext(ledger, host, tuple(configs), processor, Catalog(ledger), sessions,
                              Verifier(ledger, sessions), Usage(), ViewGenerations(), Generations(SESSION_CHANGES),
                              _Closed())

    @property
    def disposed(self) -> bool:
        return self._closed.on

    def close(self) -> None:
        """Refuse every call from now on (``MVU_DISPOSED``)."""
        self._closed.on = True

    def alive(self) -> None:
        if self.disposed:
            raise MvuError(Code.DISPOSED, "the service was closed")

    async def locked(self, session_id: str, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` holding the session's lock (and refuse once the service is closed). Not
        re-entrant: ``work`` must not call ``locked`` again."""
        async with self.ledger.session_lock(session_id):
            self.alive()
            try:
                return await work()
            finally:
                self.session_changes.bump(session_id)

    def check_before_commit(self, signal: Signal | None, *leases: Lease | None) -> None:
        """Synchronously, after the last await and before a commit is queued (A-1): the caller
        still wants it, the service is still open, and every session is still the one inspected."""
        check_signal(signal)
        self.alive()
        if any(lease is not None and lease() is not True for lease in leases):
            raise MvuError(Code.SESSION_LEASE, "the session changed before the commit")

    async def lease(self, session_id: str) -> Lease:
        """A host session lease, valid now (else ``MVU_SESSION_LEASE``)."""
        try:
            lease = await self.host.capture_session_lease(session_id)
        except MvuError as error:
            if error.code != Code.MISSING:
                raise
            raise MvuError(Code.SESSION_IDENTITY, f"the host has no durable session {session_id!r}",
                           session_id=session_id) from None
        if not callable(lease) or lease() is not True:
            raise MvuError(Code.SESSION_LEASE, "a controlled session mutation lease is required",
                           session_id=session_id)
        return lease

    async def durable(self, session_id: str) -> tuple[SessionLog, dict[str, JsonValue]]:
        """A session the host has, with its durable identity (else ``MVU_SESSION_IDENTITY``)."""
        log = await self.sessions.log(session_id)
        identity = session_identity(log.snapshot() if log is not None else None, session_id)
        assert log is not None
        return log, identity

    def management_mode(self) -> str:
        """Who manages execution now: the current registrations decide, not the stored preference (I-8)."""
        return self.usage.mode()
