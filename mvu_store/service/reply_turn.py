"""One reply applied to one resource: its stages, then its commit or its failed receipt.

The stages (:mod:`~mvu_store.service.turn_stages`) run once on the baseline; each attempt of the
compare-and-swap loop (:mod:`~mvu_store.service.commit_loop`) applies what was chosen to the
head it is given (a card's script chooses again on a head that moved, C-4), checks that the
decision, the processor's registration, the caller and the session still stand, and commits
under the reply's version key. A refusal of the reply saves its failed receipt on the same loop:
the state unchanged, the reply consumed (P-3). Failures of the store itself (busy, full, closed,
a cancelled decision or a broken lease) record nothing, so the reply stays unprocessed for a retry.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NoReturn

from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease
from mvu_store.lang.macros import Names
from mvu_store.ledger import CommitOutcome
from mvu_store.ledger.records import CommitRequest, Head
from mvu_store.schema.allowance import Allowance
from mvu_store.service import turn_stages as stages
from mvu_store.service.catalog import Entry
from mvu_store.service.change_rows import failure_rows, reply_rows
from mvu_store.service.commit_loop import Refused, on_head, refusing
from mvu_store.service.context import Signal, TurnContext
from mvu_store.service.failures import FAILURE, failure_diagnostic, with_failure
from mvu_store.service.models import TurnOutcome
from mvu_store.service.offload import off_loop
from mvu_store.service.processing import check_current, claims, command_source
from mvu_store.service.session_replies import Reply
from mvu_store.service.session_view import LedgerReads
from mvu_store.service.trigger_facts import Facts
from mvu_store.service.turn_stages import Applied, CommandSource, ReplyRun, TurnFailed

# Failures of the store itself: nothing is recorded, the reply stays unprocessed for a retry. A
# full ledger is one of them: going over the budget keeps the previous content *and revision*
# (P-4), which a failed receipt (it claims a revision) would not; so are writers that kept
# moving the head past every compare-and-swap attempt (the reply is valid, only late).
_UNRECORDED = frozenset({Code.STORAGE_BUSY.value, Code.DISPOSED.value, Code.STORAGE_CORRUPT.value,
                         Code.STORAGE_FULL.value, Code.STORAGE_READ_ONLY.value, Code.STORAGE_IO.value,
                         Code.STORAGE_GONE.value,
                         Code.STORAGE_LIMIT.value, Code.USAGE_CANCELLED.value, Code.SESSION_LEASE.value,
                         Code.REVISION_CONFLICT.value, Code.COMMAND_HOOK_DISPOSED.value})


@dataclass(frozen=True, slots=True)
class ReplyCall:
    """What the ingest call gives each of its replies."""

    reads: LedgerReads
    """Where the resource's head is read (the session view, or the ledger)."""
    generation: int
    """The session log's generation the reply is from (the verifier's evidence)."""
    names: Names
    """The call's names, over the reply's own."""
    user_text: str = ""
    signal: Signal | None = None
    lease: Lease | None = None


@dataclass(frozen=True, slots=True)
class Committed:
    """A commit attempt that did not conflict: the run and head it was made on, and what it stored."""

    run: ReplyRun
    head: Head
    outcome: CommitOutcome
    applied: Applied
    facts: Facts


class ReplyTurn:
    def __init__(self, ctx: TurnContext) -> None:
        self._ctx = ctx

    async def apply(self, entry: Entry, reply: Reply, call: ReplyCall) -> tuple[TurnOutcome, str | None]:
        """Apply one reply; the reply's text is read with ``call.names`` (over the session's at the
        reply) put in for its macros before its commands are extracted, and its declaration reads
        the turn's time (``reply.at``) as its clock; the stored reply, its identity and
        fingerprint stay the text the host sent."""
        ctx = self._ctx
        if entry.is_instance and await ctx.ledger.checkpoint(
                entry.id, session_id=str(reply.source["sessionId"]), turn=reply.turn) is None:
            raise MvuError(Code.BASELINE_REQUIRED, "an instance needs the turn's persisted pre-turn checkpoint: "
                                                   "call checkpoint() at the turn's start", id=entry.id,
                           turn=reply.turn, turn_start_seq=reply.start_seq)
        run = await self._parsed(entry, reply, call)
        baseline = await call.reads.head(entry.id)
        try:
            decision = await stages.decide(ctx.usage, run, baseline)
        except MvuError as error:
            return await self._fail(run, baseline, error)
        run = stages.decided(run, decision, claims(ctx.processor, entry.id, run.source.source))
        try:
            if run.runs:
                run = await stages.process(ctx.processor, run, baseline)
            committed = await on_head(ctx.ledger, entry.id, partial(self._attempt, run), head=baseline,
                                      doing="this reply was applied")
        except TurnFailed as failed:
            return await self._fail(failed.run, failed.head, failed.error)
        except Refused as refused:
            await self._unrecorded(run, refused.error)
        except MvuError as error:  # the loop gave up, or a head could not be read
            return await self._fail(run, baseline, error)
        return await self._outcome(committed, call.generation)

    async def _parsed(self, entry: Entry, reply: Reply, call: ReplyCall) -> ReplyRun:
        """The run started: its ``started`` fact, the card's command source and the parse stage."""
        facts = Facts(id=entry.id, eventId=reply.key, sessionId=reply.source["sessionId"], turn=reply.turn,
                      turnKind="human" if reply.human else "unknown", on="assistant_message_committed")
        facts.add("started")
        names = call.names.over(reply.names)
        parsed = await off_loop(lambda: stages.parse(reply.text, names))
        source = CommandSource(*await command_source(entry, call.reads))
        if not parsed.has_update and parsed.error is None and claims(self._ctx.processor, entry.id, source.source):
            # A card's script may push a repaired operation back: a reply without a command may still run.
            parsed = await off_loop(lambda: stages.repairable(parsed))
        return ReplyRun(entry, reply, parsed, source, facts, Allowance("the reply's declaration work"),
                        signal=call.signal, lease=call.lease, user_text=call.user_text)

    async def _attempt(self, run: ReplyRun, head: Head) -> Committed:
        """One compare-and-swap attempt of the reply's commit on ``head``."""
        if run.scripted and head is not run.seen:
            # The script's choice stands only on the state it saw (C-4): on a head that moved (a
            # concurrent edit or reply), it chooses again.
            run = await stages.process(self._ctx.processor, run, head)
        try:
            applied = await stages.applied(run, head)
        except MvuError as error:
            raise TurnFailed(run, head, error) from None
        ended = stages.ended_facts(run, head, applied)
        self._check(run, head)
        assert run.decision is not None
        try:
            outcome = await self._ctx.ledger.commit(CommitRequest(
                run.entry.id, head.revision, "reply", applied.variables, run.reply.fingerprint, run.reply.source,
                key=run.reply.key, meta={"sourceRevision": head.revision,
                                         "configRevision": run.decision.config_revision,
                                         **stages.applied_commands(applied)},
                facts=tuple(ended.records), encoded=applied.encoded,
                changes=reply_rows(applied.outcomes, run.reply.turn, ignored_total=applied.ignored_total)))
        except MvuError as error:
            if error.code == Code.REVISION_CONFLICT:
                raise  # the loop's: the next attempt is on the new head
            raise TurnFailed(run, head, error) from None
        return Committed(run, head, outcome, applied, ended)

    def _check(self, run: ReplyRun, head: Head) -> None:
        """Synchronously before a commit on ``head`` (a version or a receipt: both consume the
        reply): the decision still stands, the service is open, the processor's registration
        is current, a card's script chose on this head, the caller and the session still want it."""
        ctx = self._ctx

        def checks() -> None:
            if run.decision is not None:
                ctx.usage.check_epoch(run.decision)
                ctx.alive()
            check_current(ctx.processor, run.turn)
            _check_seen(run.seen, head)
            ctx.check_before_commit(run.signal, run.lease)

        refusing(checks)

    async def _outcome(self, committed: Committed, generation: int) -> tuple[TurnOutcome, str | None]:
        run, outcome = committed.run, committed.outcome
        reply = run.reply
        if outcome.replayed:
            return TurnOutcome(resource_id=run.entry.id, turn=reply.turn, message_seq=reply.message.seq,
                               version_key=reply.key, status="replayed", revision=outcome.revision), None
        self._ctx.verifier.recorded(run.entry, committed.head.revision, outcome.revision, key=reply.key,
                                    fingerprint=reply.fingerprint, evidence=(run.session_id, generation))
        applied = committed.applied
        return TurnOutcome(resource_id=run.entry.id, turn=reply.turn, message_seq=reply.message.seq,
                           version_key=reply.key, status="committed" if run.runs else "skipped",
                           revision=outcome.revision, changed=applied.changed,
                           reason=None if run.runs else skip_reason(run),
                           diagnostics=list(applied.diagnostics),
                           commands=[item.to_json() for item in applied.outcomes],
                           ignored_total=applied.ignored_total,
                           possible_total=applied.notes.possible_total), await committed.facts.committed(
                               outcome, self._ctx.usage)

    # -- failure paths ----------------------------------------------------------------------------

    async def _unrecorded(self, run: ReplyRun, error: MvuError) -> NoReturn:
        """A failure of the store, or a refusal before the commit: nothing but the fact is kept."""
        facts = run.facts.copy()
        facts.add("failed", detail=error.code)
        await facts.write(self._ctx.ledger, self._ctx.usage)
        raise error

    async def _fail(self, run: ReplyRun, head: Head, error: MvuError) -> tuple[TurnOutcome, str | None]:
        """Save the poison receipt: the state unchanged, the reply never applied again (P-3).
        What ``run`` got to is re-checked: the processor's registration, if it ran, and the head
        a card's script failed on (a receipt on another state is not its to save: the reply is
        left for a retry)."""
        ctx = self._ctx
        if error.code in _UNRECORDED:
            await self._unrecorded(run, error)
        try:
            outcome, ended = await on_head(ctx.ledger, run.entry.id, partial(self._receipt, run, error), head=head,
                                           doing="a receipt was saved")
        except Refused as refused:
            await self._unrecorded(run, refused.error)
        reply = run.reply
        if outcome.replayed:
            # A replay commits nothing, so its facts go in a unit of their own.
            ended = run.facts.copy()
            ended.add("failed", revision=outcome.revision, detail=error.code)
            return TurnOutcome(resource_id=run.entry.id, turn=reply.turn, message_seq=reply.message.seq,
                               version_key=reply.key, status="replayed", revision=outcome.revision,
                               error=error.code, message=error.message), await ended.write(ctx.ledger, ctx.usage)
        return TurnOutcome(resource_id=run.entry.id, turn=reply.turn, message_seq=reply.message.seq,
                           version_key=reply.key, status="failed", revision=outcome.revision,
                           error=error.code, message=error.message), await ended.committed(outcome, ctx.usage)

    async def _receipt(self, run: ReplyRun, error: MvuError, current: Head) -> tuple[CommitOutcome, Facts]:
        """One compare-and-swap attempt of the failed receipt on ``current``."""
        self._check(run, current)
        ended = run.facts.copy()
        ended.add("failed", revision=current.revision + 1, detail=error.code)
        reply = run.reply
        diagnostic = failure_diagnostic(error)
        return await self._ctx.ledger.commit(CommitRequest(
            # The version keeps the state, with no changes and only its own diagnostic: the
            # failure (a current read shows it too: service/failures.py).
            run.entry.id, current.revision, "failed", with_failure(current.variables, diagnostic),
            reply.fingerprint, reply.source, key=reply.key, error=error.code, meta={FAILURE: diagnostic},
            facts=tuple(ended.records), changes=failure_rows(error, reply.turn))), ended


def skip_reason(run: ReplyRun) -> str:
    """Why a reply that does not run applied nothing, in words."""
    if run.decision is not None and not run.decision.enabled:
        return "the usage policy did not let this reply run"
    notes = run.parsed.notes
    if notes.ignored:
        return f"no command of the reply runs: {notes.ignored[0].message}"
    if notes.possible:
        return f"the reply has no command; {notes.possible[0].command!r} is {notes.possible[0].message}"
    return "the reply has no update command"


def _check_seen(seen: Head | None, head: Head) -> None:
    """A card's script decided on ``seen``: what it decided stands only on that state (C-4)."""
    if seen is not None and head.revision != seen.revision:
        raise MvuError(Code.USAGE_CANCELLED, "the state changed while the command processor ran",
                       seen=seen.revision, current=head.revision)
