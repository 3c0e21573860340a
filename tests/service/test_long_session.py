"""A 1,000-turn session through MvuService on both engines: the state is exact, and durable history
that drifts far behind the head still blocks reads, edits and ingests (DIGEST P-2).

A long session is where an incremental history check could go wrong: a check that only looks at
the replies recorded since the last read would miss a reply rewritten or lost 500 turns back. The
test plays one session to ``TURNS`` turns (one ``_.add('gold', 1)`` a reply, the host attached as
in use), checks the exact state, then drifts the reply of turn ``OLD``, undoing each drift before
the next:

- rewritten with other text → ``MVU_HISTORY_CHANGED`` for read, update, history and ingest, until
  the original event is put back;
- lost (the log cut just before it) → ``MVU_HISTORY_UNAVAILABLE`` for read, update and ingest,
  until the events are back; its place taken by a non-assistant event → ``MVU_HISTORY_CHANGED``
  (the event is there but different), until the original is back.

This test is slow on purpose (a thousand turns); no timing is asserted.
"""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.host import SessionEvent
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import playing, scope, text_message, user_message

TURNS = 1000
OLD = 500
START_GOLD = 10
# No declaration: the smallest card that still runs the update language and its native schema.
MISER: dict[str, Any] = {"character_id": "miser", "name": "Miser", "initvar": [f"gold: {START_GOLD}\n"]}

# The test took 130-200 s before history was checked once (about 40 s since), too close to
# pytest's 300 s default on a loaded machine; the limit only catches a hang, it measures nothing.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


async def expect_code(code: str, call: Any) -> None:
    with pytest.raises(MvuError) as caught:
        await call
    assert caught.value.code == code, caught.value


async def long_session(service: MvuService, host: MemoryHost, session_id: str, *, created_at: int) -> tuple[str, int]:
    """Select the card and play ``TURNS`` turns; returns the instance and the seq of turn ``OLD``'s reply."""
    instance = await playing(service, host, session_id, card=MISER, created_at=created_at)
    old_seq = -1
    for turn in range(1, TURNS + 1):
        seq = await host.turn(session_id, turn=turn, user="onwards", reply=f"A coin. _.add('gold', 1);//turn {turn}")
        if turn == OLD:
            old_seq = seq
    return instance, old_seq


async def assert_exact(service: MvuService, instance: str, session_id: str, revision: int, gold: int) -> None:
    record = await service.read(id=instance, scope=scope(session_id))
    assert record is not None
    assert (record.revision, record.current_revision, record.historical) == (revision, revision, False)
    assert record.content["stat_data"] == {"gold": gold}
    assert record.content["update_diagnostics"] == []


async def event(host: MemoryHost, session_id: str, seq: int) -> SessionEvent:
    snapshot = await host.inspect(session_id)
    assert snapshot is not None
    return snapshot.events[seq]


async def test_an_old_reply_rewritten_or_lost_after_1000_turns_blocks_the_session_until_restored(
        service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    # One session plays the 1,000 turns; each drift below is undone before the next.
    instance, seq = await long_session(service, host, "long", created_at=1000)
    await assert_exact(service, instance, "long", TURNS, START_GOLD + TURNS)
    history = await service.history(id=instance, scope=scope("long"))
    assert [entry.revision for entry in history] == list(range(1, TURNS + 1))
    assert [entry.source.get("turn") for entry in history] == list(range(1, TURNS + 1))
    original = await event(host, "long", seq)
    assert original.type == "assistant/message" and original.data["turn"] == OLD

    # Rewritten with other text.
    host.replace_event("long", seq, "assistant/message",
                       text_message(OLD, f"long-m{OLD}", "A chest. _.add('gold', 1000);"))
    await expect_code("MVU_HISTORY_CHANGED", service.read(id=instance, scope=scope("long")))
    await expect_code("MVU_HISTORY_CHANGED", service.update(
        id=instance, content={"stat_data": {"gold": 0}}, expected_revision=TURNS, operation_id="edit-drifted",
        scope=scope("long")))
    await expect_code("MVU_HISTORY_CHANGED", service.history(id=instance, scope=scope("long")))
    await expect_code("MVU_HISTORY_CHANGED", service.ingest(session_id="long"))
    host.replace_event("long", seq, original.type, dict(original.data))
    await assert_exact(service, instance, "long", TURNS, START_GOLD + TURNS)

    # Lost: the log is cut just before the old reply, so it and every later one disappeared.
    snapshot = await host.inspect("long")
    assert snapshot is not None
    host.truncate("long", seq)
    await expect_code("MVU_HISTORY_UNAVAILABLE", service.read(id=instance, scope=scope("long")))
    await expect_code("MVU_HISTORY_UNAVAILABLE", service.update(
        id=instance, content={"stat_data": {"gold": 0}}, expected_revision=TURNS, operation_id="edit-lost",
        scope=scope("long")))
    await expect_code("MVU_HISTORY_UNAVAILABLE", service.ingest(session_id="long"))
    host.attach(None)  # putting the events back is not a new turn
    for lost in snapshot.events[seq:]:
        host.append("long", lost.type, dict(lost.data))
    await assert_exact(service, instance, "long", TURNS, START_GOLD + TURNS)

    # The old reply's place now holds a user message (the log keeps its length): evidence that
    # is there but different is a change, not a loss (mvu_store.service.session_replies.verify_recorded).
    host.replace_event("long", seq, "user/message", user_message(OLD, "the reply went missing"))
    await expect_code("MVU_HISTORY_CHANGED", service.read(id=instance, scope=scope("long")))
    await expect_code("MVU_HISTORY_CHANGED", service.ingest(session_id="long"))
    host.replace_event("long", seq, original.type, dict(original.data))
    await assert_exact(service, instance, "long", TURNS, START_GOLD + TURNS)
    assert (await service.ingest(session_id="long")).outcomes == []
    # Nothing was written while the history was drifted.
    assert len(await ledger.versions(instance)) == TURNS

    host.attach(service)
    receipt = await service.update(id=instance, content={"stat_data": {"gold": 0}}, expected_revision=TURNS,
                                   operation_id="edit-restored", scope=scope("long"))
    assert receipt.revision == TURNS + 1
    await host.turn("long", turn=TURNS + 1, user="onwards", reply="A coin. _.add('gold', 1);")
    await assert_exact(service, instance, "long", TURNS + 2, 1)
    assert await ledger.audit() == []
