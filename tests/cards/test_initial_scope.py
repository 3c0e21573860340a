"""The original's initial-binding, greeting-scope and membership-lease scenarios through the
Python API: an empty session's opening is readable and writable through the initial scope until
its first event that is not configuration; the greeting scope reads the opening (after the first
send, the first turn's checkpoint) and never writes; every lease is a token that a new report of
the same facts does not revive. (The original's assertions that a card write needs a usage-policy
lease are superseded: card writes never ask the usage policy.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.host import Playthrough, TimelineNode, Variant
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.cards.card_support import HP_SCHEMA, Held, selecting

CARD: dict[str, Any] = {"character_id": "c", "name": "C", "initvar": ["hp: 10\n"], "schema_source": HP_SCHEMA,
                        "greetings": ["Hello.", "<UpdateVariable>_.set('hp', 3);</UpdateVariable>Hi."]}
OTHER: dict[str, Any] = {"character_id": "d", "initvar": ["hp: 1\n"]}
INITIAL: dict[str, Any] = {"mode": "initial", "playthroughId": "p", "sessionId": "s", "characterId": "c",
                           "sessionFormatVersion": 4}
GREETING: dict[str, Any] = {**INITIAL, "mode": "greeting"}
IDENTITY: dict[str, Any] = {"version": 1, "sha256": "c" * 64, "scope": INITIAL}


def _playthrough(root: str = "s", nodes: tuple[TimelineNode, ...] = ()) -> Playthrough:
    return Playthrough("p", "c", root, nodes=nodes)


@pytest.fixture
async def opened(ledger: Ledger, host: MemoryHost) -> MvuService:
    service, _ = await selecting(ledger, host, CARD, OTHER)
    host.facts.report_playthrough(_playthrough())
    host.facts.grant("grant", source_identity=IDENTITY, scope=INITIAL)
    return service


async def _code(call: Any) -> str:
    with pytest.raises(MvuError) as refused:
        await call
    return refused.value.code


async def _bind(service: MvuService, scope: dict[str, Any] = INITIAL, identity: dict[str, Any] = IDENTITY,
                **extra: Any) -> str:
    bound = await service.create_card_binding(scope=scope, grant_id="grant", source_identity=identity, **extra)
    return str(bound["capability"])


def _replace(hp: int, expected: int, operation_id: str) -> dict[str, Any]:
    return {"operation": "replace", "value": {"stat_data": {"hp": hp}}, "expected_revision": expected,
            "operation_id": operation_id, "cause": "user-interaction"}


async def _start(host: MemoryHost) -> None:
    host.append("s", "turn/start", {"turn": 1})
    await host.drain()


async def test_the_initial_scope_shows_the_source_schema_and_commits_once_with_cas_and_idempotency(
        opened: MvuService, host: MemoryHost) -> None:
    snapshot = await opened.snapshot(scope=INITIAL)
    assert snapshot["status"] == "available" and snapshot["revision"] == 0
    assert snapshot["variables"]["stat_data"] == {"hp": 10}  # type: ignore[index,call-overload]
    assert snapshot["variables"]["mvu_schema"]["source"] == HP_SCHEMA  # type: ignore[index,call-overload]
    capability = await _bind(opened)
    written = await opened.card_write(capability=capability, **_replace(7, 0, "seven"))
    assert written["revision"] == 1 and written["variables"]["stat_data"] == {"hp": 7}
    assert await opened.card_write(capability=capability, **_replace(7, 0, "seven")) == written
    assert (await opened.snapshot(scope=INITIAL))["variables"]["stat_data"] == {"hp": 7}  # type: ignore[index]
    assert await _code(opened.card_write(capability=capability, **_replace(5, 0, "stale"))) == "REVISION_CONFLICT"
    assert await _code(opened.card_write(capability=capability, **_replace(-1, 1, "negative"))) == "MVU_SCHEMA"
    resource = str(written["resourceId"])
    facts = await opened.facts(id=resource, scope={"session_id": "s"})
    applied = [fact for fact in facts if fact["phase"] == "applied"]
    assert len(applied) == 1 and applied[0]["configRevision"] is None
    history = await opened.history(id=resource, scope={"session_id": "s"})
    assert history[0].source["initial"] is True and "messageId" not in history[0].source
    await _start(host)
    record = await opened.read(id=resource, scope={"session_id": "s"})
    assert record is not None and record.content["stat_data"] == {"hp": 7}  # type: ignore[index,call-overload]
    assert await _code(opened.snapshot(scope=INITIAL)) == "MVU_READ_ONLY"
    assert await _code(opened.card_write(capability=capability, **_replace(6, 1, "late"))) == "MVU_READ_ONLY"


async def test_initial_versions_flow_into_the_first_reply(opened: MvuService, host: MemoryHost) -> None:
    capability = await _bind(opened)
    written = await opened.card_write(capability=capability, **_replace(7, 0, "seven"))
    await host.turn("s", turn=1, user="go", reply="_.add('hp',-1);", message_id="m1")
    record = await opened.read(id=str(written["resourceId"]), scope={"session_id": "s"})
    assert record is not None and record.revision == 2
    assert record.content["stat_data"] == {"hp": 6}  # type: ignore[index,call-overload]


@pytest.mark.parametrize("scope", [{"sessionId": "s", "playthroughId": "p"}, {**INITIAL, "nodeId": "n"},
                                   {**INITIAL, "mode": "unknown"}, {**INITIAL, "messageId": "m"},
                                   {**INITIAL, "greetingIndex": -1}, {**INITIAL, "greetingIndex": 0.5},
                                   {**INITIAL, "greetingIndex": "0"}, {**INITIAL, "selectionToken": "foreign"}])
async def test_malformed_opening_scopes_are_scope_errors(opened: MvuService, scope: dict[str, Any]) -> None:
    assert await _code(opened.snapshot(scope=scope)) == "MVU_SCOPE"


async def test_the_initial_scope_keeps_membership_character_and_emptiness_checks(
        opened: MvuService, host: MemoryHost) -> None:
    host.facts.report_playthrough(_playthrough(root="other"))
    assert await _code(_bind(opened)) == "MVU_READ_ONLY"
    node = TimelineNode("n", (Variant("v", "s", 0, 4),))
    host.facts.report_playthrough(_playthrough(nodes=(node,)))
    assert await _code(_bind(opened)) == "MVU_READ_ONLY"
    host.facts.report_playthrough(_playthrough())
    await opened.select_character(session_id="s", character_id="d")
    assert await _code(_bind(opened)) == "MVU_READ_ONLY"
    await opened.select_character(session_id="s", character_id="c")
    assert await _bind(opened)


async def test_switching_away_and_back_or_detaching_and_restoring_never_revives_a_capability(
        opened: MvuService, host: MemoryHost) -> None:
    capability = await _bind(opened)
    await opened.select_character(session_id="s", character_id="d")
    await opened.select_character(session_id="s", character_id="c")
    assert await _code(opened.card_write(capability=capability, **_replace(7, 0, "old"))) == "MVU_READ_ONLY"
    capability = await _bind(opened)
    host.facts.remove_playthrough("p")
    host.facts.report_playthrough(_playthrough())
    assert await _code(opened.card_write(capability=capability, **_replace(7, 0, "old"))) == "MVU_READ_ONLY"
    capability = await _bind(opened)
    host.facts.report_playthrough(_playthrough())  # the same timeline again: a new lease all the same
    assert await _code(opened.card_write(capability=capability, **_replace(7, 0, "old"))) == "MVU_READ_ONLY"
    written = await opened.card_write(capability=await _bind(opened), **_replace(7, 0, "fresh"))
    assert written["revision"] == 1


@pytest.mark.parametrize(("kind", "data"), [
    ("permission/preset", {"preset": "ask"}), ("sandbox/mode", {"mode": "off"}),
    ("approval/policy", {"policy": "never"}),
    ("model/selection", {"provider": "x", "model": "y"}),
    ("model/selection", {"provider": "x", "model": "y", "reasoningEffort": "high"}),
    ("session/title", {"title": "Night", "messageSeqs": [], "source": {"kind": "user"}}),
    ("session/end-seed", {}),
])
async def test_configuration_events_keep_the_session_empty_but_end_earlier_capabilities(
        opened: MvuService, host: MemoryHost, kind: str, data: dict[str, Any]) -> None:
    capability = await _bind(opened)
    host.append("s", kind, data)
    assert (await opened.snapshot(scope=INITIAL))["status"] == "available"
    assert await _code(opened.card_write(capability=capability, **_replace(7, 0, "old"))) == "MVU_READ_ONLY"
    written = await opened.card_write(capability=await _bind(opened), **_replace(7, 0, "fresh"))
    assert written["revision"] == 1


@pytest.mark.parametrize(("kind", "data"), [
    ("user/message", {"turn": 1, "message": {"source": {"kind": "user"}, "content": "hi"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ("model/selection", {}), ("model/selection", {"provider": "x"}),
    ("model/selection", {"provider": "x", "model": ""}),
    ("model/selection", {"provider": "x", "model": "y", "reasoningEffort": ""}),
    ("model/selection", {"provider": "x", "model": "y", "extra": 1}),
    ("session/title", {"title": " ", "messageSeqs": [], "source": {"kind": "user"}}),
    ("session/title", {"title": "T", "messageSeqs": [1], "source": {"kind": "user"}}),
    ("session/title", {"title": "T", "messageSeqs": [], "source": {"kind": "provider"}}),
    ("session/end-seed", {"inherited": True}),
    ("approval/request", {}),
])
async def test_activity_and_malformed_configuration_end_the_initial_scope(
        opened: MvuService, host: MemoryHost, kind: str, data: dict[str, Any]) -> None:
    host.append("s", kind, data)
    assert await _code(opened.snapshot(scope=INITIAL)) == "MVU_READ_ONLY"
    assert await _code(_bind(opened)) == "MVU_READ_ONLY"


async def test_the_greeting_scope_reads_the_opening_then_the_first_turns_checkpoint_and_never_writes(
        opened: MvuService, host: MemoryHost) -> None:
    before = await opened.snapshot(scope=GREETING)
    assert before["variables"]["stat_data"] == {"hp": 10}  # type: ignore[index,call-overload]
    view = before["viewIdentity"]
    assert isinstance(view, dict) and view["greetingIndex"] == 0
    assert isinstance(view["selectionToken"], str) and len(view["selectionToken"]) == 64
    await opened.card_write(capability=await _bind(opened), **_replace(7, 0, "seven"))
    await _start(host)
    after = await opened.snapshot(scope=GREETING)
    assert after["variables"]["stat_data"] == {"hp": 7}  # type: ignore[index,call-overload]
    greeting_identity = {**IDENTITY, "scope": GREETING}
    host.facts.grant("grant", source_identity=greeting_identity, scope=GREETING)
    assert await _code(_bind(opened, GREETING, greeting_identity)) == "MVU_READ_ONLY"
    assert await _code(opened.snapshot(scope={**GREETING, "nodeId": "n"})) == "MVU_SCOPE"
    await opened.select_character(session_id="s", character_id="d")
    assert await _code(opened.snapshot(scope=GREETING)) == "MVU_READ_ONLY"


async def test_a_greeting_view_is_bound_to_its_selection_and_greeting(opened: MvuService, host: MemoryHost) -> None:
    token = (await opened.snapshot(scope=GREETING))["viewIdentity"]["selectionToken"]  # type: ignore[index]
    viewed = {**INITIAL, "greetingIndex": 0, "selectionToken": token}
    identity = {**IDENTITY, "scope": viewed}
    host.facts.grant("grant", source_identity=identity, scope=viewed)
    assert await _code(_bind(opened, {**INITIAL, "greetingIndex": 0}, {**IDENTITY, "scope": {
        **INITIAL, "greetingIndex": 0}})) == "MVU_SCOPE"
    capability = await _bind(opened, viewed, identity)
    assert (await opened.card_write(capability=capability, **_replace(7, 0, "seven")))["revision"] == 1
    assert await _code(opened.snapshot(scope={**GREETING, "greetingIndex": 1})) == "MVU_READ_ONLY"
    assert await _code(opened.snapshot(scope={**GREETING, "selectionToken": "f" * 64})) == "MVU_READ_ONLY"
    await opened.select_character(session_id="s", character_id="c", greeting_index=1)
    opened_again = await opened.snapshot(scope={**GREETING, "greetingIndex": 1})
    assert opened_again["variables"]["stat_data"] == {"hp": 3}  # type: ignore[index,call-overload]
    await opened.select_character(session_id="s", character_id="c", greeting_index=0)
    assert await _code(_bind(opened, viewed, identity)) == "MVU_READ_ONLY"
    fresh = (await opened.snapshot(scope=GREETING))["viewIdentity"]["selectionToken"]  # type: ignore[index]
    assert fresh != token
    # Greeting 0 kept its copy: the card's write is still there.
    assert (await opened.snapshot(scope=GREETING))["variables"]["stat_data"] == {"hp": 7}  # type: ignore[index]


async def test_a_restarted_service_refuses_old_views(opened: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    token = (await opened.snapshot(scope=GREETING))["viewIdentity"]["selectionToken"]  # type: ignore[index]
    restarted = MvuService(ledger=ledger, host=host)
    assert await _code(restarted.snapshot(scope={**GREETING, "selectionToken": token})) == "MVU_READ_ONLY"


async def test_two_resources_of_the_character_are_ambiguous_to_read_and_refused_to_bind(
        ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:twin", "session_ids": ["s"], "sharing": "shared", "character_id": "c"}])
    await service.discover(definition=CARD)
    host.create_session("s", created_at=1000)
    await service.select_character(session_id="s", character_id="c")
    host.facts.report_playthrough(_playthrough())
    host.facts.grant("grant", source_identity=IDENTITY, scope=INITIAL)
    assert await _code(service.snapshot(scope=INITIAL)) == "MVU_AMBIGUOUS"
    assert await _code(_bind(service)) == "MVU_READ_ONLY"


async def test_detaching_and_restoring_the_playthrough_during_the_final_scope_read_is_refused(
        opened: MvuService, host: MemoryHost) -> None:
    capability = await _bind(opened)
    held = Held(host, 2)
    write = asyncio.ensure_future(opened.card_write(capability=capability, **_replace(7, 0, "aba")))
    await held.reached.wait()
    host.facts.remove_playthrough("p")
    host.facts.report_playthrough(_playthrough())
    held.release.set()
    with pytest.raises(MvuError) as refused:
        await write
    assert refused.value.code == "MVU_READ_ONLY"
    host.facts.membership = held.inner  # type: ignore[method-assign]
    assert (await opened.snapshot(scope=INITIAL))["revision"] == 0


@pytest.mark.parametrize(("kind", "data"), [("request/header", {"header": {"startsSeries": True}}),
                                            ("session/title", {"title": "T", "messageSeqs": [],
                                                               "source": {"kind": "fallback"}})])
async def test_request_preparation_keeps_a_prompt_read_but_never_an_old_card_capability(
        opened: MvuService, host: MemoryHost, kind: str, data: dict[str, Any]) -> None:
    """The prompt read's lease tolerates what the host logs while preparing a request; a write
    lease keeps the strict rule: any new event ends the capability taken before it."""
    capability = await _bind(opened)
    read = await opened.resolve_prompt_dependency(
        scope={"authority": "local", "sessionId": "s"},
        event={"preview": True, "usage": "world-book-variable",
               "consumer": {"adapterId": "tavern.world-books", "id": "world-book:c"}})
    assert read is not None and read.check_current()
    host.append("s", kind, data)
    assert read.check_current() is True
    assert await _code(opened.card_write(capability=capability, **_replace(7, 0, "old"))) == "MVU_READ_ONLY"
