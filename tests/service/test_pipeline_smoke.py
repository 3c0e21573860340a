"""The whole pipeline once, on both engines: select, play turns, read, edit, history, audit."""

from __future__ import annotations

from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import HERO, playing, scope


async def test_a_reply_is_applied_through_the_declaration(service: MvuService, host: MemoryHost,
                                                         ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="fight", reply="Ouch. _.set('hp', 50, 140);//heal\n_.add('gold', -20);")
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    assert record.content["stat_data"] == {"hp": 100, "gold": 10, "level": 1, "mood": "calm"}
    assert [d["code"] for d in record.content["update_diagnostics"]] == ["MVU_SCHEMA"]
    assert (record.revision, record.current_revision, record.historical) == (1, 1, False)
    receipt = await service.update(id=instance, content={"stat_data": {"hp": "7", "gold": 3}}, expected_revision=1,
                                   operation_id="edit-1", scope=scope("s1"))
    assert receipt.content["stat_data"] == {"hp": 7, "gold": 3, "level": 1, "mood": "calm"}
    history = await service.history(id=instance, scope=scope("s1"), include_before=True)
    assert [(entry.kind, entry.revision) for entry in history] == [("reply", 1), ("manual", 2)]
    assert history[1].before == record.content["stat_data"]
    assert await ledger.audit() == []


async def test_rediscovering_an_unchanged_card_changes_nothing(service: MvuService) -> None:
    first = await service.discover(definition=HERO)
    again = await service.discover(definition=HERO)
    assert (first.changed, again.changed) == (True, False)
