"""Greeting flips before the first send: one live copy per card and session at every moment.

Whatever order a host flips greetings in, the copies it left are private drafts: never listed,
given to the model by the state source or the world-book macro, read by a prompt dependency, or
fed the first reply; switching back finds them as they were.
"""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.cards.test_openings import _baiya
from tests.service.support import PLAIN, scope

# The opening 依存度 of each greeting the Baiya card opens with.
OPENING = {0: 35, 1: 15, 2: 100}
SEQUENCES = [(0, 1, 0), (0, 1), (1, 0, 1), (1, 0), (1, 2, 0), (2, 0, 1, 2), (0, 0, 1), (1, 1)]
MACRO = "hp {{format_message_variable::stat_data}}"
STATE_SOURCE = {"role": "system", "lifetime": "request"}


def _local() -> dict[str, Any]:
    return {"authority": "local", "sessionId": "s1"}


def _world_book(turn: int | None) -> dict[str, Any]:
    return {"preview": turn is None, "turn": turn, "step": None, "usage": "world-book-variable",
            "consumer": {"adapterId": "tavern.world-books", "id": "world-book:character:baiya:embedded"}}


def _dependence(content: Any) -> int:
    return int(content["stat_data"]["白娅"]["依存度"])


async def _flip(service: MvuService, host: MemoryHost, sequence: tuple[int, ...]) -> dict[int, str]:
    await _baiya(service, host)
    copies: dict[int, str] = {}
    for index in sequence:
        chosen = await service.select_character(session_id="s1", character_id="baiya", greeting_index=index)
        assert chosen.instance_id is not None and chosen.greeting_index == index
        copies[index] = chosen.instance_id
    return copies


async def _prompt_paths_see_only(service: MvuService, live: str, dependence: int, turn: int | None) -> None:
    listed = await service.list(scope=scope("s1"))
    assert [record.id for record in listed] == [live]
    assembled = await service.resolve_request(session_id="s1", selection=STATE_SOURCE, turn=turn, preview=False)
    assert [block["source"]["resourceId"] for block in assembled.blocks] == [live]
    assert f'"依存度":{dependence}' in str(assembled.blocks[0]["text"])
    found = await service.resolve_prompt_dependency(scope=_local(), event=_world_book(turn))
    assert found is not None and found.id == live and _dependence(found.content) == dependence
    rendered = await service.render_world_book(scope=_local(), entries=[{"text": MACRO}], turn=turn,
                                               preview=turn is None)
    assert rendered.id == live and f"依存度: {dependence}" in str(rendered.texts[0])


@pytest.mark.parametrize("sequence", SEQUENCES, ids=["-".join(map(str, s)) for s in SEQUENCES])
async def test_after_any_flip_sequence_only_the_chosen_copy_is_live_before_and_after_the_first_send(
        service: MvuService, host: MemoryHost, sequence: tuple[int, ...]) -> None:
    copies = await _flip(service, host, sequence)
    final = sequence[-1]
    live = copies[final]
    await _prompt_paths_see_only(service, live, OPENING[final], turn=None)
    for index, draft in copies.items():
        if index == final:
            continue
        # A draft is no resource of the session: a read in its scope, a dependency naming it.
        assert await service.read(id=draft, scope=scope("s1")) is None
        assert await service.resolve_prompt_dependency(id=draft, scope=_local(),
                                                       event={**_world_book(None), "usage": "world-book-variable"}) \
            is None
        # It is kept, as it was, for switching back (the management view still shows it).
        kept = await service.read(id=draft, scope=scope())
        assert kept is not None and _dependence(kept.content) == OPENING[index] and kept.revision == 0

    await host.turn("s1", turn=1, user="你好", reply="_.add('白娅.依存度', 5);", message_id="m1")
    replied = min(OPENING[final] + 5, 100)  # the declaration clamps at 100
    after = await service.read(id=live, scope=scope("s1"))
    assert after is not None and after.revision == 1 and _dependence(after.content) == replied
    await _prompt_paths_see_only(service, live, replied, turn=None)
    for index, draft in copies.items():
        if index != final:  # the first reply reached no draft
            kept = await service.read(id=draft, scope=scope())
            assert kept is not None and kept.revision == 0 and _dependence(kept.content) == OPENING[index]


async def test_a_send_reads_its_turns_checkpoint_of_the_live_copy_after_a_flip(service: MvuService,
                                                                              host: MemoryHost) -> None:
    copies = await _flip(service, host, (0, 1, 0))
    host.append("s1", "turn/start", {"turn": 1})
    await host.drain()
    await _prompt_paths_see_only(service, copies[0], OPENING[0], turn=1)


async def test_switching_back_to_a_draft_makes_it_the_live_copy_with_its_edit(service: MvuService,
                                                                              host: MemoryHost) -> None:
    copies = await _flip(service, host, (1,))
    content = (await service.read(id=copies[1], scope=scope("s1"))).content  # type: ignore[union-attr]
    content["stat_data"]["白娅"]["依存度"] = 22
    await service.update(id=copies[1], content=content, expected_revision=0, operation_id="edit", scope=scope("s1"))
    copies.update(await _flip_more(service, (0, 1)))
    await _prompt_paths_see_only(service, copies[1], 22, turn=None)


async def _flip_more(service: MvuService, sequence: tuple[int, ...]) -> dict[int, str]:
    copies: dict[int, str] = {}
    for index in sequence:
        chosen = await service.select_character(session_id="s1", character_id="baiya", greeting_index=index)
        assert chosen.instance_id is not None
        copies[index] = chosen.instance_id
    return copies


@pytest.mark.parametrize("sequence", [(1,), (0, 1), (2, 0, 1)], ids=["1", "0-1", "2-0-1"])
async def test_a_card_selected_again_without_an_index_restores_the_copy_it_was_played_with(
        service: MvuService, host: MemoryHost, sequence: tuple[int, ...]) -> None:
    # Drafts of lower greetings left before the first send do not take the played copy's place.
    copies = await _flip(service, host, sequence)
    await host.turn("s1", turn=1, user="你好", reply="_.add('白娅.依存度', 5);", message_id="m1")
    await service.discover(definition=PLAIN)
    plain = await service.select_character(session_id="s1", character_id="plain")
    back = await service.select_character(session_id="s1", character_id="baiya")
    assert (back.instance_id, back.greeting_index) == (copies[1], 1)
    record = await service.read(id=copies[1], scope=scope("s1"))
    assert record is not None and record.revision == 1 and _dependence(record.content) == OPENING[1] + 5
    # The other card's instance is listed as a switch leaves it; of Baiya only the played copy.
    assert plain.instance_id is not None
    assert sorted(r.id for r in await service.list(scope=scope("s1"))) == sorted([copies[1], plain.instance_id])


async def test_a_draft_is_no_resource_of_the_session_for_a_write_or_a_copy(service: MvuService,
                                                                           host: MemoryHost) -> None:
    # A session-scoped read does not see a draft; neither may a write or a copy (which would
    # hand back its content), while the management view still edits it.
    copies = await _flip(service, host, (0, 1, 0))
    draft = copies[1]
    content = (await service.read(id=draft, scope=scope())).content  # type: ignore[union-attr]
    for write in (lambda: service.copy(id=draft, new_id="mvu:leak", scope=scope("s1")),
                  lambda: service.update(id=draft, content=content, expected_revision=0, operation_id="e",
                                         scope=scope("s1"))):
        with pytest.raises(MvuError) as refused:
            await write()
        assert refused.value.code == Code.MISSING
    edited = await service.update(id=draft, content=content, expected_revision=0, operation_id="e", scope=scope())
    assert edited.revision == 1
