"""The store-backed host's sessions: headers and append-only events (``mvu_store.store_host``).

Each append is one unit of work: the events that overlap what is stored must be the stored ones
(a replay), the first new one must follow the last stored one, and the new events, their
fingerprint links and the header's new end are written together or not at all. These rows are
the host's data: never charged to the ledger's budget (see ``tables.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select, text

from mvu_store.errors import Code, MvuError
from mvu_store.host import (
    SessionEvent,
    SessionHeader,
    SessionTail,
    canonical_event_text,
    chain_link,
    header_fingerprint,
)
from mvu_store.jsonvalue import canonical_text
from mvu_store.ledger import tables as t
from mvu_store.ledger.query import LEDGER, Query, ReadRows, Row
from mvu_store.ledger.store import Store, now_ms
from mvu_store.ledger.writer import WriteTx

_h, _e = t.host_sessions.c, t.host_events.c

_HEADER = Query("host-session", lambda: select(t.host_sessions).where(_h.ledger_id == LEDGER,
                                                                       _h.id == bindparam("session_id")))
_EVENTS_FROM = Query(
    "host-events-from",
    lambda: select(_e.seq, _e.type, _e.data, _e.fingerprint)
    .where(_e.ledger_id == LEDGER, _e.session_id == bindparam("session_id"), _e.seq >= bindparam("first"))
    .order_by(_e.seq),
)
_EVENTS_BETWEEN = Query(
    "host-events-between",
    lambda: select(_e.seq, _e.type, _e.data)
    .where(_e.ledger_id == LEDGER, _e.session_id == bindparam("session_id"), _e.seq >= bindparam("first"),
           _e.seq <= bindparam("last"))
    .order_by(_e.seq),
)
_TURN_MARK = Query(
    "host-turn-mark",
    # The index's own predicate, spelled as it is: a planner uses a partial index only for a query
    # that implies it, and `type = :type` alone does not, so each check searched every event of
    # the session (a chat's turns grew slower the longer it ran).
    lambda: select(_e.seq).where(_e.ledger_id == LEDGER, _e.session_id == bindparam("session_id"),
                                 _e.type == bindparam("type"), _e.turn == bindparam("turn"), text(t.TURN_MARKS)),
)
_TURN_MARKS_BETWEEN = Query(
    "host-turn-marks-between",
    lambda: select(_e.seq, _e.type, _e.turn).where(
        _e.ledger_id == LEDGER, _e.session_id == bindparam("session_id"), text(t.TURN_MARKS),
        _e.turn >= bindparam("low"), _e.turn <= bindparam("high")),
)
_SESSION_IDS = Query("host-session-ids", lambda: select(_h.id).where(_h.ledger_id == LEDGER).order_by(_h.id))


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session's header with where its events end: ``last_seq`` (-1: none yet) and the
    fingerprint chain's link after it."""

    header: SessionHeader
    last_seq: int
    fingerprint: str


@dataclass(frozen=True, slots=True)
class Appended:
    session: StoredSession
    appended: int
    replayed: int


@dataclass(frozen=True, slots=True)
class StoredTail:
    """A session seen from ``after_seq``: the link after it (None when there is no such event)."""

    session: StoredSession
    base_fingerprint: str | None
    events: tuple[SessionEvent, ...]

    def session_tail(self) -> SessionTail:
        """The tail as the host protocol answers it."""
        return SessionTail(self.session.header, self.base_fingerprint, self.events)


def _stored(row: Row) -> StoredSession:
    created = row["created_at"]
    header = SessionHeader(
        id=row["id"], version=int(row["format_version"]), created_at=None if created is None else json.loads(created),
        parent_session=row["parent_session"], origin=row["origin"],
        inherited_event_count=None if row["inherited_event_count"] is None else int(row["inherited_event_count"]))
    return StoredSession(header, int(row["last_seq"]), row["fingerprint"])


TURN_MARKS = ("turn/start", "turn/end")
# Events that belong to the running turn: they come between its turn/start and its turn/end.
_IN_TURN = ("user/message", "assistant/message", "request/assembly")


class _Order:
    """What the next event must fit: turns do not overlap (a turn/start only when none runs, a
    turn's messages and its end only while it runs), and a branch's copied prefix ends once,
    between turns. A turn's end that came before its start, or a second end-seed, would make the
    service take replies it must not (or drop ones it must)."""

    def __init__(self, header: SessionHeader, open_turn: int | None, end_seed: int | None) -> None:
        self._header = header
        self.open_turn = open_turn
        self.end_seed = end_seed

    def _refuse(self, event: SessionEvent, why: str) -> MvuError:
        return MvuError(Code.EVENT_CONFLICT, f"event {event.seq} ({event.type}) {why}", session_id=self._header.id,
                        seq=event.seq, open_turn=self.open_turn)

    def take(self, event: SessionEvent, turn: int | None) -> None:
        if event.type == "turn/start":
            if self.open_turn is not None:
                raise self._refuse(event, f"starts a turn while turn {self.open_turn} runs: end it first")
            self.open_turn = turn
        elif event.type in _IN_TURN or event.type == "turn/end":
            if self.open_turn != turn:
                running = "no turn runs" if self.open_turn is None else f"turn {self.open_turn} runs"
                raise self._refuse(event, f"belongs to turn {turn}, but {running}")
            if event.type == "turn/end":
                self.open_turn = None
        elif event.type == "session/end-seed":
            if self._header.parent_session is None:
                raise self._refuse(event, "ends a copied prefix, but the session is no branch (no parentSession)")
            if self.end_seed is not None:
                raise self._refuse(event, f"ends the copied prefix again (it ended at event {self.end_seed})")
            if self.open_turn is not None:
                raise self._refuse(event, f"ends the copied prefix while turn {self.open_turn} runs")
            self.end_seed = event.seq


def _turn_of(event: SessionEvent) -> int | None:
    turn = event.data.get("turn")
    return turn if type(turn) is int else None


class _Marks:
    """A turn starts once and ends once (the table's unique index says so too; this says it
    clearly): the turn marks stored before a batch, and the batch's own as they come.

    The stored ones are read with one query when the batch's marked turns span fewer than twice
    as many turns as it has marks (the index holds at most two marks per turn, so the query reads
    at most four rows per mark: the work of a query per mark, in one); a batch whose turns lie
    further apart asks once per mark."""

    def __init__(self, tx: WriteTx, session_id: str, fresh: Sequence[tuple[SessionEvent, str]]) -> None:
        self._tx, self._session_id = tx, session_id
        turns = [turn for event, _ in fresh if event.type in TURN_MARKS and (turn := _turn_of(event)) is not None]
        self._seen: dict[tuple[str, int], int] = {}
        self._read = bool(turns) and max(turns) - min(turns) < 2 * len(turns)
        if self._read:
            for row in tx.all(_TURN_MARKS_BETWEEN, session_id=session_id, low=min(turns), high=max(turns)):
                self._seen[row["type"], int(row["turn"])] = int(row["seq"])

    def take(self, event: SessionEvent, turn: int | None) -> None:
        if turn is None:
            return  # never equal to another (nor in the index)
        earlier = self._seen.get((event.type, turn))
        if earlier is None and not self._read:
            row = self._tx.one(_TURN_MARK, session_id=self._session_id, type=event.type, turn=turn)
            earlier = None if row is None else int(row["seq"])
        if earlier is not None:
            session_id = self._session_id
            raise MvuError(Code.EVENT_CONFLICT, f"session {session_id!r} already has a {event.type} of turn {turn} "
                                                f"(event {earlier}): a turn starts and ends once",
                           session_id=session_id, seq=event.seq, turn=turn, earlier_seq=earlier)
        self._seen[event.type, turn] = event.seq


def _event(row: Row) -> SessionEvent:
    return SessionEvent(int(row["seq"]), row["type"], json.loads(row["data"]))


class HostSessions:
    """Sessions of the store-backed host (``mvu_store.store_host.StoreHost``)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def create_host_session(self, header: SessionHeader) -> tuple[StoredSession, bool]:
        """Create a session (``True``), or find the identical one (``False``); another header
        under the id is ``MVU_ID_CONFLICT``."""
        return await self._store.write(lambda tx: self.insert_host_session(tx, header))

    def insert_host_session(self, tx: WriteTx, header: SessionHeader) -> tuple[StoredSession, bool]:
        """:meth:`create_host_session` inside a unit of work (an import writes a session whole)."""
        row = tx.one(_HEADER, session_id=header.id)
        if row is not None:
            stored = _stored(row)
            if stored.header != header:
                raise MvuError(Code.ID_CONFLICT, f"session {header.id!r} exists with another header",
                               session_id=header.id)
            return stored, False
        fingerprint = header_fingerprint(header)
        self._store.insert_row(tx, t.host_sessions, {
            "id": header.id, "format_version": header.version,
            "created_at": None if header.created_at is None else canonical_text(header.created_at),
            "parent_session": header.parent_session, "origin": header.origin,
            "inherited_event_count": header.inherited_event_count, "last_seq": -1,
            "fingerprint": fingerprint, "open_turn": None, "end_seed": None, "recorded_at": now_ms()})
        return StoredSession(header, -1, fingerprint), True

    async def append_host_events(self, session_id: str, events: Sequence[tuple[SessionEvent, str]]) -> Appended:
        """Append consecutive events (each with its canonical data text): those at stored seqs
        must equal the stored ones, the rest must follow the last stored event."""
        return await self._store.write(lambda tx: self.insert_host_events(tx, session_id, events))

    def insert_host_events(self, tx: WriteTx, session_id: str,
                           events: Sequence[tuple[SessionEvent, str]]) -> Appended:
        """:meth:`append_host_events` inside a unit of work."""
        row = tx.one(_HEADER, session_id=session_id)
        if row is None:
            raise MvuError(Code.MISSING, f"no session {session_id!r}", session_id=session_id)
        stored = _stored(row)
        first = events[0][0].seq
        if first > stored.last_seq + 1:
            raise MvuError(Code.EVENT_GAP, f"session {session_id!r} ends at event {stored.last_seq}: the next "
                                           f"event is {stored.last_seq + 1}, not {first}",
                           session_id=session_id, last_seq=stored.last_seq)
        overlap = [pair for pair in events if pair[0].seq <= stored.last_seq]
        if overlap:
            kept = tx.all(_EVENTS_BETWEEN, session_id=session_id, first=first, last=overlap[-1][0].seq)
            for (event, text), old in zip(overlap, kept, strict=True):
                if old["type"] != event.type or old["data"] != text:
                    raise MvuError(Code.EVENT_CONFLICT, f"session {session_id!r} holds another event {event.seq}: "
                                                        "stored history is never rewritten (branch instead)",
                                   session_id=session_id, seq=event.seq, last_seq=stored.last_seq)
        fresh = events[len(overlap):]
        if not fresh:
            return Appended(stored, 0, len(overlap))
        link = stored.fingerprint
        order = _Order(stored.header, row["open_turn"], row["end_seed"])
        marks = _Marks(tx, session_id, fresh)
        rows: list[dict[str, Any]] = []
        for event, text in fresh:
            turn = _turn_of(event)
            order.take(event, turn)
            if event.type in TURN_MARKS:
                marks.take(event, turn)
            # ``text`` is the data's canonical text (what is stored): the chain's text is put
            # together around it, not encoded again.
            link = chain_link(link, canonical_event_text(event.seq, event.type, text))
            rows.append({"session_id": session_id, "seq": event.seq, "type": event.type, "turn": turn, "data": text,
                         "fingerprint": link})
        self._store.insert_rows(tx, t.host_events, rows)  # one statement, once every event fits
        last = fresh[-1][0].seq
        self._store.update_row(tx, t.host_sessions, {"id": session_id}, {
            "last_seq": last, "fingerprint": link, "open_turn": order.open_turn, "end_seed": order.end_seed})
        return Appended(StoredSession(stored.header, last, link), len(fresh), len(overlap))

    async def host_session(self, session_id: str) -> StoredSession | None:
        row = await self._store.read_one(_HEADER, session_id=session_id)
        return None if row is None else _stored(row)

    async def host_session_tail(self, session_id: str, after_seq: int) -> StoredTail | None:
        """The header and the events after ``after_seq``, in one reader round trip."""
        return await self._store.read_rows(lambda rows: stored_tail(rows, session_id, after_seq))

    async def host_session_ids(self) -> list[str]:
        return [row["id"] for row in await self._store.read_all(_SESSION_IDS)]


def stored_tail(rows: ReadRows, session_id: str, after_seq: int) -> StoredTail | None:
    """:meth:`HostSessions.host_session_tail` inside a round trip that reads more (a session's read)."""
    row = rows.one(_HEADER, session_id=session_id)
    if row is None:
        return None
    stored = _stored(row)
    if after_seq < 0 or after_seq > stored.last_seq:
        # From the start; or from an event the session does not have: no base, every event.
        base = header_fingerprint(stored.header) if after_seq < 0 else None
        return StoredTail(stored, base,
                          tuple(_event(e) for e in rows.all(_EVENTS_FROM, session_id=session_id, first=0)))
    found = rows.all(_EVENTS_FROM, session_id=session_id, first=after_seq)
    base = found[0]["fingerprint"] if found and int(found[0]["seq"]) == after_seq else None
    return StoredTail(stored, base, tuple(_event(e) for e in found[1:]))
