"""The turn pipeline (DIGEST P-1 ... P-4, F-6): which reply counts, checkpoints, idempotent
ingest, fatal and per-command failures, budgets and drifted durable history (P-2)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import IngestReport, MvuService
from tests.service.support import (
    HERO,
    PLAIN,
    playing,
    revision,
    scope,
    stat_data,
    text_message,
    turn_end,
    user_message,
)

START = {"hp": 50, "gold": 10, "level": 1, "mood": "calm"}


async def expect_code(code: str, call: Any) -> MvuError:
    with pytest.raises(MvuError) as caught:
        await call
    assert caught.value.code == code, caught.value
    return caught.value


async def hand_turn(host: MemoryHost, service: MvuService, turn: int, messages: list[dict[str, Any]],
                    *, reason: str = "completed", session_id: str = "s1") -> tuple[list[int], IngestReport]:
    """A turn built event by event with the host detached: checkpoint at turn/start, then ingest.
    Returns the assistant messages' seqs and the ingest report."""
    start = host.append(session_id, "turn/start", {"turn": turn})
    await service.checkpoint(session_id=session_id, turn_start_seq=start)
    host.append(session_id, "user/message", user_message(turn))
    seqs = [host.append(session_id, "assistant/message", message) for message in messages]
    host.append(session_id, "turn/end", turn_end(turn, reason))
    return seqs, await service.ingest(session_id=session_id)


@pytest.fixture
async def detached(service: MvuService, host: MemoryHost) -> str:
    """Hero selected in s1, the host detached: the test drives checkpoint and ingest itself."""
    instance = await playing(service, host)
    host.attach(None)
    return instance


# -- which reply counts (P-1) ------------------------------------------------------------------


async def test_the_last_assistant_message_of_the_turn_counts(service: MvuService, host: MemoryHost,
                                                             ledger: Ledger, detached: str) -> None:
    seqs, report = await hand_turn(host, service, 1, [
        text_message(1, "m-a", "_.set('gold', 1);", step=0),
        text_message(1, "m-b", "_.set('gold', 2);", step=1),
    ])
    assert [(o.status, o.message_seq, o.revision) for o in report.outcomes] == [("committed", seqs[1], 1)]
    assert (await stat_data(service, detached))["gold"] == 2
    [version] = await service.history(id=detached, scope=scope("s1"))
    assert version.source["messageId"] == "m-b"
    assert (version.source["messageSeq"], version.source["step"], version.source["turn"]) == (seqs[1], 1, 1)
    assert version.source["sessionId"] == "s1" and version.source["sessionCreatedAt"] == 1000
    assert await ledger.audit() == []


async def test_text_blocks_are_joined_and_other_blocks_ignored(service: MvuService, host: MemoryHost,
                                                               ledger: Ledger, detached: str) -> None:
    message = {"turn": 1, "message": {"id": "m", "content": [
        {"type": "text", "text": "_.set('gold', 3);"}, {"type": "image", "url": "x"},
        {"type": "text", "text": "_.set('hp', 4);"}]}}
    _, report = await hand_turn(host, service, 1, [message])
    assert [o.status for o in report.outcomes] == ["committed"]
    assert await stat_data(service, detached) == {**START, "gold": 3, "hp": 4}


@pytest.mark.parametrize("last", [
    text_message(1, "m-x", "_.set('gold', 2);", interrupted=True),
    {"turn": 1, "message": {"id": "m-x", "content": [{"type": "text", "text": "_.set('gold', 2);"},
                                                     {"type": "tool-call", "id": "call-1", "name": "dice"}]}},
], ids=["interrupted", "tool-call"])
async def test_an_interrupted_or_tool_call_reply_is_never_applied(service: MvuService, host: MemoryHost,
                                                                  ledger: Ledger, detached: str,
                                                                  last: dict[str, Any]) -> None:
    _, report = await hand_turn(host, service, 1, [last])
    assert report.outcomes == []
    assert await ledger.versions(detached) == []
    # As the code reads P-1, the turn's last message decides: an earlier plain one does not stand in.
    _, report = await hand_turn(host, service, 2, [text_message(2, "m-y", "_.set('gold', 1);"),
                                                   {**last, "turn": 2}])
    assert report.outcomes == []
    assert await stat_data(service, detached) == START
    assert await revision(service, detached) == 0
    # A later ordinary turn still applies.
    _, report = await hand_turn(host, service, 3, [text_message(3, "m-z", "_.set('gold', 7);")])
    assert [(o.status, o.revision) for o in report.outcomes] == [("committed", 1)]
    assert await ledger.audit() == []


async def test_only_completed_turns_commit(service: MvuService, host: MemoryHost, ledger: Ledger,
                                           detached: str) -> None:
    for turn, reason in enumerate(["aborted", "error", "forked"], start=1):
        _, report = await hand_turn(host, service, turn, [text_message(turn, f"m{turn}", "_.set('gold', 2);")],
                                    reason=reason)
        assert report.outcomes == []
    assert await ledger.versions(detached) == []
    assert await stat_data(service, detached) == START


async def test_a_reply_without_commands_commits_an_unchanged_version(service: MvuService, host: MemoryHost,
                                                                     ledger: Ledger, detached: str) -> None:
    _, report = await hand_turn(host, service, 1, [text_message(1, "m", "She smiles and says nothing.")])
    [outcome] = report.outcomes
    assert (outcome.status, outcome.changed, outcome.revision, outcome.error) == ("skipped", False, 1, None)
    record = await service.read(id=detached, scope=scope("s1"))
    assert record is not None
    assert record.content["stat_data"] == START  # type: ignore[index,call-overload]
    assert record.revision == 1 and record.version_key == outcome.version_key
    assert [(e.kind, e.revision) for e in await service.history(id=detached, scope=scope("s1"))] == [("reply", 1)]
    assert await ledger.audit() == []


async def test_ingesting_again_applies_nothing_twice(service: MvuService, host: MemoryHost, ledger: Ledger,
                                                     detached: str) -> None:
    _, first = await hand_turn(host, service, 1, [text_message(1, "m", "_.add('gold', 5);")])
    assert [o.status for o in first.outcomes] == ["committed"]
    for _ in range(2):
        again = await service.ingest(session_id="s1")
        assert again.outcomes == []
    assert (await stat_data(service, detached))["gold"] == 15
    assert await revision(service, detached) == 1
    assert len(await ledger.versions(detached)) == 1
    assert await ledger.audit() == []


async def test_a_turn_without_checkpoint_needs_a_baseline(service: MvuService, host: MemoryHost,
                                                          ledger: Ledger) -> None:
    instance = await playing(service, host)
    host.attach(None)
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    error = await expect_code("MVU_BASELINE_REQUIRED", service.ingest(session_id="s1"))
    assert error.details.get("turn") == 1
    assert await ledger.versions(instance) == []
    assert await revision(service, instance) == 0
    assert await ledger.facts(session_id="s1") == []


# -- checkpoints (F-6) -------------------------------------------------------------------------


async def test_a_checkpoint_is_frozen_once_per_turn(service: MvuService, host: MemoryHost, ledger: Ledger,
                                                    detached: str) -> None:
    start = host.append("s1", "turn/start", {"turn": 1})
    first = await service.checkpoint(session_id="s1", turn_start_seq=start)
    assert [(c.resource_id, c.turn, c.seq, c.revision, c.version_key) for c in first] == [
        (detached, 1, start, 0, None)]
    host.append("s1", "user/message", user_message(1))
    host.append("s1", "assistant/message", text_message(1, "m", "_.set('gold', 99);"))
    host.append("s1", "turn/end", turn_end(1))
    await service.ingest(session_id="s1")
    assert await revision(service, detached) == 1
    again = await service.checkpoint(session_id="s1", turn_start_seq=start)
    assert again == first
    stored = await ledger.checkpoints(detached)
    assert [(c.turn, c.revision) for c in stored] == [(1, 0)]
    history = await service.history(id=detached, scope=scope("s1"), include_before=True)
    assert history[0].before_available is True and history[0].before == START
    assert await ledger.audit() == []


async def test_a_checkpoint_needs_a_durable_turn_start(service: MvuService, host: MemoryHost, ledger: Ledger,
                                                       detached: str) -> None:
    start = host.append("s1", "turn/start", {"turn": 1})
    user = host.append("s1", "user/message", user_message(1))
    for seq in (user, start + 100, -1, True, "0"):
        await expect_code("MVU_BASELINE_REQUIRED", service.checkpoint(session_id="s1", turn_start_seq=seq))
    assert await ledger.checkpoints(detached) == []


async def test_a_checkpoint_applies_the_completed_turns_before_it(service: MvuService, host: MemoryHost,
                                                                  ledger: Ledger, detached: str) -> None:
    start = host.append("s1", "turn/start", {"turn": 1})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "assistant/message", text_message(1, "m", "_.set('gold', 4);"))
    host.append("s1", "turn/end", turn_end(1))
    # No ingest: the next turn's checkpoint applies turn 1 first, so the baseline is after it.
    second = host.append("s1", "turn/start", {"turn": 2})
    [frozen] = await service.checkpoint(session_id="s1", turn_start_seq=second)
    assert (frozen.turn, frozen.revision) == (2, 1)
    assert (await stat_data(service, detached))["gold"] == 4


# -- failures (P-3) ----------------------------------------------------------------------------


@pytest.mark.parametrize("reply", [
    "_.set('__proto__.x', 1);",
    "_.set('gold', 5);\n_.set('hp.constructor.x', 1);",
], ids=["proto", "after-a-valid-command"])
async def test_a_fatal_reply_saves_a_failed_receipt(service: MvuService, host: MemoryHost, ledger: Ledger,
                                                    detached: str, reply: str) -> None:
    _, report = await hand_turn(host, service, 1, [text_message(1, "m1", reply)])
    [outcome] = report.outcomes
    assert (outcome.status, outcome.error, outcome.revision, outcome.changed) == ("failed", "MVU_PATH", 1, False)
    record = await service.read(id=detached, scope=scope("s1"))
    assert record is not None
    # No earlier candidate change is committed; the failure claims a revision, the head stays.
    assert record.content["stat_data"] == START  # type: ignore[index,call-overload]
    assert (record.revision, record.version_key) == (1, None)
    history = await service.history(id=detached, scope=scope("s1"))
    assert [(e.kind, e.revision, e.error) for e in history] == [("failed", 1, "MVU_PATH")]
    assert await service.ingest(session_id="s1") == IngestReport(session_id="s1")
    _, later = await hand_turn(host, service, 2, [text_message(2, "m2", "_.set('gold', 6);")])
    assert [(o.status, o.revision) for o in later.outcomes] == [("committed", 2)]
    assert await stat_data(service, detached) == {**START, "gold": 6}
    assert [(e.kind, e.revision) for e in await service.history(id=detached, scope=scope("s1"))] == [
        ("failed", 1), ("reply", 2)]
    assert await ledger.audit() == []


async def test_ordinary_command_errors_are_diagnostics(service: MvuService, host: MemoryHost, ledger: Ledger,
                                                       detached: str) -> None:
    text = "_.set('gold', -5);//refused by min(0)\n_.set('hp', 20);\n_.set('mood', 'sleepy');\n_.set('level', 3);"
    _, report = await hand_turn(host, service, 1, [text_message(1, "m", text)])
    [outcome] = report.outcomes
    assert (outcome.status, outcome.changed) == ("committed", True)
    assert [d["code"] for d in outcome.diagnostics] == ["MVU_SCHEMA", "MVU_SCHEMA"]
    assert [d["index"] for d in outcome.diagnostics] == [0, 2]
    record = await service.read(id=detached, scope=scope("s1"))
    assert record is not None
    content: Any = record.content
    assert content["stat_data"] == {"hp": 20, "gold": 10, "level": 3, "mood": "calm"}
    assert content["update_diagnostics"] == outcome.diagnostics
    assert content["display_data"] == content["stat_data"]
    assert await ledger.audit() == []


# -- budgets (P-4) -----------------------------------------------------------------------------


@pytest.fixture
async def small_state(ledger_url: str, ledger_id: str) -> AsyncIterator[tuple[MvuService, MemoryHost, Ledger]]:
    opened = await open_ledger(ledger_url, ledger_id=ledger_id, state_limit_bytes=2048)
    host = MemoryHost()
    service = MvuService(ledger=opened, host=host)
    host.attach(service)
    try:
        yield service, host, opened
    finally:
        await opened.close()


async def test_a_reply_over_the_state_budget_fails_with_mvu_limit(
        small_state: tuple[MvuService, MemoryHost, Ledger]) -> None:
    service, host, ledger = small_state
    instance = await playing(service, host, card=PLAIN)
    await host.turn("s1", turn=1, user="go", reply="_.set('hp', 11);")
    big = "x" * 3000
    await host.turn("s1", turn=2, user="go", reply=f"_.set('items', '{big}');")
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    assert record.content["stat_data"] == {"hp": 11, "items": []}  # type: ignore[index,call-overload]
    assert record.revision == 2
    history = await service.history(id=instance, scope=scope("s1"))
    assert [(e.kind, e.revision, e.error) for e in history] == [("reply", 1, None), ("failed", 2, "MVU_LIMIT")]
    await host.turn("s1", turn=3, user="go", reply="_.set('hp', 12);")
    assert await stat_data(service, instance) == {"hp": 12, "items": []}
    assert await ledger.audit() == []


async def test_a_full_ledger_refuses_the_commit_and_writes_nothing(ledger_url: str, ledger_id: str) -> None:
    ledger = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        host = MemoryHost()
        service = MvuService(ledger=ledger, host=host)
        instance = await playing(service, host, card=PLAIN)
        start = host.append("s1", "turn/start", {"turn": 1})
        await service.checkpoint(session_id="s1", turn_start_seq=start)
        host.append("s1", "assistant/message", text_message(1, "m", "_.set('items', '" + "y" * 500 + "');"))
        host.append("s1", "turn/end", turn_end(1))
        usage = await ledger.usage()
        # Lower the ledger budget to what is used now: the next save has no room.
        limited = await open_ledger(ledger_url, ledger_id=ledger_id, ledger_limit_bytes=usage.used_bytes)
        await limited.close()
        facts = await ledger.facts()
        await expect_code("PLAY_STORAGE_LIMIT", service.ingest(session_id="s1"))
        assert await ledger.versions(instance) == []
        assert (await ledger.usage()).used_bytes == usage.used_bytes
        # Facts are bounded on their own, not charged: the refusal is observed as failed.
        added = (await ledger.facts())[len(facts):]
        assert [(f["phase"], f.get("detail")) for f in added] == [("started", None), ("triggered", None),
                                                                  ("failed", "PLAY_STORAGE_LIMIT")]
        assert await revision(service, instance) == 0
        assert await stat_data(service, instance) == {"hp": 10, "items": []}
        assert await ledger.audit() == []
    finally:
        await ledger.close()


# -- drifted durable history (P-2) -------------------------------------------------------------


async def test_a_changed_recorded_reply_blocks_reads_and_ingest(service: MvuService, host: MemoryHost,
                                                                ledger: Ledger) -> None:
    instance = await playing(service, host)
    seq = await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    original = (await host.inspect("s1")).events[seq]  # type: ignore[union-attr]
    host.replace_event("s1", seq, "assistant/message", text_message(1, "s1-m1", "_.set('gold', 1000);"))
    await expect_code("MVU_HISTORY_CHANGED", service.read(id=instance, scope=scope("s1")))
    await expect_code("MVU_HISTORY_CHANGED", service.ingest(session_id="s1"))
    await expect_code("MVU_HISTORY_CHANGED", service.history(id=instance, scope=scope("s1")))
    host.replace_event("s1", seq, original.type, dict(original.data))
    assert await stat_data(service, instance) == {**START, "gold": 1}
    assert (await service.ingest(session_id="s1")).outcomes == []
    assert await ledger.audit() == []


async def test_a_changed_turn_end_blocks_reads(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    seq = await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    host.replace_event("s1", seq + 1, "turn/end", turn_end(1, "aborted"))
    await expect_code("MVU_HISTORY_CHANGED", service.read(id=instance, scope=scope("s1")))
    host.replace_event("s1", seq + 1, "turn/end", turn_end(1))
    assert await revision(service, instance) == 1


async def test_lost_history_blocks_reads_until_it_is_back(service: MvuService, host: MemoryHost,
                                                          ledger: Ledger) -> None:
    instance = await playing(service, host)
    seq = await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    snapshot = await host.inspect("s1")
    assert snapshot is not None
    host.truncate("s1", seq)
    await expect_code("MVU_HISTORY_UNAVAILABLE", service.read(id=instance, scope=scope("s1")))
    await expect_code("MVU_HISTORY_UNAVAILABLE", service.ingest(session_id="s1"))
    host.attach(None)
    for event in snapshot.events[seq:]:
        host.append("s1", event.type, dict(event.data))
    assert await stat_data(service, instance) == {**START, "gold": 1}
    assert await revision(service, instance) == 1
    assert (await service.ingest(session_id="s1")).outcomes == []
    assert await ledger.audit() == []


async def test_a_lost_turn_end_is_unavailable(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    seq = await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    host.truncate("s1", seq + 1)
    await expect_code("MVU_HISTORY_UNAVAILABLE", service.read(id=instance, scope=scope("s1")))


async def test_hero_card_is_the_one_under_test() -> None:
    # Guards the START constant against the support card changing underneath these tests.
    assert HERO["initvar"] == ["hp: 50\ngold: 10\n"]
