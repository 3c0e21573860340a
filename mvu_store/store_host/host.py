"""StoreHost: a host whose sessions live in the ledger's own database.

``mvu serve`` uses it, so a host in any language feeds sessions over HTTP and every process on
the database sees the same ones. It implements :class:`mvu_store.host.IncrementalHost`: the
service reads only what is new, with the fingerprint link the store wrote when it appended.

Appends hold the session's lock (``Ledger.session_lock``), the same one the service holds while
it works on a session, in this process and across processes on one database; so an append never
lands in the middle of a checkpoint, an ingest, an edit or a selection. A lease is valid until
this host appends to the session: another process cannot append while the lease's holder has the
lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mvu_store.bounded import Generations
from mvu_store.errors import Code, MvuError
from mvu_store.host import (
    SESSION_FORMAT_VERSION,
    AppendsSince,
    CardGrant,
    HostFacts,
    Lease,
    Membership,
    SessionSnapshot,
    SessionTail,
    check_session_id,
    session_header,
)
from mvu_store.ledger import Appended, Ledger, StoredSession
from mvu_store.store_host.events import Kept, keep_batch
from mvu_store.store_host.recent import RecentAppends

KNOWN_SESSIONS = 65_536
"""Sessions whose appends a host's leases count; one forgotten is looked up again."""


class StoreHost:
    """Implements :class:`mvu_store.host.IncrementalHost` over the ledger's ``host_*`` tables, and
    :class:`mvu_store.host.CardHost` with the playthroughs and grants a host reports to
    :attr:`facts` (in memory: over HTTP, the routes of ``mvu_api.http.card_facts``)."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        # A generation per session known to exist, issued anew by every append through this host:
        # a lease is valid while its session's generation stands. Bounded: a session forgotten is
        # looked up again, and a lease taken before reads as changed, never as unchanged.
        self._appends: Generations[str] = Generations(KNOWN_SESSIONS)
        self._recent = RecentAppends()
        self.facts = HostFacts()

    # -- the Host protocol ---------------------------------------------------------------------

    async def inspect(self, session_id: str) -> SessionSnapshot | None:
        tail = await self.inspect_since(session_id, -1)
        return None if tail is None else SessionSnapshot(tail.header, tail.events)

    async def inspect_since(self, session_id: str, after_seq: int) -> SessionTail | None:
        tail = await self._ledger.host_session_tail(session_id, after_seq)
        return None if tail is None else tail.session_tail()

    @property
    def ledger(self) -> Ledger:
        """The ledger whose tables hold the sessions (``mvu_store.service.session_cache.LedgerHost``): a
        read of the service gets the session's new events with its own rows in one round trip."""
        return self._ledger

    async def capture_session_lease(self, session_id: str) -> Lease:
        # Sessions are never deleted: one seen once needs no second look (a lease is taken on
        # every checkpoint and ingest, so this saves a round trip per call).
        appends = self._appends
        if appends.generation(session_id) <= 0:  # issued generations are positive: not known here
            if await self._ledger.host_session(session_id) is None:
                raise MvuError(Code.MISSING, f"no session {session_id!r}", session_id=session_id)
            if appends.generation(session_id) <= 0:  # an append meanwhile made it known already
                appends.bump(session_id)
        taken = appends.generation(session_id)

        def valid() -> bool:
            return appends.generation(session_id) == taken

        return valid

    async def capture_appends(self, session_id: str) -> AppendsSince:
        await self.capture_session_lease(session_id)  # MVU_MISSING for a session it does not have
        return self._recent.watch(session_id)

    async def membership(self, playthrough_id: str) -> Membership | None:
        return await self.facts.membership(playthrough_id)

    async def authorize_card_write(self, grant_id: str, source_identity: Mapping[str, Any]) -> CardGrant | None:
        return await self.facts.authorize_card_write(grant_id, source_identity)

    # -- what a chat program does ----------------------------------------------------------------

    async def create_session(self, session_id: str, *, created_at: Any, version: Any = SESSION_FORMAT_VERSION,
                             parent_session: Any = None, origin: Any = None,
                             inherited_event_count: Any = None) -> tuple[StoredSession, bool]:
        """Create a session; ``(session, created)``. The same header again is a replay
        (``created`` False); another header under the id is ``MVU_ID_CONFLICT``."""
        header = session_header(session_id, created_at=created_at, version=version, parent_session=parent_session,
                                origin=origin, inherited_event_count=inherited_event_count)
        return await self._ledger.create_host_session(header)

    async def session(self, session_id: str) -> StoredSession | None:
        return await self._ledger.host_session(check_session_id(session_id))

    async def append(self, session_id: str, events: Any) -> Appended:
        """Append a batch of events as a host sends them (``[{seq, type, data}, ...]``), all or
        nothing: a resent event equal to the stored one is a replay, another one at a stored seq
        ``MVU_EVENT_CONFLICT``, a first new seq past the end ``MVU_EVENT_GAP``."""
        return await self.append_kept(session_id, keep_batch(events))

    async def append_kept(self, session_id: str, batch: Sequence[Kept]) -> Appended:
        """:meth:`append` for a batch already checked by :func:`~mvu_store.store_host.events.keep_batch`."""
        check_session_id(session_id)
        async with self._ledger.session_lock(session_id):
            appended = await self._ledger.append_host_events(session_id, [(kept.event, kept.text) for kept in batch])
            if appended.appended:
                self._appends.bump(session_id)
                self._recent.add(session_id, [kept.event for kept in batch[appended.replayed:]])
        return appended
