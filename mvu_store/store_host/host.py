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

import re
from collections.abc import Mapping, Sequence
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import (
    SESSION_FORMAT_VERSION,
    AppendsSince,
    CardGrant,
    Lease,
    Membership,
    SessionHeader,
    SessionSnapshot,
    SessionTail,
)
from mvu_store.js.values import MAX_SAFE_INTEGER
from mvu_store.jsonvalue import normalize, utf8
from mvu_store.ledger import Appended, Ledger, StoredSession
from mvu_store.store_host.events import Kept, keep_batch
from mvu_store.store_host.facts import HostFacts
from mvu_store.store_host.recent import RecentAppends

# Session ids appear in URL paths and file names: a portable, unambiguous alphabet.
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,159}$")
MAX_CREATED_AT = 200
MAX_ORIGIN = 64


def check_store_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not SESSION_ID.match(session_id):
        raise MvuError(Code.SCOPE, "a session id is 1 to 160 letters, digits or _.:- (starting with a letter or "
                                   "digit)", field="sessionId")
    return session_id


def session_header(session_id: Any, *, created_at: Any, version: Any = SESSION_FORMAT_VERSION,
                   parent_session: Any = None, origin: Any = None, inherited_event_count: Any = None) -> SessionHeader:
    """A checked session header (``MvuError`` naming the first bad field)."""
    check_store_session_id(session_id)
    if isinstance(created_at, bool) or not isinstance(created_at, int | float | str) or created_at == "" or (
            isinstance(created_at, str) and len(created_at) > MAX_CREATED_AT):
        raise MvuError(Code.OPERATION, f"createdAt must be a number or a string of 1 to {MAX_CREATED_AT} "
                                       "characters: with the id it is the session's durable identity",
                       field="createdAt")
    created_at, _, _ = normalize(created_at)
    if type(version) is not int or not 1 <= version <= 1_000:
        raise MvuError(Code.OPERATION, "formatVersion must be an integer from 1 to 1000", field="formatVersion")
    if parent_session is not None:
        try:
            check_store_session_id(parent_session)
        except MvuError:
            raise MvuError(Code.OPERATION, "parentSession must be a session id", field="parentSession") from None
        if parent_session == session_id:
            raise MvuError(Code.OPERATION, "a session is not its own parent", field="parentSession")
    if origin is not None and (not isinstance(origin, str) or not 1 <= len(origin) <= MAX_ORIGIN):
        raise MvuError(Code.OPERATION, f"origin must be a string of 1 to {MAX_ORIGIN} characters", field="origin")
    if inherited_event_count is not None and (type(inherited_event_count) is not int
                                              or not 0 <= inherited_event_count <= MAX_SAFE_INTEGER):
        raise MvuError(Code.OPERATION, "inheritedEventCount must be a non-negative integer",
                       field="inheritedEventCount")
    if inherited_event_count is not None and parent_session is None:
        raise MvuError(Code.OPERATION, "inheritedEventCount says where a branch's own events start: it needs "
                                       "parentSession", field="inheritedEventCount")
    if isinstance(created_at, str):
        utf8(created_at)
    if isinstance(origin, str):
        utf8(origin)
    return SessionHeader(session_id, version, created_at, parent_session, origin, inherited_event_count)


class StoreHost:
    """Implements :class:`mvu_store.host.IncrementalHost` over the ledger's ``host_*`` tables, and
    :class:`mvu_store.host.CardHost` with the playthroughs and grants a host reports to
    :attr:`facts` (in memory: over HTTP, the routes of ``mvu_api.http.card_facts``)."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        # Appends through this host per session known to exist: a lease is valid while its count
        # is unchanged.
        self._appends: dict[str, int] = {}
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
        if session_id not in self._appends:
            if await self._ledger.host_session(session_id) is None:
                raise MvuError(Code.MISSING, f"no session {session_id!r}", session_id=session_id)
            self._appends.setdefault(session_id, 0)
        appends = self._appends
        taken = appends.get(session_id, 0)

        def valid() -> bool:
            return appends.get(session_id, 0) == taken

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
        return await self._ledger.host_session(check_store_session_id(session_id))

    async def append(self, session_id: str, events: Any) -> Appended:
        """Append a batch of events as a host sends them (``[{seq, type, data}, ...]``), all or
        nothing: a resent event equal to the stored one is a replay, another one at a stored seq
        ``MVU_EVENT_CONFLICT``, a first new seq past the end ``MVU_EVENT_GAP``."""
        return await self.append_kept(session_id, keep_batch(events))

    async def append_kept(self, session_id: str, batch: Sequence[Kept]) -> Appended:
        """:meth:`append` for a batch already checked by :func:`~mvu_store.store_host.events.keep_batch`."""
        check_store_session_id(session_id)
        async with self._ledger.session_lock(session_id):
            appended = await self._ledger.append_host_events(session_id, [(kept.event, kept.text) for kept in batch])
            if appended.appended:
                self._appends[session_id] = self._appends.get(session_id, 0) + 1
                self._recent.add(session_id, [kept.event for kept in batch[appended.replayed:]])
        return appended
