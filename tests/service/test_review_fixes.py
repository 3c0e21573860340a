"""Cases a review found: each failed before its fix (copies, configured first turns, lone
surrogates, stuck selections, historical scopes, writes on drifted history)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.ledger.transfer import import_directory
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from mvu_store.service.identity import character_template_id
from tests.service.support import HERO, playing, scope, stat_data, text_message, turn_end


async def test_a_copy_is_a_snapshot_that_never_takes_the_sessions_replies(service: MvuService, host: MemoryHost,
                                                                          ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 5);")
    await host.turn("s1", turn=2, user="b", reply="_.add('gold', 5);")
    await service.copy(id=instance, new_id="mvu:backup", scope=scope("s1"))
    await host.turn("s1", turn=3, user="c", reply="_.add('gold', 5);")
    assert (await stat_data(service, instance))["gold"] == 25
    backup = await service.read(id="mvu:backup", scope=scope("s1"))
    assert backup is not None and backup.content["stat_data"]["gold"] == 20  # type: ignore[index]
    assert await ledger.versions("mvu:backup") == []


async def test_a_configured_template_takes_the_first_turn(ledger: Ledger) -> None:
    host = MemoryHost()
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:campaign", "session_ids": ["*"], "initial": "gold: 0\n"}])
    host.attach(service)
    host.create_session("s1", created_at=1000)
    await host.turn("s1", turn=1, user="a", reply="_.set('gold', 5);")
    await host.turn("s1", turn=2, user="b", reply="_.add('gold', 1);")
    [record] = await service.list(scope=scope("s1"))
    assert record.content["stat_data"] == {"gold": 6}  # type: ignore[index]
    assert record.revision == 2


async def test_a_reply_with_a_lone_surrogate_does_not_block_the_session(service: MvuService, host: MemoryHost,
                                                                        ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="cut off \ud83d")
    await host.turn("s1", turn=2, user="b", reply="_.add('gold', 1);")
    assert (await stat_data(service, instance))["gold"] == 11
    assert [v.kind for v in await ledger.versions(instance)] == ["reply", "reply"]


@pytest.mark.parametrize("bad", ["mvu:\ud800", "mvu:a\x00b"])
async def test_ids_no_row_can_have_are_missing_not_crashes(service: MvuService, host: MemoryHost, bad: str) -> None:
    await playing(service, host)
    assert await service.read(id=bad, scope=scope("s1")) is None
    assert await service.history(id=bad, scope=scope("s1")) == []
    with pytest.raises(MvuError) as caught:
        await service.update(id=bad, content={"stat_data": {}}, expected_revision=0, operation_id="o",
                             scope=scope("s1"))
    assert caught.value.code == "MVU_MISSING"
    with pytest.raises(MvuError) as refused:
        await service.list(scope={"authority": "local", "sessionId": "s\x00"})
    assert refused.value.code == "MVU_SCOPE"


async def test_a_historical_scope_needs_its_session(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    for historical in ({"authority": "local", "end_event_id": 3}, {"authority": "local", "message_id": "s1-m1"}):
        with pytest.raises(MvuError) as caught:
            await service.read(id=instance, scope=historical)
        assert caught.value.code == "MVU_SCOPE"


async def test_edits_are_refused_where_reads_are(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    seq = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    host.replace_event("s1", seq, "assistant/message", text_message(1, "s1-m1", "rewritten"))
    calls: list[Any] = [
        service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 1}}, expected_revision=1,
                       operation_id="e", scope=scope("s1")),
        service.set_management_mode(id=instance, mode="managed", expected_revision=1, operation_id="m",
                                    scope=scope("s1")),
        service.copy(id=instance, new_id="mvu:copy", scope=scope("s1")),
    ]
    for call in calls:
        with pytest.raises(MvuError) as caught:
            await call
        assert caught.value.code == "MVU_HISTORY_CHANGED"
    assert [v.kind for v in await ledger.versions(instance)] == ["reply"]
    assert await ledger.resource("mvu:copy") is None


async def test_a_session_bound_to_legacy_state_can_still_unselect(service: MvuService, host: MemoryHost,
                                                                  ledger: Ledger, tmp_path: Any) -> None:
    legacy_id = character_template_id("hero")
    version = {"key": "a" * 64, "revision": 1, "variables": {"stat_data": {"hp": 1}},
               "source": {"sessionId": "old", "messageId": "m", "messageSeq": 1}}
    document = {"version": 1, "resources": {legacy_id: {
        "revision": 1, "currentKey": "a" * 64, "versions": [version],
        "definition": {"id": legacy_id, "sessionIds": ["old"], "initial": {"stat_data": {}}}}}}
    (tmp_path / "mvu-state.json").write_text(json.dumps(document))
    await import_directory(ledger, tmp_path)
    await service.discover(definition=HERO)
    host.create_session("old", created_at=1)
    with pytest.raises(MvuError) as caught:
        await service.select_character(session_id="old", character_id="hero")
    assert caught.value.code == "MVU_MIGRATION_REQUIRED"
    assert await ledger.selection("old") == (False, None)  # the refused selection did not stick
    assert (await service.select_character(session_id="old", character_id=None)).template_id is None
    host.append("old", "turn/start", {"turn": 1})
    host.append("old", "turn/end", turn_end(1))
    await host.drain()  # the attached checkpoint and ingest run and find nothing to do
    assert (await service.ingest(session_id="old")).outcomes == []


async def test_another_handler_never_decides_for_the_manager(service: MvuService, host: MemoryHost,
                                                             ledger: Ledger) -> None:
    instance = await playing(service, host)
    service.register_usage(lambda event: None, provider_id="dsh-memory-manager")
    service.register_usage(lambda event: {"enabled": True})
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 5);")
    assert (await stat_data(service, instance))["gold"] == 10
    facts = await service.facts(id=instance, scope=scope("s1"))
    assert ("skipped", "usage-policy") in [(f["phase"], f.get("detail")) for f in facts]


async def test_removing_the_manager_stops_a_decision_that_hangs(service: MvuService, host: MemoryHost,
                                                                ledger: Ledger) -> None:
    instance = await playing(service, host)
    asked = asyncio.Event()

    async def hangs(event: Any) -> Any:
        asked.set()
        await asyncio.Event().wait()  # never answers

    dispose = service.register_usage(hangs, provider_id="dsh-memory-manager")
    host.attach(None)
    start = host.append("s1", "turn/start", {"turn": 1})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "assistant/message", text_message(1, "m1", "_.add('gold', 5);"))
    host.append("s1", "turn/end", turn_end(1))
    pending = asyncio.ensure_future(service.ingest(session_id="s1"))
    await asked.wait()
    dispose()
    with pytest.raises(MvuError) as caught:
        await pending
    assert caught.value.code == "MVU_USAGE_CANCELLED"
    assert await ledger.versions(instance) == []
    assert (await stat_data(service, instance))["gold"] == 10  # the session is not left locked
    assert [o.status for o in (await service.ingest(session_id="s1")).outcomes] == ["committed"]


async def test_a_poison_reply_is_not_consumed_after_the_manager_left(service: MvuService, host: MemoryHost,
                                                                      ledger: Ledger) -> None:
    instance = await playing(service, host)
    disposers: list[Any] = []

    async def decides_then_leaves(event: Any) -> Any:
        disposers[0]()  # the manager leaves while its decision is pending
        await asyncio.sleep(0)
        return {"enabled": True}

    disposers.append(service.register_usage(decides_then_leaves, provider_id="dsh-memory-manager"))
    with pytest.raises(MvuError) as caught:
        await host.turn("s1", turn=1, user="a", reply="_.set('__proto__.x', 1);")
    assert caught.value.code == "MVU_USAGE_CANCELLED"
    assert await ledger.versions(instance) == []


@pytest.mark.parametrize("config", [
    {"type": "mvu-state", "store": {"on": "assistant_message_committed", "depth": 3}},
    {"type": "mvu-state", "store": 0},
    {"type": "mvu-state", "store": []},
    {"type": "mvu-state", "retrieve": {"on": "before_model_request", "role": "system"}},
])
def test_validate_config_refuses_unknown_or_malformed_triggers(config: dict[str, Any]) -> None:
    with pytest.raises(MvuError) as caught:
        MvuService.validate_config(config)
    assert caught.value.code == "MVU_CONFIG"


async def test_the_management_list_shows_a_record_whose_history_broke(service: MvuService, host: MemoryHost) -> None:
    healthy = await playing(service, host, "s1")
    broken = await playing(service, host, "s2", created_at=2000)
    await host.turn("s2", turn=1, user="a", reply="_.add('gold', 1);")
    host.truncate("s2", 3)
    listed = {record.id: record for record in await service.list(scope={"authority": "local"})}
    assert listed[healthy].source_error is None and listed[healthy].content is not None
    assert (listed[broken].source_error, listed[broken].content, listed[broken].revision) == (
        "MVU_HISTORY_UNAVAILABLE", None, 1)
    with pytest.raises(MvuError) as caught:
        await service.read(id=broken, scope=scope("s2"))
    assert caught.value.code == "MVU_HISTORY_UNAVAILABLE"
