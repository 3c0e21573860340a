"""Forks, reply swipes and request retries through seeds (DIGEST F-1 ... F-7, I-8, F-4), on both engines.

Every child is made the way the host makes it (``MemoryHost.fork/swipe/retry``) between the
capture and the install; the assertions are on the state, revisions and history that result.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.ledger.records import VersionRecord
from mvu_store.ledger.transfer import export_directory, import_directory
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from mvu_store.service.seeds import check_lineage, fork_version
from tests.service.support import checkpointed_turns, playing, scope, seed_rows, stopped_turn


async def gold(service: MvuService, resource_id: str, session_id: str) -> tuple[Any, int]:
    record = await service.read(id=resource_id, scope=scope(session_id))
    assert record is not None
    return record.content["stat_data"]["gold"], record.revision


async def kinds(service: MvuService, resource_id: str, session_id: str) -> list[tuple[str, int, bool]]:
    return [(entry.kind, entry.revision, entry.inherited)
            for entry in await service.history(id=resource_id, scope=scope(session_id))]


async def three_turns(service: MvuService, host: MemoryHost) -> tuple[str, list[int]]:
    """s1 plays gold 10 -> 11 -> 21 -> 121; returns the instance and the reply seqs."""
    instance = await playing(service, host)
    seqs = [await host.turn("s1", turn=turn, user=f"u{turn}", reply=f"_.add('gold', {amount});")
            for turn, amount in ((1, 1), (2, 10), (3, 100))]
    return instance, seqs


# -- forks ---------------------------------------------------------------------------------------


async def test_a_fork_after_the_parent_advanced_starts_from_its_reply(service: MvuService, host: MemoryHost,
                                                                     ledger: Ledger) -> None:
    parent, (r1, r2, r3) = await three_turns(service, host)
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    seed = await ledger.seed(ticket)
    assert seed is not None and not seed.installed and seed.source_session_id == "s1"
    # The parent moves on after the capture: the seed stays frozen at r2.
    await host.turn("s1", turn=4, user="u4", reply="_.add('gold', 1000);")
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")

    assert child != parent
    assert await gold(service, child, "f1") == (21, 0)
    assert await gold(service, parent, "s1") == (1121, 4)
    record = await service.read(id=child, scope=scope("f1"))
    assert record is not None and record.inherited_from is not None
    assert (record.inherited_from["id"], record.inherited_from["revision"]) == (parent, 2)
    assert record.template_id is not None and record.instance == {"sessionId": "f1", "createdAt": 2000}
    # Lineage, not copies: the parent's versions up to the cut are visible, read-only, in the child.
    assert await kinds(service, child, "f1") == [("reply", 1, True), ("reply", 2, True)]
    assert len(await ledger.versions(child, include_lineage=False)) == 0
    # Same ticket, same child: a replay. Another child: a conflict.
    assert await service.install_session_seed(ticket=ticket, session_id="f1") == [child]
    host.fork("s1", at_event_id=r2, new_session_id="f2", created_at=2001)
    with pytest.raises(MvuError) as refused:
        await service.install_session_seed(ticket=ticket, session_id="f2")
    assert refused.value.code == "MVU_SEED_CONFLICT"
    assert await ledger.resources(session_id="f2", kinds=("instance",)) == []

    # The child plays its own turn 3 on the inherited state; the parent is untouched.
    await host.turn("f1", turn=3, user="other", reply="_.add('gold', 5);")
    assert await gold(service, child, "f1") == (26, 1)
    assert await kinds(service, child, "f1") == [("reply", 1, True), ("reply", 2, True), ("reply", 1, False)]
    assert await gold(service, parent, "s1") == (1121, 4)
    assert r1 < r2 < r3
    assert await ledger.audit() == []


async def test_a_grandchild_inherits_through_its_parent_fork(service: MvuService, host: MemoryHost,
                                                           ledger: Ledger) -> None:
    _, (_, r2, _) = await three_turns(service, host)
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")
    f3 = await host.turn("f1", turn=3, user="c", reply="_.add('gold', 5);")
    await host.turn("f1", turn=4, user="d", reply="_.add('gold', 50);")

    ticket2 = await service.capture_session_seed(session_id="f1", kind="fork", at_event_id=f3)
    assert ticket2 is not None
    host.fork("f1", at_event_id=f3, new_session_id="g1", created_at=3000)
    [grandchild] = await service.install_session_seed(ticket=ticket2, session_id="g1")
    assert await gold(service, grandchild, "g1") == (26, 0)
    assert await kinds(service, grandchild, "g1") == [("reply", 1, True), ("reply", 2, True), ("reply", 1, True)]
    record = await service.read(id=grandchild, scope=scope("g1"))
    assert record is not None and record.inherited_from is not None and record.inherited_from["id"] == child
    await host.turn("g1", turn=4, user="e", reply="_.add('gold', 2);")
    assert await gold(service, grandchild, "g1") == (28, 1)
    assert await gold(service, child, "f1") == (76, 2)
    assert await ledger.audit() == []


async def test_an_edit_on_an_inherited_head_seeds_the_next_fork(service: MvuService, host: MemoryHost,
                                                                ledger: Ledger) -> None:
    parent, (_, r2, _) = await three_turns(service, host)
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")
    edit = await service.update(id=child, content={"stat_data": {"hp": 30, "gold": 7}}, expected_revision=0,
                                operation_id="edit-1", scope=scope("f1"))
    assert (edit.revision, edit.replayed) == (1, False)
    # The edit is the child's own version: in its history, not in the parent's.
    assert await kinds(service, child, "f1") == [("reply", 1, True), ("reply", 2, True), ("manual", 1, False)]
    assert [entry.kind for entry in await service.history(id=parent, scope=scope("s1"))] == ["reply"] * 3
    # A historical read at the inherited reply sees the child's edit of it, as in the parent.
    at_r2 = await service.read(id=child, scope=scope("f1", end_event_id=r2))
    assert at_r2 is not None and at_r2.historical and at_r2.content["stat_data"]["gold"] == 7

    ticket2 = await service.capture_session_seed(session_id="f1", kind="fork", at_event_id=r2)
    assert ticket2 is not None
    host.fork("f1", at_event_id=r2, new_session_id="g1", created_at=3000)
    [grandchild] = await service.install_session_seed(ticket=ticket2, session_id="g1")
    record = await service.read(id=grandchild, scope=scope("g1"))
    assert record is not None and record.inherited_from is not None
    assert record.content["stat_data"] == {"hp": 30, "gold": 7, "level": 1, "mood": "calm"}
    assert (record.inherited_from["id"], record.inherited_from["revision"]) == (child, 1)
    assert await kinds(service, grandchild, "g1") == [("reply", 1, True), ("reply", 2, True), ("manual", 1, True)]
    assert await gold(service, parent, "s1") == (121, 3)
    assert await ledger.audit() == []


async def test_a_child_inherits_no_operation_ids_and_keeps_the_stored_mode(service: MvuService, host: MemoryHost,
                                                                          ledger: Ledger) -> None:
    parent = await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    await service.update(id=parent, content={"stat_data": {"hp": 9, "gold": 2}}, expected_revision=1,
                         operation_id="op-1", scope=scope("s1"))
    mode = await service.set_management_mode(id=parent, mode="managed", expected_revision=2, operation_id="mode-1",
                                             scope=scope("s1"))
    assert (mode.management_mode, mode.stored_management_mode) == ("native", "managed")
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r1)
    assert ticket is not None
    host.fork("s1", at_event_id=r1, new_session_id="f1", created_at=2000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")
    record = await service.read(id=child, scope=scope("f1"))
    assert record is not None
    # The edit on r1 is part of the state at r1; the stored preference comes along, the actual
    # manager is still decided by the registrations (none: native).
    assert record.content["stat_data"]["gold"] == 2
    assert (record.management_mode, record.stored_management_mode) == ("native", "managed")
    # The parent's operation id means nothing in the child: a new edit, not a replay or a conflict.
    receipt = await service.update(id=child, content={"stat_data": {"hp": 1, "gold": 99}},
                                   expected_revision=record.revision, operation_id="op-1", scope=scope("f1"))
    assert (receipt.replayed, receipt.revision, receipt.content["stat_data"]["gold"]) == (False, 1, 99)
    assert await gold(service, parent, "s1") == (2, 3)  # the mode preference is a CAS write too
    assert await ledger.audit() == []


# -- reply swipes ----------------------------------------------------------------------------------


async def test_a_root_swipe_takes_the_opening_in_a_new_empty_session(service: MvuService, host: MemoryHost,
                                                                    ledger: Ledger) -> None:
    parent, (r1, _, _) = await three_turns(service, host)
    await service.update(id=parent, content={"stat_data": {"hp": 1, "gold": 500}}, expected_revision=3,
                         operation_id="late", scope=scope("s1"))
    with pytest.raises(MvuError) as missing_target:
        await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1)
    assert missing_target.value.code == "MVU_SEED"
    ticket = await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1,
                                                target_session_id="w0")
    assert ticket is not None
    host.swipe("s1", at_event_id=r1, new_session_id="w0", created_at=4000)
    # Until the seed is installed, the target cannot initialise on its own.
    with pytest.raises(MvuError) as pending:
        await service.list(scope=scope("w0"))
    assert pending.value.code == "MVU_SEED_PENDING"
    [child] = await service.install_session_seed(ticket=ticket, session_id="w0")
    # The opening: the pre-turn checkpoint of turn 1, before any reply or edit.
    record = await service.read(id=child, scope=scope("w0"))
    assert record is not None
    assert record.content["stat_data"] == {"hp": 50, "gold": 10, "level": 1, "mood": "calm"}
    assert record.revision == 0
    assert await kinds(service, child, "w0") == []
    await host.turn("w0", turn=1, user="u1", reply="_.add('gold', 7);")
    assert await gold(service, child, "w0") == (17, 1)
    assert await kinds(service, child, "w0") == [("reply", 1, False)]
    assert await gold(service, parent, "s1") == (500, 4)
    # A target that already has state is not free for another root seed.
    with pytest.raises(MvuError) as taken:
        await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1,
                                           target_session_id="w0")
    assert taken.value.code == "MVU_SEED_CONFLICT"
    assert await ledger.audit() == []


async def test_a_later_swipe_takes_the_turns_checkpoint_and_excludes_later_edits(
        service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    parent, (_, r2, r3) = await three_turns(service, host)
    # An edit after turn 3 started: not part of turn 3's pre-request baseline.
    await service.update(id=parent, content={"stat_data": {"hp": 1, "gold": 500}}, expected_revision=3,
                         operation_id="late", scope=scope("s1"))
    ticket = await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r3,
                                                prefix_end_event_id=r2)
    assert ticket is not None
    host.swipe("s1", at_event_id=r3, new_session_id="w1", created_at=3000, prefix_end_event_id=r2)
    [child] = await service.install_session_seed(ticket=ticket, session_id="w1")
    record = await service.read(id=child, scope=scope("w1"))
    assert record is not None
    assert record.content["stat_data"] == {"hp": 50, "gold": 21, "level": 1, "mood": "calm"}
    assert await kinds(service, child, "w1") == [("reply", 1, True), ("reply", 2, True)]
    # The kept prefix carries its checkpoints: the swiped turn runs on the inherited baseline.
    await host.turn("w1", turn=3, user="u3", reply="_.add('gold', 5);")
    assert await gold(service, child, "w1") == (26, 1)
    history = await service.history(id=child, scope=scope("w1"), include_before=True)
    assert history[-1].before_available is True and history[-1].before["gold"] == 21
    assert await gold(service, parent, "s1") == (500, 4)
    assert await ledger.audit() == []


# -- request retries -------------------------------------------------------------------------------


async def test_a_retry_after_a_cancelled_request_freezes_that_turns_checkpoint(
        service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    parent = await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    stopped = await stopped_turn(host, "s1", turn=2, user="never answered")
    # The cancelled request invented no reply version; a later edit is not the retry baseline.
    assert [v.kind for v in await ledger.versions(parent)] == ["reply"]
    await service.update(id=parent, content={"stat_data": {"hp": 2, "gold": 300}}, expected_revision=1,
                         operation_id="after-stop", scope=scope("s1"))
    with pytest.raises(MvuError) as not_a_request:
        await service.capture_session_seed(session_id="s1", kind="request-retry", at_event_id=r1,
                                           target_session_id="x")
    assert not_a_request.value.code == "MVU_SEED"
    ticket = await service.capture_session_seed(session_id="s1", kind="request-retry", at_event_id=stopped,
                                                prefix_end_event_id=r1)
    assert ticket is not None
    host.retry("s1", at_event_id=stopped, new_session_id="t1", created_at=5000, prefix_end_event_id=r1)
    [child] = await service.install_session_seed(ticket=ticket, session_id="t1")
    assert await gold(service, child, "t1") == (11, 0)
    assert await kinds(service, child, "t1") == [("reply", 1, True)]
    await host.turn("t1", turn=2, user="again", reply="_.add('gold', 4);")
    assert await gold(service, child, "t1") == (15, 1)
    assert await gold(service, parent, "s1") == (300, 2)
    assert await ledger.audit() == []


async def test_a_first_turn_retry_takes_the_opening_in_a_new_session(service: MvuService, host: MemoryHost,
                                                                     ledger: Ledger) -> None:
    parent = await playing(service, host)
    stopped = await stopped_turn(host, "s1", turn=1, user="stop")
    await service.update(id=parent, content={"stat_data": {"hp": 2, "gold": 300}}, expected_revision=0,
                         operation_id="after-stop", scope=scope("s1"))
    ticket = await service.capture_session_seed(session_id="s1", kind="request-retry", at_event_id=stopped,
                                                target_session_id="t0")
    assert ticket is not None
    host.retry("s1", at_event_id=stopped, new_session_id="t0", created_at=5000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="t0")
    assert await gold(service, child, "t0") == (10, 0)
    assert await ledger.audit() == []


# -- refusals --------------------------------------------------------------------------------------


async def test_an_unseeded_fork_child_never_guesses_its_state(service: MvuService, host: MemoryHost,
                                                             ledger: Ledger) -> None:
    _, (_, r2, _) = await three_turns(service, host)
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    with pytest.raises(MvuError) as refused:
        await service.select_character(session_id="f1", character_id="hero")
    assert refused.value.code == "MVU_SEED_REQUIRED"
    # Nothing was stored: the child holds no state and the refused selection did not stick.
    assert await service.list(scope=scope("f1")) == []
    assert await ledger.resources(session_id="f1", kinds=("instance",)) == []


async def test_a_swipe_without_its_baseline_is_refused_and_writes_no_seed(service: MvuService, host: MemoryHost,
                                                                        ledger: Ledger) -> None:
    await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    # Turn 2 ran while the host had detached the service: no pre-turn checkpoint was frozen.
    host.attach(None)
    host.append("s1", "turn/start", {"turn": 2})
    r2 = host.append("s1", "assistant/message", {"turn": 2, "message": {
        "id": "s1-m2", "content": [{"type": "text", "text": "_.add('gold', 2);"}]}})
    host.append("s1", "turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    with pytest.raises(MvuError) as refused:
        await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r2,
                                           prefix_end_event_id=r1)
    assert refused.value.code == "MVU_BASELINE_REQUIRED"
    assert await seed_rows(ledger) == 0


async def test_a_child_that_is_not_the_captured_branch_is_refused(service: MvuService, host: MemoryHost,
                                                                 ledger: Ledger) -> None:
    _, (r1, r2, _) = await three_turns(service, host)
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    # A session with another parent, then one whose copied reply text differs from the source's.
    host.create_session("stranger", created_at=2000, parent_session="elsewhere")
    host.fork("s1", at_event_id=r2, new_session_id="drift", created_at=2001)
    host.replace_event("drift", r1, "assistant/message", {"turn": 1, "message": {
        "id": "s1-m1", "content": [{"type": "text", "text": "rewritten"}]}})
    host.fork("s1", at_event_id=r1, new_session_id="short", created_at=2002)
    for target in ("stranger", "drift", "short"):
        with pytest.raises(MvuError) as refused:
            await service.install_session_seed(ticket=ticket, session_id=target)
        assert refused.value.code == "MVU_SEED_MISMATCH", target
        assert await ledger.resources(session_id=target, kinds=("instance",)) == []
    seed = await ledger.seed(ticket)
    assert seed is not None and not seed.installed
    # A root swipe installs only into an empty session; an unknown ticket is a conflict.
    root = await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1,
                                              target_session_id="w0")
    assert root is not None
    host.fork("s1", at_event_id=r1, new_session_id="w0", created_at=2003)
    with pytest.raises(MvuError) as not_empty:
        await service.install_session_seed(ticket=root, session_id="w0")
    assert not_empty.value.code == "MVU_SEED_MISMATCH"
    with pytest.raises(MvuError) as unknown:
        await service.install_session_seed(ticket="no-such-ticket", session_id="w0")
    assert unknown.value.code == "MVU_SEED_CONFLICT"
    assert await ledger.audit() == []


async def test_a_session_without_state_captures_no_seed(service: MvuService, host: MemoryHost,
                                                       ledger: Ledger) -> None:
    host.create_session("bare", created_at=1000)
    host.append("bare", "turn/start", {"turn": 1})
    r1 = host.append("bare", "assistant/message", {"turn": 1, "message": {
        "id": "b-m1", "content": [{"type": "text", "text": "hello"}]}})
    host.append("bare", "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    await host.drain()
    assert await service.capture_session_seed(session_id="bare", kind="fork", at_event_id=r1) is None
    assert await seed_rows(ledger) == 0


# -- transfer --------------------------------------------------------------------------------------


async def test_a_ledger_with_seeded_children_exports_and_imports_clean(service: MvuService, host: MemoryHost,
                                                                      ledger: Ledger, ledger_url: str,
                                                                      tmp_path: Path) -> None:
    _, (r1, r2, _) = await three_turns(service, host)
    fork = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    root = await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1,
                                              target_session_id="w0")
    assert fork is not None and root is not None
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    host.swipe("s1", at_event_id=r1, new_session_id="w0", created_at=4000)
    [child] = await service.install_session_seed(ticket=fork, session_id="f1")
    [swiped] = await service.install_session_seed(ticket=root, session_id="w0")
    await host.turn("f1", turn=3, user="c", reply="_.add('gold', 5);")
    await export_directory(ledger, tmp_path / "export")

    imported = await open_ledger(ledger_url, ledger_id=f"imp-{ledger.ledger_id}"[:60])
    try:
        await import_directory(imported, tmp_path / "export")
        assert await imported.audit() == []
        again = MvuService(ledger=imported, host=host)
        assert await gold(again, child, "f1") == (26, 1)
        assert await gold(again, swiped, "w0") == (10, 0)
        # The original's format copies a child's inherited history as read-only ``inherited`` versions.
        assert await kinds(again, child, "f1") == [("inherited", 0, True), ("inherited", 0, True),
                                                   ("reply", 1, False)]
        host.attach(again)
        await host.turn("f1", turn=4, user="d", reply="_.add('gold', 1);")
        assert await gold(again, child, "f1") == (27, 2)
        assert await imported.audit() == []
    finally:
        await imported.close()


async def test_seed_coordinates_are_checked_at_capture(service: MvuService, host: MemoryHost,
                                                       ledger: Ledger) -> None:
    _, (r1, r2, r3) = await three_turns(service, host)
    user_event = r3 - 1
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"kind": "merge", "at_event_id": r2}, "MVU_SEED"),
        ({"kind": "fork", "at_event_id": user_event}, "MVU_SEED"),  # not a reply
        ({"kind": "fork", "at_event_id": r2, "prefix_end_event_id": r1}, "MVU_SEED"),
        ({"kind": "reply-swipe", "at_event_id": r3, "prefix_end_event_id": r3}, "MVU_SEED"),
        ({"kind": "reply-swipe", "at_event_id": r3, "prefix_end_event_id": r1}, "MVU_SEED_MISMATCH"),
        ({"kind": "request-retry", "at_event_id": user_event, "prefix_end_event_id": r2}, "MVU_SEED"),  # answered
        ({"kind": "fork", "at_event_id": 999}, "MVU_SEED"),
    ]
    for arguments, code in refusals:
        with pytest.raises(MvuError) as refused:
            await service.capture_session_seed(session_id="s1", **arguments)
        assert refused.value.code == code, arguments
    assert await seed_rows(ledger) == 0


async def test_a_pending_root_seed_blocks_its_target_until_installed(service: MvuService, host: MemoryHost,
                                                                     ledger: Ledger) -> None:
    _, (r1, _, _) = await three_turns(service, host)
    ticket = await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1,
                                                target_session_id="w0")
    assert ticket is not None
    host.swipe("s1", at_event_id=r1, new_session_id="w0", created_at=4000)
    host.create_session("w9", created_at=4001)
    # The ticket names its target: another empty session is not the captured branch.
    with pytest.raises(MvuError) as elsewhere:
        await service.install_session_seed(ticket=ticket, session_id="w9")
    assert elsewhere.value.code == "MVU_SEED_MISMATCH"
    # The host's first request in the target waits for the seed: its checkpoint is refused.
    host.append("w0", "turn/start", {"turn": 1})
    with pytest.raises(MvuError) as pending:
        await host.drain()
    assert pending.value.code == "MVU_SEED_PENDING"
    assert await ledger.resources(session_id="w0", kinds=("instance",)) == []
    # The target now holds a turn/start of its own: it is no longer the new empty session.
    with pytest.raises(MvuError) as started:
        await service.install_session_seed(ticket=ticket, session_id="w0")
    assert started.value.code == "MVU_SEED_MISMATCH"
    assert await ledger.audit() == []


async def test_a_child_whose_checkpoint_positions_moved_is_refused(service: MvuService, host: MemoryHost,
                                                                   ledger: Ledger) -> None:
    _, (_, r2, _) = await three_turns(service, host)
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    snapshot = await host.inspect("f1")
    assert snapshot is not None
    start2 = max(event.seq for event in snapshot.events if event.type == "turn/start" and event.seq < r2)
    host.replace_event("f1", start2, "turn/start", {"turn": 7})
    with pytest.raises(MvuError) as refused:
        await service.install_session_seed(ticket=ticket, session_id="f1")
    assert refused.value.code == "MVU_SEED_MISMATCH"
    assert await ledger.resources(session_id="f1", kinds=("instance",)) == []


# -- reviewed bugs ----------------------------------------------------------------------------------


async def test_a_fork_never_takes_an_edit_made_after_later_failed_turns(service: MvuService, host: MemoryHost,
                                                                       ledger: Ledger) -> None:
    parent = await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    await stopped_turn(host, "s1", turn=2, user="stop")
    r3 = await host.turn("s1", turn=3, user="c", reply="_.set('__proto__.x', 1);")
    assert [v.kind for v in await ledger.versions(parent)] == ["reply", "failed"]
    # The head is still r1's state, so the edit copies r1's coordinates; it came after turn 3.
    await service.update(id=parent, content={"stat_data": {"hp": 50, "gold": 999}}, expected_revision=2,
                         operation_id="late", scope=scope("s1"))
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r1)
    assert ticket is not None
    host.fork("s1", at_event_id=r1, new_session_id="f1", created_at=2000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")
    # The state at r1, readable: no later edit, no later failed receipt in the child's lineage.
    assert await gold(service, child, "f1") == (11, 0)
    assert await kinds(service, child, "f1") == [("reply", 1, True)]
    assert all((v.source.get("messageSeq") or 0) <= r1 for v in await ledger.versions(child))
    await host.turn("f1", turn=2, user="b", reply="_.add('gold', 2);")
    assert await gold(service, child, "f1") == (13, 1)
    assert await gold(service, parent, "s1") == (999, 3) and r3 > r1
    assert await ledger.audit() == []


async def test_a_swipe_in_a_fork_child_of_an_inherited_turn_keeps_its_history(
        service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    parent, (r1, r2, _) = await three_turns(service, host)
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")
    await host.turn("f1", turn=3, user="c", reply="_.add('gold', 5);")
    # Swipe turn 2 inside the child: its checkpoint was inherited (stored without a key of its own).
    swipe = await service.capture_session_seed(session_id="f1", kind="reply-swipe", at_event_id=r2,
                                               prefix_end_event_id=r1)
    assert swipe is not None
    [r1_version] = [v for v in await ledger.versions(parent) if v.source.get("messageSeq") == r1]
    seed = await ledger.seed(swipe)
    assert seed is not None
    [item] = seed.body["items"]  # type: ignore[misc]
    assert item["atKey"] == r1_version.key  # type: ignore[index]
    assert (item["source"]["versionKey"], item["source"]["revision"]) == (r1_version.key, 1)  # type: ignore[index]
    host.swipe("f1", at_event_id=r2, new_session_id="w1", created_at=3000, prefix_end_event_id=r1)
    [swiped] = await service.install_session_seed(ticket=swipe, session_id="w1")
    assert await gold(service, swiped, "w1") == (11, 0)
    assert await kinds(service, swiped, "w1") == [("reply", 1, True)]
    await host.turn("w1", turn=2, user="again", reply="_.add('gold', 3);")
    assert await gold(service, swiped, "w1") == (14, 1)
    history = await service.history(id=swiped, scope=scope("w1"), include_before=True)
    assert history[-1].before_available is True and history[-1].before["gold"] == 11
    assert await gold(service, child, "f1") == (26, 1)
    assert await ledger.audit() == []


async def test_a_root_swipe_or_retry_of_a_later_turn_is_refused(service: MvuService, host: MemoryHost,
                                                               ledger: Ledger) -> None:
    _, (r1, r2, _) = await three_turns(service, host)
    stopped = await stopped_turn(host, "s1", turn=4, user="stop")
    for kind, at in (("reply-swipe", r2), ("request-retry", stopped)):
        with pytest.raises(MvuError) as refused:
            await service.capture_session_seed(session_id="s1", kind=kind, at_event_id=at, target_session_id="w0")
        assert refused.value.code == "MVU_SEED", kind
    assert await seed_rows(ledger) == 0
    # The first turn's root swipe is still taken.
    assert await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1,
                                              target_session_id="w0") is not None


async def test_a_fork_at_a_completed_reply_not_yet_ingested_applies_it_first(
        service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    parent = await playing(service, host)
    host.attach(None)
    await checkpointed_turns(service, host, "s1", range(1, 3), "_.add('gold', 1);")
    snapshot = await host.inspect("s1")
    assert snapshot is not None
    r2 = max(event.seq for event in snapshot.events if event.type == "assistant/message")
    assert [v.kind for v in await ledger.versions(parent)] == ["reply"]  # turn 2's reply is pending
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")
    assert await gold(service, child, "f1") == (12, 0)
    assert await kinds(service, child, "f1") == [("reply", 1, True), ("reply", 2, True)]
    assert await ledger.audit() == []


async def test_install_checks_the_child_against_the_prefix_frozen_at_capture(
        service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    _, (r1, r2, _) = await three_turns(service, host)
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    host.fork("s1", at_event_id=r2, new_session_id="early", created_at=2000)
    # The parent's copy of r1 drifts after the capture; a child copied from the drifted parent is
    # not the captured branch, even though it matches the parent's current events.
    host.replace_event("s1", r1, "assistant/message", {"turn": 1, "message": {
        "id": "s1-m1", "content": [{"type": "text", "text": "rewritten"}]}})
    host.fork("s1", at_event_id=r2, new_session_id="late", created_at=2001)
    with pytest.raises(MvuError) as refused:
        await service.install_session_seed(ticket=ticket, session_id="late")
    assert refused.value.code == "MVU_SEED_MISMATCH"
    assert await ledger.resources(session_id="late", kinds=("instance",)) == []
    # The child made from the prefix as captured installs, whatever the parent says now.
    [child] = await service.install_session_seed(ticket=ticket, session_id="early")
    assert await gold(service, child, "early") == (21, 0)
    assert await kinds(service, child, "early") == [("reply", 1, True), ("reply", 2, True)]


async def test_two_concurrent_root_captures_cannot_both_claim_one_target(
        service: MvuService, host: MemoryHost, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    await playing(service, host, "s1")
    await playing(service, host, "s2", created_at=1001)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    q1 = await host.turn("s2", turn=1, user="b", reply="_.add('gold', 2);")
    # Both captures pass their own checks before either stores its seed.
    arrived, both = 0, asyncio.Event()
    put_seed = ledger.put_seed

    async def held(*args: Any, **kwargs: Any) -> None:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both.set()
        await both.wait()
        await put_seed(*args, **kwargs)

    monkeypatch.setattr(ledger, "put_seed", held)
    results = await asyncio.gather(
        service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1, target_session_id="w0"),
        service.capture_session_seed(session_id="s2", kind="reply-swipe", at_event_id=q1, target_session_id="w0"),
        return_exceptions=True)
    tickets = [result for result in results if isinstance(result, str)]
    refusals = [result for result in results if isinstance(result, MvuError)]
    assert len(tickets) == 1 and [error.code for error in refusals] == ["MVU_SEED_CONFLICT"], results
    assert await seed_rows(ledger) == 1
    host.swipe("s1", at_event_id=r1, new_session_id="w0", created_at=4000)
    [child] = await service.install_session_seed(ticket=tickets[0], session_id="w0")
    assert len(await ledger.resources(session_id="w0", kinds=("instance",))) == 1 and child
    # A target that already has an instance is refused by the ledger itself too.
    with pytest.raises(MvuError) as taken:
        await put_seed("other-ticket", kind="reply-swipe", source_session_id="s2", target_session_id="w0",
                       body={"ticket": "other-ticket"})
    assert taken.value.code == "MVU_SEED_CONFLICT"


async def test_bad_inputs_are_refused_as_mvu_errors(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    _, (r1, _, _) = await three_turns(service, host)
    with pytest.raises(MvuError) as not_a_signal:
        await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r1,
                                           signal="stop")  # type: ignore[arg-type]
    assert not_a_signal.value.code == "MVU_OPERATION"
    with pytest.raises(MvuError) as not_a_signal_either:
        await service.install_session_seed(ticket="t", session_id="s1", signal=True)  # type: ignore[arg-type]
    assert not_a_signal_either.value.code == "MVU_OPERATION"
    # A reply whose ``message`` is not an object has no message id: no version at it, no crash.
    host.append("s1", "turn/start", {"turn": 4})
    await host.drain()
    odd = host.append("s1", "assistant/message", {"turn": 4, "message": "not an object"})
    host.append("s1", "turn/end", {"turn": 4, "reason": {"kind": "completed"}})
    await host.drain()
    with pytest.raises(MvuError) as no_version:
        await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=odd)
    assert no_version.value.code == "MVU_SEED_REQUIRED"
    assert await seed_rows(ledger) == 0


async def test_a_child_with_several_instances_forks_each_of_them(ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:party", "session_ids": ["*"], "initial": {"stat_data": {"hp": 100, "gold": 0}}}])
    host.attach(service)
    hero = await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    r2 = await host.turn("s1", turn=2, user="b", reply="_.add('gold', 10);")
    await host.turn("s1", turn=3, user="c", reply="_.add('gold', 100);")
    parents = {record.template_id: record.id for record in await service.list(scope=scope("s1"))}
    assert len(parents) == 2 and "mvu:party" in parents and hero in parents.values()
    start = {template: 0 if template == "mvu:party" else 10 for template in parents}
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
    assert ticket is not None
    host.fork("s1", at_event_id=r2, new_session_id="f1", created_at=2000)
    children = await service.install_session_seed(ticket=ticket, session_id="f1")
    assert len(children) == 2 and not set(children) & set(parents.values())
    records = {record.template_id: record for record in await service.list(scope=scope("f1"))}
    assert {template: record.id for template, record in records.items()}.keys() == parents.keys()
    for template, record in records.items():
        assert record.id in children and record.revision == 0 and record.inherited_from is not None
        assert record.inherited_from["id"] == parents[template]
        assert await kinds(service, record.id, "f1") == [("reply", 1, True), ("reply", 2, True)]
        assert await gold(service, record.id, "f1") == (start[template] + 11, 0)
    assert records["mvu:party"].content["stat_data"] == {"hp": 100, "gold": 11}
    await host.turn("f1", turn=3, user="other", reply="_.add('gold', 5);")
    for template, record in records.items():
        assert await gold(service, record.id, "f1") == (start[template] + 16, 1), template
        assert (await gold(service, parents[template], "s1"))[0] == start[template] + 111
    # A root swipe of turn 1 seeds both instances in the new session, from the opening.
    root = await service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1,
                                              target_session_id="w0")
    assert root is not None
    host.swipe("s1", at_event_id=r1, new_session_id="w0", created_at=3000)
    assert len(await service.install_session_seed(ticket=root, session_id="w0")) == 2
    for record in await service.list(scope=scope("w0")):
        assert record.template_id is not None
        assert await gold(service, record.id, "w0") == (start[record.template_id], 0)
    assert await ledger.audit() == []


def test_the_fork_version_and_its_lineage_stay_within_the_cut() -> None:
    def version(key: str, kind: str, seq: int | None, message: str | None = None) -> VersionRecord:
        source: dict[str, Any] = {} if seq is None else {"messageSeq": seq, "messageId": message or f"m{seq}"}
        return VersionRecord("r", key, 0, kind, 0, None, "h", source, {}, None, None, None, 0)

    history = [version("init-edit", "manual", None), version("r1", "reply", 3), version("e1", "manual", 3),
               version("f9", "failed", 9), version("late", "manual", 3)]
    assert fork_version(history, 3, "m3") == 2  # the edit before turn 3's receipt, not the later one
    assert fork_version(history, 3, "other") is None
    assert fork_version([version("f3", "failed", 3)], 3, "m3") == 0  # a failed receipt keeps the state
    check_lineage(history, "e1", 3)
    check_lineage(history, None, None)
    for key, cut in (("late", 3), ("missing", 3), ("r1", None)):
        with pytest.raises(MvuError) as refused:
            check_lineage(history, key, cut)
        assert refused.value.code == "MVU_SEED_MISMATCH", key
