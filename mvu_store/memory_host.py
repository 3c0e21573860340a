"""A reference host: sessions as append-only logs, in memory or as durable JSONL files.

Used by the tests, the demo and newcomers to drive the whole pipeline without a chat program.
With ``path``, each session is ``<path>/<session id>.jsonl``: the first line is the header, each
further line one event, appended and fsynced, so a restarted process sees the same sessions.
A file there that is not such a log (a header naming another id, malformed JSON, a link, a
device) is not loaded: :attr:`MemoryHost.refused` names it with its error, and every other
session loads as usual; a session's file is the one it was loaded from or created as, never a
path made from an id read in a file.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from mvu_store.errors import Code, MvuError
from mvu_store.host import (
    SESSION_FORMAT_VERSION,
    AppendsSince,
    CardGrant,
    HostFacts,
    Lease,
    Membership,
    SessionEvent,
    SessionHeader,
    SessionSnapshot,
    SessionTail,
    chain_link,
    check_session_id,
    event_line,
    event_text,
    fingerprint_chain,
    header_line,
    read_log,
    session_header,
    turn_events,
)
from mvu_store.jsonvalue import JsonValue, normalize, utf8
from mvu_store.private_files import make_private_folders, private_opener


@dataclass(slots=True)
class _Session:
    header: SessionHeader
    events: list[SessionEvent] = field(default_factory=list)
    generation: int = 0
    chain: list[str] = field(default_factory=list)
    """``fingerprint_chain(header, events)``, kept as events are appended (``inspect_since``)."""

    def rechain(self) -> None:
        """After an edit of the header or of earlier events: every later link changes."""
        self.chain = fingerprint_chain(self.header, self.events)


class TurnService(Protocol):
    """What an attached service must offer (``MvuService`` does)."""

    async def checkpoint(self, *, session_id: str, turn_start_seq: int) -> Any: ...

    async def ingest(self, *, session_id: str) -> Any: ...


class MemoryHost:
    """Implements :class:`mvu_store.host.IncrementalHost` and :class:`mvu_store.host.CardHost`, plus
    the calls a test or demo needs to act as the chat program: create sessions, append events,
    drift identities, invalidate leases; report playthroughs and card grants through :attr:`facts`."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._sessions: dict[str, _Session] = {}
        self._service: TurnService | None = None
        self._pending: list[asyncio.Future[None]] = []
        self._path = Path(path) if path is not None else None
        self._files: dict[str, Path] = {}
        self.facts = HostFacts()
        """The playthroughs and card grants this host reports (kept in memory only)."""
        self.refused: dict[str, str] = {}
        """Log files of ``path`` that were not loaded, by file name: the error code and message
        (the other sessions load and serve as usual)."""
        if self._path is not None:
            make_private_folders(self._path)
            for log in sorted(self._path.glob("*.jsonl")):
                try:
                    self._load(log)
                except MvuError as error:
                    self.refused[log.name] = f"{error.code}: {error.message}"

    # -- the Host protocol ---------------------------------------------------------------------

    async def inspect(self, session_id: str) -> SessionSnapshot | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        # A snapshot is the caller's own: later appends and edits never show through it. Events
        # are never changed in place (an edit replaces the event), so sharing them is safe.
        return SessionSnapshot(session.header, tuple(session.events))

    async def inspect_since(self, session_id: str, after_seq: int) -> SessionTail | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        # Events are numbered densely from 0 here, so an event's seq is its index; any negative
        # seq means from the start, as in ``mvu_store.host.tail_of``.
        after_seq = max(after_seq, -1)
        if after_seq < len(session.events):
            return SessionTail(session.header, session.chain[after_seq + 1], tuple(session.events[after_seq + 1:]))
        return SessionTail(session.header, None, tuple(session.events))

    async def capture_session_lease(self, session_id: str) -> Lease:
        session = self._require(session_id)
        generation = session.generation

        def valid() -> bool:
            current = self._sessions.get(session_id)
            return current is session and current.generation == generation

        return valid

    async def capture_appends(self, session_id: str) -> AppendsSince:
        session = self._require(session_id)
        count = len(session.events)
        # An append adds one event and one generation; every other change (an event rewritten,
        # the log cut, the header changed, leases invalidated) adds a generation alone.
        others = session.generation - count

        def since() -> list[SessionEvent] | None:
            current = self._sessions.get(session_id)
            if current is not session or session.generation - len(session.events) != others \
                    or len(session.events) < count:
                return None
            return session.events[count:]

        return since

    async def membership(self, playthrough_id: str) -> Membership | None:
        return await self.facts.membership(playthrough_id)

    async def authorize_card_write(self, grant_id: str, source_identity: Mapping[str, Any]) -> CardGrant | None:
        return await self.facts.authorize_card_write(grant_id, source_identity)

    # -- acting as the chat program ------------------------------------------------------------

    def create_session(
        self,
        session_id: str,
        *,
        created_at: int | float | str,
        version: int = SESSION_FORMAT_VERSION,
        parent_session: str | None = None,
        origin: str | None = None,
        inherited_event_count: int | None = None,
    ) -> SessionHeader:
        """Create a session, checked as every host checks a header (``mvu_store.host.headers``).
        The same header again is a replay that changes nothing; another header under the id is
        ``MVU_ID_CONFLICT`` (as ``POST /sessions`` answers, docs/host-protocol.md)."""
        header = session_header(session_id, created_at=created_at, version=version, parent_session=parent_session,
                                origin=origin, inherited_event_count=inherited_event_count)
        existing = self._sessions.get(session_id)
        if existing is not None:
            if existing.header != header:
                raise MvuError(Code.ID_CONFLICT, f"session {session_id!r} already exists with another header",
                               session_id=session_id)
            return existing.header
        self._sessions[session_id] = session = _Session(header)
        session.rechain()
        if self._path is not None:
            # The one place a file name comes from a session id: one the header check admits.
            self._files[session_id] = self._path / f"{session_id}.jsonl"
        self._write(session_id, header_line(header), truncate=True)
        return header

    def append(self, session_id: str, type: str, data: dict[str, JsonValue] | None = None) -> int:
        """Append an event; returns its seq. Any append invalidates the session's leases.

        With a service attached (:meth:`attach`), a ``turn/start`` schedules its checkpoint and a
        ``turn/end`` its ingest, as a host's store chain would; :meth:`drain` awaits them.
        """
        event = self._append(session_id, type, data)
        if self._service is not None and type in ("turn/start", "turn/end"):
            self._pending.append(asyncio.ensure_future(self._service_step(session_id, event)))
        return event.seq

    def _append(self, session_id: str, type: str, data: dict[str, JsonValue] | None) -> SessionEvent:
        session = self._require(check_session_id(session_id))
        event, text = self._event(len(session.events), type, data or {})
        session.events.append(event)
        session.chain.append(chain_link(session.chain[-1], text))
        session.generation += 1
        self._write(session_id, event_line(event))
        return event

    def replace_event(self, session_id: str, seq: int, type: str, data: dict[str, JsonValue]) -> None:
        """Rewrite one event in place (simulates a host whose durable history drifted, DIGEST P-2)."""
        session = self._require(session_id)
        if not 0 <= seq < len(session.events):
            raise MvuError(Code.MISSING, f"no event {seq} in session {session_id!r}", seq=seq)
        session.events[seq], _ = self._event(seq, type, data)
        session.rechain()
        session.generation += 1
        self._rewrite(session_id)

    def truncate(self, session_id: str, length: int) -> None:
        """Keep only the first ``length`` events (simulates lost durable history, DIGEST P-2)."""
        session = self._require(session_id)
        del session.events[length:]
        session.rechain()
        session.generation += 1
        self._rewrite(session_id)

    # -- branching, the way the host creates child sessions ---------------------------------------

    def fork(self, source_session_id: str, *, at_event_id: int, new_session_id: str,
             created_at: int | float | str) -> str:
        """A fork child: the source's events up to the reply ``at_event_id``, then the fork boundary."""
        return self._branch(source_session_id, at_event_id, new_session_id, created_at)

    def swipe(self, source_session_id: str, *, at_event_id: int, new_session_id: str, created_at: int | float | str,
              prefix_end_event_id: int | None = None) -> str:
        """A reply swipe's session: a new empty one for the first turn, else the prefix up to
        ``prefix_end_event_id`` (the reply before the swiped turn)."""
        if prefix_end_event_id is None:
            self.create_session(new_session_id, created_at=created_at)
            return new_session_id
        return self._branch(source_session_id, prefix_end_event_id, new_session_id, created_at)

    def retry(self, source_session_id: str, *, at_event_id: int, new_session_id: str, created_at: int | float | str,
              prefix_end_event_id: int | None = None) -> str:
        """A stopped request's retry session: as :meth:`swipe` (the request itself is not copied)."""
        return self.swipe(source_session_id, at_event_id=at_event_id, new_session_id=new_session_id,
                          created_at=created_at, prefix_end_event_id=prefix_end_event_id)

    def _branch(self, source_session_id: str, cut: int, new_session_id: str, created_at: int | float | str) -> str:
        source = self._require(source_session_id)
        if not 0 <= cut < len(source.events):
            raise MvuError(Code.MISSING, f"no event {cut} in session {source_session_id!r}", seq=cut)
        self.create_session(new_session_id, created_at=created_at, version=source.header.version,
                            parent_session=source_session_id)
        child = self._sessions[new_session_id]
        child.events.extend(source.events[: cut + 1])
        child.rechain()
        for event in child.events:
            self._write(new_session_id, event_line(event))
        open_turns = [e.data.get("turn") for e in child.events if e.type == "turn/start"]
        ended = {e.data.get("turn") for e in child.events if e.type == "turn/end"}
        if open_turns and open_turns[-1] not in ended:
            # The copied reply's turn ends, in the child, at the fork (docs/host-events.md: reason forked).
            self._append(new_session_id, "turn/end", {"turn": open_turns[-1], "reason": {"kind": "forked"}})
        self._append(new_session_id, "session/end-seed", {})
        return new_session_id

    # -- driving a service -----------------------------------------------------------------------

    def attach(self, service: TurnService | None) -> None:
        """Call ``service.checkpoint`` at every ``turn/start`` and ``service.ingest`` at every
        ``turn/end`` appended from now on (None detaches). Needs a running event loop."""
        self._service = service

    async def drain(self) -> None:
        """Wait for the scheduled checkpoints and ingests; the first failure is raised."""
        pending, self._pending = self._pending, []
        results = await asyncio.gather(*pending, return_exceptions=True)
        errors = [result for result in results if isinstance(result, BaseException)]
        if errors:
            raise errors[0]

    async def _service_step(self, session_id: str, event: SessionEvent) -> None:
        assert self._service is not None
        if event.type == "turn/start":
            await self._service.checkpoint(session_id=session_id, turn_start_seq=event.seq)
        else:
            await self._service.ingest(session_id=session_id)

    async def turn(self, session_id: str, *, turn: int, user: str, reply: str, message_id: str | None = None,
                   reason: str = "completed") -> int:
        """Play one whole turn (start, user message, assistant reply, end) and wait for the
        attached service; returns the reply's seq. For tests, the demo and benchmarks."""
        request, answer = turn_events(turn=turn, user=user, reply=reply,
                                      message_id=message_id or f"{session_id}-m{turn}", reason=reason)
        for kind, data in request:
            self.append(session_id, kind, data)
        await self.drain()  # the baseline is frozen before the request, as a host does
        seqs = [self.append(session_id, kind, data) for kind, data in answer]
        await self.drain()
        return seqs[0]

    def set_created_at(self, session_id: str, created_at: int | float | str | None) -> None:
        """Change the durable creation time (simulates identity drift, DIGEST I-3)."""
        session = self._require(session_id)
        session.header = replace(session.header, created_at=created_at)
        session.rechain()
        session.generation += 1
        self._rewrite(session_id)

    def invalidate_leases(self, session_id: str) -> None:
        self._require(session_id).generation += 1

    def session_ids(self) -> list[str]:
        return list(self._sessions)

    # -- storage -------------------------------------------------------------------------------

    def _require(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise MvuError(Code.MISSING, f"no session {session_id!r}", session_id=session_id)
        return session

    def _event(self, seq: int, type: str, data: Mapping[str, Any]) -> tuple[SessionEvent, str]:
        """An event as this host keeps it, with its text in the fingerprint chain: JSON values
        only (normalised: 1.0 is the 1 a JavaScript host meant). In memory a lone surrogate is
        kept (a host's text may hold one: the chain hashes it); a log line is UTF-8, so with
        ``path`` it is refused (``MVU_JSON``) before anything changes, as ``StoreHost`` refuses it."""
        payload, _, _ = normalize(data)
        event = SessionEvent(seq, type, payload)
        text = event_text(event)
        if self._path is not None:
            utf8(text)
        return event, text

    def _write(self, session_id: str, line: dict[str, Any], *, truncate: bool = False) -> None:
        if self._path is None:
            return
        with open(self._files[session_id], "w" if truncate else "a", encoding="utf-8", opener=private_opener) as log:
            log.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            log.flush()
            os.fsync(log.fileno())

    def _rewrite(self, session_id: str) -> None:
        if self._path is None:
            return
        session = self._sessions[session_id]
        target = self._files[session_id]
        temporary = target.with_suffix(".jsonl.tmp")
        with open(temporary, "w", encoding="utf-8", opener=private_opener) as log:
            for line in [header_line(session.header), *map(event_line, session.events)]:
                log.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            log.flush()
            os.fsync(log.fileno())
        os.replace(temporary, target)

    def _load(self, log: Path) -> None:
        read = read_log(log)
        if read is None:
            return
        header, events, torn = read
        if header.id in self._sessions:
            raise MvuError(Code.ID_CONFLICT, f"{log.name}: session {header.id!r} is already loaded from "
                                             f"{self._files[header.id].name}", path=str(log))
        session = _Session(header, events)
        session.rechain()
        self._sessions[header.id] = session
        self._files[header.id] = log
        if torn:
            self._rewrite(header.id)  # so the next append does not follow the torn bytes
