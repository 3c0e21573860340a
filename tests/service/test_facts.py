"""Trigger facts (DIGEST A-4, A-5): the phases and details each update writes, ``applied`` only
when the state really changed, and never any chat text or variables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import Ledger
from mvu_store.ledger.fact_log import FactLog as StoredFacts
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import PLAIN, finish_turn, playing, scope, text_message, turn_end

COMMON_KEYS = {"phase", "id", "eventId", "sessionId", "turn", "turnKind", "on", "recordedAt"}


def phases(facts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(f["phase"], f.get("revision"), f.get("detail")) for f in facts]


async def reply_facts(service: MvuService, instance: str, event_id: str) -> list[dict[str, Any]]:
    return [f for f in await service.facts(id=instance, scope=scope("s1")) if f["eventId"] == event_id]


async def last_key(service: MvuService, instance: str) -> str:
    return (await service.history(id=instance, scope=scope("s1")))[-1].key


async def test_a_committed_change_is_started_triggered_applied_completed(service: MvuService, host: MemoryHost,
                                                                         ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 3);")
    key = await last_key(service, instance)
    facts = await reply_facts(service, instance, key)
    assert phases(facts) == [("started", None, None), ("triggered", None, None),
                             ("applied", 1, "state-committed"), ("completed", 1, "state-committed")]
    counts = ("commandsApplied", "commandsRefused", "commandsIgnored", "commandsPossible")
    for fact in facts:
        assert {k for k in fact if k not in ("revision", "detail", *counts)} == COMMON_KEYS
        assert (fact["id"], fact["sessionId"], fact["turn"], fact["turnKind"], fact["on"]) == (
            instance, "s1", 1, "human", "assistant_message_committed")
    # Only `completed` says what became of the commands (issue 33).
    assert [tuple(fact.get(name) for name in counts) for fact in facts][-1] == (1, 0, 0, 0)
    assert all(name not in fact for fact in facts[:-1] for name in counts)
    assert await ledger.audit() == []


async def test_a_reply_without_commands_is_skipped_and_not_applied(service: MvuService, host: MemoryHost,
                                                                   ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="go", reply="Nothing happens.")
    facts = await reply_facts(service, instance, await last_key(service, instance))
    assert phases(facts) == [("started", None, None), ("skipped", None, "no-update"),
                             ("completed", 1, None)]


async def test_commands_that_change_nothing_are_not_applied(service: MvuService, host: MemoryHost,
                                                            ledger: Ledger) -> None:
    instance = await playing(service, host)
    # gold is 10 already, and a refused command leaves no trace.
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 10);\n_.set('gold', -1);")
    facts = await reply_facts(service, instance, await last_key(service, instance))
    assert phases(facts) == [("started", None, None), ("triggered", None, None),
                             ("completed", 1, None)]


async def test_a_failed_reply_is_started_triggered_failed(service: MvuService, host: MemoryHost,
                                                          ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="go", reply="_.set('__proto__.polluted', 1);")
    facts = await reply_facts(service, instance, await last_key(service, instance))
    assert phases(facts) == [("started", None, None), ("triggered", None, None), ("failed", 1, "MVU_PATH")]
    assert all(f["phase"] != "applied" for f in await service.facts(id=instance, scope=scope("s1")))


async def test_a_manual_edit_writes_its_own_facts(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    await service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 1}}, expected_revision=0,
                         operation_id="op-1", scope=scope("s1"))
    await service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 1}}, expected_revision=1,
                         operation_id="op-2", scope=scope("s1"))
    # Replaying an operation writes nothing more.
    await service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 1}}, expected_revision=0,
                         operation_id="op-1", scope=scope("s1"))
    first = [f for f in await service.facts(id=instance, scope=scope("s1")) if f["eventId"] == "op-1"]
    second = [f for f in await service.facts(id=instance, scope=scope("s1")) if f["eventId"] == "op-2"]
    assert phases(first) == [("started", None, None), ("triggered", None, None),
                             ("applied", 1, "state-committed"), ("completed", 1, "manual-update")]
    assert phases(second) == [("started", None, None), ("triggered", None, None), ("completed", 2, "manual-update")]
    assert {f["on"] for f in first + second} == {"manual_update"}


async def test_facts_are_per_session_and_resource(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    one = await playing(service, host, "s1")
    host.create_session("s2", created_at=1000)
    two = (await service.select_character(session_id="s2", character_id="hero")).instance_id
    assert two is not None
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 3);")
    await host.turn("s2", turn=1, user="go", reply="_.set('gold', 4);")
    assert {f["id"] for f in await service.facts(id=one, scope=scope("s1"))} == {one}
    assert {f["sessionId"] for f in await service.facts(id=two, scope=scope("s2"))} == {"s2"}
    assert await service.facts(id="mvu:instance-unknown", scope=scope("s1")) == []


async def test_facts_never_hold_chat_text_or_variables(service: MvuService, host: MemoryHost,
                                                       ledger: Ledger) -> None:
    instance = await playing(service, host, card=PLAIN)
    secret = "Zebra-Quartz-7731"
    await host.turn("s1", turn=1, user=f"whisper {secret}",
                    reply=f"The password is {secret}. _.set('items', ['{secret}-item']);")
    await host.turn("s1", turn=2, user="again", reply=f"{secret} again, no update.")
    await service.update(id=instance, content={"stat_data": {"hp": 1, "items": [f"{secret}-edit"]}},
                         expected_revision=2, operation_id="op-secret", scope=scope("s1"))
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and secret in json.dumps(record.content)
    stored = await ledger.facts()
    assert len(stored) >= 11
    text = json.dumps(stored)
    assert secret not in text and "items" not in text and "stat_data" not in text
    for fact in stored:
        assert isinstance(fact, dict)
        assert all(value is None or isinstance(value, (str, int, float)) for value in fact.values())


async def test_a_turn_without_a_human_message_has_an_unknown_kind(service: MvuService, host: MemoryHost,
                                                                  ledger: Ledger) -> None:
    instance = await playing(service, host)
    host.attach(None)
    start = host.append("s1", "turn/start", {"turn": 1})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "assistant/message", text_message(1, "m1", "_.set('gold', 3);"))
    host.append("s1", "turn/end", turn_end(1))
    await service.ingest(session_id="s1")
    facts = await reply_facts(service, instance, await last_key(service, instance))
    assert {f["turnKind"] for f in facts} == {"unknown"}
    assert [f["phase"] for f in facts] == ["started", "triggered", "applied", "completed"]


async def test_facts_the_store_refuses_are_reported_and_the_turn_still_commits(
        service: MvuService, host: MemoryHost, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    instance = await playing(service, host)
    host.attach(None)
    start = host.append("s1", "turn/start", {"turn": 1})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    finish_turn(host, "s1", 1, "_.set('gold', 3);")

    def refusing(self: StoredFacts, tx: Any, facts: Any) -> list[int]:
        raise MvuError(Code.LIMIT, "no room for facts")

    monkeypatch.setattr(StoredFacts, "insert_facts", refusing)
    report = await service.ingest(session_id="s1")
    monkeypatch.undo()

    assert [outcome.status for outcome in report.outcomes] == ["committed"]
    assert report.fact_errors == [Code.LIMIT.value]
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.revision == 1
    assert record.content["stat_data"]["gold"] == 3  # type: ignore[index,call-overload]
    assert await reply_facts(service, instance, await last_key(service, instance)) == []
