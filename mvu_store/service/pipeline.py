"""The turn pipeline: checkpoints and ingest, one reply at a time in stages (DIGEST F-6, P-1 ... P-5).

For each completed reply not yet recorded, for each resource that takes it:

1. **decide**: the usage policy (a manager's decision while one is registered, I-8);
2. **parse** the reply once (:func:`mvu_store.lang.parse_commands`);
3. **process**: the service's :class:`~mvu_store.service.processing.CommandProcessor` may filter
   the parsed commands;
4. **apply** them on a private copy of the head, the card's declaration checking the state after
   every command, on each compare-and-swap attempt (:mod:`mvu_store.service.cas`);
5. **commit** the result under the reply's version key, or save the failed receipt (the state
   unchanged, the reply consumed).

Failures of the store itself (busy, full, closed, a cancelled decision or a broken lease) record
nothing, so the reply stays unprocessed for a retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from typing import Any, NoReturn

from mvu_store.bounded import BoundedCache
from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease, message_text
from mvu_store.jsonvalue import JsonValue, copy_json
from mvu_store.lang import Command, contains_update, parse_commands
from mvu_store.lang.apply import UpdateResult, private_envelope, run_commands
from mvu_store.lang.macros import Names, substitute
from mvu_store.ledger.records import CommitRequest, Head
from mvu_store.processor.port import CardRegistry, CommandProcessor, ProcessorTurn
from mvu_store.processor.repair import repairs
from mvu_store.schema import ValidationMemo
from mvu_store.schema.allowance import Allowance
from mvu_store.service.allocation import Allocation
from mvu_store.service.cas import on_head
from mvu_store.service.catalog import Entry
from mvu_store.service.context import ServiceContext, Signal, check_signal
from mvu_store.service.identity import session_identity
from mvu_store.service.initial import DeclaredSchema
from mvu_store.service.models import CheckpointInfo, IngestReport, TurnOutcome, check_session_id
from mvu_store.service.offload import off_loop
from mvu_store.service.processing import check_current, claims, processed
from mvu_store.service.processing import command_source as declared_source
from mvu_store.service.session_cache import SessionLog
from mvu_store.service.trigger_facts import Facts
from mvu_store.service.turns import Reply
from mvu_store.service.usage import Decision
from mvu_store.service.views import LedgerReads, SessionView

_CURSORS = 4096
# Failures of the store itself: nothing is recorded, the reply stays unprocessed for a retry. A
# full ledger is one of them: going over the budget keeps the previous content *and revision*
# (P-4), which a failed receipt (it claims a revision) would not; so are writers that kept
# moving the head past every compare-and-swap attempt (the reply is valid, only late).
_UNRECORDED = frozenset({Code.STORAGE_BUSY.value, Code.DISPOSED.value, Code.STORAGE_CORRUPT.value,
                         Code.STORAGE_FULL.value, Code.STORAGE_READ_ONLY.value, Code.STORAGE_IO.value,
                         Code.STORAGE_GONE.value,
                         Code.STORAGE_LIMIT.value, Code.USAGE_CANCELLED.value, Code.SESSION_LEASE.value,
                         Code.REVISION_CONFLICT.value, Code.COMMAND_HOOK_DISPOSED.value})


class _Refused(Exception):
    """A check before a commit failed: the refusal is raised as it is, with nothing recorded."""

    def __init__(self, error: MvuError) -> None:
        super().__init__(error.code)
        self.error = error


class Pipeline:
    def __init__(self, ctx: ServiceContext, allocation: Allocation) -> None:
        self._ctx = ctx
        self._allocation = allocation
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
        call's names, over each reply's own (see :meth:`_apply_reply`)."""
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
        # After an explicit (un)selection only the active templates' instances take replies: an
        # unselected card's instance must not move while another card (or none) is selected (I-5).
        selected, templates = await self._allocation.active_templates(session_id, view)
        active = {template["id"] for template in templates} if selected else None
        ended = log.replies
        logs: dict[str, SessionLog | None] = {session_id: log}
        moved: set[str] = set()
        for entry in entries:
            if not entry.takes_replies:
                continue
            if active is not None and entry.is_instance and entry.row is not None \
                    and entry.row.template_id not in active:
                continue
            recorded = await ctx.verifier.check(entry, logs)
            boundary = boundaries.get(entry.id, 0)
            cursor = self._settled.get(entry.id)
            settled = cursor[1] if cursor is not None and cursor[0] == log.generation else 0
            waiting = False  # a reply left for later: nothing after it counts as settled
            for index in range(min(settled, len(ended)), len(ended)):
                reply = ended[index]
                if not reply.after(boundary) or not reply.completed:
                    pass  # never this resource's to apply (boundaries only move forward)
                elif reply.key in recorded:
                    if recorded[reply.key] != reply.fingerprint:
                        raise MvuError(Code.HISTORY_CHANGED, "a recorded reply changed at its durable coordinates",
                                       id=entry.id, message_seq=reply.message.seq)
                elif before is not None and reply.end_seq >= before:
                    waiting = True
                    continue
                else:
                    # An instance's head is the view's until this call moves it: no one else
                    # writes an instance while its session's lock is held.
                    fresh = view is not None and entry.is_instance and entry.id not in moved
                    moved.add(entry.id)
                    outcome, fact_error = await self._apply_reply(entry, reply, signal, lease,
                                                                  reads if fresh else ctx.ledger, log.generation,
                                                                  names or Names(), _user_text(log, reply))
                    report.outcomes.append(outcome)
                    if fact_error is not None:
                        report.fact_errors.append(fact_error)
                if not waiting:
                    self._settled.put(entry.id, (log.generation, index + 1))
        return report

    # -- one reply, in stages -------------------------------------------------------------------

    async def _apply_reply(self, entry: Entry, reply: Reply, signal: Signal | None, lease: Lease | None,
                           reads: LedgerReads, generation: int, names: Names,
                           user_text: str = "") -> tuple[TurnOutcome, str | None]:
        """Apply one reply; ``reads`` has the resource's head (the session view or the ledger),
        ``generation`` is the session log's that ``reply`` is from.

        The reply is read with its names (``names`` given to this call over the session's at the
        reply) put in for its macros before its commands are extracted, and its declaration
        reads the turn's time (``reply.at``) as its clock; the stored reply, its identity and
        fingerprint stay the text the host sent."""
        ctx = self._ctx
        if entry.is_instance and await ctx.ledger.checkpoint(
                entry.id, session_id=str(reply.source["sessionId"]), turn=reply.turn) is None:
            raise MvuError(Code.BASELINE_REQUIRED, "an instance needs the turn's persisted pre-turn checkpoint: "
                                                   "call checkpoint() at the turn's start", id=entry.id,
                           turn=reply.turn, turn_start_seq=reply.start_seq)
        facts = Facts(id=entry.id, eventId=reply.key, sessionId=reply.source["sessionId"], turn=reply.turn,
                      turnKind="human" if reply.human else "unknown", on="assistant_message_committed")
        facts.add("started")
        text, commands, parse_error = await off_loop(lambda: _read(reply.text, names.over(reply.names)))
        # A reply that did not parse is scanned again, and one a card's script may repair is
        # parsed again: up to a megabyte of text each time, so in the worker thread as well.
        has_update = bool(commands) if parse_error is None else await off_loop(lambda: contains_update(text))
        command_source, refused_source = await declared_source(entry, reads)
        if not has_update and parse_error is None and claims(ctx.processor, entry.id, command_source):
            # A card's script may push the repaired operation back.
            has_update = bool(await off_loop(lambda: repairs(text)))
        baseline = await reads.head(entry.id)
        try:
            decision = await self._decide(entry, reply, text, baseline, has_update, signal)
        except MvuError as error:
            return await self._fail(entry, reply, baseline, error, facts, signal, lease)
        run = has_update and decision.enabled
        if run:
            facts.add("triggered", configRevision=decision.config_revision)
        else:
            facts.add("skipped", detail="no-update" if decision.enabled else "usage-policy",
                      configRevision=decision.config_revision)

        # One allowance for all the declaration work of this reply: every command's check, on
        # every compare-and-swap attempt and while a card's script chooses.
        allowance = Allowance("the reply's declaration work")

        def applied(head: Head, chosen: list[Command]) -> UpdateResult:
            # The declaration, at the turn's time; after the first command it parses only what
            # each command changed.
            declared = DeclaredSchema.of(head.variables, reply.at, ValidationMemo(), allowance)
            return run_commands(private_envelope(head.variables), chosen, declared,
                                declared.check if declared is not None else None)

        chosen: list[Command] = []
        turn: ProcessorTurn | None = None
        ahead: UpdateResult | None = None
        seen: Head | None = None  # the head a card's script decided on, if one ran
        scripted = run and claims(ctx.processor, entry.id, command_source)

        async def script_on(head: Head) -> None:
            """A card's script chooses on ``head`` while the loop applies every command to it."""
            nonlocal turn, chosen, ahead, seen
            # The head itself for the card's processors, which only serialise it for the script's own
            # copy; a private copy for any other (C-2).
            variables = head.variables if isinstance(ctx.processor, CardRegistry) else copy_json(head.variables)
            turn = replace(turn, variables=variables) if turn is not None else processor_turn(variables)
            seen = head
            chosen, ahead = await _processed_ahead(ctx.processor, commands, turn, lambda: applied(head, list(commands)))

        def processor_turn(variables: JsonValue) -> ProcessorTurn:
            return ProcessorTurn(resource_id=entry.id, session_id=str(reply.source["sessionId"]), turn=reply.turn,
                                 message_seq=reply.message.seq, text=text, variables=variables, user_text=user_text,
                                 command_source=command_source)

        if run:
            try:
                if parse_error is not None:
                    raise parse_error
                if refused_source is not None:
                    raise MvuError(refused_source, "the card's command processor declaration is refused: "
                                                   "its replies never run unfiltered", id=entry.id)
                if scripted:
                    await script_on(baseline)
                else:
                    # A private copy: a processor filters, it never writes the state (C-2).
                    turn = processor_turn(copy_json(baseline.variables))
                    chosen = await processed(ctx.processor, commands, turn)
            except MvuError as error:
                return await self._fail(entry, reply, baseline, error, facts, signal, lease, decision, turn, seen)
        tried: list[Head] = []

        async def attempt(head: Head) -> Any:
            tried.append(head)
            # No bytes for the head's own variables: the ledger encodes what it did not measure.
            variables, diagnostics, changed, encoded = head.variables, [], False, None
            if scripted and head is not seen:
                # The script's choice stands only on the state it saw (C-4): on a head that moved
                # (a concurrent edit or reply), it chooses again.
                await script_on(head)
            if run:
                kept_all = head is seen and len(chosen) == len(commands) and all(
                    mine is theirs for mine, theirs in zip(chosen, commands, strict=True))
                result = ahead if ahead is not None and kept_all else await off_loop(lambda: applied(head, chosen))
                variables, changed, encoded = result.variables, result.changed, result.encoded
                diagnostics = [dict(item) for item in result.diagnostics]
            ended = facts.copy()
            if changed:
                ended.add("applied", revision=head.revision + 1, detail="state-committed",
                          configRevision=decision.config_revision)
            # 'state-committed' says the state changed: a skipped or no-op reply is
            # recorded (its version keeps the state) but completes without that claim.
            ended.add("completed", revision=head.revision + 1, detail="state-committed" if changed else None,
                      configRevision=decision.config_revision)
            try:
                self._check_decision(decision)
                check_current(ctx.processor, turn)
                ctx.check_before_commit(signal, lease)
            except MvuError as refusal:
                raise _Refused(refusal) from None
            outcome = await ctx.ledger.commit(CommitRequest(
                entry.id, head.revision, "reply", variables, reply.fingerprint, reply.source, key=reply.key,
                meta={"sourceRevision": head.revision, "configRevision": decision.config_revision},
                facts=tuple(ended.records), encoded=encoded))
            return outcome, changed, diagnostics, ended

        try:
            outcome, changed, diagnostics, ended = await on_head(ctx.ledger, entry.id, attempt, head=baseline,
                                                                 doing="this reply was applied")
        except _Refused as refused:
            await self._unrecorded(facts, refused.error)
        except MvuError as error:
            return await self._fail(entry, reply, tried[-1] if tried else baseline, error, facts, signal, lease,
                                    decision, turn, seen)
        if outcome.replayed:
            return TurnOutcome(resource_id=entry.id, turn=reply.turn, message_seq=reply.message.seq,
                               version_key=reply.key, status="replayed", revision=outcome.revision), None
        ctx.verifier.recorded(entry, tried[-1].revision, outcome.revision, key=reply.key, fingerprint=reply.fingerprint,
                              evidence=(str(reply.source["sessionId"]), generation))
        return TurnOutcome(resource_id=entry.id, turn=reply.turn, message_seq=reply.message.seq,
                           version_key=reply.key, status="committed" if run else "skipped",
                           revision=outcome.revision, changed=changed,
                           diagnostics=diagnostics), await ended.committed(outcome, ctx.usage)

    async def _decide(self, entry: Entry, reply: Reply, text: str, baseline: Head, has_update: bool,
                      signal: Signal | None) -> Decision:
        scope: dict[str, JsonValue] = {"authority": "local", "sessionId": reply.source["sessionId"]}
        return await self._ctx.usage.decide(
            "assistant_message_committed", resource_id=entry.id, scope=scope,
            # The original's key, and the Python spelling the issue names, for Python handlers.
            event={**reply.source, "text": text, "containsMvuUpdate": has_update,
                   "contains_mvu_update": has_update},
            variables=baseline.variables, signal=signal)

    def _check_decision(self, decision: Decision) -> None:
        """Synchronously before a commit: the decision still stands and the service is open."""
        self._ctx.usage.check_epoch(decision)
        self._ctx.alive()

    async def _unrecorded(self, facts: Facts, error: MvuError) -> NoReturn:
        """A failure of the store, or a refusal before the commit: nothing but the fact is kept."""
        facts.add("failed", detail=error.code)
        await facts.write(self._ctx.ledger, self._ctx.usage)
        raise error

    async def _fail(self, entry: Entry, reply: Reply, head: Head, error: MvuError, facts: Facts,
                    signal: Signal | None, lease: Lease | None, decision: Decision | None = None,
                    turn: ProcessorTurn | None = None, seen: Head | None = None) -> tuple[TurnOutcome, str | None]:
        """Save the poison receipt: the state unchanged, the reply never applied again (P-3);
        ``turn``: what the processor saw, if it ran (its registration is re-checked too), and
        ``seen`` the head a card's script failed on (a receipt on another state is not its to
        save: the reply is left for a retry)."""
        ctx = self._ctx
        if error.code in _UNRECORDED:
            await self._unrecorded(facts, error)

        async def attempt(current: Head) -> Any:
            try:
                if decision is not None:
                    self._check_decision(decision)  # a receipt also consumes the reply: same rule
                check_current(ctx.processor, turn)
                _check_seen(seen, current)
                ctx.check_before_commit(signal, lease)
            except MvuError as refusal:
                raise _Refused(refusal) from None
            ended = facts.copy()
            ended.add("failed", revision=current.revision + 1, detail=error.code)
            return await ctx.ledger.commit(CommitRequest(
                entry.id, current.revision, "failed", current.variables, reply.fingerprint, reply.source,
                key=reply.key, error=error.code, facts=tuple(ended.records))), ended

        try:
            outcome, ended = await on_head(ctx.ledger, entry.id, attempt, head=head, doing="a receipt was saved")
        except _Refused as refused:
            await self._unrecorded(facts, refused.error)
        if outcome.replayed:
            # A replay commits nothing, so its facts go in a unit of their own.
            ended = facts.copy()
            ended.add("failed", revision=outcome.revision, detail=error.code)
            return TurnOutcome(resource_id=entry.id, turn=reply.turn, message_seq=reply.message.seq,
                               version_key=reply.key, status="replayed", revision=outcome.revision,
                               error=error.code), await ended.write(ctx.ledger, ctx.usage)
        return TurnOutcome(resource_id=entry.id, turn=reply.turn, message_seq=reply.message.seq,
                           version_key=reply.key, status="failed", revision=outcome.revision,
                           error=error.code), await ended.committed(outcome, ctx.usage)


def _user_text(log: SessionLog, reply: Reply) -> str:
    """The text the user wrote in the reply's own turn ('' if none: never an earlier turn's)."""
    event = log.snapshot().event(reply.user_seq) if reply.user_seq is not None else None
    return message_text(event) if event is not None else ""


def _check_seen(seen: Head | None, head: Head) -> None:
    """A card's script decided on ``seen``: what it decided stands only on that state (C-4)."""
    if seen is not None and head.revision != seen.revision:
        raise MvuError(Code.USAGE_CANCELLED, "the state changed while the command processor ran",
                       seen=seen.revision, current=head.revision)


async def _processed_ahead(processor: CommandProcessor, commands: tuple[Command, ...], turn: ProcessorTurn,
                           apply_all: Callable[[], UpdateResult]) -> tuple[list[Command], UpdateResult | None]:
    """A card's script's choice of ``commands`` and, computed in a worker thread while the script
    runs in its engine process, all of them applied to the baseline (None: there were none, or a
    command failed fatally, which is left to the application of what it chose). The script keeps
    every command on most turns; then that result is the turn's, and the script costs the turn
    only the part of its round trip the application did not cover."""
    choosing = asyncio.ensure_future(processed(processor, commands, turn))
    try:
        ahead: UpdateResult | None = None
        if commands:
            # Optional: whatever fails here fails again where the chosen commands are applied, if
            # the script keeps the command that failed.
            with suppress(Exception):
                ahead = await off_loop(apply_all)
        return await choosing, ahead
    except BaseException:
        choosing.cancel()
        raise


def _read(raw: str, names: Names) -> tuple[str, tuple[Command, ...], MvuError | None]:
    """The reply's text with its names, and its commands parsed once; a reply that cannot be
    read carries its refusal."""
    text = raw
    try:
        text = substitute(raw, names)
        return text, tuple(parse_commands(text)), None
    except MvuError as error:
        return text, (), error
