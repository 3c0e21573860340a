"""``dsh-request-observed`` facts (A-4): a recorded assembly compared with the model request.

Only an assembly recorded by a trusted assembler, whose messages are exactly the reported ones,
and only the state blocks one of its nodes carries, give ``applied``; anything else gives nothing.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.prompt import observed
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost, feed
from tests.service.support import PLAIN, playing

SELECTED = {"role": "system", "lifetime": "request"}


async def assembled_turn(service: MvuService, host: MemoryHost) -> tuple[str, dict[str, Any]]:
    """A turn whose state block went into a request; the recorded assembly's data."""
    instance = await playing(service, host, card=PLAIN)
    host.append("s1", "turn/start", {"turn": 1})
    await host.drain()
    return instance, await _assembly(service)


async def _assembly(service: MvuService) -> dict[str, Any]:
    made = await service.resolve_request(session_id="s1", selection=SELECTED, turn=1)
    [block] = made.blocks
    messages = [{"role": "system", "content": block["text"]}, {"role": "user", "content": "hi"}]
    nodes = [{"id": f"preset:tavern.mvu/state:{block['id']}", "start": 0, "count": 1,
              "source": {"resourceId": block["source"]["resourceId"]}},
             {"id": "chat", "start": 1, "count": 1, "source": {"sourceId": "chat"}}]
    return {"turn": 1, "owner": "dsh-prompt-assembler", "messages": messages,
            "assembly": {"nodes": nodes, "diagnostics": made.diagnostics}}


async def test_the_reported_request_of_the_recorded_assembly_gives_applied_facts(service: MvuService,
                                                                                host: MemoryHost) -> None:
    instance, data = await assembled_turn(service, host)
    seq = host.append("s1", "request/assembly", data)
    observed = await service.observe_request(session_id="s1", messages=copy.deepcopy(data["messages"]))
    assert [fact["phase"] for fact in observed] == ["started", "triggered", "applied", "completed"]
    [diagnostic] = data["assembly"]["diagnostics"]
    for fact in observed:
        assert {key: fact[key] for key in ("id", "requestId", "eventId", "turn", "turnKind", "detail", "revision")} \
            == {"id": instance, "requestId": f"s1:{seq}", "eventId": f"s1:{seq}:{diagnostic['blockId']}", "turn": 1,
                "turnKind": "unknown", "detail": "dsh-request-observed", "revision": 0}
    stored = await service.facts(id=instance, scope={"session_id": "s1"})
    assert [fact["phase"] for fact in stored if fact.get("detail") == "dsh-request-observed"] == \
        ["started", "triggered", "applied", "completed"]


def _other_messages(data: dict[str, Any]) -> None:
    data["reported"] = [*data["messages"], {"role": "user", "content": "more"}]


def _owner(data: dict[str, Any]) -> None:
    data["owner"] = "someone-else"


def _no_owner(data: dict[str, Any]) -> None:
    del data["owner"]


def _node_past_the_messages(data: dict[str, Any]) -> None:
    data["assembly"]["nodes"][0]["count"] = 3


def _empty_node(data: dict[str, Any]) -> None:
    data["assembly"]["nodes"][0]["count"] = 0


def _node_of_another_block(data: dict[str, Any]) -> None:
    data["assembly"]["nodes"][0]["id"] = "preset:tavern.mvu/state:v1-other"


def _node_of_another_resource(data: dict[str, Any]) -> None:
    data["assembly"]["nodes"][0]["source"]["resourceId"] = "mvu:other"


def _no_nodes(data: dict[str, Any]) -> None:
    data["assembly"]["nodes"] = []


NOT_OBSERVED = [_other_messages, _owner, _no_owner, _node_past_the_messages, _empty_node, _node_of_another_block,
                _node_of_another_resource, _no_nodes]


@pytest.mark.parametrize("change", NOT_OBSERVED, ids=[change.__name__.strip("_") for change in NOT_OBSERVED])
async def test_no_fact_unless_the_assembly_proves_the_state_was_in_the_reported_request(
        service: MvuService, host: MemoryHost, change: Any) -> None:
    instance, data = await assembled_turn(service, host)
    change(data)
    reported = data.pop("reported", data["messages"])
    host.append("s1", "request/assembly", data)
    assert await service.observe_request(session_id="s1", messages=reported) == []
    assert not [fact for fact in await service.facts(id=instance, scope={"session_id": "s1"})
                if fact.get("detail") == "dsh-request-observed"]


async def test_a_child_node_naming_the_block_and_a_world_book_block_count(service: MvuService,
                                                                         host: MemoryHost) -> None:
    instance, data = await assembled_turn(service, host)
    [diagnostic] = data["assembly"]["diagnostics"]
    data["assembly"]["nodes"] = [{"id": "preset", "start": 0, "count": 2, "children": [
        {"name": diagnostic["blockId"], "source": {"resourceId": instance}}]},
        {"id": f"wb:entry:{diagnostic['blockId']}-wb", "start": 1, "count": 1,
         "source": {"sourceId": "worldbook", "resourceId": "world-book:lore"}}]
    data["assembly"]["diagnostics"].append({"code": "WORLD_BOOK_MVU_VARIABLE_VERSION", "resourceId": instance,
                                            "blockId": f"{diagnostic['blockId']}-wb",
                                            "blockResourceId": "world-book:lore", "revision": 0,
                                            "configRevision": None})
    host.append("s1", "request/assembly", data)
    observed = await service.observe_request(session_id="s1", messages=data["messages"])
    assert [fact["eventId"].rsplit(":", 1)[1] for fact in observed if fact["phase"] == "applied"] == \
        [diagnostic["blockId"], f"{diagnostic['blockId']}-wb"]


async def test_only_the_last_assembly_counts(service: MvuService, host: MemoryHost) -> None:
    _, data = await assembled_turn(service, host)
    host.append("s1", "request/assembly", data)
    host.append("s1", "request/assembly", {**data, "messages": data["messages"][:1]})
    assert await service.observe_request(session_id="s1", messages=data["messages"]) == []


async def test_the_store_keeps_the_evidence_not_the_messages(ledger: Ledger) -> None:
    stored_host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=stored_host)
    await service.discover(definition=PLAIN)
    await stored_host.create_session("s1", created_at=1000)
    await service.select_character(session_id="s1", character_id="plain")
    await feed(service, stored_host, "s1", [{"seq": 0, "type": "turn/start", "data": {"turn": 1}}])
    data = await _assembly(service)
    await stored_host.append("s1", [{"seq": 1, "type": "request/assembly", "data": data}])
    snapshot = await stored_host.inspect("s1")
    assert snapshot is not None
    kept = snapshot.events[1].data
    assert set(kept) == {"turn", "owner", "messagesSha256", "observed"} and "hi" not in str(kept)
    observed = await service.observe_request(session_id="s1", messages=data["messages"])
    assert [fact["phase"] for fact in observed] == ["started", "triggered", "applied", "completed"]
    assert await service.observe_request(session_id="s1", messages=data["messages"][:1]) == []


def test_matching_an_assembly_costs_bounded_work_whatever_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every state diagnostic is compared with every node: a hostile body of n nodes and n
    # diagnostics that never match would cost n squared comparisons on ingest.
    compared = 0
    carries = observed._carries

    def counted(node: Any, diagnostic: Any, count: int) -> bool:
        nonlocal compared
        compared += 1
        return carries(node, diagnostic, count)

    monkeypatch.setattr(observed, "_carries", counted)
    nodes = [{"id": f"n:{i}", "start": 0, "count": 1, "source": {"resourceId": "r"}} for i in range(600)]
    stray = {"code": observed.STATE_CODE, "resourceId": "r", "blockId": "none"}
    carried = {"code": observed.STATE_CODE, "resourceId": "r", "blockId": "0"}
    early = observed.evidence({"messages": [{}], "assembly": {"nodes": nodes, "diagnostics": [carried, stray]}})
    assert [item["blockId"] for item in early.observed] == ["0"]  # within the bound: matched
    compared = 0
    late = observed.evidence({"messages": [{}], "assembly": {"nodes": nodes, "diagnostics": [stray] * 600 + [carried]}})
    assert late.observed == [] and compared <= observed.MAX_CHECKS
