"""The turn pipeline: checkpoints and ingest (DIGEST F-6, P-1 ... P-5).

For each completed reply not yet recorded, for each resource that takes it, in order, the reply
runs in stages (:mod:`~mvu_store.service.turn_stages`: parse, decide, process, apply) and is
committed under its version key on the compare-and-swap loop, or its failed receipt is saved
(:mod:`~mvu_store.service.reply_turn`). This module chooses the replies: those after the last
one settled for the resource, after its activation boundary, not recorded yet, and (for a
checkpoint) ending before the turn it starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mvu_store.bounded import BoundedCache
from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease, message_text
from mvu_store.lang.macros import Names
from mvu_store.service.allocation import Allocation
from mvu_store.service.catalog import Entry
from mvu_store.service.context import PipelineContext, Signal, check_signal
from mvu_store.service.identity import session_identity
from mvu_store.service.models import CheckpointInfo, IngestReport, check_session_id
from mvu_store.service.reply_turn import ReplyCall, ReplyTurn
from mvu_store.service.session_cache import SessionLog
from mvu_store.service.session_replies import Reply
from mvu_store.service.session_view import LedgerReads, SessionView

_CURSORS = 4096


class Pipeline:
    def __init__(self, ctx: PipelineContext, allocation: Allocation) -> None:
        self._ctx = ctx
        self._allocation = allocation
        self._turn = ReplyTurn(ctx)
        # Per resource: (session log generation, how many of its replies are settled for it), so
        # a turn looks only at the replies after the last settled one, not at the whole chat.
        self._settled: BoundedCache[str, tuple[int, int]] = BoundedCache(_CURSORS)

    async def checkpoint(self, session_id: str, turn_start_seq: int, signal: Signal | None,
                         names: Names | None = None) -> list[CheckpointInfo]:
        ctx = self._ctx
        check_signal(signal)
        check_session_id(session_id)
        if isinstance(turn_start_seq, bool) or not isinstance(turn_start_seq, int) or turn_start_seq < 0:
            raise MvuError(Code.BASELINE_REQUIRED, "turn_start_seq must be the event id of a durable turn/start")

        async def work() -> list[CheckpointInfo]:
            lease = await ctx.lease(session_id)
            log, view = await self._turn_rows(session_id)
            session_identity(log.snapshot() if log is not None else None, session_id)
            assert log is not None
            start = log.snapshot().event(turn_start_seq)
            turn = start.data.get("turn") if start is not None else None
            if start is None or start.type != "turn/start" or isinstance(turn, bool) or not isinstance(turn, int):
                raise MvuError(Code.BASELINE_REQUIRED, "a checkpoint needs a durable turn/start event",
                               session_id=session_id, seq=turn_start_seq)
            # The entries are listed once: applying replies never adds or removes a resource.
            entries = await self._allocation.session_entries(session_id, log, allocate=True, view=view)
            await self.ingest_locked(session_id, log, before=turn_start_seq, signal=signal, lease=lease,
                                     entries=entries, view=view, names=names)
            frozen = []
            for entry in entries:
                if not entry.takes_replies:
                    continue
                ctx.check_before_commit(signal, lease)
                record = await ctx.ledger.put_checkpoint(entry.id, session_id=session_id, turn=turn,
                                                         seq=turn_start_seq)
                frozen.append(CheckpointInfo(resource_id=entry.id, session_id=session_id, turn=turn, seq=record.seq,
                                             revision=record.revision, version_key=record.version_key))
            return frozen

        return await ctx.locked(session_id, work)

    async def ingest(self, session_id: str, signal: Signal | None, names: Names | None = None) -> IngestReport:
        ctx = self._ctx
        check_signal(signal)
        check_session_id(session_id)

        async def work() -> IngestReport:
            lease = await ctx.lease(session_id)
            log, view = await self._turn_rows(session_id)
            if log is None:
                raise MvuError(Code.SESSION_IDENTITY, f"the host has no durable session {session_id!r}",
                               session_id=session_id)
            return await self.ingest_locked(session_id, log, signal=signal, lease=lease, view=view, names=names)

        return await ctx.locked(session_id, work)

    async def _turn_rows(self, session_id: str) -> tuple[SessionLog | None, SessionView]:
        """The session's log and everything a turn reads of its rows, in one round trip."""
        ctx = self._ctx
        log, rows = await ctx.sessions.log_with(session_id, ctx.ledger, SessionView.reader(
            session_id, configs=ctx.configs, heads=(), turn=True))
        return log, SessionView(ctx.ledger, rows, ctx.catalog.known_definition)

    async def ingest_locked(self, session_id: str, log: SessionLog | None, *, before: int | None = None,
                            signal: Signal | None = None, lease: Lease | None = None,
                            entries: list[Entry] | None = None, view: SessionView | None = None,
                            names: Names | None = None) -> IngestReport:
        """Ingest the session's unprocessed completed turns (those ending before ``before``),
        holding the session's lock; ``entries`` are the session's, when the caller just listed
        them; ``view``: the session's rows, read under this hold of the lock; ``names``: the
        call's names, over each reply's own (see :meth:`ReplyTurn.apply`)."""
        ctx = self._ctx
        report = IngestReport(session_id=session_id)
        if log is None or log.header.origin == "subagent":
            return report
        if entries is None:
            entries = await self._allocation.session_entries(session_id, log, allocate=True, view=view)
        reads: LedgerReads = view or ctx.ledger
        # Read after the instances are ensured: one allocated just now (here, or by a concurrent
        # selection) has its boundary in this map, so replies before it are never its to apply.
        boundaries = await reads.activations(session_id)
        call = _Ingest(log, before, signal, lease, view, names or Names())
        logs: dict[str, SessionLog | None] = {session_id: log}
        for entry in await self._taking(session_id, entries, view):
            recorded = await ctx.verifier.check(entry, logs)
            await self._ingest_entry(call, entry, recorded, boundaries.get(entry.id, 0), report)
        return report

    async def _taking(self, session_id: str, entries: list[Entry], view: SessionView | None) -> list[Entry]:
        """The entries that take the session's replies now. After an explicit (un)selection only
        the active templates' instances do: an unselected card's instance must not move while
        another card (or none) is selected (I-5)."""
        selected, templates = await self._allocation.active_templates(session_id, view)
        active = {template["id"] for template in templates} if selected else None
        return [entry for entry in entries if entry.takes_replies and not (
            active is not None and entry.is_instance and entry.row is not None and entry.row.template_id not in active)]

    async def _ingest_entry(self, call: _Ingest, entry: Entry, recorded: Mapping[str, str | None], boundary: int,
                            report: IngestReport) -> None:
        """Apply the replies after the last one settled for ``entry``, in order."""
        log = call.log
        ended = log.replies
        cursor = self._settled.get(entry.id)
        settled = cursor[1] if cursor is not None and cursor[0] == log.generation else 0
        # An instance's head is the view's until this call moves it: no one else writes an
        # instance while its session's lock is held.
        reads: LedgerReads = call.view if call.view is not None and entry.is_instance else self._ctx.ledger
        waiting = False  # a reply left for later: nothing after it counts as settled
        for index in range(min(settled, len(ended)), len(ended)):
            reply = ended[index]
            if not _takes(entry, reply, boundary, recorded):
                pass  # never this resource's to apply, or applied already
            elif call.before is not None and reply.end_seq >= call.before:
                waiting = True
                continue
            else:
                outcome, fact_error = await self._turn.apply(entry, reply, ReplyCall(
                    reads, log.generation, call.names, _user_text(log, reply), call.signal, call.lease))
                reads = self._ctx.ledger
                report.outcomes.append(outcome)
                if fact_error is not None:
                    report.fact_errors.append(fact_error)
            if not waiting:
                self._settled.put(entry.id, (log.generation, index + 1))


@dataclass(frozen=True, slots=True)
class _Ingest:
    """What one ingest call applies replies with."""

    log: SessionLog
    before: int | None
    signal: Signal | None
    lease: Lease | None
    view: SessionView | None
    names: Names


def _takes(entry: Entry, reply: Reply, boundary: int, recorded: Mapping[str, str | None]) -> bool:
    """Whether ``reply`` is still to be applied to ``entry``: a completed reply after its
    activation boundary (boundaries only move forward) and not recorded yet; a recorded reply
    must be the one recorded (else ``MVU_HISTORY_CHANGED``)."""
    if not reply.after(boundary) or not reply.completed:
        return False
    if reply.key in recorded:
        if recorded[reply.key] != reply.fingerprint:
            raise MvuError(Code.HISTORY_CHANGED, "a recorded reply changed at its durable coordinates",
                           id=entry.id, message_seq=reply.message.seq)
        return False
    return True


def _user_text(log: SessionLog, reply: Reply) -> str:
    """The text the user wrote in the reply's own turn ('' if none: never an earlier turn's)."""
    event = log.snapshot().event(reply.user_seq) if reply.user_seq is not None else None
    return message_text(event) if event is not None else ""
