"""MvuService.changes and MvuService.diff: a path's story, a version's and a turn's changes, and the
diff of two points, with history's scope and refusals (both engines)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.json_diff import MAX_DIFFERENCES
from mvu_store.ledger import Ledger
from mvu_store.ledger.records import ChangeRow
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.ledger.change_rows import write_changes
from tests.service.support import PLAIN, playing, scope


async def hp_turns(service: MvuService, host: MemoryHost, ledger: Ledger, instance: str, hps: list[int], *,
                   session_id: str = "s1", first_turn: int = 1, start: int = 50) -> list[int]:
    """Play one turn per hp, recording its change as a commit will; returns the reply seqs."""
    seqs = []
    for turn, hp in enumerate(hps, start=first_turn):
        seqs.append(await host.turn(session_id, turn=turn, user="u", reply=f"_.set('hp', {hp});"))
        record = await service.read(id=instance, scope=scope(session_id))
        assert record is not None
        await write_changes(ledger, instance, record.revision, [ChangeRow(
            path="/hp", status="applied", actor="reply", op="set", before=(start,), after=(hp,),
            command=f"_.set('hp', {hp});", turn=turn)])
        start = hp
    return seqs


async def refused(call: Any) -> str:
    with pytest.raises(MvuError) as error:
        await call
    return str(error.value.code)


async def test_a_path_story_pages_back_oldest_first(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    await hp_turns(service, host, ledger, instance, [40, 30, 20])

    whole = await service.changes(id=instance, scope=scope("s1"), path="/hp")
    newest = await service.changes(id=instance, scope=scope("s1"), path="/hp", limit=2)
    older = await service.changes(id=instance, scope=scope("s1"), path="/hp", limit=2, before=newest.next_before)

    assert [(c.revision, c.before, c.after, c.turn) for c in whole.changes] == [
        (1, 50, 40, 1), (2, 40, 30, 2), (3, 30, 20, 3)]
    assert [c.after for c in newest.changes] == [30, 20] and newest.next_before == 1
    assert [c.after for c in older.changes] == [40] and older.next_before is None
    # The positions are history's.
    history = await service.history(id=instance, scope=scope("s1"))
    assert [entry.position for entry in history] == [c.position for c in whole.changes]
    assert whole.to_json()["changes"][0] == {
        "resourceId": instance, "inherited": False, "position": 0, "revision": 1, "seq": 0, "sessionId": "s1",
        "turn": 1, "messageSeq": history[0].source["messageSeq"], "path": "/hp", "op": "set", "status": "applied",
        "actor": "reply", "before": 50, "after": 40, "omitted": False, "command": "_.set('hp', 40);",
        "derived": False}
    assert whole.to_json()["nextBefore"] is None and whole.to_json()["truncated"] is False


async def test_null_is_a_value_and_absence_is_none(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host, card=PLAIN)
    await host.turn("s1", turn=1, user="u", reply="_.set('hp', 1);")
    await write_changes(ledger, instance, 1, [
        ChangeRow(path="/x", status="applied", actor="reply", op="add", after=(None,), turn=1),
        ChangeRow(path="/y", status="ignored", actor="reply", reason="no-op", command="_.set('y');", turn=1)])

    answer = await service.changes(id=instance, scope=scope("s1"), revision=1)

    x, y = answer.changes
    assert (x.has_before, x.has_after, y.has_before, y.has_after) == (False, True, False, False)
    shown = answer.to_json()["changes"]
    assert "before" not in shown[0] and shown[0]["after"] is None
    assert "before" not in shown[1] and "after" not in shown[1] and shown[1]["reason"] == "no-op"


async def test_a_version_and_a_turn(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    await hp_turns(service, host, ledger, instance, [40, 30])

    version = await service.changes(id=instance, scope=scope("s1"), revision=2)
    this_turn = await service.changes(id=instance, scope=scope("s1"), turn=1)
    named = await service.changes(id=instance, scope=scope(), turn=2, session_id="s1")

    assert [c.after for c in version.changes] == [30]
    assert [c.after for c in this_turn.changes] == [40]
    assert [c.after for c in named.changes] == [30]
    assert (await service.changes(id=instance, scope=scope("s1"), revision=0)).changes == []
    assert await refused(service.changes(id=instance, scope=scope("s1"), revision=3)) == Code.MISSING


@pytest.mark.parametrize(("arguments", "code"), [
    ({}, Code.OPERATION),
    ({"path": "/hp", "revision": 1}, Code.OPERATION),
    ({"revision": 1, "limit": 5}, Code.OPERATION),
    ({"turn": 1, "before": 5}, Code.OPERATION),
    ({"path": "/hp", "session_id": "s1"}, Code.OPERATION),
    ({"path": "/hp", "limit": 0}, Code.OPERATION),
    ({"path": "/hp", "limit": 1001}, Code.OPERATION),
    ({"revision": -1}, Code.OPERATION),
    ({"revision": True}, Code.OPERATION),
    ({"turn": "1"}, Code.OPERATION),
    ({"path": "hp"}, Code.PATH),
    ({"path": "/a~2"}, Code.PATH),
    ({"path": "/" * 5000}, Code.PATH),
    ({"path": 3}, Code.PATH),
])
async def test_bad_arguments_are_refused(service: MvuService, host: MemoryHost, arguments: dict[str, Any],
                                         code: Code) -> None:
    instance = await playing(service, host)
    assert await refused(service.changes(id=instance, scope=scope("s1"), **arguments)) == code


async def test_scope_and_missing_like_history(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    host.create_session("s2", created_at=2000)
    assert await refused(service.changes(id=instance, scope=scope("s2"), path="/hp")) == Code.SCOPE_MISMATCH
    assert await refused(service.diff(id=instance, scope=scope("s2"), from_revision=0)) == Code.SCOPE_MISMATCH
    assert await refused(service.changes(id="mvu:nobody", scope=scope("s1"), path="/hp")) == Code.MISSING
    assert await refused(service.diff(id="mvu:nobody", scope=scope("s1"), from_revision=0)) == Code.MISSING
    assert await refused(service.changes(id=instance, scope={"authority": "remote"}, path="")) == Code.AUTHORITY
    assert await refused(service.changes(id=instance, scope=scope(), turn=1)) == Code.OPERATION


async def test_a_diff_of_two_revisions(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="u", reply="_.set('hp', 40); _.set('mood', 'angry');")
    await host.turn("s1", turn=2, user="u", reply="_.set('gold', 3);")

    diff = await service.diff(id=instance, scope=scope("s1"), from_revision=0)
    back = await service.diff(id=instance, scope=scope("s1"), from_revision=2, to_revision=1)

    assert diff.to_json() == {
        "from": {"id": instance, "revision": 0, "versionKey": None},
        "to": {"id": instance, "revision": 2, "versionKey": diff.to.version_key},
        # In the stored states' key order (canonical JSON: sorted).
        "changes": [{"path": "/gold", "op": "replace", "before": 10, "after": 3},
                    {"path": "/hp", "op": "replace", "before": 50, "after": 40},
                    {"path": "/mood", "op": "replace", "before": "calm", "after": "angry"}],
        "truncated": False}
    assert diff.to.version_key is not None
    assert [(c.path, c.before, c.after) for c in back.changes] == [("/gold", 3, 10)]
    assert (await service.diff(id=instance, scope=scope("s1"), from_revision=1, to_revision=1)).changes == []
    assert await refused(service.diff(id=instance, scope=scope("s1"), from_revision=3)) == Code.MISSING
    assert await refused(service.diff(id=instance, scope=scope("s1"), from_revision=-1)) == Code.OPERATION


async def test_a_diff_across_a_fork_and_between_swipes(service: MvuService, host: MemoryHost,
                                                       ledger: Ledger) -> None:
    parent = await playing(service, host)
    await host.turn("s1", turn=1, user="u", reply="_.set('hp', 40);")
    r2 = await host.turn("s1", turn=2, user="u", reply="_.set('hp', 30);")
    children = []
    for name, hp in (("f1", 20), ("f2", 10)):
        ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r2)
        assert ticket is not None
        host.fork("s1", at_event_id=r2, new_session_id=name, created_at=2000)
        [child] = await service.install_session_seed(ticket=ticket, session_id=name)
        await host.turn(name, turn=3, user="u", reply=f"_.set('hp', {hp});")
        children.append(child)
    first, second = children

    forked_at = await service.diff(id=first, scope=scope("f1"), from_revision=0)
    from_parent = await service.diff(id=parent, scope=scope("f1"), from_revision=1, to_id=first)
    swipes = await service.diff(id=first, scope=scope("f1"), from_revision=1, to_id=second)

    assert [(c.before, c.after) for c in forked_at.changes] == [(30, 20)]
    assert forked_at.from_.version_key == (await service.history(id=parent, scope=scope("s1")))[1].key
    assert [(c.before, c.after) for c in from_parent.changes] == [(40, 20)]
    assert (swipes.from_.id, swipes.to.id, [(c.before, c.after) for c in swipes.changes]) == (
        first, second, [(20, 10)])
    # Another playthrough's resource is not of this lineage: history's refusal.
    other = await playing(service, host, "s3", card=PLAIN, created_at=3000)
    assert await refused(service.diff(id=first, scope=scope("f1"), from_revision=0, to_id=other)) == \
        Code.SCOPE_MISMATCH


async def test_a_large_diff_is_bounded(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    big = {f"k{n:05}": "x" * 60 for n in range(MAX_DIFFERENCES + 200)}
    receipt = await service.update(id=instance, content={"stat_data": {"hp": 10, "items": [], **big}},
                                   expected_revision=0, operation_id="big", scope=scope("s1"))

    diff = await service.diff(id=instance, scope=scope("s1"), from_revision=0, to_revision=receipt.revision)

    assert diff.truncated and len(diff.changes) == MAX_DIFFERENCES
    assert [c.path for c in diff.changes[:2]] == ["/k00000", "/k00001"]
    assert all(c.op == "add" and not c.has_before for c in diff.changes)


# -- the wire's answers are kept until the resource's head moves ------------------------------------

async def turn(service: MvuService, host: MemoryHost, instance: str, number: int, reply: str,
               session_id: str = "s1") -> int:
    """Play a turn to its version (a read takes the reply in); returns the new revision."""
    await host.turn(session_id, turn=number, user="u", reply=reply)
    record = await service.read(id=instance, scope=scope(session_id))
    assert record is not None
    return record.revision


async def test_a_kept_story_is_the_same_answer_until_a_new_version(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    assert await turn(service, host, instance, 1, "_.set('hp', 40);") == 1

    first = await service.changes_json(id=instance, scope=scope("s1"), path="/hp")
    again = await service.changes_json(id=instance, scope=scope("s1"), path="/hp")
    assert again is first  # kept: not read nor written again
    assert first.revision == 1 and first.digest == hashlib.sha256(first.body).hexdigest()
    typed = await service.changes(id=instance, scope=scope("s1"), path="/hp")
    assert json.loads(first.body) == typed.to_json()

    assert await turn(service, host, instance, 2, "_.set('hp', 30);") == 2
    moved = await service.changes_json(id=instance, scope=scope("s1"), path="/hp")
    assert [c["after"] for c in json.loads(moved.body)["changes"]] == [40, 30]
    assert moved.revision == 2 and moved.digest != first.digest
    # Another query of the same resource is its own answer; a version's is kept too.
    newest = await service.changes_json(id=instance, scope=scope("s1"), path="/hp", limit=1)
    assert [c["after"] for c in json.loads(newest.body)["changes"]] == [30]
    version = await service.changes_json(id=instance, scope=scope("s1"), revision=2)
    assert await service.changes_json(id=instance, scope=scope("s1"), revision=2) is version


async def test_an_edit_moves_a_kept_turn_and_diff(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    await turn(service, host, instance, 1, "_.set('hp', 40);")
    this_turn = await service.changes_json(id=instance, scope=scope("s1"), turn=1)
    to_now = await service.diff_json(id=instance, scope=scope("s1"), from_revision=0)
    fixed = await service.diff_json(id=instance, scope=scope("s1"), from_revision=0, to_revision=1)
    assert await service.diff_json(id=instance, scope=scope("s1"), from_revision=0) is to_now
    assert to_now.revision == 1 and json.loads(to_now.body) == (
        await service.diff(id=instance, scope=scope("s1"), from_revision=0)).to_json()

    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and isinstance(record.content, dict)
    await service.update(id=instance, content={"stat_data": {**record.content["stat_data"], "hp": 7}},
                         expected_revision=1, operation_id="edit", scope=scope("s1"))

    moved = await service.diff_json(id=instance, scope=scope("s1"), from_revision=0)
    assert moved.revision == 2
    assert [(c["path"], c["after"]) for c in json.loads(moved.body)["changes"]] == [("/hp", 7)]
    # What two fixed revisions differ in is what it was; the edit, made in turn 1, is of its changes.
    assert (await service.diff_json(id=instance, scope=scope("s1"), from_revision=0, to_revision=1)).body == \
        fixed.body
    [reply] = json.loads(this_turn.body)["changes"]
    edited = json.loads((await service.changes_json(id=instance, scope=scope("s1"), turn=1)).body)["changes"]
    assert [(c["actor"], c["after"]) for c in edited] == [(reply["actor"], 40), ("manual", 7)]


async def test_a_kept_answer_still_meets_the_scope(service: MvuService, host: MemoryHost) -> None:
    parent = await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="u", reply="_.set('hp', 40);")
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r1)
    assert ticket is not None
    host.fork("s1", at_event_id=r1, new_session_id="f1", created_at=2000)
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")
    other = await playing(service, host, "s3", card=PLAIN, created_at=3000)
    host.create_session("s2", created_at=2000)

    assert (await service.changes_json(id=parent, scope=scope("s1"), path="/hp")).revision == 1
    assert await refused(service.changes_json(id=parent, scope=scope("s2"), path="/hp")) == Code.SCOPE_MISMATCH
    # The management view reads both ends of any diff; a session reads another lineage's end never.
    await service.diff_json(id=child, scope=scope(), from_revision=0, to_id=other)
    assert await refused(service.diff_json(id=child, scope=scope("f1"), from_revision=0, to_id=other)) == \
        Code.SCOPE_MISMATCH
    # The same lineage's parent is readable from the child's session, kept or not.
    from_parent = await service.diff_json(id=parent, scope=scope("f1"), from_revision=0, to_id=child)
    assert await service.diff_json(id=parent, scope=scope("f1"), from_revision=0, to_id=child) is from_parent
    assert await refused(service.diff_json(id=parent, scope=scope("s2"), from_revision=0, to_id=child)) == \
        Code.SCOPE_MISMATCH
