"""The ``tavern.mvu/state`` source: what a preset block selecting it puts into one request."""

from __future__ import annotations

import json
from hashlib import sha256
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import PLAIN, playing

SELECTED = {"role": "system", "lifetime": "request"}
INSTRUCTIONS = ('Return variable changes as <JSONPatch>[{"op":"replace","path":"/field","value":0}]</JSONPatch>. '
                "Use delta for numeric changes. Output literal values only.")


async def test_nothing_is_injected_unless_the_source_is_selected_as_a_system_request_block(
        service: MvuService, host: MemoryHost) -> None:
    await playing(service, host, card=PLAIN)
    for selection in (None, {"role": "user", "lifetime": "request"}, {"role": "system", "lifetime": "chat"}):
        assembly = await service.resolve_request(session_id="s1", selection=selection)
        assert (assembly.blocks, assembly.diagnostics) == ([], [])


async def test_a_selected_source_gives_the_state_and_instructions_with_bound_diagnostics(
        service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    seen: list[dict[str, Any]] = []
    service.observe(seen.append)
    assembly = await service.resolve_request(session_id="s1", selection=SELECTED, turn=1, step=1)
    [block] = assembly.blocks
    block_id = "v1-" + sha256(json.dumps([instance, 0, None, 1], separators=(",", ":")).encode()).hexdigest()
    assert block == {"type": "text", "role": "system", "id": block_id, "name": "Plain",
                     "source": {"resourceId": instance, "field": "stat_data"},
                     "text": '{"hp":10,"items":[]}\n' + INSTRUCTIONS}
    assert assembly.diagnostics == [{"code": "MVU_RESOURCE_VERSION", "resourceId": instance, "blockId": block_id,
                                     "revision": 0, "configRevision": None, "strategyRevision": 1}]
    assert assembly.check_current() is True
    assert [fact["phase"] for fact in seen] == ["started", "triggered"]
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 3);")
    assert assembly.check_current() is False


async def test_a_managed_source_without_the_managers_decision_gives_nothing(service: MvuService,
                                                                           host: MemoryHost) -> None:
    await playing(service, host, card=PLAIN)
    service.register_usage(lambda request: None, provider_id="dsh-memory-manager")
    assembly = await service.resolve_request(session_id="s1", selection=SELECTED)
    assert assembly.blocks == []
    with pytest.raises(MvuError) as refused:
        await service.resolve_request(session_id="s1", selection=SELECTED, turn=-1)
    assert refused.value.code == "MVU_OPERATION"


async def test_a_preview_of_a_session_not_initialised_yet_is_unavailable_and_allocates_nothing(
        ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, resources=[{"id": "mvu:party", "session_ids": ["*"],
                                                               "initial": {"stat_data": {"hp": 100}}}])
    host.create_session("s1", created_at=1000)
    with pytest.raises(MvuError) as refused:
        await service.resolve_request(session_id="s1", selection=SELECTED, preview=True)
    assert refused.value.code == "MVU_PREVIEW_STATE_UNAVAILABLE"
    assert await ledger.resources(session_id="s1", kinds=("instance",)) == []
    # The request itself reads what the session would start from; once initialised, previews work.
    host.attach(service)
    host.append("s1", "turn/start", {"turn": 1})
    await host.drain()
    previewed = await service.resolve_request(session_id="s1", selection=SELECTED, preview=True)
    assert [json.loads(str(block["text"]).split("\n")[0]) for block in previewed.blocks] == [{"hp": 100}]
