"""A card's command processor inside the service: registration, the turn pipeline, receipts,
revocation and replay. On SQLite and PostgreSQL (the ``ledger`` fixture)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.lang import parse_commands
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.processor import engine
from mvu_store.processor.declaration import Declaration
from mvu_store.processor.registry import CardProcessors
from mvu_store.service import MvuService
from tests.processor.support import (
    PASS,
    RESOURCE,
    SESSION,
    Interposed,
    helper,
    hp,
    make_service,
    patch,
    processor_turn,
    revision,
)

FILTER_ALL = helper("commands.length = 0;")
THROWS = helper("throw new Error('reject');")


async def phases(service: MvuService, phase: str) -> int:
    facts = await service.facts(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    return sum(1 for fact in facts if fact.get("phase") == phase)


async def turn(host: MemoryHost, number: int, reply: str, user: str = "go") -> None:
    await host.turn(SESSION, turn=number, user=user, reply=reply)


@pytest.fixture
def host() -> MemoryHost:
    return MemoryHost()


async def test_a_pass_through_script_commits_and_its_receipt_is_on_the_record(ledger: Ledger,
                                                                             host: MemoryHost) -> None:
    service = make_service(ledger, host)
    registered = await service.register_command_processor(id=RESOURCE, source=PASS)
    receipt = registered.receipt
    assert receipt["protocolVersion"] == 1 and receipt["registered"] is True and receipt["source"] == PASS
    assert receipt["listenerCount"] == 1 and len(str(receipt["sha256"])) == 64
    first = await service.read(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    again = await service.read(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert first is not None and again is not None and first.revision == 0
    assert first.command_processor == again.command_processor == receipt
    assert first.to_json()["commandProcessor"]["registrationId"] == receipt["registrationId"]
    await turn(host, 1, patch(8))
    assert await hp(service) == 8 and await revision(service) == 1 and await phases(service, "applied") == 1
    await service.ingest(session_id=SESSION)  # ingesting again changes nothing
    assert await revision(service) == 1 and await phases(service, "applied") == 1
    await service.close()


async def test_a_replayed_committed_reply_ends_before_the_processor_runs(ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host)
    await turn(host, 1, patch(8))
    assert await hp(service) == 8
    await service.close()
    # After a restart the same reply is recorded: the new service's (throwing) script never runs.
    processors = Interposed()
    restarted = make_service(ledger, host, THROWS, processors=processors)
    await restarted.ingest(session_id=SESSION)
    assert await revision(restarted) == 1 and await hp(restarted) == 8 and processors.turns == 0
    await restarted.close()


async def test_the_card_declaration_registers_on_first_use_and_filters(ledger: Ledger, host: MemoryHost) -> None:
    """The first read registers the card's script; later reads and the reply reuse it (C-1, C-5)."""
    processors = Interposed()
    service = make_service(ledger, host, FILTER_ALL, processors=processors)
    scope = {"authority": "local", "session_id": SESSION}
    first = await service.read(id=RESOURCE, scope=scope)
    again = await service.read(id=RESOURCE, scope=scope)
    assert first is not None and again is not None and first.revision == again.revision == 0
    assert first.command_processor is not None and first.command_processor == again.command_processor
    assert first.command_processor["source"] == FILTER_ALL and processors.turns == 0
    await turn(host, 1, patch(8))
    assert await hp(service) == 10
    record = await service.read(id=RESOURCE, scope=scope)
    assert record is not None and record.command_processor == first.command_processor
    await service.close()


async def test_a_script_that_cannot_start_shows_no_receipt_and_fails_its_reply(ledger: Ledger,
                                                                               host: MemoryHost) -> None:
    service = make_service(ledger, host, helper("") + "\nthrow new Error('init');")
    record = await service.read(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert record is not None and record.command_processor is None
    await turn(host, 1, patch(8))
    history = await service.history(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert [(entry.kind, entry.error) for entry in history] == [("failed", Code.COMMAND_HOOK_EXECUTION.value)]
    await service.close()


async def test_an_old_disposer_cannot_remove_the_replacement(ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, None)
    old = await service.register_command_processor(id=RESOURCE, source=PASS)
    new = await service.register_command_processor(id=RESOURCE, source=FILTER_ALL)
    old.dispose()
    record = await service.read(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert record is not None and record.command_processor == new.receipt
    assert new.receipt["registrationId"] != old.receipt["registrationId"]
    await turn(host, 1, patch(8))
    assert await hp(service) == 10  # the new script filtered every command
    new.dispose()
    await turn(host, 2, patch(6))
    assert await hp(service) == 6  # no registration, no card declaration: commands pass through
    await service.close()


async def test_registration_refusals(ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, None)
    with pytest.raises(MvuError) as caught:
        await service.register_command_processor(id="mvu:nope", source=PASS)
    assert caught.value.code == Code.MISSING
    with pytest.raises(MvuError) as caught:
        await service.register_command_processor(id=RESOURCE, source="console.log(1)")
    assert caught.value.code == Code.COMMAND_HOOK_DECLARATION
    await service.close()
    with pytest.raises(MvuError) as caught:
        await service.register_command_processor(id=RESOURCE, source=PASS)
    assert caught.value.code == Code.DISPOSED


async def test_managed_denial_never_runs_the_processor(ledger: Ledger, host: MemoryHost) -> None:
    processors = Interposed()
    service = make_service(ledger, host, THROWS, processors=processors)
    service.register_usage(lambda request: None, provider_id="dsh-memory-manager")
    await turn(host, 1, patch(8))
    assert await hp(service) == 10 and await phases(service, "applied") == 0 and processors.turns == 0
    await service.close()


async def test_a_throwing_script_leaves_a_failed_receipt_and_the_next_turn_is_unharmed(
        ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, helper("if (text.includes('reject')) throw new Error('no');"))
    await turn(host, 1, patch(7) + " reject")
    report = await service.ingest(session_id=SESSION)
    assert await hp(service) == 10 and await revision(service) == 1  # the reply is consumed
    assert report.outcomes == []
    await turn(host, 2, patch(8))
    assert await hp(service) == 8
    await service.close()


async def test_trusted_ingest_reads_only_the_same_turns_user_text(ledger: Ledger, host: MemoryHost) -> None:
    gated = helper("const gate = globalThis.fixtureGate;\n"
                   "if (!gate.extractOperationBlock(gate.latestUserText()).includes('allow')) commands.length = 0;")
    service = make_service(ledger, host, gated)
    block = "<本轮操作>\n<本轮执行边界>一次</本轮执行边界>\n<操作项>allow</操作项>\n</本轮操作>"
    await turn(host, 1, patch(8), user=block)
    assert await hp(service) == 8
    await turn(host, 2, patch(6), user="just talking")
    assert await hp(service) == 8
    # Text over 64 Ki code units grants nothing (it is not cut down to a valid block).
    await turn(host, 3, patch(5), user=block + "x" * (64 * 1024))
    assert await hp(service) == 8
    await service.close()


async def test_a_repaired_patch_runs_only_when_the_script_pushes_it_exactly(ledger: Ledger, host: MemoryHost) -> None:
    pushing = helper("if (text.includes('\"path\":\"/hp\":')) commands.push({type: 'set', args: ['hp', '{\"n\":1}'],"
                     " full_match: '{\"op\":\"replace\",\"path\":\"/hp\",\"value\":{\"n\":1}}'});")
    service = make_service(ledger, host, pushing)
    await turn(host, 1, '<JSONPatch>[{"op":"replace","path":"/hp":{"n":1}}]</JSONPatch>')
    assert await hp(service) == {"n": 1}
    await service.close()


async def test_budgets_of_the_state_and_the_reply_stay_separate(ledger: Ledger, host: MemoryHost) -> None:
    # Together over each budget alone (1 MiB of reply), each within its own.
    big = {"stat_data": {"hp": 10, "a": "x" * (450 * 1024), "b": "y" * (450 * 1024)}}
    service = make_service(ledger, host, PASS, initial=big)
    await turn(host, 1, "z" * (650 * 1024) + patch(8))
    assert await hp(service) == 8
    await service.close()


# -- revocation: re-checked synchronously after the script returns, and before the save -----------


async def _revoked(ledger: Ledger, host: MemoryHost, source: str, revoke: Any, code: str) -> None:
    """Revoke while the reply's script call is returning: nothing is recorded; a retry commits."""
    processors = Interposed()
    service = make_service(ledger, host, source, processors=processors)
    processors.after = lambda: revoke(service, host)
    with pytest.raises(MvuError) as caught:
        await turn(host, 1, patch(8))  # the host's ingest fails: it is retried below
    assert caught.value.code == code
    assert await revision(service) == 0 and await phases(service, "applied") == 0
    failed = [fact for fact in await service.facts(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
              if fact.get("phase") == "failed"]
    assert [fact.get("detail") for fact in failed] == [code]
    if code == Code.COMMAND_HOOK_DISPOSED:
        return
    await service.register_command_processor(id=RESOURCE, source=PASS)
    await service.ingest(session_id=SESSION)
    assert await hp(service) == 8 and await revision(service) == 1
    await service.close()


@pytest.mark.parametrize("source", [PASS, THROWS], ids=["normal exit", "error exit"])
async def test_a_replacement_during_the_call_cancels_without_consuming_the_reply(
        ledger: Ledger, host: MemoryHost, source: str) -> None:
    async def replace(service: MvuService, host: MemoryHost) -> None:
        await service.register_command_processor(id=RESOURCE, source=FILTER_ALL)

    await _revoked(ledger, host, source, replace, Code.USAGE_CANCELLED)


async def test_a_usage_policy_change_during_the_call_cancels(ledger: Ledger, host: MemoryHost) -> None:
    await _revoked(ledger, host, PASS, lambda service, host: service.register_usage(lambda request: None) and None,
                   Code.USAGE_CANCELLED)


async def test_a_lost_session_lease_during_the_call_cancels(ledger: Ledger, host: MemoryHost) -> None:
    await _revoked(ledger, host, PASS, lambda service, host: host.invalidate_leases(SESSION), Code.SESSION_LEASE)


async def test_disposing_the_service_during_the_call_cancels(ledger: Ledger, host: MemoryHost) -> None:
    processors = Interposed()
    service = make_service(ledger, host, PASS, processors=processors)
    processors.after = service.close
    with pytest.raises(MvuError) as caught:
        await turn(host, 1, patch(8))
    assert caught.value.code == Code.COMMAND_HOOK_DISPOSED
    # Nothing was recorded: a new service over the same ledger still has the reply to apply.
    again = make_service(ledger, host, PASS)
    assert await revision(again) == 0
    await again.ingest(session_id=SESSION)
    assert await hp(again) == 8
    await again.close()


async def test_a_revoked_start_is_a_cancellation_not_a_failure(ledger: Ledger, host: MemoryHost) -> None:
    """The card's script fails while it starts, and its registration is replaced meanwhile."""
    processors = CardProcessors()
    service = make_service(ledger, host, helper("") + "\nthrow new Error('init');", processors=processors)
    started = asyncio.Event()
    original = processors._call

    async def call(request: dict[str, Any], body: str, made: Declaration) -> Any:
        try:
            return await original(request, body, made)
        finally:
            if request["op"] == "start" and not started.is_set():
                started.set()
                await processors.register(RESOURCE, FILTER_ALL)

    processors._call = call  # type: ignore[method-assign]
    with pytest.raises(MvuError) as caught:
        await turn(host, 1, patch(8))
    assert caught.value.code == Code.USAGE_CANCELLED
    assert await revision(service) == 0
    await service.ingest(session_id=SESSION)  # the replacement registration now stands
    assert await hp(service) == 10 and await revision(service) == 1
    await service.close()


async def test_closing_the_service_interrupts_a_running_script(ledger: Ledger, host: MemoryHost) -> None:
    processors = CardProcessors()
    service = make_service(ledger, host, helper("if (text.includes('spin')) for (;;) {}"), processors=processors)
    await turn(host, 1, patch(7))  # the script is registered and idle
    host.append(SESSION, "turn/start", {"turn": 2})
    await host.drain()
    reply = host.append(SESSION, "assistant/message", {"turn": 2, "message": {
        "id": "spin", "content": [{"type": "text", "text": patch(8) + " spin"}]}})
    host.append(SESSION, "turn/end", {"turn": 2, "reason": {"kind": "completed"}})

    async def script_running() -> None:
        while not processors._running:  # noqa: ASYNC110 (no event to wait for: the host's ingest is in the script)
            await asyncio.sleep(0)

    await asyncio.wait_for(script_running(), timeout=60)
    await service.close()
    with pytest.raises(MvuError) as caught:
        await host.drain()
    assert caught.value.code == Code.COMMAND_HOOK_DISPOSED
    again = make_service(ledger, host, None)
    assert await hp(again) == 7 and reply > 0  # nothing was recorded for the interrupted reply
    # The stored definition keeps the spinning script: the host replaces it to retry the reply.
    await again.register_command_processor(id=RESOURCE, source=PASS)
    await again.ingest(session_id=SESSION)
    assert await hp(again) == 8
    await again.close()


async def test_an_engine_process_that_ended_is_replaced_and_scripts_start_again(
        ledger: Ledger, host: MemoryHost) -> None:
    processors = CardProcessors()
    service = make_service(ledger, host, FILTER_ALL, processors=processors)
    await turn(host, 1, patch(7))
    assert await hp(service) == 10
    worker = processors._worker
    assert worker is not None and worker.process is not None
    first = worker.process.pid
    worker.process.kill()
    worker.process.wait()
    await turn(host, 2, patch(8))
    assert await hp(service) == 10  # still filtered, by the script started again in a new process
    assert worker.process is not None and worker.process.pid != first
    await service.close()


async def test_concurrent_first_replies_share_one_pending_start(ledger: Ledger, host: MemoryHost) -> None:
    """Two sessions of one shared state reply at once: the card's script starts once, and
    neither reply is cancelled by the other's registration."""
    processors = Interposed()
    service = make_service(ledger, host, PASS, processors=processors, session_ids=[SESSION, "t"])
    host.create_session("t", created_at=2000)
    starts = 0
    original = processors._begin

    async def counted(key: str, made: Any) -> int:
        nonlocal starts
        starts += 1
        return await original(key, made)

    processors._begin = counted  # type: ignore[method-assign]
    await asyncio.gather(host.turn(SESSION, turn=1, user="go", reply="_.add('hp', 1);"),
                         host.turn("t", turn=1, user="go", reply="_.add('hp', 2);"))
    assert await hp(service) == 13 and await revision(service) == 2 and starts == 1
    await service.close()


async def test_an_engine_that_does_not_answer_is_ended_by_the_watchdog(
        ledger: Ledger, host: MemoryHost, monkeypatch: pytest.MonkeyPatch) -> None:
    processors = CardProcessors()
    service = make_service(ledger, host, helper("if (text.includes('spin')) for (;;) {}"), processors=processors)
    await turn(host, 1, patch(7))  # started, with the engine's normal watchdog
    # A watchdog shorter than the script's own budget stands for an engine that never answers.
    monkeypatch.setattr(engine, "WATCHDOG", 0.01)
    await turn(host, 2, patch(8) + " spin")
    monkeypatch.undo()
    facts = await service.facts(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert [fact.get("detail") for fact in facts if fact.get("phase") == "failed"] == [Code.COMMAND_HOOK_EXECUTION]
    await turn(host, 3, patch(9))  # a new engine process, the script started again there
    assert await hp(service) == 9
    await service.close()


# -- the reply applied while the script runs (used only when the script keeps every command) ------


async def test_a_script_that_drops_a_command_commits_only_what_it_kept(ledger: Ledger, host: MemoryHost) -> None:
    """All the commands are applied while the script runs; a script that drops one gets the
    application of what it kept, not that one."""
    service = make_service(ledger, host, helper("commands.length = 1;"))
    await turn(host, 1, "_.set('hp', 7);_.set('hp', 8);")
    assert await hp(service) == 7 and await revision(service) == 1
    await service.close()


# 900 KiB of state (the envelope holds it twice: stat_data and display_data); the first command
# takes it past the 2 MiB state budget (MVU_LIMIT, fatal), the second is a plain change.
BIG = {"stat_data": {"hp": 10, "a": "x" * (400 * 1024), "c": "z" * (500 * 1024)}}
OVER_BUDGET = "_.set('a', '" + "y" * (700 * 1024) + "');" + patch(8)


async def test_a_command_over_the_budget_that_the_script_drops_does_not_fail_the_reply(
        ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, helper("commands.splice(0, 1);"), initial=BIG)
    await turn(host, 1, OVER_BUDGET)
    assert await hp(service) == 8 and await phases(service, "failed") == 0
    await service.close()


async def test_a_command_over_the_budget_that_the_script_keeps_fails_the_reply(
        ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, PASS, initial=BIG)
    await turn(host, 1, OVER_BUDGET)
    history = await service.history(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert [(entry.kind, entry.error) for entry in history][-1] == ("failed", Code.LIMIT.value)
    assert await hp(service) == 10
    await service.close()


def edited_while_the_script_runs(ledger: Ledger, host: MemoryHost, source: str) -> tuple[MvuService, Interposed]:
    """A service whose next script call is followed by an edit that sets hp to 12."""
    processors = Interposed()
    service = make_service(ledger, host, source, processors=processors)

    async def edit() -> None:
        await service.update(id=RESOURCE, content={"stat_data": {"hp": 12}}, expected_revision=0,
                             operation_id="edit", scope={"authority": "local", "session_id": SESSION})

    processors.after = edit
    return service, processors


async def test_an_edit_while_the_script_runs_makes_the_script_choose_again_on_the_edited_state(
        ledger: Ledger, host: MemoryHost) -> None:
    """The script's choice stands only on the state it saw (C-4: the captured revision): the
    edit is kept, and the script chooses again on it before anything is saved."""
    service, processors = edited_while_the_script_runs(
        ledger, host, helper("if (variables.stat_data.hp >= 12) commands.length = 0;"))
    await turn(host, 1, "_.add('hp', 5);")  # the script saw hp 10 and kept the command; then hp 12
    assert processors.turns == 2
    assert await hp(service) == 12 and await revision(service) == 2  # the first choice would give 17
    await service.close()


async def test_a_script_that_fails_on_a_state_that_moved_saves_no_receipt(ledger: Ledger, host: MemoryHost) -> None:
    """A failed receipt is saved only on the state the script failed on: else the reply stays."""
    service, _ = edited_while_the_script_runs(ledger, host, THROWS)
    scope = {"authority": "local", "session_id": SESSION}
    with pytest.raises(MvuError) as caught:
        await turn(host, 1, patch(8))
    assert caught.value.code == Code.USAGE_CANCELLED
    assert await hp(service) == 12 and await revision(service) == 1
    await service.ingest(session_id=SESSION)  # the retry fails on the state it saw: a receipt now
    history = await service.history(id=RESOURCE, scope=scope)
    assert [(entry.kind, entry.error) for entry in history][-1] == ("failed", Code.COMMAND_HOOK_EXECUTION.value)
    await service.close()


# -- the host's source lease (C-4): checked before each reply, after the script and before the save -


class SourceLease:
    def __init__(self) -> None:
        self.holding = True

    def __call__(self) -> bool:
        return self.holding

    def end(self) -> None:
        self.holding = False


async def test_a_source_lease_that_ends_while_the_script_runs_cancels_and_ends_the_registration(
        ledger: Ledger, host: MemoryHost) -> None:
    processors = Interposed()
    service = make_service(ledger, host, None, processors=processors)
    lease = SourceLease()
    await service.register_command_processor(id=RESOURCE, source=FILTER_ALL, lease=lease)
    processors.after = lease.end
    with pytest.raises(MvuError) as caught:
        await turn(host, 1, patch(8))
    assert caught.value.code == Code.USAGE_CANCELLED
    assert await revision(service) == 0 and await phases(service, "failed") == 1
    record = await service.read(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert record is not None and record.command_processor is None  # the registration ended
    await service.ingest(session_id=SESSION)  # the retry runs without the host's script
    assert await hp(service) == 8 and await revision(service) == 1
    await service.close()


async def test_a_source_lease_that_ended_between_replies_ends_the_registration_first(
        ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, None)
    lease = SourceLease()
    await service.register_command_processor(id=RESOURCE, source=FILTER_ALL, lease=lease)
    await turn(host, 1, patch(8))
    assert await hp(service) == 10 and await revision(service) == 1  # filtered while the lease held
    lease.holding = False
    await turn(host, 2, patch(9))
    assert await hp(service) == 9 and await revision(service) == 2
    await service.close()


@pytest.mark.parametrize("lease", [lambda: False, lambda: 1, lambda: 1 // 0], ids=["false", "truthy", "raising"])
async def test_a_source_lease_that_does_not_hold_registers_nothing(ledger: Ledger, host: MemoryHost,
                                                                  lease: Any) -> None:
    service = make_service(ledger, host, None)
    with pytest.raises(MvuError) as caught:
        await service.register_command_processor(id=RESOURCE, source=FILTER_ALL, lease=lease)
    assert caught.value.code == Code.USAGE_CANCELLED
    await turn(host, 1, patch(8))
    assert await hp(service) == 8
    await service.close()


async def test_a_source_lease_must_be_callable(ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, None)
    with pytest.raises(MvuError) as caught:
        await service.register_command_processor(id=RESOURCE, source=FILTER_ALL, lease=True)  # type: ignore[arg-type]
    assert caught.value.code == Code.CONFIG
    await service.close()


async def test_the_retry_of_a_cancelled_reply_runs_without_a_registration_disposed_meanwhile(
        ledger: Ledger, host: MemoryHost) -> None:
    """The cancelled try's registration is not held against the retry, which has none."""
    processors = Interposed()
    service = make_service(ledger, host, None, processors=processors)
    registered = await service.register_command_processor(id=RESOURCE, source=FILTER_ALL)
    processors.after = registered.dispose
    with pytest.raises(MvuError) as caught:
        await turn(host, 1, patch(8))
    assert caught.value.code == Code.USAGE_CANCELLED
    await service.ingest(session_id=SESSION)
    assert await hp(service) == 8 and await revision(service) == 1
    await service.close()


async def test_the_wire_text_of_a_record_follows_its_registration(ledger: Ledger, host: MemoryHost) -> None:
    """A card instance's text is cached by what it is made of: its registration is part of that."""
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    await service.discover(definition={"character_id": "hero", "name": "Hero", "initvar": ["hp: 10\n"]})
    host.create_session("c", created_at=1000)
    instance = (await service.select_character(session_id="c", character_id="hero")).instance_id
    assert instance is not None
    scope = {"authority": "local", "session_id": "c"}

    async def shown() -> Any:
        text = await service.read_json(id=instance, scope=scope)
        assert text is not None
        return json.loads(text.body).get("commandProcessor")

    assert await shown() is None and await shown() is None  # the second read is the cached text
    registered = await service.register_command_processor(id=instance, source=PASS)
    assert await shown() == registered.receipt
    replacement = await service.register_command_processor(id=instance, source=FILTER_ALL)
    assert await shown() == replacement.receipt
    replacement.dispose()
    assert await shown() is None
    await service.close()


# -- the usage policy's own lease on its decision (C-4: policy checkCurrent) ------------------------


def manager(policy: SourceLease) -> Any:
    return lambda request: {"enabled": True, "configRevision": 4, "checkCurrent": policy}


async def test_a_policy_lease_that_ends_while_the_script_runs_cancels_and_the_retry_commits(
        ledger: Ledger, host: MemoryHost) -> None:
    processors = Interposed()
    service = make_service(ledger, host, PASS, processors=processors)
    policy = SourceLease()
    service.register_usage(manager(policy), provider_id="dsh-memory-manager")
    processors.after = policy.end
    with pytest.raises(MvuError) as caught:
        await turn(host, 1, patch(8))
    assert caught.value.code == Code.USAGE_CANCELLED
    assert await revision(service) == 0 and await phases(service, "applied") == 0
    policy.holding = True
    await service.ingest(session_id=SESSION)
    assert await hp(service) == 8 and await revision(service) == 1
    facts = await service.facts(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert [fact.get("configRevision") for fact in facts if fact.get("phase") == "applied"] == [4]
    await service.close()


async def test_a_policy_lease_is_checked_before_every_commit_with_or_without_a_script(
        ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, None)
    policy = SourceLease()
    policy.holding = False
    service.register_usage(manager(policy), provider_id="dsh-memory-manager")
    with pytest.raises(MvuError) as caught:
        await turn(host, 1, patch(8))
    assert caught.value.code == Code.USAGE_CANCELLED and await revision(service) == 0
    policy.holding = True
    await service.ingest(session_id=SESSION)
    assert await hp(service) == 8
    await service.close()


async def test_a_policy_lease_must_be_synchronous(ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, None)

    async def later() -> bool:
        return True

    service.register_usage(lambda request: {"enabled": True, "checkCurrent": later}, provider_id="dsh-memory-manager")
    await turn(host, 1, patch(8))
    history = await service.history(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert [(entry.kind, entry.error) for entry in history] == [("failed", Code.USAGE.value)]
    assert await hp(service) == 10
    await service.close()


async def test_a_policy_answer_whose_lease_is_none_gives_none(ledger: Ledger, host: MemoryHost) -> None:
    service = make_service(ledger, host, None)
    service.register_usage(lambda request: {"enabled": True, "checkCurrent": None}, provider_id="dsh-memory-manager")
    await turn(host, 1, patch(8))
    assert await hp(service) == 8
    await service.close()


# -- the card's declaration as the card carries it now (C-1) ----------------------------------------


async def card_session(ledger: Ledger, host: MemoryHost, **card: Any) -> tuple[MvuService, str]:
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    await service.discover(definition={"character_id": "hero", "name": "Hero", "initvar": ["hp: 10\n"], **card})
    host.create_session("c", created_at=1000)
    instance = (await service.select_character(session_id="c", character_id="hero")).instance_id
    assert instance is not None
    return service, instance


async def card_hp(service: MvuService, instance: str) -> tuple[Any, int, Any]:
    record = await service.read(id=instance, scope={"authority": "local", "session_id": "c"})
    assert record is not None
    return record.content["stat_data"]["hp"], record.revision, record.command_processor  # type: ignore[index]


async def test_disabling_the_cards_script_ends_it_for_the_sessions_already_playing(
        ledger: Ledger, host: MemoryHost) -> None:
    service, instance = await card_session(ledger, host, command_source=FILTER_ALL)
    await host.turn("c", turn=1, user="go", reply=patch(7))
    assert (await card_hp(service, instance))[:2] == (10, 1)  # filtered
    await service.discover(definition={"character_id": "hero", "name": "Hero", "initvar": ["hp: 10\n"]})
    await host.turn("c", turn=2, user="go", reply=patch(8))
    assert await card_hp(service, instance) == (8, 2, None)  # the script no longer runs, nor is registered
    await service.discover(definition={"character_id": "hero", "name": "Hero", "initvar": ["hp: 10\n"],
                                       "command_source": FILTER_ALL})
    await host.turn("c", turn=3, user="go", reply=patch(9))
    hp_now, revision_now, receipt = await card_hp(service, instance)
    assert (hp_now, revision_now) == (8, 3) and receipt is not None and receipt["source"] == FILTER_ALL
    await service.close()


async def test_a_card_whose_declarations_are_refused_fails_its_updates_rather_than_run_them_unfiltered(
        ledger: Ledger, host: MemoryHost) -> None:
    service, instance = await card_session(ledger, host, command_source_error="MVU_COMMAND_HOOK_CONFLICT")
    await host.turn("c", turn=1, user="go", reply=patch(7))
    assert (await card_hp(service, instance))[:2] == (10, 1)
    history = await service.history(id=instance, scope={"authority": "local", "session_id": "c"})
    assert [(entry.kind, entry.error) for entry in history] == [("failed", Code.COMMAND_HOOK_CONFLICT.value)]
    await host.turn("c", turn=2, user="go", reply="Nothing changes.")  # no update: nothing to refuse
    assert (await card_hp(service, instance))[:2] == (10, 2)
    await service.close()


TWO_REPAIRS = '<JSONPatch>[{"op":"replace","path":"/hp":{"n":1}},{"op":"replace","path":"/hp":{"n":2}}]</JSONPatch>'


def pushes(*values: int) -> str:
    """A script that pushes the repaired operations setting hp to each of ``values``, in order."""
    return helper("".join(
        f"commands.push({{type: 'set', args: ['hp', '{{\"n\":{value}}}'], "
        f"full_match: '{{\"op\":\"replace\",\"path\":\"/hp\",\"value\":{{\"n\":{value}}}}}'}});" for value in values))


@pytest.mark.parametrize(("values", "outcome"), [((1, 2), {"n": 2}), ((2, 1), Code.COMMAND_HOOK_OUTPUT.value),
                                                 ((1, 1), Code.COMMAND_HOOK_OUTPUT.value)],
                         ids=["in order", "reversed", "twice"])
async def test_repaired_operations_may_only_be_pushed_in_their_order_and_once(
        ledger: Ledger, host: MemoryHost, values: tuple[int, ...], outcome: Any) -> None:
    service = make_service(ledger, host, pushes(*values))
    await turn(host, 1, TWO_REPAIRS)
    history = await service.history(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    if isinstance(outcome, str):
        assert [(entry.kind, entry.error) for entry in history] == [("failed", outcome)]
        assert await hp(service) == 10
    else:
        assert await hp(service) == outcome
    await service.close()


# -- the engine process's queue ------------------------------------------------------------------


async def test_cancelling_a_queued_reply_leaves_the_running_one_alone() -> None:
    """Only the running request is stopped through the shared file: a queued one is dropped."""
    processors = CardProcessors()
    await processors.register("A", helper("const t = Date.now(); while (Date.now() - t < 200) {}"))
    await processors.register("B", PASS)
    text = "_.set('hp', 1, 2);"
    commands = tuple(parse_commands(text))
    running = asyncio.ensure_future(processors.process(commands, processor_turn("A", 1, text)))
    queued = asyncio.ensure_future(processors.process(commands, processor_turn("B", 2, text)))
    await asyncio.sleep(0)  # A is sent, B waits behind it
    queued.cancel()
    assert list(await running) == list(commands)
    with pytest.raises(asyncio.CancelledError):
        await queued
    processors.dispose()


async def test_a_lone_surrogate_a_script_leaves_in_a_view_does_not_end_the_engine() -> None:
    processors = CardProcessors()
    await processors.register("A", helper("commands[0].full_match = String.fromCharCode(0xd800);"))
    worker = processors._worker
    assert worker is not None and worker.process is not None
    engine_process = worker.process.pid
    text = "_.set('name', 'a', 'b');"
    commands = tuple(parse_commands(text))
    assert list(await processors.process(commands, processor_turn("A", 1, text))) == list(commands)
    assert worker.process is not None and worker.process.pid == engine_process
    processors.dispose()


async def test_an_engine_that_cannot_start_fails_the_reply_and_the_next_one_waits_for_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    processors = CardProcessors()
    await processors.register("A", PASS)
    worker = processors._worker
    assert worker is not None and worker.process is not None
    worker.process.kill()
    worker.process.wait()

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(engine, "_Child", refused)
    text = "_.set('hp', 1, 2);"
    commands = tuple(parse_commands(text))
    for seq in (1, 2):
        with pytest.raises(MvuError) as caught:
            await asyncio.wait_for(processors.process(commands, processor_turn("A", seq, text)), timeout=60)
        assert caught.value.code == Code.COMMAND_HOOK_EXECUTION
    monkeypatch.undo()
    assert list(await processors.process(commands, processor_turn("A", 3, text))) == list(commands)
    processors.dispose()


async def test_the_wire_text_shows_the_registration_a_read_shows(ledger: Ledger, host: MemoryHost) -> None:
    """The first read registers the card's script before the cached text's key is taken."""
    service, instance = await card_session(ledger, host, command_source=PASS)
    scope = {"authority": "local", "session_id": "c"}

    async def both() -> tuple[Any, Any]:
        text = await service.read_json(id=instance, scope=scope)
        record = await service.read(id=instance, scope=scope)
        assert text is not None and record is not None
        return json.loads(text.body).get("commandProcessor"), record.command_processor

    wire, read = await both()
    assert wire is not None and wire == read
    host_registration = await service.register_command_processor(id=instance, source=FILTER_ALL)
    assert await both() == (host_registration.receipt, host_registration.receipt)
    host_registration.dispose()
    wire_after, read_after = await both()
    assert wire_after == read_after and wire_after is not None
    assert wire_after["registrationId"] != wire["registrationId"]
    await service.close()
