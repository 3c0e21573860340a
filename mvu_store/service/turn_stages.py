"""A reply's turn for one resource, in stages: parse, decide, process, apply.

Each stage is a function of what the stages before it returned, and returns a frozen record;
none keeps state of its own, so a stage can be tested, and read, alone:

1. :func:`parse` reads the reply's text once (:class:`Parsed`; :func:`repairable` looks again at a
   reply without a command that a card's script may repair);
2. :func:`decide` asks the usage policy whether it runs (a :class:`~mvu_store.service.usage.Decision`);
3. :func:`process` lets the command processor choose among the commands, on one head
   (:class:`ReplyRun` with what was chosen, the head a card's script saw and, computed meanwhile,
   every command applied ahead);
4. :func:`apply` runs what was chosen on a head (an :class:`~mvu_store.lang.apply.UpdateResult`).

:class:`ReplyRun` is the one record of the reply's run that the commit attempts
(:mod:`~mvu_store.service.reply_turn`) and its failure paths read. A stage that fails raises
:class:`TurnFailed` with the run as far as it got, since what a failed receipt may claim depends
on it (the head a card's script failed on, the registration it ran under).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from mvu_store.errors import MvuError
from mvu_store.host import Lease
from mvu_store.jsonvalue import JsonValue, copy_json
from mvu_store.lang import Command, contains_update
from mvu_store.lang.apply import UpdateResult, private_envelope, run_commands
from mvu_store.lang.command_outcomes import filtered_notes, merged_outcomes, update_diagnostics
from mvu_store.lang.commands import scan_commands
from mvu_store.lang.macros import Names, substitute
from mvu_store.lang.outcomes import EMPTY_NOTES, CommandOutcome, ReplyNotes
from mvu_store.ledger.records import Head
from mvu_store.processor.port import CardRegistry, CommandProcessor, ProcessorTurn
from mvu_store.processor.repair import repairs
from mvu_store.schema import ValidationMemo
from mvu_store.schema.allowance import Allowance
from mvu_store.service.catalog import Entry
from mvu_store.service.context import Signal
from mvu_store.service.initial import DeclaredSchema
from mvu_store.service.offload import off_loop
from mvu_store.service.processing import processed
from mvu_store.service.session_replies import Reply
from mvu_store.service.trigger_facts import Facts
from mvu_store.service.usage import Decision, Usage


@dataclass(frozen=True, slots=True)
class Parsed:
    """The reply's text with its names put in, its commands, and whether it attempts an update."""

    text: str
    commands: tuple[Command, ...]
    error: MvuError | None
    """Why the text could not be read (its commands are then none): the reply's refusal."""
    has_update: bool
    notes: ReplyNotes = EMPTY_NOTES
    """What reading noted besides the commands: those it ignores, and near-misses."""


@dataclass(frozen=True, slots=True)
class CommandSource:
    """The command processor declaration the resource's card carries now, or why it was refused."""

    source: str | None = None
    refused: str | None = None


class ReplyRun(NamedTuple):
    """One reply's run for one resource: what the stages found, and what the commit attempts
    and the failure paths read. A stage returns a new record (``_replace``); none is changed in
    place. A named tuple rather than a frozen dataclass: the stages copy it on every turn, and
    a tuple's copy of these 17 fields costs a quarter of ``dataclasses.replace`` (one of the
    costs the HTTP turn benchmark found; docs/performance.md)."""

    entry: Entry
    reply: Reply
    parsed: Parsed
    source: CommandSource
    facts: Facts
    """The facts so far (``started``, then ``triggered`` or ``skipped``); each commit attempt or
    failure path ends a copy of its own."""
    allowance: Allowance
    """One allowance for all the declaration work of this reply: every command's check, on
    every compare-and-swap attempt and while a card's script chooses."""
    signal: Signal | None = None
    lease: Lease | None = None
    user_text: str = ""
    decision: Decision | None = None
    scripted: bool = False
    """A card's script chooses: it chooses again on a head that moved (C-4)."""
    turn: ProcessorTurn | None = None
    """What the processor saw, once it ran (its registration is re-checked before a commit)."""
    chosen: tuple[Command, ...] = ()
    seen: Head | None = None
    """The head a card's script chose on, if one ran."""
    ahead: UpdateResult | None = None
    """Every command applied to :attr:`seen` while the script ran (None: not computed)."""

    @property
    def runs(self) -> bool:
        """The reply attempts an update and the usage policy lets it run."""
        return _runs(self.parsed, self.decision)

    @property
    def session_id(self) -> str:
        return str(self.reply.source["sessionId"])


def _runs(parsed: Parsed, decision: Decision | None) -> bool:
    return parsed.has_update and decision is not None and decision.enabled


class TurnFailed(Exception):
    """A stage failed: ``error`` is the reply's refusal, ``run`` the run as far as it got and
    ``head`` the head it failed on."""

    def __init__(self, run: ReplyRun, head: Head, error: MvuError) -> None:
        super().__init__(error.code)
        self.run, self.head, self.error = run, head, error


# -- 1. parse -------------------------------------------------------------------------------------

def parse(raw: str, names: Names) -> Parsed:
    """The reply ``raw`` read with ``names`` put in for its macros, its commands parsed once. A
    reply that did not parse is scanned again for an update attempt: up to a megabyte of text
    each time, so the caller runs this in a worker thread."""
    text = raw
    try:
        text = substitute(raw, names)
        scanned = scan_commands(text)
    except MvuError as error:
        return Parsed(text, (), error, contains_update(text))
    return Parsed(text, scanned.commands, None, bool(scanned.commands), scanned.notes)


def repairable(parsed: Parsed) -> Parsed:
    """A reply without a command, for a card's script, which may push a repaired operation back:
    it attempts an update if its text has a repair (the text is parsed again: a worker thread's)."""
    if parsed.has_update or parsed.error is not None:
        return parsed
    return replace(parsed, has_update=bool(repairs(parsed.text)))


# -- 2. decide ------------------------------------------------------------------------------------

async def decide(usage: Usage, run: ReplyRun, baseline: Head) -> Decision:
    """The usage policy's decision on the reply, made on ``baseline`` (I-8)."""
    has_update = run.parsed.has_update
    scope: dict[str, JsonValue] = {"authority": "local", "sessionId": run.reply.source["sessionId"]}
    return await usage.decide(
        "assistant_message_committed", resource_id=run.entry.id, scope=scope,
        # The original's key, and the Python spelling the issue names, for Python handlers.
        event={**run.reply.source, "text": run.parsed.text, "containsMvuUpdate": has_update,
               "contains_mvu_update": has_update},
        variables=baseline.variables, signal=run.signal)


def decided(run: ReplyRun, decision: Decision, scripted: bool) -> ReplyRun:
    """``run`` with its decision, its ``triggered`` or ``skipped`` fact, and whether a card's
    script chooses (only for a reply that runs)."""
    # One copy of the run, not one per field set: each copy is on every turn's path.
    facts = run.facts.copy()
    runs = _runs(run.parsed, decision)
    if runs:
        facts.add("triggered", configRevision=decision.config_revision)
    else:
        facts.add("skipped", detail="no-update" if decision.enabled else "usage-policy",
                  configRevision=decision.config_revision)
    return run._replace(decision=decision, facts=facts, scripted=runs and scripted)


# -- 3. process -----------------------------------------------------------------------------------

async def process(processor: CommandProcessor, run: ReplyRun, head: Head) -> ReplyRun:
    """The commands the processor keeps on ``head`` (``TurnFailed`` on a refusal)."""
    try:
        if run.parsed.error is not None:
            raise run.parsed.error
        if run.source.refused is not None:
            raise MvuError(run.source.refused, "the card's command processor declaration is refused: "
                                               "its replies never run unfiltered", id=run.entry.id)
    except MvuError as error:
        raise TurnFailed(run, head, error) from None
    turn, seen = _processor_turn(processor, run, head)
    commands = run.parsed.commands
    try:
        if run.scripted:
            chosen, ahead = await _processed_ahead(processor, commands, turn,
                                                   lambda: apply_commands(run, head, commands))
        else:
            chosen, ahead = await processed(processor, commands, turn), None
    except MvuError as error:
        raise TurnFailed(run._replace(turn=turn, seen=seen), head, error) from None
    # One copy of the run with all this stage found (see decided()).
    return run._replace(turn=turn, seen=seen, chosen=tuple(chosen), ahead=ahead)


def _processor_turn(processor: CommandProcessor, run: ReplyRun, head: Head) -> tuple[ProcessorTurn, Head | None]:
    """``run`` about to be processed on ``head``: the turn the processor sees and the head a
    card's script chooses on (``head``, for one; otherwise the run's own)."""
    # A private copy: a processor filters, it never writes the state (C-2). A card registry
    # only serialises the variables for its script's own copy: it gets the head itself.
    shared = run.scripted and isinstance(processor, CardRegistry)
    variables = head.variables if shared else copy_json(head.variables)
    turn = ProcessorTurn(resource_id=run.entry.id, session_id=run.session_id, turn=run.reply.turn,
                         message_seq=run.reply.message.seq, text=run.parsed.text, variables=variables,
                         user_text=run.user_text, command_source=run.source.source)
    return turn, head if run.scripted else run.seen


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


# -- 4. apply -------------------------------------------------------------------------------------

def applied_ahead(run: ReplyRun, head: Head) -> UpdateResult | None:
    """The result computed ahead, when it is the one of what was chosen on ``head``: the script
    chose on this head and kept every command."""
    commands = run.parsed.commands
    kept_all = head is run.seen and len(run.chosen) == len(commands) and all(
        mine is theirs for mine, theirs in zip(run.chosen, commands, strict=True))
    return run.ahead if kept_all else None


def apply(run: ReplyRun, head: Head) -> UpdateResult:
    """What was chosen, applied to a private copy of ``head`` (CPU work: a worker thread's)."""
    return apply_commands(run, head, run.chosen)


def apply_commands(run: ReplyRun, head: Head, commands: tuple[Command, ...]) -> UpdateResult:
    # The declaration, at the turn's time; after the first command it parses only what each
    # command changed.
    declared = DeclaredSchema.of(head.variables, run.reply.at, ValidationMemo(), run.allowance)
    # What a card's script dropped is reported as ignored, as what reading dropped is.
    notes = filtered_notes(run.parsed.notes, run.parsed.commands, commands)
    return run_commands(private_envelope(head.variables), list(commands), declared,
                        declared.check if declared is not None else None, notes)


@dataclass(frozen=True, slots=True)
class Applied:
    """What a commit attempt stores: the new variables, or the head's own for a reply that does
    not run (then ``encoded`` is None: the ledger encodes what it did not measure)."""

    variables: JsonValue
    changed: bool = False
    encoded: bytes | None = None
    diagnostics: tuple[dict[str, Any], ...] = ()
    """The version's ``update_diagnostics``: every command that did not apply, and near-misses."""
    outcomes: tuple[CommandOutcome, ...] = ()
    notes: ReplyNotes = EMPTY_NOTES

    @property
    def ignored_total(self) -> int:
        """Commands ignored: those reading dropped (counted beyond the cap), and those that ran
        without a change."""
        ran = sum(1 for outcome in self.outcomes if outcome.kind == "ignored" and outcome.ran_index is not None)
        return self.notes.ignored_total + ran

    @staticmethod
    def of(result: UpdateResult) -> Applied:
        listed = result.variables.get("update_diagnostics", [])
        return Applied(result.variables, result.changed, result.encoded, tuple(dict(item) for item in listed),
                       result.outcomes, result.notes)

    @staticmethod
    def unchanged(variables: JsonValue, notes: ReplyNotes = EMPTY_NOTES) -> Applied:
        """``variables`` kept by a version that applies nothing: its own diagnostics (what reading
        the reply noted) and no changes, never those of the version before (a read of it shows
        what this turn did)."""
        outcomes = merged_outcomes([], notes)
        listed = update_diagnostics(outcomes, notes)
        if not isinstance(variables, dict):
            return Applied(variables, outcomes=outcomes, notes=notes)
        kept = {**variables, "delta_data": {"changes": []}, "update_diagnostics": listed}
        return Applied(kept, diagnostics=tuple(listed), outcomes=outcomes, notes=notes)


async def applied(run: ReplyRun, head: Head) -> Applied:
    """The apply stage on ``head``, for one commit attempt."""
    if not run.runs:
        return Applied.unchanged(head.variables, run.parsed.notes)
    result = applied_ahead(run, head)
    return Applied.of(result if result is not None else await off_loop(lambda: apply(run, head)))


def ended_facts(run: ReplyRun, head: Head, applied: Applied) -> Facts:
    """The reply's facts as a commit of ``applied`` on ``head`` ends them; ``completed`` carries
    what became of the reply's commands (:func:`outcome_summary`)."""
    assert run.decision is not None
    config_revision = run.decision.config_revision
    ended = run.facts.copy()
    if applied.changed:
        ended.add("applied", revision=head.revision + 1, detail="state-committed", configRevision=config_revision)
    # 'state-committed' says the state changed: a skipped or no-op reply is recorded (its
    # version keeps the state) but completes without that claim.
    ended.add("completed", revision=head.revision + 1, detail="state-committed" if applied.changed else None,
              configRevision=config_revision, **outcome_summary(applied))
    return ended


MAX_FACT_OUTCOMES = 8
"""Commands that did not apply a ``completed`` fact names (the first ones, in text order)."""
MAX_FACT_PATH = 120
"""Characters of a path a fact keeps."""


def outcome_summary(applied: Applied) -> dict[str, JsonValue]:
    """What a fact may say of a reply's commands (A-4, A-5: no value, no chat text): how many
    applied, were refused, ignored, or only looked like commands, and the first
    :data:`MAX_FACT_OUTCOMES` that did not apply, each by kind, path and code (or reason)."""
    counts = {"applied": 0, "refused": 0, "ignored": 0}
    listed: list[JsonValue] = []
    for outcome in applied.outcomes:
        counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
        if outcome.kind in ("refused", "ignored") and len(listed) < MAX_FACT_OUTCOMES:
            item: dict[str, JsonValue] = {"kind": outcome.kind, "path": (outcome.path or "")[:MAX_FACT_PATH]}
            if outcome.code is not None:
                item["code"] = outcome.code
            if outcome.reason is not None:
                item["reason"] = outcome.reason
            listed.append(item)
    summary: dict[str, JsonValue] = {
        "commandsApplied": counts["applied"], "commandsRefused": counts["refused"],
        "commandsIgnored": applied.ignored_total, "commandsPossible": applied.notes.possible_total}
    if listed:
        summary["outcomes"] = listed
    return summary


def applied_commands(applied: Applied) -> dict[str, JsonValue]:
    """What a reply version's ``meta`` keeps of its commands: the applied ones (without their
    values, which its ``delta_data`` holds); its ``update_diagnostics`` hold the others, so its
    history entry lists every command (:func:`~mvu_store.service.reads.history_commands`)."""
    listed: list[JsonValue] = [outcome.to_json(values=False) for outcome in applied.outcomes
                               if outcome.kind == "applied"]
    return {"applied": listed} if listed else {}
