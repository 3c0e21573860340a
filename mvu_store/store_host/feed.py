"""Feeding a session: append a host's batch, then run what its turn events call for.

What ``MemoryHost.attach`` does for a Python host, for any host: a new ``turn/start`` freezes the
turn's pre-request baseline (``checkpoint``), a completed ``turn/end`` applies the reply
(``ingest``). The events are durable before either runs, so a refusal of either never undoes
them: it comes back in :class:`FeedResult` ``error``, and sending the batch again (a replay) runs
them again; both are idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionEvent, turn_events
from mvu_store.ledger.host_sessions import Appended
from mvu_store.service.models import CheckpointInfo, IngestReport
from mvu_store.store_host.events import keep_batch
from mvu_store.store_host.host import StoreHost


class TurnService(Protocol):
    """What feeding needs of the service (``MvuService`` has it)."""

    async def checkpoint(self, *, session_id: str, turn_start_seq: int) -> list[CheckpointInfo]: ...

    async def ingest(self, *, session_id: str) -> IngestReport: ...


@dataclass(slots=True)
class FeedResult:
    appended: Appended
    checkpoints: list[CheckpointInfo] = field(default_factory=list)
    ingest: IngestReport | None = None
    error: MvuError | None = None
    """A checkpoint or ingest refusal; the events stay stored."""


def _starts_to_freeze(events: list[SessionEvent], appended: Appended) -> list[int]:
    """The ``turn/start`` seqs whose baseline to freeze: every new one, and a resent one only while
    its turn still runs at the session's end (its first sending may have stopped before the
    checkpoint; a turn that went on has a baseline already, or can no longer be given one)."""
    fresh_from = events[-1].seq - appended.appended + 1
    starts = []
    for index, event in enumerate(events):
        if event.type != "turn/start":
            continue
        if event.seq >= fresh_from:
            starts.append(event.seq)
            continue
        later = events[index + 1:]
        at_end = events[-1].seq == appended.session.last_seq
        if at_end and not any(other.type in ("turn/start", "turn/end") for other in later):
            starts.append(event.seq)
    return starts


async def feed(service: TurnService, host: StoreHost, session_id: str, events: Any) -> FeedResult:
    """Append ``events`` (as the host sends them) to the session, then checkpoint and ingest."""
    kept = keep_batch(events)
    batch = [item.event for item in kept]
    result = FeedResult(await host.append_kept(session_id, kept))
    try:
        for seq in _starts_to_freeze(batch, result.appended):
            result.checkpoints.extend(await service.checkpoint(session_id=session_id, turn_start_seq=seq))
        last_start = max((e.seq for e in batch if e.type == "turn/start"), default=-1)
        if any(e.type == "turn/end" and e.seq > last_start and e.data.get("reason") == {"kind": "completed"}
               for e in batch):
            result.ingest = await service.ingest(session_id=session_id)
    except MvuError as error:
        result.error = error
    return result


async def play_turn(service: TurnService, host: StoreHost, session_id: str, *, turn: int, user: str, reply: str,
                    message_id: str | None = None, reason: str = "completed") -> FeedResult:
    """One whole turn as a host sends it, in two batches: ``turn/start`` + the user's message
    (the baseline is frozen before the request), then the reply + ``turn/end`` (it is applied).
    Returns the second batch's result; for the demo, tests and benchmarks."""
    stored = await host.session(session_id)
    if stored is None:
        raise MvuError(Code.MISSING, f"no session {session_id!r}", session_id=session_id)
    request, answer = turn_events(turn=turn, user=user, reply=reply,
                                  message_id=message_id or f"{session_id}-m{turn}", reason=reason)
    seq = stored.last_seq + 1
    first = await feed(service, host, session_id, [
        {"seq": seq + n, "type": kind, "data": data} for n, (kind, data) in enumerate(request)])
    if first.error is not None:
        raise first.error
    seq += len(request)
    return await feed(service, host, session_id, [
        {"seq": seq + n, "type": kind, "data": data} for n, (kind, data) in enumerate(answer)])
