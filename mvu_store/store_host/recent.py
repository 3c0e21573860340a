"""The events this process appended to each session lately, for a prompt read's lease.

A prompt read stays current through the events request preparation appends
(``mvu_store.service.request_lease``); to tell, it needs them synchronously. The store keeps, per
session, the last few events this process appended, without their text (no rule reads it): a
read that more were appended after than are kept, or whose session's record was evicted, is
simply not current any more.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from mvu_store.host import AppendsSince, SessionEvent

KEPT_EVENTS = 64
"""Per session: a request's preparation appends a handful; more since a read end its lease."""
KEPT_SESSIONS = 4096
"""Sessions followed at once; the least recently appended to is forgotten first."""


@dataclass(slots=True)
class _Recent:
    count: int = 0
    events: deque[SessionEvent] = field(default_factory=lambda: deque(maxlen=KEPT_EVENTS))


def _as_the_rules_read(event: SessionEvent) -> SessionEvent:
    """An event as the lease rules read it: its fields, but a message's content, and of an
    assembly only its turn (its evidence, up to 256 kept blocks, is for the request-observed
    facts, read from the store: kept here it would multiply by every event and session kept)."""
    if event.type == "request/assembly":
        return SessionEvent(event.seq, event.type, {key: event.data[key] for key in ("turn",) if key in event.data})
    if "message" not in event.data:
        return event
    return SessionEvent(event.seq, event.type, {key: value for key, value in event.data.items() if key != "message"})


class RecentAppends:
    def __init__(self) -> None:
        self._sessions: OrderedDict[str, _Recent] = OrderedDict()

    def _follow(self, session_id: str) -> _Recent:
        """The session's record, made the most recently used one."""
        recent = self._sessions.pop(session_id, None) or _Recent()
        self._sessions[session_id] = recent
        while len(self._sessions) > KEPT_SESSIONS:
            self._sessions.popitem(last=False)
        return recent

    def add(self, session_id: str, events: Sequence[SessionEvent]) -> None:
        recent = self._follow(session_id)
        recent.count += len(events)
        recent.events.extend(_as_the_rules_read(event) for event in events)

    def watch(self, session_id: str) -> AppendsSince:
        recent = self._follow(session_id)
        taken = recent.count

        def since() -> list[SessionEvent] | None:
            added = recent.count - taken
            if self._sessions.get(session_id) is not recent or added > len(recent.events):
                return None
            return list(recent.events)[len(recent.events) - added:] if added else []

        return since
