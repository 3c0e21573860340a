"""What a turn costs in ledger round trips, and that the shortcuts behind that number still see
every change: a turn reads its session's rows once per stage, the verifier trusts only the
versions this service wrote from the log it checked, and a second reply in one call reads the
head the first one left."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.round_trips import count_round_trips
from tests.service.support import checkpointed_turns, frozen_turns, playing, revision, scope, stat_data, text_message


async def test_a_turn_after_the_first_takes_three_reader_round_trips(
        service: MvuService, host: MemoryHost, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);")
    trips = count_round_trips(ledger, monkeypatch)

    await host.turn("s1", turn=2, user="b", reply="_.set('hp', 30);")

    # The checkpoint's rows with the session's log, the ingest's, and the turn's checkpoint.
    assert trips == [3]
    assert (await stat_data(service, instance))["hp"] == 30


async def test_an_edit_between_turns_is_read_by_the_next_check(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);")
    edited = await service.update(id=instance, scope=scope("s1"), content={"stat_data": {"hp": 7, "gold": 10}},
                                  expected_revision=await revision(service, instance), operation_id="edit-1")
    await host.turn("s1", turn=2, user="b", reply="_.add('hp', 1);")

    assert (await stat_data(service, instance))["hp"] == 8
    assert await revision(service, instance) == edited.revision + 1


async def test_a_changed_reply_is_still_found_after_turns_the_service_wrote_itself(
        service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    first = await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);", message_id="m1")
    await host.turn("s1", turn=2, user="b", reply="_.set('hp', 30);", message_id="m2")
    host.replace_event("s1", first, "assistant/message", text_message(1, "m1", "_.set('hp', 99);"))

    with pytest.raises(MvuError) as refused:
        await service.read(id=instance, scope=scope("s1"))
    assert refused.value.code == "MVU_HISTORY_CHANGED"


async def test_two_pending_replies_in_one_call_each_start_from_the_head_before_them(
        service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    host.attach(None)
    await frozen_turns(ledger, host, instance, "s1", range(1, 3), "_.add('hp', 5);")

    report = await service.ingest(session_id="s1")

    assert [outcome.status for outcome in report.outcomes] == ["committed", "committed"]
    assert [outcome.revision for outcome in report.outcomes] == [1, 2]
    assert (await stat_data(service, instance))["hp"] == 60


async def test_checkpointed_turns_leave_the_last_reply_pending(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    host.attach(None)
    await checkpointed_turns(service, host, "s1", range(1, 4), "_.add('hp', 1);")

    assert await revision(service, instance) == 2  # turns 1 and 2, applied by the next checkpoints


async def test_an_edit_takes_one_reader_round_trip_whatever_the_history(
        service: MvuService, host: MemoryHost, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    instance = await playing(service, host)
    for turn in range(1, 6):
        await host.turn("s1", turn=turn, user="a", reply=f"_.set('hp', {turn});")
    current = await revision(service, instance)
    await service.update(id=instance, scope=scope("s1"), content={"stat_data": {"hp": 9, "gold": 1}},
                         expected_revision=current, operation_id="edit-1")
    trips = count_round_trips(ledger, monkeypatch)

    receipt = await service.update(id=instance, scope=scope("s1"), content={"stat_data": {"hp": 8, "gold": 1}},
                                   expected_revision=current + 1, operation_id="edit-2")

    # The resource's row with its head and the version it is at, in one read; then the session's
    # selection, which tells the live copy from a greeting's private draft (a draft takes no edit).
    assert trips == [2]
    history = await service.history(id=instance, scope=scope("s1"))
    assert [entry.kind for entry in history][-2:] == ["manual", "manual"]
    # An edit of an edit keeps the coordinates of the reply the first one edited.
    assert history[-1].source["messageSeq"] == history[-3].source["messageSeq"]
    assert receipt.revision == current + 2


async def test_an_edit_before_any_reply_finds_the_last_message_without_reading_the_history(
        service: MvuService, host: MemoryHost, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    # Edits of a head no reply wrote name the session's last message; reading the whole history
    # for it made every such edit cost as much as the history was long (a soak of manual edits
    # slowed down fourfold in 8,000 edits).
    instance = await playing(service, host)
    current = await revision(service, instance)
    for n in range(3):
        current = (await service.update(id=instance, scope=scope("s1"), content={"stat_data": {"hp": n, "gold": 1}},
                                        expected_revision=current, operation_id=f"edit-{n}")).revision

    async def whole_history(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an edit read the whole history")

    monkeypatch.setattr(ledger, "versions", whole_history)
    await service.update(id=instance, scope=scope("s1"), content={"stat_data": {"hp": 9, "gold": 1}},
                         expected_revision=current, operation_id="edit-last")

    monkeypatch.undo()
    last = (await service.history(id=instance, scope=scope("s1")))[-1]
    assert (last.source["messageId"], last.source["messageSeq"]) == ("manual:edit-last", -1)


async def test_the_commands_of_one_reply_share_a_validation_memo_and_replies_do_not(
        service: MvuService, host: MemoryHost, monkeypatch: pytest.MonkeyPatch) -> None:
    from mvu_store.service import initial

    instance = await playing(service, host)
    memos: list[object] = []
    validate = initial.validate

    def recording(descriptor: Any, value: Any, **options: Any) -> Any:
        memos.append(options.get("memo"))
        return validate(descriptor, value, **options)

    monkeypatch.setattr(initial, "validate", recording)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);_.add('gold', 2);_.add('hp', 500);")
    first = memos[:]
    await host.turn("s1", turn=2, user="b", reply="_.set('hp', 1);_.add('gold', 1);")

    assert len(first) == 3 and first[0] is not None and first[0] is first[1] is first[2]
    second = memos[3:]
    assert len(second) == 2 and second[0] is second[1] and second[0] is not None and second[0] is not first[0]
    assert (await stat_data(service, instance))["hp"] == 1  # clamped to 100 on turn 1, then set
    assert (await stat_data(service, instance))["gold"] == 13


async def test_what_the_verifier_remembers_of_a_record_does_not_grow_with_its_edits(
        service: MvuService, host: MemoryHost) -> None:
    """It keeps the keys of the versions replies wrote (the pipeline asks for those), never of
    edits: a record edited all day costs the service no memory per edit."""
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 1);")
    current = await revision(service, instance)
    for edit in range(20):
        await service.update(id=instance, scope=scope("s1"), content={"stat_data": {"hp": edit, "gold": 1}},
                             expected_revision=current + edit, operation_id=f"edit-{edit}")
    await service.read(id=instance, scope=scope("s1"))
    await host.turn("s1", turn=2, user="a", reply="_.set('hp', 2);")
    remembered = service._ctx.verifier._checked.get(instance)
    assert remembered is not None
    history = await service.history(id=instance, scope=scope("s1"))
    assert sorted(remembered.keys) == sorted(entry.key for entry in history if entry.kind == "reply")
    assert (await stat_data(service, instance))["hp"] == 2  # type: ignore[index]


async def test_what_the_verifier_remembers_is_bounded_by_weight_and_a_forgotten_record_is_checked_again(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    from mvu_store.service import verification

    monkeypatch.setattr(verification, "MEMORY_BYTES", verification.KEY_BYTES * 4)  # three reply keys and the state
    host = MemoryHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    ctx = service._ctx
    instance = await playing(service, host)
    for turn in range(1, 4):
        await host.turn("s1", turn=turn, user="a", reply=f"_.set('hp', {turn});")
    assert ctx.verifier._checked.get(instance) is not None  # three keys: kept
    await host.turn("s1", turn=4, user="a", reply="_.set('hp', 4);")
    assert ctx.verifier._checked.get(instance) is None  # a fourth, noted as it was written: too heavy
    await host.turn("s1", turn=5, user="a", reply="_.set('hp', 5);")  # checked in full, applied once
    assert (await stat_data(service, instance))["hp"] == 5
    assert [entry.kind for entry in await service.history(id=instance, scope=scope("s1"))].count("reply") == 5
