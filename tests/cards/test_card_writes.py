"""The original's card-write scenarios through the Python API: an enabled card script binds to the
timeline's head message and writes through its capability under grant, CAS, idempotency and the
source's declaration, every check made again just before the commit; it never asks the usage
policy, and its facts carry ``configRevision: null``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.cards.card_support import CARD, IDENTITY, SCOPE, Held, grant, patch, played, timeline


@pytest.fixture
async def card(ledger: Ledger, host: MemoryHost) -> MvuService:
    service = MvuService(ledger=ledger, host=host, resources=[CARD])
    host.attach(service)
    await played(service, host)
    return service


async def _code(call: Any) -> str:
    with pytest.raises(MvuError) as refused:
        await call
    return refused.value.code


async def _hp(service: MvuService) -> Any:
    snapshot = await service.snapshot(scope=SCOPE)
    return snapshot["variables"]["stat_data"]["hp"]  # type: ignore[index,call-overload]


async def _facts(service: MvuService, phase: str) -> list[dict[str, Any]]:
    facts = await service.facts(id="mvu:card", scope={"session_id": "s"})
    return [fact for fact in facts if fact["phase"] == phase and fact.get("on") == "card_variable_update"]


async def _bind(service: MvuService, **extra: Any) -> str:
    bound = await service.create_card_binding(scope=SCOPE, grant_id="grant", source_identity=IDENTITY, **extra)
    return str(bound["capability"])


async def test_the_snapshot_is_the_bare_shape_of_the_head_message(card: MvuService) -> None:
    snapshot = await card.snapshot(scope=SCOPE)
    assert snapshot["version"] == 1 and snapshot["status"] == "available" and snapshot["scope"] == SCOPE
    assert snapshot["revision"] == 1 and snapshot["currentRevision"] == 1 and snapshot["resourceId"] == "mvu:card"
    assert snapshot["variables"]["stat_data"] == {"hp": 9}  # type: ignore[index,call-overload]
    assert "ok" not in snapshot


async def test_enabled_card_writes_keep_binding_cas_and_idempotency_without_a_usage_gate(
        card: MvuService, host: MemoryHost) -> None:
    assert await _code(_bind(card)) == "MVU_WRITE_DENIED"
    grant(host)
    capability = await _bind(card)
    asked: list[Any] = []

    async def handler(event: Any) -> Any:
        asked.append(event)
        return None

    dispose = card.register_usage(handler, provider_id="dsh-memory-manager")
    written = await card.card_write(capability=capability, **patch(-2, 1, "click"))
    assert written["revision"] == 2 and written["variables"]["stat_data"] == {"hp": 7}
    assert written["currentRevision"] == 2 and written["status"] == "available" and written["scope"] == SCOPE
    again = await card.card_write(capability=capability, **patch(-2, 1, "click"))
    assert again == written
    assert len(await _facts(card, "applied")) == 1
    assert await _hp(card) == 7
    assert await _code(card.card_write(capability=capability, **patch(-1, 1, "stale"))) == "REVISION_CONFLICT"
    assert await _code(card.card_write(capability=capability, **{**patch(-2, 2, "click"), "value": []})) \
        == "MVU_IDEMPOTENCY_CONFLICT"
    assert asked == []
    dispose()
    written = await card.card_write(capability=capability, **patch(-2, 2, "removed"))
    assert written["variables"]["stat_data"] == {"hp": 5}
    applied = await _facts(card, "applied")
    assert len(applied) == 2 and all(fact["configRevision"] is None for fact in applied)
    assert all(fact["cause"] == "user-interaction" for fact in applied)
    host.facts.revoke_grant("grant")
    assert await _code(card.card_write(capability=capability, **patch(-1, 3, "after"))) == "MVU_WRITE_DENIED"


async def test_replace_keeps_the_source_schema_and_history_or_revoked_bindings_cannot_write(
        card: MvuService, host: MemoryHost) -> None:
    grant(host)
    capability = await _bind(card)
    replace: dict[str, Any] = {"operation": "replace", "expected_revision": 1, "cause": "script"}
    assert await _code(card.card_write(capability=capability, value={"stat_data": {"hp": -1}}, operation_id="bad",
                                       **replace)) == "MVU_SCHEMA"
    written = await card.card_write(capability=capability, value={"stat_data": {"hp": 4}}, operation_id="four",
                                    **replace)
    assert written["variables"]["stat_data"] == {"hp": 4} and "mvu_schema" in written["variables"]
    host.facts.report_playthrough(timeline(head=False))
    assert await _code(card.card_write(capability=capability, **patch(1, 2, "history"))) == "MVU_READ_ONLY"
    host.facts.report_playthrough(timeline())
    card.revoke_card_binding(capability=capability)
    assert await _code(card.card_write(capability=capability, **patch(1, 2, "revoked"))) == "MVU_WRITE_DENIED"
    assert await _hp(card) == 4


@pytest.mark.parametrize("meanwhile", ["abort", "revoke-grant"])
async def test_cancelling_or_disabling_while_the_scope_resolves_commits_nothing(
        card: MvuService, host: MemoryHost, meanwhile: str) -> None:
    grant(host)
    capability = await _bind(card)
    held = Held(host, 1)
    signal = asyncio.Event()
    write = asyncio.ensure_future(card.card_write(capability=capability, signal=signal, **patch(-1, 1, "held")))
    await held.reached.wait()
    if meanwhile == "abort":
        signal.set()
    else:
        host.facts.revoke_grant("grant")
    held.release.set()
    with pytest.raises((MvuError, asyncio.CancelledError)):
        await write
    host.facts.membership = held.inner  # type: ignore[method-assign]
    assert await _hp(card) == 9 and await _facts(card, "applied") == []


async def test_revoking_the_grant_during_the_final_scope_read_is_checked_before_the_commit(
        card: MvuService, host: MemoryHost) -> None:
    grant(host)
    capability = await _bind(card)
    held = Held(host, 2)
    write = asyncio.ensure_future(card.card_write(capability=capability, **patch(-1, 1, "late")))
    await held.reached.wait()
    host.facts.revoke_grant("grant")
    held.release.set()
    with pytest.raises(MvuError) as refused:
        await write
    assert refused.value.code == "MVU_WRITE_DENIED"
    assert await _hp(card) == 9 and await _facts(card, "applied") == []
    skipped = await _facts(card, "skipped")
    assert [fact["reason"] for fact in skipped] == ["MVU_WRITE_DENIED"]


async def test_failed_binds_take_no_capability_slot(card: MvuService, host: MemoryHost) -> None:
    grant(host)
    inner = host.facts.membership
    calls = 0

    async def flaky(playthrough_id: str) -> Any:
        nonlocal calls
        calls += 1
        if calls % 2 == 0:
            raise RuntimeError("transient")
        return await inner(playthrough_id)

    host.facts.membership = flaky  # type: ignore[method-assign]
    for _ in range(513):
        with pytest.raises(RuntimeError, match="transient"):
            await _bind(card)
    host.facts.membership = inner  # type: ignore[method-assign]
    assert await _bind(card)


async def test_a_binding_has_no_time_limit(card: MvuService, host: MemoryHost,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    grant(host)
    capability = await _bind(card)
    import time
    later = time.time() + 2 * 3600
    monkeypatch.setattr(time, "time", lambda: later)
    written = await card.card_write(capability=capability, **patch(1, 1, "later"))
    assert written["variables"]["stat_data"] == {"hp": 10} and written["revision"] == 2


async def test_one_binding_id_binds_once_concurrently_and_other_parameters_conflict(
        card: MvuService, host: MemoryHost) -> None:
    grant(host)
    binding_id = "0b7c4d7e-5f2a-4c1b-9d3e-2a1f0e9d8c7b"
    bound = await asyncio.gather(*(_bind(card, binding_id=binding_id) for _ in range(20)))
    assert set(bound) == {binding_id}
    for _ in range(513):
        assert await _bind(card, binding_id=binding_id) == binding_id
    other = {**IDENTITY, "sha256": "b" * 64}
    with pytest.raises(MvuError) as refused:
        await card.create_card_binding(scope=SCOPE, grant_id="grant", source_identity=other, binding_id=binding_id)
    assert refused.value.code == "MVU_IDEMPOTENCY_CONFLICT"
    written = await card.card_write(capability=binding_id, **patch(-1, 1, "one"))
    assert written["revision"] == 2


async def test_revoking_a_binding_while_it_is_made_never_resurrects_it(card: MvuService, host: MemoryHost) -> None:
    grant(host)
    binding_id = "1c8d5e8f-6a3b-4d2c-8e4f-3b2a1f0e9d8c"
    held = Held(host, 2)  # the snapshot's own look at the scope, after the binding's first
    bind = asyncio.ensure_future(_bind(card, binding_id=binding_id))
    await held.reached.wait()
    card.revoke_card_binding(capability=binding_id)
    held.release.set()
    with pytest.raises(MvuError) as refused:
        await bind
    assert refused.value.code == "MVU_WRITE_DENIED"
    assert await _code(card.card_write(capability=binding_id, **patch(-1, 1, "ghost"))) == "MVU_WRITE_DENIED"
    assert await _bind(card)


async def test_bad_arguments_are_refused_with_their_codes(card: MvuService, host: MemoryHost) -> None:
    grant(host)
    capability = await _bind(card)
    for changed, code in (({"operation": "merge"}, "MVU_OPERATION"), ({"cause": "timer"}, "MVU_OPERATION"),
                          ({"operation_id": ""}, "MVU_OPERATION"), ({"expected_revision": 1.5}, "MVU_OPERATION"),
                          ({"value": {"op": "delta"}}, "MVU_PARSE")):
        assert await _code(card.card_write(capability=capability, **{**patch(-1, 1, "x"), **changed})) == code
    for scope, code in (({**SCOPE, "messageId": "m"}, "MVU_SCOPE"), ({**SCOPE, "characterId": "c"}, "MVU_SCOPE"),
                        ({**SCOPE, "mode": "draft"}, "MVU_SCOPE"), ([], "MVU_SCOPE")):
        assert await _code(card.snapshot(scope=scope)) == code  # type: ignore[arg-type]
    assert await _code(card.create_card_binding(scope=SCOPE, grant_id="grant", source_identity=IDENTITY,
                                                binding_id="not-a-uuid")) == "MVU_SCOPE"
    assert await _code(card.create_card_binding(scope=SCOPE, grant_id="grant",
                                                source_identity={**IDENTITY, "scope": {}})) == "MVU_SCOPE"
    assert await _hp(card) == 9


async def test_a_snapshot_carries_the_resources_command_processor_receipt(card: MvuService) -> None:
    """C-5: records and binding snapshots show the registration; one without none."""
    assert "commandProcessor" not in await card.snapshot(scope=SCOPE)
    source = ("eventOn('global_Mvu_initialized', () => "
              "eventOn(Mvu.events.COMMAND_PARSED, (variables, commands) => {}));")
    registered = await card.register_command_processor(id="mvu:card", source=source)
    assert (await card.snapshot(scope=SCOPE))["commandProcessor"] == registered.receipt
    registered.dispose()
    assert "commandProcessor" not in await card.snapshot(scope=SCOPE)
