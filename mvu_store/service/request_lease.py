"""The session part of a prompt read's lease: what request preparation may append and keep it.

A host prepares a model request after its prompt reads: it logs the turn's claimed input, its
official system messages, the request's context (``request/assembly``, ``request/context``) and
headers, a step, a title. None of these changes what the read gave, so, as in the original, they
keep the read current; anything else ends it: an unknown event or field, input the turn did not
claim, a reply (a future one, for this read), a new turn, or a change to the history the read
saw. Write leases (card writes, command writes) keep the strict rule: any event ends them.

The rule needs a host that says what was appended since a moment (:class:`AppendWatchHost`); with
any other host a prompt read keeps the strict session lease.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mvu_store.host import AppendsSince, AppendWatchHost, Lease, SessionEvent, SessionSnapshot, event_turn
from mvu_store.service.context import LeaseContext

TITLE_KEYS = frozenset({"title", "messageSeqs", "source"})
HEADER_EVENT_KEYS = frozenset({"header", "reason", "turn"})
HEADER_KEYS = frozenset({"startsSeries"})
"""The request header fields the original knows; another one ends the lease."""


@dataclass(frozen=True, slots=True)
class RequestBase:
    """What a read saw of its session: its events, where they ended, and the turn then running
    (None: none)."""

    snapshot: SessionSnapshot
    last_seq: int
    turn: int | None

    @classmethod
    def of(cls, snapshot: SessionSnapshot) -> RequestBase:
        # The running turn is the last turn mark's, if it is a start: read from the end.
        turn: int | None = None
        for event in reversed(snapshot.events):
            if event.type in ("turn/start", "turn/end"):
                number = event_turn(event)
                turn = number if event.type == "turn/start" and type(number) is int else None
                break
        return cls(snapshot, snapshot.last_seq, turn)

    def _logged_input(self, seq: int) -> bool:
        event = self.snapshot.event(seq)
        return event is not None and event.type == "user/message"

    def keeps(self, added: Sequence[SessionEvent]) -> bool:
        """Whether the events appended after the read all leave it current."""
        claimed: set[int] = set()
        for event in added:
            if event.seq <= self.last_seq:
                continue  # appended before the read looked: the read saw it
            if event.type == "user/message" and self._this_turn(event, required=True):
                claimed.add(event.seq)
            elif not self._tolerates(event, claimed):
                return False
        return True

    def _this_turn(self, event: SessionEvent, *, required: bool) -> bool:
        if "turn" not in event.data:
            return not required
        number = event.data["turn"]
        return self.turn is not None and type(number) is int and number == self.turn

    def _tolerates(self, event: SessionEvent, claimed: set[int]) -> bool:
        data = event.data
        if event.type in ("system/message", "step/start"):
            return self._this_turn(event, required=True)
        if event.type in ("request/assembly", "request/context"):
            return self._this_turn(event, required=False)
        if event.type == "request/header":
            return (set(data) <= HEADER_EVENT_KEYS and self._this_turn(event, required=False)
                    and _header(data.get("header")) and isinstance(data.get("reason", ""), str))
        if event.type == "session/title":
            return _title(data, lambda seq: seq in claimed or self._logged_input(seq))
        return False


def _header(header: Any) -> bool:
    """A header of known fields only; ``startsSeries`` exactly ``true`` (a string is not)."""
    return (isinstance(header, Mapping) and set(header) <= HEADER_KEYS
            and header.get("startsSeries", True) is True)


def _title(data: Mapping[str, Any], user_input: Callable[[int], bool]) -> bool:
    """A title that changes no model history: its exact fields, a non-blank title, a known
    source, and message references only to logged or claimed user input."""
    if set(data) != TITLE_KEYS:
        return False
    title, seqs, source = data["title"], data["messageSeqs"], data["source"]
    if not isinstance(title, str) or not title.strip() or not isinstance(seqs, list):
        return False
    if not all(type(seq) is int and user_input(seq) for seq in seqs):
        return False
    return _title_source(source)


def _title_source(source: Any) -> bool:
    if not isinstance(source, Mapping):
        return False
    kind = source.get("kind")
    if kind in ("user", "fallback"):
        return set(source) == {"kind"}
    if kind == "provider":
        model = source.get("model")
        return (set(source) == {"kind", "provider", "model"} and _name(source.get("provider"))
                and isinstance(model, Mapping) and set(model) == {"provider", "model"}
                and _name(model.get("provider")) and _name(model.get("model")))
    return False


def _name(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


async def request_lease(ctx: LeaseContext, session_id: str) -> Lease:
    """The session lease of a prompt read: the strict one, relaxed as above when the host can
    say what it appended (``MVU_SESSION_IDENTITY`` / ``MVU_SESSION_LEASE`` as :meth:`ServiceContext.lease`)."""
    strict = await ctx.lease(session_id)
    host = ctx.host
    if not isinstance(host, AppendWatchHost):
        return strict
    since: AppendsSince = await host.capture_appends(session_id)
    log = await ctx.sessions.log(session_id)
    if log is None:
        return strict
    base = RequestBase.of(log.snapshot())

    def current() -> bool:
        added = since()
        return added is not None and base.keeps(added)

    return current
