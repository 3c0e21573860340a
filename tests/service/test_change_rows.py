"""The ``changes`` rows every version commits (issue 33): a reply's per command, a failure's one,
an edit's and a card script's from the state diff; what a fact and a history entry say of a
reply's commands; and what a current read shows after a failed turn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from mvu_store.lang import Command
from mvu_store.lang.outcomes import CommandOutcome
from mvu_store.ledger import Ledger
from mvu_store.ledger.records import ChangeRow, CommitRequest
from mvu_store.memory_host import MemoryHost
from mvu_store.processor.port import ProcessorTurn
from mvu_store.service import MvuService
from mvu_store.service.change_rows import UNLISTED, reply_rows
from tests.service.support import playing, scope, text_message
from tests.service.test_pipeline import detached, hand_turn

__all__ = ["detached"]  # the fixture, shared with the pipeline's tests


@pytest.fixture
def commits(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> list[CommitRequest]:
    """Every request the ledger is asked to commit, in order."""
    asked: list[CommitRequest] = []
    commit = ledger.commit

    async def recording(request: CommitRequest) -> Any:
        asked.append(request)
        return await commit(request)

    monkeypatch.setattr(ledger, "commit", recording)
    return asked


def shown(rows: Sequence[ChangeRow]) -> list[tuple[Any, ...]]:
    return [(row.status, row.path, row.op, row.before, row.after, row.code or row.reason) for row in rows]


async def test_a_reply_commits_one_row_per_command(service: MvuService, host: MemoryHost, detached: str,
                                                   commits: list[CommitRequest]) -> None:
    text = "_.set('hp', 20);\n_.set('gold', 10);\n_.set('mood', 'sleepy');\n_.set('level', 2)\n_.sett('gold', 1);"
    await hand_turn(host, service, 1, [text_message(1, "m", text)])
    [request] = commits
    assert shown(request.changes) == [
        ("applied", "/hp", "set", (50,), (20,), None),
        ("ignored", "/gold", "set", (), (), "no_op"),
        ("refused", "/mood", "set", (), (), "MVU_SCHEMA"),
        ("ignored", "/level", "set", (), (), "no_terminator")]  # the near-miss `_.sett` is no row
    assert {row.actor for row in request.changes} == {"reply"} and {row.turn for row in request.changes} == {1}
    assert request.changes[0].command == "_.set('hp', 20);"
    assert request.changes[2].message is not None and "mood" in request.changes[2].message


async def test_an_insert_under_a_key_names_the_key_it_set(service: MvuService, host: MemoryHost, detached: str,
                                                         commits: list[CommitRequest]) -> None:
    text = "_.insert('', 'extra', 1);\n_.insert('bag', 'rope');\n_.insert('bag', 0, 'map');"
    await hand_turn(host, service, 1, [text_message(1, "m", text)])
    [request] = commits
    rows = [(row.status, row.path, row.after) for row in request.changes]
    # A key names the value it set; an append names its array; an index names the new element.
    assert rows[0] == ("applied", "/extra", (1,))
    assert [path for _, path, _ in rows[1:]] == ["/bag", "/bag/0"]


async def test_a_failed_turn_commits_one_refused_row(service: MvuService, host: MemoryHost, detached: str,
                                                     commits: list[CommitRequest]) -> None:
    await hand_turn(host, service, 1, [text_message(1, "m", "_.set('__proto__.x', 1);")])
    [request] = commits
    assert request.kind == "failed"
    [row] = request.changes
    assert (row.status, row.actor, row.path, row.code, row.turn) == ("refused", "reply", "/__proto__/x", "MVU_PATH", 1)
    assert row.message is not None and "'__proto__.x'" in row.message


async def test_a_current_read_after_a_failed_turn_shows_that_failure(service: MvuService, host: MemoryHost,
                                                                     detached: str) -> None:
    _, applied = await hand_turn(host, service, 1, [text_message(1, "m1", "_.set('hp', 20);_.set('mood', 'x');")])
    _, failed = await hand_turn(host, service, 2, [text_message(2, "m2", "_.set('__proto__.x', 1);")])
    [one], [two] = applied.outcomes, failed.outcomes
    record = await service.read(id=detached, scope=scope("s1"))
    assert record is not None and isinstance(record.content, dict)
    # The head stays where it was (its key, its state); the record's diagnostics are the failure's.
    assert (record.revision, record.version_key) == (two.revision, one.version_key)
    assert record.content["stat_data"]["hp"] == 20
    assert record.content["delta_data"] == {"changes": []}
    [diagnostic] = record.content["update_diagnostics"]
    assert (diagnostic["kind"], diagnostic["code"]) == ("refused", "MVU_PATH")
    assert "'__proto__.x'" in diagnostic["message"]
    # The wire read and the management (unscoped) read say the same.
    wire = await service.read_json(id=detached, scope=scope("s1"))
    assert wire is not None and b'"MVU_PATH"' in wire.body
    listed = {item.id: item for item in await service.list(scope={"authority": "local"})}
    assert listed[detached].content == record.content
    # The failed version in the history shows its own failure too.
    history = await service.history(id=detached, scope=scope("s1"))
    assert history[-1].kind == "failed" and history[-1].variables == record.content
    # An edit goes on from the current revision; then the record is the edit's, with its changes.
    content = {**record.content, "stat_data": {**record.content["stat_data"], "hp": 7}}
    receipt = await service.update(id=detached, content=content, expected_revision=record.revision,
                                   operation_id="after-failure", scope=scope("s1"))
    after = await service.read(id=detached, scope=scope("s1"))
    assert after is not None and isinstance(after.content, dict) and after.revision == receipt.revision
    assert after.content["update_diagnostics"] == []
    assert after.content["delta_data"] == {"changes": [{"op": "replace", "path": "/hp", "previous": 20, "value": 7}]}


async def test_an_edit_lists_and_commits_its_changes(service: MvuService, host: MemoryHost, detached: str,
                                                      commits: list[CommitRequest]) -> None:
    record = await service.read(id=detached, scope=scope("s1"))
    assert record is not None and isinstance(record.content, dict)
    stat_data = {**record.content["stat_data"], "hp": 12, "mood": "angry"}
    receipt = await service.update(id=detached, content={"stat_data": stat_data},
                                   expected_revision=record.revision, operation_id="e1", scope=scope("s1"))
    [request] = commits
    assert shown(request.changes) == [("applied", "/hp", "replace", (50,), (12,), None),
                                      ("applied", "/mood", "replace", ("calm",), ("angry",), None)]
    assert {row.actor for row in request.changes} == {"manual"}
    content: Any = receipt.content
    assert content["delta_data"]["changes"] == [
        {"op": "replace", "path": "/hp", "previous": 50, "value": 12},
        {"op": "replace", "path": "/mood", "previous": "calm", "value": "angry"}]
    [entry] = await service.history(id=detached, scope=scope("s1"))
    assert entry.kind == "manual" and entry.variables["delta_data"] == content["delta_data"]  # type: ignore[index]
    assert entry.commands is None  # commands are a reply's


async def test_the_completed_fact_counts_the_commands(service: MvuService, host: MemoryHost, detached: str) -> None:
    text = "_.set('hp', 20);\n_.set('gold', 10);\n_.set('mood', 'sleepy');\n_.sett('gold', 1);"
    await hand_turn(host, service, 1, [text_message(1, "m", text)])
    facts = await service.facts(id=detached, scope=scope("s1"))
    [completed] = [fact for fact in facts if fact["phase"] == "completed"]
    assert (completed["commandsApplied"], completed["commandsRefused"], completed["commandsIgnored"],
            completed["commandsPossible"]) == (1, 1, 1, 1)
    assert completed["outcomes"] == [{"kind": "ignored", "path": "/gold", "reason": "no_op"},
                                     {"kind": "refused", "path": "/mood", "code": "MVU_SCHEMA"}]
    # Content-free: no command text, no value, no message.
    assert "sleepy" not in str(facts) and "_.set" not in str(facts)


async def test_the_history_lists_every_command_of_a_reply(service: MvuService, host: MemoryHost,
                                                          detached: str) -> None:
    text = "_.set('hp', 20);\n_.set('mood', 'sleepy');\n_.set('gold', 10);"
    _, report = await hand_turn(host, service, 1, [text_message(1, "m", text)])
    [entry] = await service.history(id=detached, scope=scope("s1"))
    assert entry.commands is not None
    assert [(item["kind"], item["path"]) for item in entry.commands] == [  # type: ignore[index]
        ("applied", "/hp"), ("refused", "/mood"), ("ignored", "/gold")]
    # The answer's own list, the applied command's values included (from the version's delta_data).
    [outcome] = report.outcomes
    assert outcome.commands == entry.commands
    assert (entry.commands[0]["before"], entry.commands[0]["after"]) == (50, 20)  # type: ignore[index]


async def test_each_applied_command_of_the_history_has_its_own_values(service: MvuService, host: MemoryHost,
                                                                      detached: str) -> None:
    text = "_.set('hp', 20);\n_.set('hp', 20);\n_.add('hp', 5);\n_.set('gold', 3);"
    _, report = await hand_turn(host, service, 1, [text_message(1, "m", text)])
    [entry] = await service.history(id=detached, scope=scope("s1"))
    [outcome] = report.outcomes
    assert entry.commands == outcome.commands
    assert [(item["kind"], item.get("before"), item.get("after")) for item in entry.commands] == [  # type: ignore[union-attr]
        ("applied", 50, 20), ("ignored", None, None), ("applied", 20, 25), ("applied", 10, 3)]


class DropsGold:
    """A processor that keeps every command but those on gold."""

    async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
        return [command for command in commands if command.path != ("gold",)]


async def test_commands_a_processor_drops_are_ignored_as_filtered(ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, processor=DropsGold())
    host.attach(service)
    instance = await playing(service, host)
    host.attach(None)
    _, report = await hand_turn(host, service, 1, [text_message(1, "m", "_.set('gold', 3);_.set('hp', 9);")])
    [outcome] = report.outcomes
    assert [(c["kind"], c["path"], c.get("reason")) for c in outcome.commands] == [
        ("ignored", "/gold", "script_filtered"), ("applied", "/hp", None)]
    assert outcome.ignored_total == 1
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and isinstance(record.content, dict)
    assert [item["reason"] for item in record.content["update_diagnostics"]] == ["script_filtered"]


def test_an_edits_delta_data_leaves_large_values_out() -> None:
    from mvu_store.service.edit_rules import EDIT_VALUE_BYTES, edit_changes

    big = "y" * (EDIT_VALUE_BYTES + 1)
    assert edit_changes({"pad": "x", "n": 1}, {"pad": big, "n": 2}) == {"changes": [
        {"op": "replace", "path": "/pad", "previous": "x", "omitted": True},
        {"op": "replace", "path": "/n", "previous": 1, "value": 2}]}


def test_ignored_commands_beyond_those_named_are_counted_in_one_row() -> None:
    named = [CommandOutcome("ignored", "_.set('a', 1)", 0, 13, reason="no_terminator", message="m"),
             CommandOutcome("applied", "_.set('b', 2);", 14, 28, 0, op="set", path="/b", after=(2,)),
             CommandOutcome("possible", "_.sett('c', 3);", 29, 44, reason="looks_like_command", message="m")]
    rows = reply_rows(named, 4, ignored_total=70)
    assert [(row.status, row.path, row.reason) for row in rows] == [
        ("ignored", "", "no_terminator"), ("applied", "/b", None), ("ignored", "", UNLISTED)]
    assert rows[-1].message == "69 more ignored commands of this reply are not listed" and rows[-1].turn == 4
    assert len(reply_rows(named, 4, ignored_total=1)) == 2
