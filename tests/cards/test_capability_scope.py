"""A capability bound at a message scope ends with that scope (docs/cards.md, "Card bindings and
writes"): a selection call for the session (another character, none, the same one again) or a new
report of the playthrough refuses its next write with ``MVU_READ_ONLY`` and writes nothing, while a
binding made afterwards on a scope that is still writable works."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.host import Playthrough, TimelineNode, Variant
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.cards.card_support import HP_SCHEMA, patch, selecting

CARD: dict[str, Any] = {"character_id": "c", "name": "C", "initvar": ["hp: 10\n"], "schema_source": HP_SCHEMA}
OTHER: dict[str, Any] = {"character_id": "d", "initvar": ["hp: 1\n"]}


class Played:
    """Session ``s`` plays card ``c``: one completed turn (hp 10 → 9), the timeline's head its reply."""

    def __init__(self, service: MvuService, host: MemoryHost, instance: str, seq: int) -> None:
        self.service = service
        self.host = host
        self.instance = instance
        self.scope: dict[str, Any] = {"playthroughId": "p", "sessionId": "s", "nodeId": "n", "variantId": "v",
                                      "endEventId": seq, "sessionFormatVersion": 4}
        self.identity: dict[str, Any] = {"version": 1, "sha256": "d" * 64, "scope": self.scope}
        self.report()
        host.facts.grant("grant", source_identity=self.identity, scope=self.scope)

    def report(self) -> None:
        self.host.facts.report_playthrough(Playthrough("p", "c", "s", nodes=(TimelineNode("n", (
            Variant("v", "s", self.scope["endEventId"], 4),)),), head=("n", "v")))

    async def bind(self) -> str:
        bound = await self.service.create_card_binding(scope=self.scope, grant_id="grant",
                                                       source_identity=self.identity)
        return str(bound["capability"])

    async def write(self, capability: str, expected: int, operation_id: str) -> dict[str, Any]:
        return await self.service.card_write(capability=capability, **patch(-1, expected, operation_id))

    async def hp(self) -> Any:
        record = await self.service.read(id=self.instance, scope={"authority": "local", "session_id": "s"})
        assert record is not None
        return record.content["stat_data"]["hp"], record.revision


@pytest.fixture
async def played(ledger: Ledger, host: MemoryHost) -> Played:
    service, instance = await selecting(ledger, host, CARD, OTHER)
    assert instance is not None
    seq = await host.turn("s", turn=1, user="go", reply="_.add('hp', -1);", message_id="reply")
    return Played(service, host, instance, seq)


async def _refused(call: Awaitable[Any]) -> str:
    with pytest.raises(MvuError) as refused:
        await call
    return refused.value.code


async def _ends_the_capability(played: Played, scope_ends: Callable[[], Awaitable[Any]]) -> None:
    capability = await played.bind()
    assert (await played.write(capability, 1, "first"))["revision"] == 2  # the capability works
    await scope_ends()
    assert await _refused(played.write(capability, 2, "after")) == "MVU_READ_ONLY"
    assert await played.hp() == (8, 2)  # nothing written
    facts = await played.service.facts(id=played.instance, scope={"session_id": "s"})
    assert [fact.get("reason") for fact in facts if fact.get("eventId") == "after"] == [None, "MVU_READ_ONLY"]


async def test_a_character_switch_ends_a_message_capability(played: Played) -> None:
    await _ends_the_capability(played, lambda: played.service.select_character(session_id="s", character_id="d"))
    assert await _refused(played.bind()) == "MVU_READ_ONLY"  # and the scope is no longer the card's


async def test_an_unselect_ends_a_message_capability(played: Played) -> None:
    await _ends_the_capability(played, lambda: played.service.select_character(session_id="s", character_id=None))


async def test_selecting_the_same_character_again_ends_a_message_capability(played: Played) -> None:
    await _ends_the_capability(played, lambda: played.service.select_character(session_id="s", character_id="c"))
    # The scope itself is still writable: a binding made now writes.
    fresh = await played.bind()
    assert (await played.write(fresh, 2, "fresh"))["revision"] == 3
    assert await played.hp() == (7, 3)


async def test_reporting_the_playthrough_again_ends_a_message_capability(played: Played) -> None:
    async def report() -> None:
        played.report()

    await _ends_the_capability(played, report)
    fresh = await played.bind()
    assert (await played.write(fresh, 2, "fresh"))["revision"] == 3


async def test_a_selection_of_another_session_leaves_the_capability(played: Played) -> None:
    """Only the bound session's selection ends it."""
    capability = await played.bind()
    played.host.create_session("t", created_at=1000)
    await played.service.select_character(session_id="t", character_id="d")
    assert (await played.write(capability, 1, "still"))["revision"] == 2
