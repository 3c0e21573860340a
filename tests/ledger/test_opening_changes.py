"""The rows of an instance's creation (what its opening changed, position -1, revision 0): written
with the instance, charged, read as the oldest entry of a path's story and as revision 0, never
a fork child's, checked by the audit (both engines)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import Ledger, NewResource
from mvu_store.ledger import tables as t
from mvu_store.ledger.audit import row_bytes
from mvu_store.ledger.change_rows import table_rows
from mvu_store.ledger.records import ChangeRow
from mvu_store.ledger.writer import WriteTx
from tests.ledger.change_fixtures import change_rows
from tests.ledger.test_change_log import play

OPENED = (ChangeRow("/hp", "applied", "opening", op="replace", before=(100,), after=(80,)),
          ChangeRow("/gold", "applied", "opening", op="add", after=(5,)),
          ChangeRow("/hp", "ignored", "opening", op="set", before=(80,), after=(80,), command="_.set('hp', 80);",
                    reason="no_op"))


def opened(resource_id: str, changes: tuple[ChangeRow, ...] = OPENED, session_id: str = "s1") -> NewResource:
    return NewResource(id=resource_id, kind="instance", initial={"stat_data": {"hp": 80, "gold": 5}},
                       definition={}, session_id=session_id, session_created_at=1000, changes=changes)


async def test_the_creation_writes_its_rows_at_position_minus_one_and_charges_them(ledger: Ledger) -> None:
    await ledger.create_instance(opened("mvu:x", ()), boundary=0)  # stores the blobs the others share
    used = [(await ledger.usage()).used_bytes]
    for resource_id, changes in (("mvu:a", ()), ("mvu:b", OPENED)):
        await ledger.create_instance(opened(resource_id, changes), boundary=0)
        used.append((await ledger.usage()).used_bytes)
    rows = await change_rows(ledger)
    assert [(r["resource_id"], r["position"], r["seq"], r["revision"], r["session_id"], r["turn"],
             r["message_seq"], r["path"], r["status"], r["actor"], r["before"], r["after"], r["reason"])
            for r in rows] == [
        ("mvu:b", -1, 0, 0, "s1", None, None, "/hp", "applied", "opening", "100", "80", None),
        ("mvu:b", -1, 1, 0, "s1", None, None, "/gold", "applied", "opening", None, "5", None),
        ("mvu:b", -1, 2, 0, "s1", None, None, "/hp", "ignored", "opening", "80", "80", "no_op")]
    assert all(row["bytes"] == row_bytes(t.changes, row) and not row["derived"] for row in rows)
    # The instance with rows costs what the one without does, and its rows.
    assert (used[2] - used[1]) - (used[1] - used[0]) == sum(row["bytes"] for row in rows)
    assert await ledger.audit() == []


async def test_a_creation_over_budget_writes_neither_the_instance_nor_its_rows(
        others: Callable[..., Awaitable[Ledger]]) -> None:
    ledger = await others(ledger_limit_bytes=200_000)
    await ledger.create_instance(opened("mvu:a"), boundary=0)
    used = (await ledger.usage()).used_bytes
    huge = tuple(ChangeRow(f"/k{i}", "applied", "opening", op="add", after=("x" * 1000,)) for i in range(300))
    with pytest.raises(MvuError) as refused:
        await ledger.create_instance(opened("mvu:b", huge), boundary=0)
    assert refused.value.code == Code.STORAGE_LIMIT
    assert await ledger.resource("mvu:b") is None
    assert [row["resource_id"] for row in await change_rows(ledger)] == ["mvu:a"] * 3
    assert (await ledger.usage()).used_bytes == used
    assert await ledger.audit() == []


async def test_a_path_story_starts_with_the_opening_and_pages_reach_it(ledger: Ledger) -> None:
    await ledger.create_instance(opened("mvu:r"), boundary=0)
    await play(ledger, "mvu:r", [70, 60], start=80)

    whole = await ledger.path_changes("mvu:r", "/hp", before_position=None, limit=10)
    assert [(e.position, e.revision, e.status, e.actor, e.turn) for e in whole.entries] == [
        (-1, 0, "applied", "opening", None), (-1, 0, "ignored", "opening", None),
        (0, 1, "applied", "reply", 1), (1, 2, "applied", "reply", 2)]
    assert whole.next_before is None

    newest = await ledger.path_changes("mvu:r", "/hp", before_position=None, limit=2)
    older = await ledger.path_changes("mvu:r", "/hp", before_position=newest.next_before, limit=2)
    assert [e.position for e in newest.entries] == [0, 1] and newest.next_before == 0
    assert [(e.position, e.seq) for e in older.entries] == [(-1, 0), (-1, 2)]
    assert older.next_before is None and not older.truncated
    # One change of the opening's two per page: its newest, cut, and no page older than it.
    cut = await ledger.path_changes("mvu:r", "/hp", before_position=0, limit=1)
    assert [(e.position, e.seq) for e in cut.entries] == [(-1, 2)] and cut.truncated and cut.next_before is None
    assert (await ledger.path_changes("mvu:r", "/gold", before_position=0, limit=5)).entries[0].after == (5,)


async def test_revision_zero_is_the_opening_and_no_turn_lists_it(ledger: Ledger) -> None:
    await ledger.create_instance(opened("mvu:r"), boundary=0)
    await play(ledger, "mvu:r", [70], start=80)
    page = await ledger.version_changes("mvu:r", revision=0)
    assert page is not None and [(e.position, e.seq, e.path) for e in page.entries] == [
        (-1, 0, "/hp"), (-1, 1, "/gold"), (-1, 2, "/hp")]
    assert [e.actor for e in (await ledger.turn_changes("mvu:r", session_id="s1", turn=1)).entries] == ["reply"]
    await ledger.create_instance(opened("mvu:plain", ()), boundary=0)
    empty = await ledger.version_changes("mvu:plain", revision=0)
    assert empty is not None and empty.entries == ()


async def test_a_fork_child_has_no_opening_of_its_own_and_inherits_its_parents(ledger: Ledger) -> None:
    await ledger.create_instance(opened("mvu:parent"), boundary=0)
    parent = await play(ledger, "mvu:parent", [70, 60], start=80)
    child = NewResource(id="mvu:child", kind="instance", initial={"stat_data": {}}, definition={},
                        session_id="s2", session_created_at=2000)
    await ledger.fork("mvu:parent", child, at_key=parent[0].version_key)

    page = await ledger.path_changes("mvu:child", "/hp", before_position=None, limit=10)
    assert [(e.resource_id, e.position, e.actor, e.inherited) for e in page.entries] == [
        ("mvu:parent", -1, "opening", True), ("mvu:parent", -1, "opening", True), ("mvu:parent", 0, "reply", True)]
    own = await ledger.version_changes("mvu:child", revision=0)
    assert own is not None and own.entries == ()

    with pytest.raises(MvuError) as refused:
        await ledger.fork("mvu:parent", opened("mvu:child-2"), at_key=parent[0].version_key)
    assert refused.value.code == Code.OPERATION
    assert await ledger.resource("mvu:child-2") is None


async def test_a_creation_row_of_an_unknown_actor_is_refused(ledger: Ledger) -> None:
    bad: Any = ChangeRow("/hp", "applied", "greeting")  # type: ignore[arg-type]
    with pytest.raises(MvuError) as refused:
        await ledger.create_instance(opened("mvu:r", (bad,)), boundary=0)
    assert refused.value.code == Code.OPERATION
    assert await ledger.resource("mvu:r") is None


async def test_the_audit_finds_rows_that_name_no_version(ledger: Ledger) -> None:
    await ledger.create_instance(opened("mvu:r"), boundary=0)
    await play(ledger, "mvu:r", [70], start=80)
    assert await ledger.audit() == []
    store = ledger._store

    def stray(position: int, revision: int) -> Callable[[WriteTx], None]:
        def work(tx: WriteTx) -> None:
            [row] = table_rows([ChangeRow("/x", "applied", "reply")], resource_id="mvu:r", position=position,
                               revision=revision, session_id=None, message_seq=None)
            store.insert_rows(tx, t.changes, [{**row, "seq": 9}])
        return work

    await store.write(stray(5, 6))  # no version at 5
    await store.write(stray(-1, 3))  # a creation's row at another revision than 0
    found = [(f.check, f.subject, f.detail) for f in await ledger.audit()]
    assert ("references", "mvu:r", "changes at position 5 name no version") in found
    assert ("references", "mvu:r", "changes at position -1 name no version") in found
