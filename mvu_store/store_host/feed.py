"""Feeding a session: append a host's batch, then run what its turn events call for.

What ``MemoryHost.attach`` does for a Python host, for any host: a new ``turn/start`` freezes the
turn's pre-request baseline (``checkpoint``), a completed ``turn/end`` applies the reply
(``ingest``). The events are durable before either runs, so a refusal of either never undoes
them: it comes back in :class:`FeedResult` ``error``, and sending the batch again (a replay) runs
them again; both are idempotent.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionEvent, turn_events
from mvu_store.lang.macros import Names
from mvu_store.ledger.host_sessions import Appended
from mvu_store.service import CheckpointInfo, IngestReport
from mvu_store.store_host.events import keep_batch
from mvu_store.store_host.host import StoreHost

T = TypeVar("T")


class TurnService(Protocol):
    """What feeding needs of the service (``MvuService`` has it)."""

    async def checkpoint(self, *, session_id: str, turn_start_seq: int,
                         names: Names | None = None) -> list[CheckpointInfo]: ...

    async def ingest(self, *, session_id: str, names: Names | None = None) -> IngestReport: ...


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


def _completes(event: SessionEvent) -> bool:
    return event.type == "turn/end" and event.data.get("reason") == {"kind": "completed"}


async def _late_baselines(call: Callable[[], Awaitable[T]], service: TurnService, session_id: str,
                          names: Names | None) -> T:
    """``call``, freezing a turn's baseline late where it is missing and calling again.

    A turn whose start was stored but whose checkpoint was not frozen (the answer to its batch
    carried an error and the host went on) would refuse every later ingest with
    ``MVU_BASELINE_REQUIRED``, and an append-only session could never be mended. Its reply is
    not applied yet, and neither is anything after it, so the state now is the one the turn
    started from: it is frozen then, and the work goes on."""
    frozen: set[int] = set()
    while True:
        try:
            return await call()
        except MvuError as error:
            seq = error.details.get("turn_start_seq")
            if error.code != Code.BASELINE_REQUIRED or type(seq) is not int or seq in frozen:
                raise
            frozen.add(seq)
            await service.checkpoint(session_id=session_id, turn_start_seq=seq, names=names)


async def feed(service: TurnService, host: StoreHost, session_id: str, events: Any,
               names: Names | None = None) -> FeedResult:
    """Append ``events`` (as the host sends them) to the session, then, in event order, freeze the
    baseline at each new ``turn/start`` and apply the reply at each completed ``turn/end``;
    ``names`` are this call's, over the session's (``MvuService.ingest``)."""
    kept = keep_batch(events)
    batch = [item.event for item in kept]
    result = FeedResult(await host.append_kept(session_id, kept))
    freeze = set(_starts_to_freeze(batch, result.appended))
    try:
        for event in batch:
            if event.seq in freeze:
                result.checkpoints.extend(await _late_baselines(
                    functools.partial(service.checkpoint, session_id=session_id, turn_start_seq=event.seq,
                                      names=names),
                    service, session_id, names))
            elif _completes(event):
                # Each turn's reply is applied (and reported) where the turn ends, before the
                # next turn's checkpoint would apply it unreported.
                report = await _late_baselines(functools.partial(service.ingest, session_id=session_id, names=names),
                                               service, session_id, names)
                result.ingest = report if result.ingest is None else result.ingest.model_copy(update={
                    "outcomes": [*result.ingest.outcomes, *report.outcomes],
                    "fact_errors": [*result.ingest.fact_errors, *report.fact_errors]})
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
