"""The service's copy of the host sessions it works on, extended as the host appends (DIGEST P-2).

Checking recorded replies against durable history used to mean inspecting the whole session and
re-checking every recorded reply on every call, so a chat's total cost grew with the square of
its length. A :class:`SessionLog` keeps what the service already has of a session: its events,
the fingerprint chain over them (:func:`mvu_store.host.chain_fingerprint`), the replies parsed so
far and where the last turn started and ended. :meth:`SessionCache.log` asks the host only for
the events after the last one it has. When the host's fingerprint of that prefix differs from
the log's, an earlier part of the session changed: the log is rebuilt from a full inspection
with a new ``generation``, and everything verified against the old one is verified again
(:mod:`mvu_store.service.verification`).
"""

from __future__ import annotations

import asyncio
import sys
import weakref
from typing import Protocol, runtime_checkable

from mvu_store.bounded import BoundedCache
from mvu_store.host import (
    Host,
    IncrementalHost,
    SessionEvent,
    SessionSnapshot,
    SessionTail,
    chain_link,
    event_text,
    header_fingerprint,
    tail_of,
)
from mvu_store.lang.macros import Names
from mvu_store.ledger import Ledger, SessionRows, SessionRowsQuery
from mvu_store.service.session_replies import Reply, ReplyParser, seed_boundary

# Sessions whose copy is kept, and what their copies may weigh in all (about the memory they
# hold: see SessionLog.weight); the least recently used beyond either is dropped (and rebuilt from
# a full inspection, with a full re-check, if it is used again).
DEFAULT_CAPACITY = 512
DEFAULT_MEMORY_BYTES = 256 * 1024 * 1024
MIN_MEMORY_BYTES = 1024 * 1024
# What an event costs in memory beyond its text, as the log holds it (the decoded event, its
# share of the parsed replies). Measured: a turn of four events held 4.8 KiB with short
# messages and 8.9 KiB with a 4 KiB reply, which the weight puts at 4.5 and 8.6.
EVENT_OVERHEAD_BYTES = 1024


class SessionLog:
    """One session as far as the service has read it. Only :class:`SessionCache` changes it."""

    def __init__(self, tail: SessionTail, generation: int) -> None:
        self.header = tail.header
        self.generation = generation
        self._events: list[SessionEvent] = []
        self._fingerprint = header_fingerprint(tail.header)
        snapshot = SessionSnapshot(tail.header, tail.events)
        self._parser = ReplyParser(tail.header, seed_boundary(snapshot))
        self._replies: list[Reply] = []
        self._last_start = self._last_end = -1
        self._snapshot: SessionSnapshot | None = None
        self._weight = 0
        self._append(tail.events)

    @property
    def last_seq(self) -> int:
        return self._events[-1].seq if self._events else -1

    @property
    def weight(self) -> int:
        """About the memory the log holds: the size of each event's text as Python holds it (a
        decoded event keeps its strings, which the replies parsed from it share) and
        :data:`EVENT_OVERHEAD_BYTES` an event."""
        return self._weight

    @property
    def fingerprint(self) -> str:
        """The chained fingerprint of the whole log (what the host must report for ``last_seq``)."""
        return self._fingerprint

    @property
    def replies(self) -> tuple[Reply, ...]:
        """Every ended turn's candidate reply so far, in event order (see :class:`ReplyParser`)."""
        return tuple(self._replies)

    def snapshot(self) -> SessionSnapshot:
        """The session as an immutable snapshot (the same object until the log grows)."""
        if self._snapshot is None:
            self._snapshot = SessionSnapshot(self.header, tuple(self._events))
        return self._snapshot

    @property
    def names(self) -> Names:
        """The names the session's macros stand for now: its last ``session/names`` event's."""
        return self._parser.names

    def allocation_boundary(self) -> int:
        """Where a state allocated now starts taking replies: after the session's last event, or at
        the start of the turn that is running (an instance first allocated by that turn's
        checkpoint takes its reply)."""
        return self._last_start if self._last_start > self._last_end else self.last_seq + 1

    def turn_running(self) -> bool:
        return self.allocation_boundary() <= self.last_seq

    def extend(self, tail: SessionTail) -> bool:
        """Take the events after the log's end; False when they cannot simply be appended (the
        base or header differs, the numbering goes back, or a new fork boundary re-decides which
        earlier replies are inherited): the caller rebuilds the log."""
        if tail.base_fingerprint != self._fingerprint or tail.header != self.header:
            return False
        if not tail.events:
            return True
        if tail.events[0].seq <= self.last_seq or any(event.type == "session/end-seed" for event in tail.events):
            return False
        self._append(tail.events)
        return True

    def _append(self, events: tuple[SessionEvent, ...]) -> None:
        for event in events:
            self._events.append(event)
            text = event_text(event)
            self._fingerprint = chain_link(self._fingerprint, text)
            self._weight += sys.getsizeof(text) + EVENT_OVERHEAD_BYTES
            if event.type == "turn/start":
                self._last_start = event.seq
            elif event.type == "turn/end":
                self._last_end = event.seq
            reply = self._parser.feed(event)
            if reply is not None:
                self._replies.append(reply)
        self._snapshot = None


@runtime_checkable
class LedgerHost(Protocol):
    """A host whose sessions are in a ledger's own tables (``StoreHost``): that ledger reads a
    session's new events with the session's rows (``Ledger.session_rows_since``), in one round trip."""

    @property
    def ledger(self) -> Ledger: ...


class SessionCache:
    """The :class:`SessionLog` of each session in use, kept in step with the host."""

    def __init__(self, host: Host, *, capacity: int = DEFAULT_CAPACITY,
                 memory_bytes: int = DEFAULT_MEMORY_BYTES) -> None:
        self._host = host
        # Asked once: a runtime protocol check walks the protocol's members every time.
        self._incremental = host if isinstance(host, IncrementalHost) else None
        self._ledger_host = host if isinstance(host, LedgerHost) else None
        # A session heavier than ``memory_bytes`` alone is not kept: each use reads it whole.
        self._logs: BoundedCache[str, SessionLog] = BoundedCache(memory_bytes, weigh=lambda log: log.weight,
                                                                  max_entries=capacity)
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._generation = 0

    @property
    def held(self) -> tuple[tuple[str, ...], int]:
        """The sessions whose copies are kept (the least recently used first), and what they weigh
        in all (:attr:`SessionLog.weight`)."""
        return tuple(self._logs.keys()), self._logs.weight

    async def log(self, session_id: str) -> SessionLog | None:
        """The session as the host has it now (None when the host has no such session)."""
        async with self._lock(session_id):
            cached = self._logs.get(session_id)
            tail = await self._tail(session_id, cached.last_seq if cached is not None else -1)
            return await self._take(session_id, cached, tail)

    async def log_with(self, session_id: str, ledger: Ledger,
                       query: SessionRowsQuery) -> tuple[SessionLog | None, SessionRows]:
        """:meth:`log`, then the session's rows ``query`` asks ``ledger`` for: in one round trip
        when the host keeps its sessions in ``ledger`` (a :class:`LedgerHost`), the session's new
        events read first. The rows are a few lookups by key: once the session's log is kept here
        (so that only its new events are read), the round trip is ``brief``."""
        host = self._ledger_host
        if host is None or host.ledger is not ledger:
            return await self.log(session_id), await ledger.session_rows(query, brief=True)
        async with self._lock(session_id):
            cached = self._logs.get(session_id)
            after_seq = cached.last_seq if cached is not None else -1
            tail, rows = await ledger.session_rows_since(query, after_seq, brief=cached is not None)
            return await self._take(session_id, cached, tail), rows

    def _lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

    async def _take(self, session_id: str, cached: SessionLog | None, tail: SessionTail | None) -> SessionLog | None:
        """The log after the host answered ``tail`` for the events after ``cached`` (under the lock)."""
        if cached is not None and tail is not None and not cached.extend(tail):
            # Something before the log's end changed: start again from the whole session.
            tail = await self._tail(session_id, -1)
            cached = None
        if tail is None:
            self._logs.pop(session_id)
            return None
        if cached is None:
            self._generation += 1
            cached = SessionLog(tail, self._generation)
        self._logs.put(session_id, cached)
        return cached

    async def snapshot(self, session_id: str) -> SessionSnapshot | None:
        log = await self.log(session_id)
        return log.snapshot() if log is not None else None

    async def _tail(self, session_id: str, after_seq: int) -> SessionTail | None:
        if self._incremental is not None:
            return await self._incremental.inspect_since(session_id, after_seq)
        snapshot = await self._host.inspect(session_id)
        return tail_of(snapshot, after_seq) if snapshot is not None else None
