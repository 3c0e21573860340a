"""Selection and activation boundaries (DIGEST I-5): which replies reach which card's instance."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from mvu_store.service.identity import character_template_id
from tests.service.support import HERO, PLAIN, playing, revision, scope, stat_data, text_message, turn_end

HP_TO_60 = "_.set('hp', 60);"


async def test_replies_before_the_selection_are_never_applied(service: MvuService, host: MemoryHost,
                                                              ledger: Ledger) -> None:
    await service.discover(definition=HERO)
    host.create_session("s1", created_at=1000)
    await host.turn("s1", turn=1, user="hi", reply="_.set('hp', 1);")
    selection = await service.select_character(session_id="s1", character_id="hero")
    assert selection.instance_id is not None
    # The boundary is the session's end at selection time: 4 events were there (seq 0-3).
    assert selection.boundary == 4
    assert selection.template_id == character_template_id("hero")
    report = await service.ingest(session_id="s1")
    assert report.outcomes == []
    await host.turn("s1", turn=2, user="go", reply=HP_TO_60)
    assert await stat_data(service, selection.instance_id) == {"hp": 60, "gold": 10, "level": 1, "mood": "calm"}
    history = await service.history(id=selection.instance_id, scope=scope("s1"))
    assert [(entry.kind, entry.source["turn"]) for entry in history] == [("reply", 2)]
    assert await ledger.audit() == []


async def test_reselecting_the_selected_card_changes_nothing(service: MvuService, host: MemoryHost,
                                                             ledger: Ledger) -> None:
    instance = await playing(service, host)
    first = await ledger.activations("s1")
    await host.turn("s1", turn=1, user="go", reply=HP_TO_60)
    again = await service.select_character(session_id="s1", character_id="hero")
    assert again.instance_id == instance
    assert await ledger.activations("s1") == first
    assert again.boundary == first[instance]
    assert await revision(service, instance) == 1
    assert (await stat_data(service, instance))["hp"] == 60
    assert await ledger.audit() == []


async def test_unselect_then_reselect_restores_the_same_instance(service: MvuService, host: MemoryHost,
                                                                 ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="go", reply=HP_TO_60)
    off = await service.select_character(session_id="s1", character_id=None)
    assert (off.template_id, off.instance_id, off.boundary) == (None, None, None)
    await host.turn("s1", turn=2, user="go", reply="_.set('hp', 5);")
    back = await service.select_character(session_id="s1", character_id="hero")
    assert back.instance_id == instance
    assert back.boundary == 8  # two turns of 4 events each came before the reselection
    await host.turn("s1", turn=3, user="go", reply="_.set('gold', 77);")
    # The reply made while unselected never reached the card; the later one did.
    assert await stat_data(service, instance) == {"hp": 60, "gold": 77, "level": 1, "mood": "calm"}
    history = await service.history(id=instance, scope=scope("s1"))
    assert [entry.source["turn"] for entry in history] == [1, 3]
    assert await ledger.audit() == []


async def test_switching_cards_keeps_each_cards_state_and_replies_apart(service: MvuService, host: MemoryHost,
                                                                        ledger: Ledger) -> None:
    hero = await playing(service, host)
    await service.discover(definition=PLAIN)
    await host.turn("s1", turn=1, user="go", reply=HP_TO_60)
    plain = (await service.select_character(session_id="s1", character_id="plain")).instance_id
    assert plain is not None and plain != hero
    await host.turn("s1", turn=2, user="go", reply="_.set('hp', 3);")
    assert await stat_data(service, plain) == {"hp": 3, "items": []}
    back = await service.select_character(session_id="s1", character_id="hero")
    assert back.instance_id == hero
    # The turn played while Plain was selected never reached Hero.
    assert await stat_data(service, hero) == {"hp": 60, "gold": 10, "level": 1, "mood": "calm"}
    assert await revision(service, hero) == 1
    await host.turn("s1", turn=3, user="go", reply="_.set('hp', 70);")
    assert (await stat_data(service, hero))["hp"] == 70
    assert await stat_data(service, plain) == {"hp": 3, "items": []}
    assert [e.source["turn"] for e in await service.history(id=hero, scope=scope("s1"))] == [1, 3]
    assert [e.source["turn"] for e in await service.history(id=plain, scope=scope("s1"))] == [2]
    assert await ledger.audit() == []


async def test_selecting_an_undiscovered_character_is_missing(service: MvuService, host: MemoryHost,
                                                              ledger: Ledger) -> None:
    host.create_session("s1", created_at=1000)
    with pytest.raises(MvuError) as caught:
        await service.select_character(session_id="s1", character_id="nobody")
    assert caught.value.code == "MVU_MISSING"
    assert await ledger.selection("s1") == (False, None)
    assert await ledger.resources(kinds=("instance",)) == []


async def test_a_bad_character_id_is_a_config_error(service: MvuService, host: MemoryHost) -> None:
    host.create_session("s1", created_at=1000)
    with pytest.raises(MvuError) as caught:
        await service.select_character(session_id="s1", character_id="")
    assert caught.value.code == "MVU_CONFIG"


async def test_switching_applies_the_outgoing_cards_pending_reply_first(service: MvuService, host: MemoryHost,
                                                                         ledger: Ledger) -> None:
    hero = await playing(service, host)
    await service.discover(definition=PLAIN)
    host.attach(None)
    start = host.append("s1", "turn/start", {"turn": 1})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "assistant/message", text_message(1, "m1", HP_TO_60))
    host.append("s1", "turn/end", turn_end(1))
    # Not ingested yet: the switch applies Hero's completed turn before Hero's boundary is left behind.
    plain = (await service.select_character(session_id="s1", character_id="plain")).instance_id
    assert plain is not None
    assert (await stat_data(service, hero))["hp"] == 60
    assert await stat_data(service, plain) == {"hp": 10, "items": []}
    assert await ledger.versions(plain) == []
    assert await ledger.audit() == []


async def test_a_reply_written_before_a_mid_turn_selection_is_not_applied(service: MvuService, host: MemoryHost,
                                                                          ledger: Ledger) -> None:
    await service.discover(definition=HERO)
    host.create_session("s1", created_at=1000)
    host.attach(None)  # the checkpoint and the ingest are called below, in this order
    start = host.append("s1", "turn/start", {"turn": 1})
    host.append("s1", "assistant/message", text_message(1, "m1", HP_TO_60))
    selection = await service.select_character(session_id="s1", character_id="hero")
    assert selection.boundary == start + 2 and selection.instance_id is not None
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "turn/end", turn_end(1))
    assert (await service.ingest(session_id="s1")).outcomes == []
    assert await revision(service, selection.instance_id) == 0


async def test_an_unselected_session_ingests_nothing(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    await service.select_character(session_id="s1", character_id=None)
    assert await ledger.selection("s1") == (True, None)
    host.attach(None)
    start = host.append("s1", "turn/start", {"turn": 1})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "assistant/message", text_message(1, "m1", HP_TO_60))
    host.append("s1", "turn/end", turn_end(1))
    assert (await service.ingest(session_id="s1")).outcomes == []
    assert await ledger.versions(instance) == []
    # The instance stays readable in its session while unselected.
    assert await revision(service, instance) == 0
