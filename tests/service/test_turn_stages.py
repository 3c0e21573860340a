"""A reply's turn, one stage at a time (mvu_store.service.turn_stages), and the commit loop
(mvu_store.service.commit_loop): each stage on its own inputs, no ledger and no service."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease, SessionEvent
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang import Command
from mvu_store.lang.macros import Names
from mvu_store.ledger.records import Head
from mvu_store.processor.port import CardRegistry, ProcessorTurn, Registered
from mvu_store.schema.allowance import Allowance
from mvu_store.service import turn_stages as stages
from mvu_store.service.catalog import Entry
from mvu_store.service.commit_loop import CAS_ATTEMPTS, Refused, on_head, refusing
from mvu_store.service.processing import PassThrough
from mvu_store.service.session_replies import Reply
from mvu_store.service.trigger_facts import Facts
from mvu_store.service.turn_stages import CommandSource, ReplyRun, TurnFailed
from mvu_store.service.usage import Usage

HEAD = Head("r", 3, "k-3", {"stat_data": {"hp": 10, "gold": 1}})
UNREPAIRED = '<JSONPatch>[{"op":"replace","path":"/hp":{"n":1}}]</JSONPatch>'


def reply(text: str) -> Reply:
    return Reply(turn=1, start_seq=0, end_seq=3, reason="completed", message=SessionEvent(2, "message", {}),
                 text=text, source={"sessionId": "s1", "messageId": "s1-m1", "turn": 1}, key="k-1",
                 fingerprint="f", human=True)


def run_of(text: str, *, source: CommandSource | None = None) -> ReplyRun:
    facts = Facts(id="r", eventId="k-1")
    facts.add("started")
    return ReplyRun(Entry("r", {}), reply(text), stages.parse(text, Names()),
                    source or CommandSource(), facts, Allowance("a test's declaration work"))


async def decided(text: str, *, scripted: bool = False, **kwargs: Any) -> ReplyRun:
    run = run_of(text, **kwargs)
    return stages.decided(run, await stages.decide(Usage(), run, HEAD), scripted)


def phases(facts: Facts) -> list[tuple[Any, Any]]:
    return [(record["phase"], record.get("detail")) for record in facts.records]


class Cards:
    """A card registry (the port's capability): it keeps the commands at the indexes given."""

    def __init__(self, keep: Sequence[int] | None = None, fail: bool = False) -> None:
        self.keep, self.fail = keep, fail
        self.seen: list[ProcessorTurn] = []

    async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
        self.seen.append(turn)
        if self.fail:
            raise MvuError(Code.COMMAND_HOOK_EXECUTION, "the script threw")
        return commands if self.keep is None else [commands[index] for index in self.keep]

    def claims(self, resource_id: str, command_source: str | None) -> bool:
        return True

    def check_current(self, turn: ProcessorTurn) -> None:
        return None

    def receipt(self, resource_id: str) -> dict[str, JsonValue] | None:
        return None

    async def registered(self, resource_id: str, command_source: str | None) -> dict[str, JsonValue] | None:
        return None

    async def register(self, resource_id: str, source: str, *, lease: Lease | None = None) -> Registered:
        raise AssertionError("not registered here")

    def dispose(self) -> None:
        return None


# -- parse ----------------------------------------------------------------------------------------

def test_parse_reads_the_commands_with_the_names_put_in() -> None:
    parsed = stages.parse("{{user}} wins: _.set('hp', 5);", Names(user="Ann"))
    assert parsed.text == "Ann wins: _.set('hp', 5);"
    assert [command.type for command in parsed.commands] == ["set"] and parsed.has_update
    assert parsed.error is None


def test_parse_keeps_the_refusal_of_a_reply_that_does_not_read_and_still_sees_its_update() -> None:
    parsed = stages.parse("_.set('__proto__.hp', 1);", Names())
    assert parsed.error is not None and parsed.error.code == Code.PATH
    assert parsed.commands == () and parsed.has_update


def test_a_repairable_patch_is_an_update_only_once_checked_for_a_card_script() -> None:
    parsed = stages.parse(UNREPAIRED, Names())
    assert parsed.commands == () and parsed.error is None and not parsed.has_update
    repaired = stages.repairable(parsed)
    assert repaired.has_update and repaired.commands == () and repaired.text == parsed.text
    words = stages.parse("just words", Names())
    assert stages.repairable(words) == words  # nothing to repair: still no update
    refused = stages.parse("_.set('__proto__.hp', 1);", Names())
    assert stages.repairable(refused) is refused  # a refusal is never repaired


# -- decide ---------------------------------------------------------------------------------------

async def test_a_decided_run_that_runs_is_triggered_and_scripted_when_a_card_claims_it() -> None:
    run = await decided("_.set('hp', 5);", scripted=True)
    assert run.runs and run.scripted
    assert phases(run.facts) == [("started", None), ("triggered", None)]


async def test_a_reply_without_an_update_is_skipped_and_never_scripted() -> None:
    before = run_of("just words")
    run = stages.decided(before, await stages.decide(Usage(), before, HEAD), True)
    assert not run.runs and not run.scripted
    assert phases(run.facts) == [("started", None), ("skipped", "no-update")]
    assert phases(before.facts) == [("started", None)]  # a stage returns a new record


async def test_a_refusing_policy_skips_the_reply_and_the_handler_is_asked_on_the_baseline() -> None:
    usage = Usage()
    asked: list[dict[str, Any]] = []
    usage.register(lambda event: asked.append(event) or {"enabled": False, "configRevision": 7})
    run = run_of("_.set('hp', 5);")
    decision = await stages.decide(usage, run, HEAD)
    run = stages.decided(run, decision, True)
    assert not run.runs and not run.scripted
    assert phases(run.facts)[-1] == ("skipped", "usage-policy") and run.facts.records[-1]["configRevision"] == 7
    [event] = asked
    assert event["variables"] == HEAD.variables and event["event"]["containsMvuUpdate"] is True


# -- process --------------------------------------------------------------------------------------

async def test_process_refuses_a_reply_that_did_not_parse_before_any_processor_runs() -> None:
    cards = Cards()
    run = await decided("_.set('__proto__.hp', 1);", scripted=True)
    with pytest.raises(TurnFailed) as failed:
        await stages.process(cards, run, HEAD)
    assert failed.value.error.code == Code.PATH and failed.value.run.turn is None
    assert failed.value.head is HEAD and cards.seen == []


async def test_process_refuses_a_refused_card_declaration() -> None:
    run = await decided("_.set('hp', 5);", source=CommandSource(None, Code.COMMAND_HOOK_DECLARATION.value))
    with pytest.raises(TurnFailed) as failed:
        await stages.process(PassThrough(), run, HEAD)
    assert failed.value.error.code == Code.COMMAND_HOOK_DECLARATION


async def test_a_plain_processor_gets_a_private_copy_and_no_head_is_marked_seen() -> None:
    run = await stages.process(PassThrough(), await decided("_.set('hp', 5); _.set('gold', 2);"), HEAD)
    assert run.turn is not None and run.turn.variables == HEAD.variables
    assert run.turn.variables is not HEAD.variables
    assert len(run.chosen) == 2 and run.seen is None and run.ahead is None


async def test_a_card_script_gets_the_head_itself_and_every_command_is_applied_ahead() -> None:
    cards = Cards()
    run = await stages.process(cards, await decided("_.set('hp', 5);", scripted=True), HEAD)
    [turn] = cards.seen
    assert turn.variables is HEAD.variables and turn.text == "_.set('hp', 5);" and turn.session_id == "s1"
    assert run.seen is HEAD and run.ahead is not None and run.ahead.variables["stat_data"]["hp"] == 5
    assert stages.applied_ahead(run, HEAD) is run.ahead


async def test_a_script_that_fails_leaves_the_run_with_the_turn_and_head_it_failed_on() -> None:
    run = await decided("_.set('hp', 5);", scripted=True)
    with pytest.raises(TurnFailed) as failed:
        await stages.process(Cards(fail=True), run, HEAD)
    assert failed.value.error.code == Code.COMMAND_HOOK_EXECUTION
    assert failed.value.run.seen is HEAD and failed.value.run.turn is not None


# -- apply ----------------------------------------------------------------------------------------

async def test_the_result_ahead_is_used_only_on_the_head_seen_with_every_command_kept() -> None:
    run = await stages.process(Cards(), await decided("_.set('hp', 5); _.set('gold', 2);", scripted=True), HEAD)
    moved = replace(HEAD, revision=4)
    assert stages.applied_ahead(run, HEAD) is run.ahead
    assert stages.applied_ahead(run, moved) is None
    filtered = await stages.process(Cards(keep=[1]), run, HEAD)
    assert stages.applied_ahead(filtered, HEAD) is None
    applied = await stages.applied(filtered, HEAD)
    assert isinstance(applied.variables, dict) and applied.variables["stat_data"] == {"hp": 10, "gold": 2}
    assert applied.changed and applied.encoded is not None


async def test_a_reply_that_does_not_run_stores_the_heads_state_with_no_changes_of_its_own() -> None:
    stale = Head("r", 3, "k-3", {"stat_data": {"hp": 10}, "delta_data": {"changes": [{"op": "set", "path": "/hp"}]},
                                 "update_diagnostics": [{"code": "MVU_SCHEMA"}]})
    run = await decided("just words")
    applied = await stages.applied(run, stale)
    assert applied.variables == {"stat_data": {"hp": 10}, "delta_data": {"changes": []}, "update_diagnostics": []}
    assert not applied.changed and applied.encoded is None and applied.outcomes == ()
    ended = stages.ended_facts(run, HEAD, applied)
    assert phases(ended)[-1] == ("completed", None) and ended.records[-1]["revision"] == HEAD.revision + 1


async def test_a_change_ends_with_applied_and_completed_claiming_the_committed_state() -> None:
    run = await stages.process(PassThrough(), await decided("_.set('hp', 5);"), HEAD)
    applied = await stages.applied(run, HEAD)
    assert applied.changed and applied.diagnostics == ()
    ended = stages.ended_facts(run, HEAD, applied)
    assert phases(ended)[-2:] == [("applied", "state-committed"), ("completed", "state-committed")]
    assert phases(run.facts) == [("started", None), ("triggered", None)]  # the run's facts stay as they were


async def test_a_fatal_command_fails_the_apply_stage() -> None:
    run = await stages.process(PassThrough(), await decided("_.set('hp', 5);"), HEAD)
    with pytest.raises(MvuError) as refused:
        await stages.applied(run, replace(HEAD, variables={"stat_data": 1}))
    assert refused.value.code == Code.JSON


# -- the commit loop -------------------------------------------------------------------------------

class Heads:
    """A ledger's head reads only: each read is a newer head."""

    def __init__(self) -> None:
        self.reads = 0

    async def head(self, resource_id: str) -> Head:
        self.reads += 1
        return replace(HEAD, revision=HEAD.revision + self.reads)


async def test_the_loop_retries_a_conflict_on_a_newer_head_and_returns_the_first_that_holds() -> None:
    ledger, tried = Heads(), []

    async def attempt(head: Head) -> int:
        tried.append(head.revision)
        if len(tried) < 3:
            raise MvuError(Code.REVISION_CONFLICT, "moved")
        return head.revision

    assert await on_head(ledger, "r", attempt, head=HEAD) == HEAD.revision + 2  # type: ignore[arg-type]
    assert tried == [3, 4, 5]


async def test_the_loop_gives_up_after_its_attempts_and_passes_other_errors_at_once() -> None:
    ledger = Heads()

    async def conflicting(head: Head) -> None:
        raise MvuError(Code.REVISION_CONFLICT, "moved")

    with pytest.raises(MvuError) as gave_up:
        await on_head(ledger, "r", conflicting, head=HEAD, doing="testing")  # type: ignore[arg-type]
    assert gave_up.value.code == Code.REVISION_CONFLICT and "while testing" in gave_up.value.message
    assert ledger.reads == CAS_ATTEMPTS - 1

    async def busy(head: Head) -> None:
        raise MvuError(Code.STORAGE_BUSY, "busy")

    with pytest.raises(MvuError) as failed:
        await on_head(Heads(), "r", busy, head=HEAD)  # type: ignore[arg-type]
    assert failed.value.code == Code.STORAGE_BUSY


def test_a_refusal_before_the_commit_ends_the_loop_as_refused() -> None:
    def cancelled() -> None:
        raise MvuError(Code.USAGE_CANCELLED, "moved on")

    with pytest.raises(Refused) as refused:
        refusing(cancelled)
    assert refused.value.error.code == Code.USAGE_CANCELLED
    refusing(lambda: None)


def test_the_card_double_is_a_card_registry() -> None:
    assert isinstance(Cards(), CardRegistry) and not isinstance(PassThrough(), CardRegistry)
