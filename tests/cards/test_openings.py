"""Openings through the Python API: the chosen greeting initialises a new session's instance
once, at its selection; each greeting keeps its own copy; a failing greeting refuses its opening
and writes nothing; after the first send the opening is fixed."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.cards import read_card
from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.cards import baiya
from tests.service.support import scope


async def _baiya(service: MvuService, host: MemoryHost, session_id: str = "s1", **names: str) -> None:
    found = read_card(baiya.card_bytes(), name="baiya")
    await service.discover(definition=found.definition("baiya"))
    host.create_session(session_id, created_at=1000)
    if names:
        host.append(session_id, "session/names", names)


async def _state(service: MvuService, instance: str, session_id: str = "s1") -> Any:
    record = await service.read(id=instance, scope=scope(session_id))
    assert record is not None
    return record


async def test_the_alternate_greetings_initvar_starts_baiya_at_15_not_35(service: MvuService,
                                                                         host: MemoryHost) -> None:
    await _baiya(service, host)
    chosen = await service.select_character(session_id="s1", character_id="baiya", greeting_index=1)
    assert chosen.greeting_index == 1 and chosen.instance_id is not None
    record = await _state(service, chosen.instance_id)
    assert record.content["stat_data"]["白娅"]["依存度"] == 15  # type: ignore[index,call-overload]
    assert record.content["stat_data"]["世界"]["当前地点"] == "公寓门口"  # type: ignore[index,call-overload]
    # Not a turn: the instance starts at revision 0, with no version and no fact.
    assert record.revision == 0 and record.version_key is None
    assert await service.history(id=chosen.instance_id, scope=scope("s1")) == []
    assert await service.facts(id=chosen.instance_id, scope=scope("s1")) == []
    assert record.content["mvu_schema"]["source"] == baiya.SCHEMA  # type: ignore[index,call-overload]


async def test_the_first_message_opens_with_the_lorebook_state(service: MvuService, host: MemoryHost) -> None:
    await _baiya(service, host)
    chosen = await service.select_character(session_id="s1", character_id="baiya")
    assert chosen.greeting_index == 0 and chosen.instance_id is not None
    record = await _state(service, chosen.instance_id)
    assert record.content["stat_data"]["白娅"]["依存度"] == 35  # type: ignore[index,call-overload]


async def test_a_greetings_patch_goes_through_the_declaration_and_the_names(service: MvuService,
                                                                           host: MemoryHost) -> None:
    await _baiya(service, host, user="阿明")
    chosen = await service.select_character(session_id="s1", character_id="baiya", greeting_index=2)
    assert chosen.instance_id is not None
    record = await _state(service, chosen.instance_id)
    # 150 is clamped to 100 by the declaration's transform.
    assert record.content["stat_data"]["白娅"]["依存度"] == 100  # type: ignore[index,call-overload]


async def test_switching_greetings_before_the_first_send_switches_the_state_and_each_keeps_its_copy(
        service: MvuService, host: MemoryHost) -> None:
    await _baiya(service, host)
    first = await service.select_character(session_id="s1", character_id="baiya", greeting_index=1)
    assert first.instance_id is not None
    edited = await service.update(id=first.instance_id, content={"stat_data": {
        **(await _state(service, first.instance_id)).content["stat_data"],  # type: ignore[dict-item]
        "白娅": {"依存度": 22, "着装": {"上装": "a", "下装": "b", "鞋子": "c"}}}},
        expected_revision=0, operation_id="edit", scope=scope("s1"))
    assert edited.revision == 1
    other = await service.select_character(session_id="s1", character_id="baiya", greeting_index=0)
    assert other.instance_id not in (None, first.instance_id)
    records = {record.id: record for record in await service.list(scope=scope("s1"))}
    assert records[other.instance_id].content["stat_data"]["白娅"]["依存度"] == 35  # type: ignore[index]
    back = await service.select_character(session_id="s1", character_id="baiya", greeting_index=1)
    assert back.instance_id == first.instance_id
    again = await _state(service, first.instance_id)
    assert again.revision == 1 and again.content["stat_data"]["白娅"]["依存度"] == 22  # type: ignore[index]
    # Reselecting the card without an index keeps the greeting it chose.
    kept = await service.select_character(session_id="s1", character_id="baiya")
    assert kept.greeting_index == 1 and kept.instance_id == first.instance_id


async def test_the_first_send_fixes_the_opening_and_its_turn_starts_from_it(service: MvuService,
                                                                           host: MemoryHost) -> None:
    await _baiya(service, host)
    chosen = await service.select_character(session_id="s1", character_id="baiya", greeting_index=1)
    assert chosen.instance_id is not None
    await host.turn("s1", turn=1, user="你好", reply="_.add('白娅.依存度', 5);", message_id="m1")
    after = await _state(service, chosen.instance_id)
    assert after.content["stat_data"]["白娅"]["依存度"] == 20  # type: ignore[index,call-overload]
    with pytest.raises(MvuError) as refused:
        await service.select_character(session_id="s1", character_id="baiya", greeting_index=0)
    assert refused.value.code == "MVU_READ_ONLY"
    same = await service.select_character(session_id="s1", character_id="baiya", greeting_index=1)
    assert same.instance_id == chosen.instance_id


@pytest.mark.parametrize("index", [3, 4])
async def test_a_failing_opening_is_refused_and_writes_nothing(service: MvuService, host: MemoryHost,
                                                               ledger: Ledger, index: int) -> None:
    await _baiya(service, host)
    with pytest.raises(MvuError) as refused:
        await service.select_character(session_id="s1", character_id="baiya", greeting_index=index)
    assert refused.value.code == "MVU_INITIALIZATION_INVALID"
    assert await ledger.selection("s1") == (False, None)
    assert await service.list(scope=scope("s1")) == []
    # Another greeting still opens.
    chosen = await service.select_character(session_id="s1", character_id="baiya", greeting_index=1)
    assert chosen.instance_id is not None


async def test_a_greeting_the_card_does_not_have_and_a_bad_index_are_refused(service: MvuService,
                                                                            host: MemoryHost) -> None:
    await _baiya(service, host)
    for index, code in ((9, "MVU_MISSING"), (-1, "MVU_SCOPE"), (True, "MVU_SCOPE")):
        with pytest.raises(MvuError) as refused:
            await service.select_character(session_id="s1", character_id="baiya", greeting_index=index)
        assert refused.value.code == code


async def test_a_greeting_over_one_mebibyte_is_refused_by_its_size(service: MvuService, host: MemoryHost) -> None:
    found = read_card(baiya.card_bytes("x" * (1024 * 1024 + 1)), name="big")
    await service.discover(definition=found.definition("big"))
    host.create_session("s1", created_at=1000)
    with pytest.raises(MvuError) as refused:
        await service.select_character(session_id="s1", character_id="big", greeting_index=1)
    assert refused.value.code == "MVU_LIMIT"
