"""Reads of the changes table: a path's story paged through lineage, a version's and a turn's
changes, and the states a diff compares (both engines)."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.dialects import sqlite

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import (
    MAX_VERSION_CHANGES,
    ChangeEntry,
    CommitOutcome,
    CommitRequest,
    Ledger,
    NewResource,
    change_log,
    open_ledger,
)
from mvu_store.ledger.query import Statements
from mvu_store.ledger.records import ChangeRow
from tests.ledger.change_rows import write_changes


def turn(resource_id: str, revision: int, hp: int, *, session_id: str = "s1") -> CommitRequest:
    return CommitRequest(resource_id=resource_id, expected_revision=revision, kind="reply",
                         variables={"stat_data": {"hp": hp}}, fingerprint=f"fp-{resource_id}-{revision}",
                         source={"sessionId": session_id, "messageSeq": 10 + revision, "turn": revision + 1},
                         key=f"{resource_id}-{revision}")


def hp_change(before: int, after: int, turn_no: int) -> ChangeRow:
    return ChangeRow(path="/hp", status="applied", actor="reply", op="set", before=(before,), after=(after,),
                     command=f"_.set('hp', {after});", turn=turn_no)


async def play(ledger: Ledger, resource_id: str, hps: list[int], *, start: int = 100,
               session_id: str = "s1") -> list[CommitOutcome]:
    """One reply per hp, each with its /hp change and, every other turn, a /gold one."""
    outcomes = []
    previous = start
    for revision, hp in enumerate(hps):
        outcome = await ledger.commit(turn(resource_id, revision, hp, session_id=session_id))
        rows = [hp_change(previous, hp, revision + 1)]
        if revision % 2:
            rows.append(ChangeRow(path="/gold", status="applied", actor="reply", op="add", after=(revision,),
                                  turn=revision + 1))
        await write_changes(ledger, resource_id, outcome.revision, rows)
        outcomes.append(outcome)
        previous = hp
    return outcomes


def new(resource_id: str) -> NewResource:
    return NewResource(id=resource_id, kind="instance", initial={"stat_data": {"hp": 100}}, definition={})


def story(entries: tuple[ChangeEntry, ...] | list[ChangeEntry]) -> list[tuple[str, int, JsonValue]]:
    return [(entry.resource_id, entry.position, entry.after[0] if entry.after else None) for entry in entries]


async def forked(ledger: Ledger) -> None:
    """A parent with five replies and a child forked at its third that played three of its own."""
    await ledger.create_resource(new("mvu:parent"))
    parent = await play(ledger, "mvu:parent", [90, 80, 70, 60, 50])
    await ledger.fork("mvu:parent", new("mvu:child"), at_key=parent[2].version_key)
    await play(ledger, "mvu:child", [75, 74, 73], start=70, session_id="s2")


async def test_a_path_story_follows_the_child_into_its_parent_up_to_the_fork(ledger: Ledger) -> None:
    await forked(ledger)

    page = await ledger.path_changes("mvu:child", "/hp", before_position=None, limit=100)

    # The parent's first three versions (positions 0-2), then the child's own at 3-5: the
    # positions of the child's history, the parent's later versions left out.
    assert story(page.entries) == [("mvu:parent", 0, 90), ("mvu:parent", 1, 80), ("mvu:parent", 2, 70),
                                   ("mvu:child", 3, 75), ("mvu:child", 4, 74), ("mvu:child", 5, 73)]
    assert [entry.inherited for entry in page.entries] == [True] * 3 + [False] * 3
    assert [entry.revision for entry in page.entries] == [1, 2, 3, 1, 2, 3]
    assert page.next_before is None and not page.truncated
    # The positions are those of the child's history.
    history = await ledger.versions("mvu:child")
    assert [history[entry.position].key for entry in page.entries] == [
        "mvu:parent-0", "mvu:parent-1", "mvu:parent-2", "mvu:child-0", "mvu:child-1", "mvu:child-2"]


async def test_pages_go_back_through_lineage_with_before(ledger: Ledger) -> None:
    await forked(ledger)

    newest = await ledger.path_changes("mvu:child", "/hp", before_position=None, limit=2)
    older = await ledger.path_changes("mvu:child", "/hp", before_position=newest.next_before, limit=2)
    oldest = await ledger.path_changes("mvu:child", "/hp", before_position=older.next_before, limit=2)

    assert [story(p.entries) for p in (newest, older, oldest)] == [
        [("mvu:child", 4, 74), ("mvu:child", 5, 73)],
        [("mvu:parent", 2, 70), ("mvu:child", 3, 75)],
        [("mvu:parent", 0, 90), ("mvu:parent", 1, 80)]]
    assert (newest.next_before, older.next_before, oldest.next_before) == (4, 2, None)


async def test_a_parent_story_is_its_own_whole_history(ledger: Ledger) -> None:
    await forked(ledger)
    page = await ledger.path_changes("mvu:parent", "/gold", before_position=None, limit=10)
    assert story(page.entries) == [("mvu:parent", 1, 1), ("mvu:parent", 3, 3)]


async def test_values_keep_absent_apart_from_null_and_flags_come_back(ledger: Ledger) -> None:
    await ledger.create_resource(new("mvu:r"))
    outcome = await ledger.commit(turn("mvu:r", 0, 1))
    await write_changes(ledger, "mvu:r", outcome.revision, [
        ChangeRow(path="/a", status="applied", actor="manual", op="add", after=(None,)),
        ChangeRow(path="/b", status="applied", actor="manual", op="remove", before=({"x": [1]},)),
        ChangeRow(path="/c~1d", status="refused", actor="reply", command="_.set('c/d', 1);", code="MVU_SCHEMA",
                  reason="schema", message="c/d: expected string"),
    ], derived=True)

    a, b, c = (await ledger.version_changes("mvu:r", revision=1) or pytest.fail("no version")).entries

    assert (a.before, a.after) == ((), (None,))
    assert (b.before, b.after) == (({"x": [1]},), ())
    assert (c.status, c.code, c.reason, c.message, c.command) == (
        "refused", "MVU_SCHEMA", "schema", "c/d: expected string", "_.set('c/d', 1);")
    assert all(entry.derived and not entry.omitted for entry in (a, b, c))
    assert (a.session_id, a.message_seq, a.seq, b.seq) == ("s1", 10, 0, 1)


async def test_an_omitted_value_says_so(ledger: Ledger) -> None:
    await ledger.create_resource(new("mvu:r"))
    outcome = await ledger.commit(turn("mvu:r", 0, 1))
    await write_changes(ledger, "mvu:r", outcome.revision,
                        [ChangeRow(path="/big", status="applied", actor="reply", op="set")], omitted=True)
    (entry,) = (await ledger.path_changes("mvu:r", "/big", before_position=None, limit=5)).entries
    assert entry.omitted and entry.before == entry.after == ()


async def test_a_version_by_revision_or_by_position_in_lineage(ledger: Ledger) -> None:
    await forked(ledger)

    own = await ledger.version_changes("mvu:child", revision=2)
    inherited = await ledger.version_changes("mvu:child", position=1)
    beyond_fork = await ledger.version_changes("mvu:child", position=6)

    assert own is not None and story(own.entries) == [("mvu:child", 4, 74), ("mvu:child", 4, 1)]
    assert inherited is not None and story(inherited.entries) == [("mvu:parent", 1, 80), ("mvu:parent", 1, 1)]
    assert inherited.entries[0].inherited
    assert beyond_fork is None
    assert await ledger.version_changes("mvu:child", revision=9) is None
    assert await ledger.version_changes("mvu:parent", position=3) is not None


async def test_a_turn_changes_of_one_session(ledger: Ledger) -> None:
    await forked(ledger)

    child_turn = await ledger.turn_changes("mvu:child", session_id="s2", turn=2)
    parent_turn = await ledger.turn_changes("mvu:child", session_id="s1", turn=2)
    after_fork = await ledger.turn_changes("mvu:child", session_id="s1", turn=4)

    assert story(child_turn.entries) == [("mvu:child", 4, 74), ("mvu:child", 4, 1)]
    assert story(parent_turn.entries) == [("mvu:parent", 1, 80), ("mvu:parent", 1, 1)]
    assert after_fork.entries == ()  # the parent's fourth turn came after the fork


async def test_a_session_filter_keeps_inherited_rows(ledger: Ledger) -> None:
    await ledger.create_resource(NewResource(id="mvu:shared", kind="shared", initial={"stat_data": {}},
                                             definition={}))
    first = await ledger.commit(turn("mvu:shared", 0, 1, session_id="a"))
    second = await ledger.commit(turn("mvu:shared", 1, 2, session_id="b"))
    await write_changes(ledger, "mvu:shared", first.revision, [hp_change(0, 1, 1)])
    await write_changes(ledger, "mvu:shared", second.revision, [hp_change(1, 2, 1)])

    only_b = await ledger.path_changes("mvu:shared", "/hp", before_position=None, limit=5, session_id="b")
    assert story(only_b.entries) == [("mvu:shared", 1, 2)]


async def test_a_page_never_splits_a_version(ledger: Ledger) -> None:
    await ledger.create_resource(new("mvu:r"))
    for revision, count in enumerate([2, 3]):
        outcome = await ledger.commit(turn("mvu:r", revision, revision))
        await write_changes(ledger, "mvu:r", outcome.revision,
                            [hp_change(n, n + 1, revision + 1) for n in range(count)])

    page = await ledger.path_changes("mvu:r", "/hp", before_position=None, limit=4)
    rest = await ledger.path_changes("mvu:r", "/hp", before_position=page.next_before, limit=4)
    alone = await ledger.path_changes("mvu:r", "/hp", before_position=None, limit=2)

    assert [e.position for e in page.entries] == [1, 1, 1] and page.next_before == 1 and not page.truncated
    assert [e.position for e in rest.entries] == [0, 0] and rest.next_before is None
    # One version with more changes of the path than a page holds: its newest ones, said so.
    assert [(e.position, e.seq) for e in alone.entries] == [(1, 1), (1, 2)] and alone.truncated
    assert alone.next_before == 1


async def test_a_version_lists_a_bounded_number_of_changes(ledger: Ledger) -> None:
    await ledger.create_resource(new("mvu:r"))
    outcome = await ledger.commit(turn("mvu:r", 0, 1))
    await write_changes(ledger, "mvu:r", outcome.revision,
                        [hp_change(n, n + 1, 1) for n in range(MAX_VERSION_CHANGES + 1)])
    page = await ledger.version_changes("mvu:r", revision=1)
    assert page is not None and len(page.entries) == MAX_VERSION_CHANGES and page.truncated
    assert (await ledger.turn_changes("mvu:r", session_id="s1", turn=1)).truncated


async def test_an_unknown_resource_is_missing(ledger: Ledger) -> None:
    for read in (ledger.path_changes("mvu:nobody", "/hp", before_position=None, limit=5),
                 ledger.version_changes("mvu:nobody", revision=1),
                 ledger.turn_changes("mvu:nobody", session_id="s", turn=1),
                 ledger.states_at([("mvu:nobody", None)])):
        with pytest.raises(MvuError) as refused:
            await read
        assert refused.value.code == Code.MISSING


async def test_states_at_revisions_and_through_a_fork(ledger: Ledger) -> None:
    await forked(ledger)

    current, first, start, forked_at, parent_start = await ledger.states_at(
        [("mvu:child", None), ("mvu:child", 1), ("mvu:parent", 0), ("mvu:child", 0), ("mvu:parent", 0)])

    assert (current.revision, current.version_key, current.text) == (3, "mvu:child-2", '{"stat_data":{"hp":73}}')
    assert (first.revision, first.text) == (1, '{"stat_data":{"hp":75}}')
    assert (start.version_key, start.text) == (None, '{"stat_data":{"hp":100}}')
    # A child's revision 0 is the version it forked at.
    assert (forked_at.version_key, forked_at.text) == ("mvu:parent-2", '{"stat_data":{"hp":70}}')
    assert {point.root for point in (current, first, start, forked_at)} == {"mvu:parent"}
    assert parent_start == start
    for revision in (4, 9):
        with pytest.raises(MvuError) as refused:
            await ledger.states_at([("mvu:child", revision)])
        assert refused.value.code == Code.MISSING


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(counts=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=6),
       limit=st.integers(min_value=3, max_value=7))
async def test_paging_back_lists_every_change_once_in_order(ledger: Ledger, counts: list[int], limit: int) -> None:
    """Pages of any size (at least a version's changes) give the whole story, each change once."""
    resource_id = f"mvu:p{len(await ledger.resources())}"
    await ledger.create_resource(new(resource_id))
    expected = []
    for revision, count in enumerate(counts):
        outcome = await ledger.commit(turn(resource_id, revision, revision))
        await write_changes(ledger, resource_id, outcome.revision, [hp_change(n, n, 1) for n in range(count)])
        expected += [(revision, seq) for seq in range(count)]

    listed: list[tuple[int, int]] = []
    before: int | None = None
    while True:
        page = await ledger.path_changes(resource_id, "/hp", before_position=before, limit=limit)
        assert not page.truncated
        assert page.entries or not expected
        listed[:0] = [(entry.position, entry.seq) for entry in page.entries]
        if page.next_before is None:
            break
        before = page.next_before

    assert listed == expected


def test_sqlite_seeks_a_paths_story_and_a_turns_changes_by_their_indexes(tmp_path: Path) -> None:
    """Without statistics SQLite's planner would read every change of the resource in
    primary-key order and keep one path's: the story's term makes it seek ix_changes_path, in
    the page's order (no sort), and a turn's ix_changes_session_turn."""
    db = tmp_path / "plan.sqlite3"
    asyncio.run(_created(f"sqlite:///{db}"))
    statements = Statements(sqlite.dialect())
    plans = {}
    with sqlite3.connect(db) as connection:
        for query, params in ((change_log._path_query(False), ("default", "r", "/hp", 9, 101)),
                              (change_log._path_query(True), ("default", "r", "/hp", "s1", 9, 101)),
                              (change_log._TURN_ROWS, ("default", "r", "s1", 2, 9, 101))):
            sql = statements.sql(query)
            plan = connection.execute(f"EXPLAIN QUERY PLAN {sql.text}", (*params, 0)).fetchall()
            plans[query.name] = " / ".join(str(row[-1]) for row in plan)
    assert "USING INDEX ix_changes_path (ledger_id=? AND resource_id=? AND path=? AND position<?)" in \
        plans["path-changes:False"]
    assert "ix_changes_path" in plans["path-changes:True"]
    assert "ix_changes_session_turn" in plans["turn-changes"]
    assert not any("TEMP B-TREE" in plan for plan in plans.values()), plans


async def _created(url: str) -> None:
    opened = await open_ledger(url)
    try:
        await opened.create_resource(new("r"))
        await play(opened, "r", [90, 80])
    finally:
        await opened.close()


async def test_a_path_with_text_no_column_holds_is_found_as_it_was_stored(ledger: Ledger) -> None:
    # A key with NUL (which PostgreSQL refuses in text) or a lone surrogate (which UTF-8 cannot
    # carry) is stored replaced; asking for the path as the state spells it finds those rows.
    await ledger.create_resource(new("mvu:odd"))
    await ledger.commit(dataclasses.replace(turn("mvu:odd", 0, 1), changes=(
        ChangeRow(path="/a\x00b", status="applied", actor="reply", op="set", after=(1,), turn=1),
        ChangeRow(path="/c\ud800", status="applied", actor="reply", op="set", after=(2,), turn=1))))

    found = [await ledger.path_changes("mvu:odd", path, before_position=None, limit=10)
             for path in ("/a\x00b", "/c\ud800")]

    assert [[entry.after for entry in page.entries] for page in found] == [[(1,)], [(2,)]]
