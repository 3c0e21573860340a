"""Usage registrations, management mode, configuration checks and observers (DIGEST I-8, A-3, A-4), on both engines."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import playing, scope

MANAGER = "dsh-memory-manager"
STORE_CHAIN = ["parse_mvu_update", "validate_update", "apply_update"]
RETRIEVE_CHAIN = ["read_content", "render_state_and_update_instructions", "provide_to_model"]


async def state(service: MvuService, instance: str) -> tuple[Any, int, str, str]:
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    return record.content["stat_data"]["gold"], record.revision, record.management_mode, \
        record.stored_management_mode


async def phases(service: MvuService, instance: str, turn: int) -> list[tuple[Any, Any]]:
    return [(fact["phase"], fact.get("detail")) for fact in await service.facts(id=instance, scope=scope("s1"))
            if fact.get("turn") == turn]


async def test_a_registered_manager_without_a_decision_runs_nothing(service: MvuService, host: MemoryHost,
                                                                    ledger: Ledger) -> None:
    instance = await playing(service, host)
    asked: list[dict[str, Any]] = []

    def no_opinion(event: dict[str, Any]) -> None:
        asked.append(event)

    dispose = service.register_usage(no_opinion, provider_id=MANAGER)
    assert await state(service, instance) == (10, 0, "managed", "native")
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 5);")
    # No fallback to native: the reply is processed (never applied later) but changes nothing, and
    # its completion claims no committed state (only a real change is `state-committed`, A-4).
    assert await state(service, instance) == (10, 1, "managed", "native")
    assert await phases(service, instance, 1) == [("started", None), ("skipped", "usage-policy"),
                                                  ("completed", None)]
    [event] = asked
    assert (event["on"], event["managementMode"], event["event"]["containsMvuUpdate"]) == \
        ("assistant_message_committed", "managed", True)
    assert event["event"]["contains_mvu_update"] is True
    assert (event["event"]["messageId"], event["event"]["turn"]) == ("s1-m1", 1)  # native coordinates
    assert event["event"]["text"] == "_.add('gold', 5);" and event["variables"]["stat_data"]["gold"] == 10

    dispose()
    dispose()  # disposing twice changes nothing
    assert await state(service, instance) == (10, 1, "native", "native")
    await host.turn("s1", turn=2, user="b", reply="_.add('gold', 7);")
    assert await state(service, instance) == (17, 2, "native", "native")
    assert [fact[0] for fact in await phases(service, instance, 2)] == ["started", "triggered", "applied",
                                                                        "completed"]
    assert len(asked) == 1
    assert await ledger.audit() == []


async def test_a_manager_decision_enables_or_refuses_the_reply(service: MvuService, host: MemoryHost,
                                                               ledger: Ledger) -> None:
    instance = await playing(service, host)
    decisions: list[dict[str, JsonValue] | None] = [
        {"enabled": True, "configRevision": "cfg-1", "strategy": STORE_CHAIN},
        {"enabled": False, "config_revision": "cfg-2", "reason": "paused"},
    ]

    async def manager(event: dict[str, Any]) -> dict[str, JsonValue] | None:
        return decisions.pop(0)

    service.register_usage(manager, provider_id=MANAGER)
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 5);")
    assert await state(service, instance) == (15, 1, "managed", "native")
    facts = [fact for fact in await service.facts(id=instance, scope=scope("s1")) if fact.get("turn") == 1]
    assert [fact["phase"] for fact in facts] == ["started", "triggered", "applied", "completed"]
    assert facts[1]["configRevision"] == "cfg-1"
    await host.turn("s1", turn=2, user="b", reply="_.add('gold', 5);")
    assert await state(service, instance) == (15, 2, "managed", "native")
    skipped = [fact for fact in await service.facts(id=instance, scope=scope("s1"))
               if fact.get("turn") == 2 and fact["phase"] == "skipped"]
    assert [(fact["detail"], fact["configRevision"]) for fact in skipped] == [("usage-policy", "cfg-2")]
    assert await ledger.audit() == []


async def test_a_plain_handler_leaves_sources_native(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    service.register_usage(lambda event: None)
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 5);")
    assert await state(service, instance) == (15, 1, "native", "native")
    # ... but any registered handler can refuse.
    service.register_usage(lambda event: {"enabled": False})
    await host.turn("s1", turn=2, user="b", reply="_.add('gold', 5);")
    assert await state(service, instance) == (15, 2, "native", "native")


@pytest.mark.parametrize(("answer", "code"), [
    ({"enabled": True, "strategy": list(reversed(STORE_CHAIN))}, "MVU_CONFIG"),
    ({"enabled": True, "strategy": [{"operation": "parse_mvu_update", "depth": 2}]}, "MVU_CONFIG"),
    ({"enabled": "yes"}, "MVU_USAGE"),
    ("raise", "MVU_USAGE"),
])
async def test_a_bad_decision_is_a_failed_receipt(service: MvuService, host: MemoryHost, ledger: Ledger,
                                                   answer: Any, code: str) -> None:
    instance = await playing(service, host)

    def manager(event: dict[str, Any]) -> Any:
        if answer == "raise":
            raise RuntimeError("manager crashed")
        return answer

    service.register_usage(manager, provider_id=MANAGER)
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 5);")
    assert (await state(service, instance))[:2] == (10, 1)
    [version] = await ledger.versions(instance)
    assert (version.kind, version.error) == ("failed", code)
    assert ("failed", code) in await phases(service, instance, 1)
    assert await ledger.audit() == []


def test_validate_config_accepts_only_the_supported_chains() -> None:
    accepted = [
        {"type": "mvu-state"},
        {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": STORE_CHAIN}},
        {"type": "mvu-state", "store": {"on": "assistant_message_committed",
                                        "strategy": [{"operation": name} for name in STORE_CHAIN]},
         "retrieve": {"on": "before_model_request", "strategy": RETRIEVE_CHAIN}},
        {"type": "mvu-state", "retrieve": {"on": "before_model_request"}},
    ]
    for config in accepted:
        assert MvuService.validate_config(config) is True
    refused: list[Any] = [
        None,
        {"type": "other"},
        {"type": "mvu-state", "store": {"on": "before_model_request"}},
        {"type": "mvu-state", "retrieve": {"on": "assistant_message_committed"}},
        # card_variable_update is a source execution fact, not a manager's store trigger.
        {"type": "mvu-state", "store": {"on": "card_variable_update"}},
        {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": STORE_CHAIN[:2]}},
        {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": RETRIEVE_CHAIN}},
        {"type": "mvu-state", "retrieve": {"on": "before_model_request",
                                           "strategy": [{"operation": "read_content", "limit": 1},
                                                        *RETRIEVE_CHAIN[1:]]}},
        {"type": "mvu-state", "retrieve": {"on": "before_model_request", "strategy": [1, 2, 3]}},
    ]
    for config in refused:
        with pytest.raises(MvuError) as error:
            MvuService.validate_config(config)
        assert error.value.code == "MVU_CONFIG", config


async def test_the_stored_mode_is_only_a_preference(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    receipt = await service.set_management_mode(id=instance, mode="managed", expected_revision=0,
                                                operation_id="mode-1", scope=scope("s1"))
    assert (receipt.management_mode, receipt.stored_management_mode, receipt.revision, receipt.replayed) == \
        ("native", "managed", 1, False)
    replay = await service.set_management_mode(id=instance, mode="managed", expected_revision=0,
                                               operation_id="mode-1", scope=scope("s1"))
    assert (replay.revision, replay.replayed) == (1, True)
    with pytest.raises(MvuError) as conflict:
        await service.set_management_mode(id=instance, mode="native", expected_revision=0, operation_id="mode-1",
                                          scope=scope("s1"))
    assert conflict.value.code == "MVU_IDEMPOTENCY_CONFLICT"
    with pytest.raises(MvuError) as stale:
        await service.set_management_mode(id=instance, mode="native", expected_revision=0, operation_id="mode-2",
                                          scope=scope("s1"))
    assert stale.value.code == "REVISION_CONFLICT"
    # Stored 'managed' with no manager registered: replies still run natively.
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 5);")
    assert await state(service, instance) == (15, 2, "native", "managed")
    dispose = service.register_usage(lambda event: {"enabled": True}, provider_id=MANAGER)
    assert await state(service, instance) == (15, 2, "managed", "managed")
    dispose()
    assert await state(service, instance) == (15, 2, "native", "managed")
    assert await ledger.audit() == []


async def test_observers_see_committed_facts_and_never_fail_the_commit(service: MvuService, host: MemoryHost,
                                                                       ledger: Ledger) -> None:
    instance = await playing(service, host)
    seen: list[tuple[Any, Any]] = []
    revisions: list[int] = []
    read_back = asyncio.Event()

    def failing(fact: dict[str, JsonValue]) -> None:
        raise RuntimeError("observer bug")

    async def failing_later(fact: dict[str, JsonValue]) -> None:
        raise RuntimeError("async observer bug")

    def recorder(fact: dict[str, JsonValue]) -> None:
        seen.append((fact["phase"], fact.get("turn")))
        fact["phase"] = "tampered"  # each observer gets its own copy

    async def reader(fact: dict[str, JsonValue]) -> None:
        # Reading the session from a listener: it runs after the commit, outside its transaction
        # and its session's work, so this neither waits for itself nor sees uncommitted state.
        if fact["phase"] == "completed":
            record = await service.read(id=instance, scope=scope("s1"))
            assert record is not None
            revisions.append(record.revision)
            read_back.set()

    service.observe(failing)
    service.observe(failing_later)
    service.observe(recorder)
    dispose = service.observe(reader)
    await asyncio.wait_for(host.turn("s1", turn=1, user="a", reply="_.add('gold', 5);"), timeout=30)
    await asyncio.wait_for(read_back.wait(), timeout=30)
    assert await state(service, instance) == (15, 1, "native", "native")
    assert seen == [("started", 1), ("triggered", 1), ("applied", 1), ("completed", 1)]
    assert revisions == [1]
    assert [fact["phase"] for fact in await service.facts(id=instance, scope=scope("s1"))] == \
        ["started", "triggered", "applied", "completed"]
    dispose()
    await service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 1}}, expected_revision=1,
                         operation_id="edit", scope=scope("s1"))
    assert seen[4:] == [("started", None), ("triggered", None), ("applied", None), ("completed", None)]
    assert revisions == [1]
    assert await ledger.audit() == []
