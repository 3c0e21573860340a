"""What the service asks of a host: durable sessions (header + events) and session leases.

The service never reads host files. A host implements :class:`Host`; the shapes are those of
``docs/host-events.md`` (the service freezes only these fields). ``MemoryHost`` in
``mvu_store/memory_host.py`` is a reference implementation for tests, the demo and newcomers;
``tests/hosts`` runs one contract against it and ``StoreHost``.

A host that can also answer :meth:`IncrementalHost.inspect_since` lets the service check a
session's history once: the service keeps its own copy of each session it works on and asks only
for the events after the last one it has, with the chained fingerprint of everything up to that
event (:func:`chain_fingerprint`). The same fingerprint means the earlier part is unchanged; a
different one (an edited, removed or renumbered event, or a changed header) sends the service
back to a full inspection and a full re-check. A host with only :meth:`Host.inspect` works too,
at the old cost: every call hashes the whole session.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mvu_store.jsonvalue import JsonValue, dumps

SESSION_FORMAT_VERSION = 4
"""The session log format version hosts write today (stored as ``sessionFormatVersion``)."""

Lease = Callable[[], bool]
"""A synchronous validity check: True while nothing changed the session since it was taken."""


def holds(lease: Callable[[], Any]) -> bool:
    """Whether ``lease`` holds now: it answered exactly True. A lease that raises, or answers an
    awaitable (an asynchronous check is no synchronous lease), does not hold; a coroutine it
    made is closed, never awaited."""
    try:
        answer = lease()
    except Exception:
        return False
    if inspect.isawaitable(answer):
        if inspect.iscoroutine(answer):
            answer.close()
        return False
    return answer is True


class Leases:
    """Leases that hold together: valid while every one :func:`holds` (``a & b`` adds one). A
    lease of its own, so it goes wherever a :data:`Lease` does; leases from foreign code (a
    usage handler's, a host's) are safe in it."""

    __slots__ = ("_parts",)

    def __init__(self, *parts: Callable[[], Any]) -> None:
        self._parts = parts

    def __call__(self) -> bool:
        return all(holds(part) for part in self._parts)

    def __and__(self, other: Lease) -> Leases:
        return Leases(*self._parts, other)

    def __rand__(self, other: Lease) -> Leases:
        return Leases(other, *self._parts)


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """A session's identity. ``id`` + ``created_at`` is the durable identity of DIGEST I-2."""

    id: str
    version: int
    created_at: int | float | str | None
    parent_session: str | None = None
    origin: str | None = None
    inherited_event_count: int | None = None

    def identity(self) -> dict[str, JsonValue] | None:
        """``{sessionId, createdAt}``, or None when the host gave no usable creation time."""
        if self.created_at is None or self.created_at == "":
            return None
        return {"sessionId": self.id, "createdAt": self.created_at}


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One durable event: ``seq`` is its event id; ``data`` is the event's JSON payload."""

    seq: int
    type: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SessionSnapshot:
    header: SessionHeader
    events: tuple[SessionEvent, ...]

    def event(self, seq: int) -> SessionEvent | None:
        # Hosts number events densely from 0, so the index usually is the seq; fall back to a scan.
        if 0 <= seq < len(self.events) and self.events[seq].seq == seq:
            return self.events[seq]
        return next((event for event in self.events if event.seq == seq), None)

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq if self.events else -1


@dataclass(frozen=True, slots=True)
class SessionTail:
    """A session seen from one of its events: the header, the chained fingerprint of the events
    up to and including ``after_seq`` (None when the host has no event ``after_seq`` any more),
    and every event after it, in order."""

    header: SessionHeader
    base_fingerprint: str | None
    events: tuple[SessionEvent, ...]


def header_fingerprint(header: SessionHeader) -> str:
    """The start of a session's fingerprint chain: any change of the header changes every link."""
    text = json.dumps([header.id, header.version, header.created_at, header.parent_session, header.origin,
                       header.inherited_event_count], ensure_ascii=False, separators=(",", ":"), default=str)
    return _sha256(text)


def chain_fingerprint(previous: str, event: SessionEvent) -> str:
    """The fingerprint of a session prefix ending with ``event``, given the one before it.

    The event is hashed as key-sorted JSON, so a host that stores events as JSON (and reads them
    back in another key order) computes the same chain as the service.
    """
    return chain_link(previous, event_text(event))


def event_text(event: SessionEvent) -> str:
    """The text an event is hashed as in the fingerprint chain (key-sorted, compact JSON)."""
    return json.dumps([event.seq, event.type, event.data], ensure_ascii=False, separators=(",", ":"),
                      sort_keys=True, default=str)


def canonical_event_text(seq: int, kind: str, data_text: str) -> str:
    """:func:`event_text` of an event whose ``data`` is already written as key-sorted compact
    JSON (``mvu_store.jsonvalue.dumps``, as a store keeps it): put together around that text
    instead of encoding the data again. The same text, since a list is written as its items
    joined by commas, each as it is written alone."""
    return f"[{seq},{dumps(kind)},{data_text}]"


def chain_link(previous: str, text: str) -> str:
    """:func:`chain_fingerprint` for an event already written as :func:`event_text`."""
    return _sha256(previous + text)


def fingerprint_chain(header: SessionHeader, events: Iterable[SessionEvent]) -> list[str]:
    """``[header fingerprint, after event 0, after event 1, ...]``."""
    chain = [header_fingerprint(header)]
    for event in events:
        chain.append(chain_fingerprint(chain[-1], event))
    return chain


def _sha256(text: str) -> str:
    # surrogatepass: a lone surrogate in a host's text must not make a session unhashable.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def tail_of(snapshot: SessionSnapshot, after_seq: int) -> SessionTail:
    """A whole snapshot seen from ``after_seq``: what an inspect-only host costs (all of it hashed)."""
    chain = fingerprint_chain(snapshot.header, snapshot.events)
    if after_seq < 0:
        return SessionTail(snapshot.header, chain[0], snapshot.events)
    index = next((i for i, event in enumerate(snapshot.events) if event.seq == after_seq), None)
    if index is None:
        return SessionTail(snapshot.header, None, snapshot.events)
    return SessionTail(snapshot.header, chain[index + 1], snapshot.events[index + 1:])


@runtime_checkable
class Host(Protocol):
    """The host side of the service: durable sessions and their leases (DIGEST A-1)."""

    async def inspect(self, session_id: str) -> SessionSnapshot | None:
        """The session's header and events, or None when the host has no such session."""
        ...

    async def capture_session_lease(self, session_id: str) -> Lease:
        """A lease that stays valid until the host changes or works on the session."""
        ...


@dataclass(frozen=True, slots=True)
class Variant:
    """One variant of a timeline node: the session that holds it and the event its message ends at."""

    id: str
    session_id: str
    end_event_id: int
    session_format_version: int | None = None


@dataclass(frozen=True, slots=True)
class TimelineNode:
    id: str
    variants: tuple[Variant, ...] = ()


@dataclass(frozen=True, slots=True)
class Playthrough:
    """A playthrough as the host keeps it: the character it plays, its root session, its timeline
    of nodes (each with its variants) and the timeline's head ``(node id, variant id)``."""

    id: str
    character_id: str
    root_session_id: str
    nodes: tuple[TimelineNode, ...] = ()
    head: tuple[str, str] | None = None

    def variant(self, node_id: str, variant_id: str) -> Variant | None:
        node = next((node for node in self.nodes if node.id == node_id), None)
        return None if node is None else next((item for item in node.variants if item.id == variant_id), None)

    def member(self, session_id: str) -> bool:
        """Whether the session is the root or one variant's session."""
        return session_id == self.root_session_id or any(
            variant.session_id == session_id for node in self.nodes for variant in node.variants)

    @property
    def empty(self) -> bool:
        """No node and no head: nothing was sent yet."""
        return not self.nodes and self.head is None


@dataclass(frozen=True, slots=True)
class Membership:
    """A playthrough with its lease: valid until the host reports the playthrough again (even
    with the same content) or removes it."""

    playthrough: Playthrough
    lease: Lease


@dataclass(frozen=True, slots=True)
class CardGrant:
    """The host's permission for one enabled card script (``grant_id``) to write through a scope:
    ``write`` and ``scope`` as granted, ``source_identity`` the script's identity
    (``{version: 1, sha256, scope}``), ``check_current`` a lease that ends when it is revoked."""

    grant_id: str
    write: bool
    scope: Mapping[str, Any]
    source_identity: Mapping[str, Any]
    check_current: Lease


@runtime_checkable
class CardHost(Host, Protocol):
    """A host that also reports what card scopes need (docs/cards.md): playthroughs (membership,
    variants, the timeline head) and the grants of card scripts. A host without it serves no
    card scope: every one is ``MVU_READ_ONLY``."""

    async def membership(self, playthrough_id: str) -> Membership | None:
        """The playthrough as the host has it now with its lease, or None."""
        ...

    async def authorize_card_write(self, grant_id: str, source_identity: Mapping[str, Any]) -> CardGrant | None:
        """The grant ``grant_id`` if the host gave it to that script identity, else None."""
        ...


@runtime_checkable
class IncrementalHost(Host, Protocol):
    """A host that can answer for the new part of a session only (history checked once, P-2)."""

    async def inspect_since(self, session_id: str, after_seq: int) -> SessionTail | None:
        """The session seen from event ``after_seq`` (-1: from the start, the base being the
        header's fingerprint), or None when the host has no such session."""
        ...


AppendsSince = Callable[[], Sequence[SessionEvent] | None]
"""Synchronous: the events appended to a session since the call that gave it (in order), or None
once anything else changed it (an earlier event or the header rewritten, the session replaced)
or more were appended than the host keeps in memory. An event may come without what no lease rule
reads (a message's ``message``, an assembly's evidence): ``StoreHost`` keeps them out of memory."""


@runtime_checkable
class AppendWatchHost(Host, Protocol):
    """A host that can say, synchronously, what was appended to a session since a moment: a
    prompt read's lease then tolerates what request preparation appends (docs/prompt.md)."""

    async def capture_appends(self, session_id: str) -> AppendsSince:
        """From now on: what is appended to the session (``MvuError`` ``MVU_MISSING`` when the
        host has no such session)."""
        ...


def turn_events(*, turn: int, user: str, reply: str, message_id: str,
                reason: str = "completed") -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    """One whole turn as ``(type, data)`` pairs: what a host writes before the request
    (``turn/start``, the user's message) and after it (the reply, ``turn/end``)."""
    said = {"source": {"kind": "user"}, "content": [{"type": "text", "text": user}]}
    answer = {"id": message_id, "content": [{"type": "text", "text": reply}]}
    return ([("turn/start", {"turn": turn}), ("user/message", {"turn": turn, "message": said})],
            [("assistant/message", {"turn": turn, "message": answer}),
             ("turn/end", {"turn": turn, "reason": {"kind": reason}})])


def message_text(event: SessionEvent) -> str:
    """An assistant or user message's text: its text blocks joined with ``\\n``."""
    message = event.data.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(block.get("text", ""))
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text"
    )


def event_turn(event: SessionEvent | None) -> Any:
    """The ``turn`` an event belongs to (any JSON value; callers check it is an int)."""
    return event.data.get("turn") if event is not None else None


def message_id(event: SessionEvent) -> Any:
    """A message event's message id, or None (a ``message`` that is not an object has none)."""
    message = event.data.get("message")
    return message.get("id") if isinstance(message, Mapping) else None


def user_source_kind(event: SessionEvent) -> str | None:
    """A user message's ``source.kind`` (``user``, ``steering``...), on the message or the event."""
    for holder in (event.data.get("message"), event.data):
        source = holder.get("source") if isinstance(holder, Mapping) else None
        kind = source.get("kind") if isinstance(source, Mapping) else None
        if isinstance(kind, str):
            return kind
    return None


def has_tool_call(event: SessionEvent) -> bool:
    message = event.data.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return isinstance(content, list) and any(
        isinstance(block, Mapping) and block.get("type") == "tool-call" for block in content
    )
