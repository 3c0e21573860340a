"""What the parts of the service share: the ledger, the host, the caches and the session locks.

:class:`ServiceContext` holds them, once per service. No part takes it whole: each part names
what it reads in a protocol of its own below (:class:`TurnContext` for a reply's turn,
:class:`PipelineContext` for checkpoints and ingest, ...), composed of one small protocol per
member, and annotates its ``ctx`` with it. ``ServiceContext`` satisfies every one of them
structurally (mypy proves it where :class:`~mvu_store.service.service.MvuService` hands it to
the parts), and a part that reads a member its protocol does not name fails the type check
(``make lint``) and ``tests/service/test_context_needs.py``. A part that needs one more member
adds it to its protocol here, in view of the others.

Everything durable is in the ledger; the context keeps only caches of immutable or re-checkable
data (definitions by hash, session logs, what was verified). Work on a session that reads, then
writes what it read, runs holding the ledger's session lock (:meth:`Ledger.session_lock`), which
orders it among the tasks of this process and every other process on the database; each write
is exact on its own anyway (unique version keys, row-versioned compare-and-swap, derived
instance ids).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

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


# -- what each part reads ---------------------------------------------------------------------------
# One protocol per member of ServiceContext, then one per part, composed of those it reads.


class _Ledger(Protocol):
    @property
    def ledger(self) -> Ledger: ...


class _Host(Protocol):
    @property
    def host(self) -> Host: ...


class _Configs(Protocol):
    @property
    def configs(self) -> tuple[ResourceConfig, ...]: ...


class _Processor(Protocol):
    @property
    def processor(self) -> CommandProcessor: ...


class _Catalog(Protocol):
    @property
    def catalog(self) -> Catalog: ...


class _Sessions(Protocol):
    @property
    def sessions(self) -> SessionCache: ...


class _Verifier(Protocol):
    @property
    def verifier(self) -> Verifier: ...


class _Usage(Protocol):
    @property
    def usage(self) -> Usage: ...


class _Views(Protocol):
    @property
    def views(self) -> ViewGenerations: ...


class _SessionChanges(Protocol):
    @property
    def session_changes(self) -> Generations[str]: ...


class _Disposed(Protocol):
    @property
    def disposed(self) -> bool: ...


class _Alive(Protocol):
    def alive(self) -> None: ...


class _Locked(Protocol):
    async def locked(self, session_id: str, work: Callable[[], Awaitable[T]]) -> T: ...


class _CheckBeforeCommit(Protocol):
    def check_before_commit(self, signal: Signal | None, *leases: Lease | None) -> None: ...


class _Lease(Protocol):
    async def lease(self, session_id: str) -> Lease: ...


class _Durable(Protocol):
    async def durable(self, session_id: str) -> tuple[SessionLog, dict[str, JsonValue]]: ...


class _ManagementMode(Protocol):
    def management_mode(self) -> str: ...


class TurnContext(_Ledger, _Processor, _Usage, _Verifier, _Alive, _CheckBeforeCommit, Protocol):
    """What one reply's turn reads (:mod:`~mvu_store.service.reply_turn`)."""


class PipelineContext(TurnContext, _Catalog, _Configs, _Sessions, _Locked, _Lease, Protocol):
    """What checkpoints and ingest read (:mod:`~mvu_store.service.pipeline`), with a reply's turn."""


class ReadsContext(_Ledger, _Catalog, _Configs, _Processor, _Sessions, _Verifier, _ManagementMode, Protocol):
    """What reads read (:mod:`~mvu_store.service.reads`)."""


class ChangeReadsContext(_Ledger, _Catalog, _Verifier, Protocol):
    """What a path's story and a diff read (:mod:`~mvu_store.service.change_reads`)."""


class AllocationContext(_Ledger, _Catalog, _Configs, _Sessions, _Views, _CheckBeforeCommit, _Durable, _Lease,
                        _Locked, Protocol):
    """What templates, selections and instances read (:mod:`~mvu_store.service.allocation`)."""


class EditingContext(_Ledger, _Catalog, _Sessions, _Usage, _Verifier, _Alive, _CheckBeforeCommit, _Lease, _Locked,
                     _ManagementMode, Protocol):
    """What manual edits read (:mod:`~mvu_store.service.editing`)."""


class BranchingContext(_Ledger, _Sessions, _Verifier, _CheckBeforeCommit, _Durable, _Lease, _Locked, Protocol):
    """What branches read (:mod:`~mvu_store.service.branching`)."""


class LeaseContext(_Host, _Sessions, _Lease, Protocol):
    """What a prompt request's session lease reads (:mod:`~mvu_store.service.request_lease`)."""


class PromptContext(LeaseContext, _Usage, _SessionChanges, _Disposed, Protocol):
    """What prompt reads read (:mod:`~mvu_store.service.prompting`), with their leases."""


class ObserveContext(_Ledger, _Sessions, _Usage, Protocol):
    """What an observed prompt request reads (:mod:`~mvu_store.service.observed_requests`)."""


class CardScopeContext(_Ledger, _Host, _Sessions, _Views, _Lease, Protocol):
    """What resolving a card scope reads (:mod:`~mvu_store.service.card_scopes`)."""


class CardsContext(CardScopeContext, _Catalog, _Processor, _Usage, _Verifier, _Alive, _Locked, Protocol):
    """What card scripts read (:mod:`~mvu_store.service.card_scripts`), with their scopes."""
