"""What a read costs and what it still sees: one ledger round trip in a session's scope, and every
commit made meanwhile, by this process or another one on the same database."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost
from mvu_store.store_host.feed import play_turn
from tests.round_trips import count_round_trips
from tests.service.support import HERO, playing, scope, text_message


async def test_a_read_in_a_session_takes_one_round_trip(service: MvuService, host: MemoryHost, ledger: Ledger,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);", message_id="m1")
    first = await service.read(id=instance, scope=scope("s1"))  # caches what it may: definitions, the check
    trips = count_round_trips(ledger, monkeypatch)

    again = await service.read(id=instance, scope=scope("s1"))

    assert trips == [1]
    assert again == first
    assert again is not None and again.content["stat_data"]["hp"] == 40  # type: ignore[index,call-overload]


async def test_with_the_store_host_a_read_gets_the_sessions_new_events_in_the_same_round_trip(
        ledger: Ledger, ledger_url: str, ledger_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    await service.discover(definition=HERO)
    await host.create_session("s1", created_at=1000)
    chosen = await service.select_character(session_id="s1", character_id="hero")
    assert chosen.instance_id is not None
    await play_turn(service, host, "s1", turn=1, user="a", reply="_.set('hp', 40);")
    await service.read(id=chosen.instance_id, scope=scope("s1"))
    trips = count_round_trips(ledger, monkeypatch)
    record = await service.read(id=chosen.instance_id, scope=scope("s1"))
    assert trips == [1]
    assert record is not None and record.content["stat_data"]["hp"] == 40  # type: ignore[index,call-overload]

    elsewhere_ledger = await open_ledger(ledger_url, ledger_id=ledger_id)  # another process plays a turn
    try:
        elsewhere_host = StoreHost(elsewhere_ledger)
        elsewhere = MvuService(ledger=elsewhere_ledger, host=elsewhere_host)
        await play_turn(elsewhere, elsewhere_host, "s1", turn=2, user="b", reply="_.set('hp', 30);")
    finally:
        await elsewhere_ledger.close()
    record = await service.read(id=chosen.instance_id, scope=scope("s1"))
    assert record is not None
    assert (record.revision, record.content["stat_data"]["hp"]) == (2, 30)  # type: ignore[index,call-overload]


async def test_a_list_in_a_session_takes_one_round_trip(service: MvuService, host: MemoryHost, ledger: Ledger,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    instance = await playing(service, host)
    await service.list(scope=scope("s1"))
    trips = count_round_trips(ledger, monkeypatch)

    records = await service.list(scope=scope("s1"))

    assert trips == [1]
    assert [record.id for record in records] == [instance]


async def test_a_read_sees_each_new_version_of_this_process(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    for turn, hp in enumerate([40, 30, 20], start=1):
        await host.turn("s1", turn=turn, user="a", reply=f"_.set('hp', {hp});", message_id=f"m{turn}")
        record = await service.read(id=instance, scope=scope("s1"))
        assert record is not None
        assert (record.revision, record.content["stat_data"]["hp"]) == (turn, hp)  # type: ignore[index,call-overload]


async def test_a_read_sees_edits_committed_by_another_process(ledger: Ledger, ledger_url: str, ledger_id: str,
                                                              host: MemoryHost) -> None:
    here = MvuService(ledger=ledger, host=host)
    instance = await playing(here, host)
    before = await here.read(id=instance, scope=scope("s1"))
    assert before is not None
    elsewhere_ledger = await open_ledger(ledger_url, ledger_id=ledger_id)  # another process's ledger
    try:
        elsewhere = MvuService(ledger=elsewhere_ledger, host=host)
        revision = before.revision
        for hp in (7, 8):
            receipt = await elsewhere.update(id=instance, content={"stat_data": {"hp": hp, "gold": 1}},
                                             expected_revision=revision, operation_id=f"edit-{hp}", scope=scope("s1"))
            revision = receipt.revision
            seen = await here.read(id=instance, scope=scope("s1"))
            assert seen is not None
            assert (seen.revision, seen.content["stat_data"]["hp"]) == (revision, hp)  # type: ignore[index,call-overload]
    finally:
        await elsewhere_ledger.close()


async def test_a_reply_changed_in_the_host_is_refused_though_nothing_was_written(
        service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    seq = await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);", message_id="m1")
    assert await service.read(id=instance, scope=scope("s1")) is not None
    # The host's history changed (the reply was edited); the ledger did not.
    host.replace_event("s1", seq, "assistant/message", text_message(1, "m1", "_.set('hp', 99);"))

    with pytest.raises(MvuError) as refused:
        await service.read(id=instance, scope=scope("s1"))
    assert refused.value.code == "MVU_HISTORY_CHANGED"


# -- the text of a record (read_json): kept while what it is made of stays ------------------------


async def text_of(service: MvuService, instance: str, session_id: str = "s1") -> tuple[bytes, dict[str, Any]]:
    """read_json's bytes, checked against read() (the same record, written compactly)."""
    text = await service.read_json(id=instance, scope=scope(session_id))
    record = await service.read(id=instance, scope=scope(session_id))
    assert text is not None and record is not None
    assert text.body == json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":")).encode()
    assert (text.revision, text.digest) == (record.revision, hashlib.sha256(text.body).hexdigest())
    return text.body, json.loads(text.body)


async def test_the_text_of_a_record_follows_its_edits_and_who_manages_it(service: MvuService,
                                                                          host: MemoryHost) -> None:
    instance = await playing(service, host)
    first, shown = await text_of(service, instance)
    assert (await text_of(service, instance))[0] == first
    receipt = await service.update(id=instance, content={"stat_data": {"hp": 9, "gold": 1}},
                                   expected_revision=shown["revision"], operation_id="text-1", scope=scope("s1"))
    edited, shown = await text_of(service, instance)
    assert edited != first and shown["revision"] == receipt.revision and shown["content"]["stat_data"]["hp"] == 9
    # A manager registered in this process changes the answer, not the revision.
    dispose = service.register_usage(lambda _event: None, provider_id="dsh-memory-manager")
    managed, shown = await text_of(service, instance)
    assert managed != edited and shown["managementMode"] == "managed" and shown["revision"] == receipt.revision
    dispose()
    assert (await text_of(service, instance))[0] == edited


async def test_a_record_keeps_one_text_a_session_however_many_revisions_it_was_read_at(
        service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    for turn in range(1, 21):
        await host.turn("s1", turn=turn, user="a", reply=f"_.set('hp', {turn});")
        _, shown = await text_of(service, instance)
        assert shown["content"]["stat_data"]["hp"] == turn  # each read shows the new revision
    texts = service._reads._texts
    assert len(texts) == 1  # the record's old revisions were replaced, not kept beside it


async def test_the_text_of_a_record_follows_edits_made_by_another_process(ledger: Ledger, ledger_url: str,
                                                                           ledger_id: str, host: MemoryHost) -> None:
    here = MvuService(ledger=ledger, host=host)
    instance = await playing(here, host)
    before, shown = await text_of(here, instance)
    elsewhere_ledger = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        elsewhere = MvuService(ledger=elsewhere_ledger, host=host)
        await elsewhere.update(id=instance, content={"stat_data": {"hp": 3, "gold": 2}},
                               expected_revision=shown["revision"], operation_id="text-2", scope=scope("s1"))
    finally:
        await elsewhere_ledger.close()
    after, shown = await text_of(here, instance)
    assert after != before and shown["content"]["stat_data"]["hp"] == 3


async def test_a_kept_text_is_refused_once_the_reply_it_shows_changed_in_the_host(service: MvuService,
                                                                                   host: MemoryHost) -> None:
    instance = await playing(service, host)
    seq = await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);", message_id="m1")
    await text_of(service, instance)
    host.replace_event("s1", seq, "assistant/message", text_message(1, "m1", "_.set('hp', 99);"))
    with pytest.raises(MvuError) as refused:
        await service.read_json(id=instance, scope=scope("s1"))
    assert refused.value.code == "MVU_HISTORY_CHANGED"
