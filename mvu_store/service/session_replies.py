"""Reading a durable session the way the store chain does (DIGEST P-1, P-2, P-5). Pure: no I/O.

Only the last non-interrupted, non-tool-call assistant message of a completed ``turn/end``
takes part in an update. Its identity (the version's ``source``) is the original's: session,
log format version, creation time, message id and seq, turn, step and end event, and the
version key is ``sha256(JSON.stringify(source))``, so a reply recorded by the original ledger
is recognised here. Nothing else of the session (user text, providers, media) is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import (
    SessionEvent,
    SessionHeader,
    SessionSnapshot,
    event_turn,
    has_tool_call,
    message_id,
    message_text,
    user_source_kind,
)
from mvu_store.jsonvalue import JsonValue, js_json, sha256_hex
from mvu_store.lang.macros import Names

# Events that mean a session has real conversation in it (the original's test for "bound").
CONVERSATION_EVENTS = frozenset({"user/message", "assistant/message", "turn/start"})


def reply_fingerprint(text: str) -> str:
    """The original's version fingerprint: sha256 of the reply text as ``JSON.stringify`` writes it."""
    return sha256_hex(js_json(text))


@dataclass(frozen=True, slots=True)
class Reply:
    """The reply of one ended turn, with the coordinates its version records."""

    turn: int
    start_seq: int | None
    end_seq: int
    reason: str | None
    message: SessionEvent
    text: str
    source: dict[str, JsonValue]
    key: str
    fingerprint: str
    human: bool
    names: Names = field(default_factory=Names)
    """The session's names where the reply was written (its last ``session/names`` before it)."""
    at: int | None = None
    """The turn's time (``turn/end`` ``at``, ms since the epoch): the clock its declaration reads."""
    user_seq: int | None = None
    """The event id of the turn's last user-written message before the reply (a card's command
    processor may read its text; it is never kept here)."""

    @property
    def completed(self) -> bool:
        return self.reason == "completed"

    def after(self, boundary: int) -> bool:
        """Whether the reply, and the turn it ends, come after an activation boundary (I-5)."""
        return self.message.seq >= boundary and (self.start_seq is None or self.start_seq >= boundary)


def _reason(event: SessionEvent) -> str | None:
    reason = event.data.get("reason")
    kind = reason.get("kind") if isinstance(reason, Mapping) else None
    return kind if isinstance(kind, str) else None


def seed_boundary(snapshot: SessionSnapshot) -> int:
    """Where a fork child's own events start: replies before it are inherited, never replayed."""
    count = snapshot.header.inherited_event_count
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    ends = [event.seq for event in snapshot.events if event.type == "session/end-seed"]
    return ends[-1] if ends else 0


def has_conversation(snapshot: SessionSnapshot) -> bool:
    return any(event.type in CONVERSATION_EVENTS for event in snapshot.events)


class ReplyParser:
    """Every ended turn's candidate reply, one event at a time (a session copy extended by
    appends parses only the new events). A resource takes those that come :meth:`Reply.after`
    its activation boundary (a turn that started before it ran while the character was being
    selected). Ended turns of every reason are given (the caller checks recorded ones against
    history and commits only ``completed`` ones); turns without a usable reply are left out.
    ``seeded_until`` is the session's :func:`seed_boundary` (replies before it are inherited,
    never replayed)."""

    def __init__(self, header: SessionHeader, seeded_until: int) -> None:
        self.header = header
        self.seeded_until = seeded_until
        self._last_reply: dict[Any, SessionEvent] = {}
        self._first_user: dict[Any, SessionEvent] = {}
        self._last_user: dict[Any, int] = {}  # per turn: the last message the user wrote so far
        self._user_at: dict[Any, int | None] = {}  # per turn: that message when its reply came
        self._started: dict[Any, int] = {}
        self._names_now = Names()
        self._names_at: dict[Any, Names] = {}  # per turn: the session's names at its reply

    @property
    def names(self) -> Names:
        """The names of the session's last ``session/names`` event so far (none: no names)."""
        return self._names_now

    def feed(self, event: SessionEvent) -> Reply | None:
        """Take the next event; the reply of the turn it ends, if it ends one with a usable reply."""
        turn = event_turn(event)
        if isinstance(turn, (dict, list)):
            turn = None  # not a turn number (and no usable key): the event belongs to no turn
        if event.type == "turn/start":
            self._started[turn] = event.seq
            self._last_user.pop(turn, None)
            return None
        if event.type == "session/names":
            self._names_now = _names_of(event)
            return None
        if event.type == "assistant/message":
            self._last_reply[turn] = event
            self._names_at[turn] = self._names_now
            self._user_at[turn] = self._last_user.get(turn)
            return None
        if event.type == "user/message":
            self._first_user.setdefault(turn, event)
            if user_source_kind(event) == "user":
                self._last_user[turn] = event.seq
            return None
        if event.type != "turn/end" or isinstance(turn, bool) or not isinstance(turn, int):
            return None
        reply = self._last_reply.get(turn)
        start = self._started.get(turn)
        if reply is None or reply.data.get("interrupted") or has_tool_call(reply):
            return None
        reason = _reason(event)
        if reply.seq < self.seeded_until or reason == "forked":
            return None
        reply_id = message_id(reply)
        if not isinstance(reply_id, str):
            return None
        header = self.header
        source: dict[str, JsonValue] = {"sessionId": header.id, "sessionFormatVersion": header.version}
        if header.created_at is not None:
            source["sessionCreatedAt"] = header.created_at
        step = reply.data.get("step")
        source.update(eventType="assistant/message", messageId=reply_id, messageSeq=reply.seq, turn=turn,
                      step=step if isinstance(step, int) and not isinstance(step, bool) else None, endSeq=event.seq)
        text = message_text(reply)
        user = self._first_user.get(turn)
        at = event.data.get("at")
        return Reply(turn, start, event.seq, reason, reply, text, source, sha256_hex(js_json(source)),
                     reply_fingerprint(text), human=user is not None and user_source_kind(user) == "user",
                     names=self._names_at.pop(turn, self._names_now),
                     at=at if type(at) is int else None, user_seq=self._user_at.pop(turn, None))


def _names_of(event: SessionEvent) -> Names:
    """A ``session/names`` event's names; one a host wrote wrongly names nobody (never a crash
    in the reading of a durable log)."""
    try:
        return Names.of(event.data)
    except MvuError:
        return Names()


def verify_recorded(source: Mapping[str, Any], fingerprint: str | None, snapshot: SessionSnapshot, *,
                    inherited: bool = False) -> None:
    """Check one recorded version's source against the durable session (DIGEST P-2).

    Evidence that is gone (the message or its turn end missing) is ``MVU_HISTORY_UNAVAILABLE``;
    evidence that is there but different (another message id, text, turn or end reason, or a
    different session format or creation time) is ``MVU_HISTORY_CHANGED``. Either blocks reads
    and ingest until the host's history is consistent again. An ``inherited`` version is checked
    in a fork child's copied prefix: the message and its text only.
    """
    header = snapshot.header
    inherited = inherited or bool(source.get("inherited"))
    changed_header = header.version != source.get("sessionFormatVersion") or (
        "sessionCreatedAt" in source and header.created_at != source.get("sessionCreatedAt"))
    if changed_header and not inherited:
        raise _changed("the session's format version or creation time changed", source)
    if source.get("initial"):
        return
    seq = source.get("messageSeq")
    message = snapshot.event(seq) if isinstance(seq, int) and not isinstance(seq, bool) else None
    if message is None:
        raise MvuError(Code.HISTORY_UNAVAILABLE, "a recorded reply is missing from the durable session",
                       session_id=header.id, message_seq=seq if isinstance(seq, int) else None)
    if (
        message.type != "assistant/message"
        or message_id(message) is None
        or message_id(message) != source.get("messageId")
        or reply_fingerprint(message_text(message)) != fingerprint
    ):
        raise _changed("a recorded reply changed in the durable session", source)
    if inherited:
        return  # a fork child's copy of the reply: its turn ended in the parent
    end_seq = source.get("endSeq")
    end = snapshot.event(end_seq) if isinstance(end_seq, int) and not isinstance(end_seq, bool) else None
    if end is None:
        raise MvuError(Code.HISTORY_UNAVAILABLE, "a recorded turn end is missing from the durable session",
                       session_id=header.id, end_seq=end_seq if isinstance(end_seq, int) else None)
    if end.type != "turn/end" or event_turn(end) != source.get("turn") or _reason(end) != "completed":
        raise _changed("a recorded turn end changed in the durable session", source)


def _changed(message: str, source: Mapping[str, Any]) -> MvuError:
    seq = source.get("messageSeq")
    return MvuError(Code.HISTORY_CHANGED, message, session_id=str(source.get("sessionId")),
                    message_seq=seq if isinstance(seq, int) else None)
