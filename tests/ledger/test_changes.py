"""The ``changes`` rows a version write carries: written in its unit of work, never on a replay,
charged to the budget, bounded per value, per text and per version (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import ChatImportRows, CommitRequest, ImportedVersion, Ledger, NewResource
from mvu_store.ledger import tables as t
from mvu_store.ledger.audit import row_bytes
from mvu_store.ledger.change_rows import MAX_CHANGES_PER_VERSION, MAX_TEXT_CHARS, MAX_VALUE_BYTES, TRUNCATED
from mvu_store.ledger.records import ChangeRow
from tests.ledger.change_fixtures import HERO, MOOD_REFUSAL, SESSION, SWIPE, change_rows, play_story, reply, state


async def _hero(ledger: Ledger) -> None:
    await ledger.create_resource(NewResource(id=HERO, kind="shared", initial={"stat_data": {}}, definition={}))


async def test_a_commit_writes_its_changes_where_its_version_is(ledger: Ledger) -> None:
    await play_story(ledger)
    rows = await change_rows(ledger)
    versions = {(v.resource_id, v.position): v for rid in (HERO, SWIPE)
                for v in await ledger.versions(rid, include_lineage=False)}
    # The opening's row, written with the hero: before its first version, at revision 0.
    opening = rows.pop(0)
    assert (opening["resource_id"], opening["position"], opening["revision"], opening["session_id"],
            opening["turn"], opening["actor"], opening["after"]) == (HERO, -1, 0, SESSION, None, "opening", '"Aria"')
    for row in rows:
        version = versions[row["resource_id"], row["position"]]
        assert row["revision"] == version.revision
        assert row["session_id"] == version.source.get("sessionId")
        assert row["message_seq"] == version.source.get("messageSeq")
        assert row["bytes"] == row_bytes(t.changes, row)
        assert not row["derived"]
    turn_one = [row for row in rows if row["resource_id"] == HERO and row["turn"] == 1]
    assert [(r["seq"], r["path"], r["status"], r["before"], r["after"], r["code"], r["message"]) for r in turn_one] == [
        (0, "/hp", "applied", "10", "5", None, None),
        (1, "/mood", "refused", None, None, "MVU_SCHEMA", MOOD_REFUSAL)]
    assert turn_one[0]["command"] == "_.set('hp', 10, 5);"
    failed = [row for row in rows if row["resource_id"] == HERO and row["turn"] == 3]
    assert [(r["status"], r["code"], r["revision"]) for r in failed] == [("refused", "MVU_SCHEMA", 4)]
    # The fork child writes its own rows only: its parent's history is read through lineage.
    assert [(r["position"], r["path"], r["after"]) for r in rows if r["resource_id"] == SWIPE] == [
        (0, "/hp", "-1"), (0, "/mood", '"wary"')]
    assert await ledger.audit() == []


async def test_a_replay_writes_no_second_set_of_rows(ledger: Ledger) -> None:
    await _hero(ledger)
    request = CommitRequest(HERO, 0, "reply", state(5), "f1", reply(SESSION, 1, 1),
                            changes=(ChangeRow("/hp", "applied", "reply", op="add", after=(5,), turn=1),))
    first = await ledger.commit(request)
    used = (await ledger.usage()).used_bytes
    again = await ledger.commit(request)
    assert again.replayed and not first.replayed
    assert len(await change_rows(ledger)) == 1
    assert (await ledger.usage()).used_bytes == used


async def test_rows_are_charged_and_a_write_over_budget_leaves_nothing(
        others: Callable[..., Awaitable[Ledger]]) -> None:
    ledger = await others(ledger_limit_bytes=200_000)
    await _hero(ledger)
    await ledger.create_resource(NewResource(id="mvu:hera", kind="shared", initial={"stat_data": {}}, definition={}))
    changes = tuple(ChangeRow(f"/n{i}", "applied", "reply", op="add", after=(i,), command="_.set('x', 1);")
                    for i in range(10))
    # Two writes alike but for their rows (states of one size, sources of one size).
    costs = []
    for resource_id, hp, rows_of in (("mvu:hera", 2, ()), (HERO, 3, changes)):
        before = (await ledger.usage()).used_bytes
        await ledger.commit(CommitRequest(resource_id, 0, "reply", state(hp), "f", reply(SESSION, 1, 1),
                                          changes=rows_of))
        costs.append((await ledger.usage()).used_bytes - before)
    rows = await change_rows(ledger)
    assert costs[1] - costs[0] == sum(row["bytes"] for row in rows) == sum(row_bytes(t.changes, r) for r in rows)
    assert await ledger.audit() == []

    room = (await ledger.usage()).limit_bytes - (await ledger.usage()).used_bytes
    many = tuple(ChangeRow(f"/k{i}", "applied", "reply", command="x" * MAX_TEXT_CHARS) for i in range(
        room // MAX_TEXT_CHARS + 1))
    with pytest.raises(MvuError) as refused:
        await ledger.commit(CommitRequest(HERO, 1, "reply", state(4), "f3", reply(SESSION, 3, 3), changes=many))
    assert refused.value.code == Code.STORAGE_LIMIT
    assert len(await change_rows(ledger)) == len(rows)
    assert [v.revision for v in await ledger.versions(HERO)] == [1]
    assert await ledger.audit() == []


async def test_values_texts_and_rows_are_bounded(ledger: Ledger) -> None:
    await _hero(ledger)
    large = "x" * MAX_VALUE_BYTES  # its JSON text is two quotes longer than the bound
    fits = "y" * (MAX_VALUE_BYTES - 2)
    changes = [ChangeRow("/big", "applied", "reply", op="o" * 40, before=(fits,), after=(large,),
                         command="c" * (MAX_TEXT_CHARS * 3), message="m\x00" * MAX_TEXT_CHARS,
                         code="C" * 100, reason="r" * 50),
               ChangeRow("/\x00odd\ud800", "ignored", "reply", reason="no_terminator", command="_.set('a', 1)")]
    changes += [ChangeRow(f"/n{i}", "applied", "reply", op="add", after=(i,)) for i in range(MAX_CHANGES_PER_VERSION)]
    await ledger.commit(CommitRequest(HERO, 0, "reply", state(1), "f1", reply(SESSION, 1, 1), changes=tuple(changes)))
    rows = await change_rows(ledger)
    assert len(rows) == MAX_CHANGES_PER_VERSION
    big, odd = rows[0], rows[1]
    assert (big["before"], big["after"], big["omitted"]) == (json.dumps(fits), None, True)
    assert len(big["command"]) == len(big["message"]) == MAX_TEXT_CHARS and big["command"].endswith("…")
    assert "\x00" not in big["message"]
    assert (len(big["op"]), len(big["code"]), len(big["reason"])) == (32, 64, 32)
    assert odd["path"] == "/\ufffdodd\\ud800"
    last = rows[-1]
    assert (last["seq"], last["status"], last["reason"], last["path"]) == (
        MAX_CHANGES_PER_VERSION - 1, "ignored", TRUNCATED, "")
    assert "at least 3 more changes" in last["message"]
    assert await ledger.audit() == []
    assert await ledger.damage() == []


async def test_a_change_row_without_a_known_status_is_refused(ledger: Ledger) -> None:
    await _hero(ledger)
    bad = ChangeRow("/hp", "done", "reply")  # type: ignore[arg-type]
    with pytest.raises(MvuError) as refused:
        await ledger.commit(CommitRequest(HERO, 0, "reply", state(1), "f1", reply(SESSION, 1, 1), changes=(bad,)))
    assert refused.value.code == Code.OPERATION
    assert await ledger.versions(HERO) == []


async def test_a_chat_import_writes_its_versions_changes(ledger: Ledger) -> None:
    await _hero(ledger)
    head = await ledger.head(HERO)

    def write(steps: ChatImportRows) -> None:
        encoded = json.dumps(state(4), sort_keys=True, separators=(",", ":")).encode()
        digest = steps.put_state(state(4), encoded)
        steps.add_version(ImportedVersion(
            resource_id=HERO, key="a" * 64, position=0, revision=head.revision + 1, parent_key=None,
            variables_hash=digest, session_id=SESSION, message_seq=2, source='{"import":"sillytavern"}', meta="{}",
            created_at=None, changes=(ChangeRow("/hp", "applied", "import", op="add", after=(4,), turn=1),)))
        steps.write_queued()

    await ledger.import_chat_rows("imported", "0" * 64, any_session=False, write=write, again=lambda _: None)
    [row] = await change_rows(ledger)
    assert (row["position"], row["revision"], row["session_id"], row["message_seq"], row["actor"], row["after"]) == (
        0, 1, SESSION, 2, "import", "4")
    assert row["bytes"] == row_bytes(t.changes, row)
    usage = await ledger.usage()
    assert [f for f in await ledger.audit() if f.check == "usage"] == [] and usage.used_bytes <= usage.limit_bytes
