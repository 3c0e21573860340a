"""A commit's trigger facts go in its transaction: stored with a new version, never with a replay
or a refused commit, and a refusal of the facts alone leaves the commit standing."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import CommitRequest, Ledger, NewResource
from mvu_store.ledger.fact_log import FactLog

STATE = {"stat_data": {"hp": 10}}


def request(revision: int, hp: int, *, operation: str, phases: tuple[str, ...] = ("started", "completed"),
            fingerprint: str | None = None) -> CommitRequest:
    facts: tuple[dict[str, JsonValue], ...] = tuple(
        {"phase": phase, "id": "mvu:a", "eventId": operation, "revision": revision + 1, "recordedAt": 1_000}
        for phase in phases)
    return CommitRequest("mvu:a", revision, "manual", {"stat_data": {"hp": hp}}, fingerprint or f"fp-{hp}",
                         {"manual": True}, operation_id=operation, facts=facts)


@pytest.fixture
async def resource(ledger: Ledger) -> str:
    await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial=STATE, definition={}))
    return "mvu:a"


async def test_a_new_version_stores_its_facts_with_it(ledger: Ledger, resource: str) -> None:
    outcome = await ledger.commit(request(0, 20, operation="op-1"))

    assert (outcome.revision, outcome.fact_error) == (1, None)
    facts = await ledger.facts()
    assert [(fact["phase"], fact["eventId"], fact["revision"]) for fact in facts] == [  # type: ignore[index]
        ("started", "op-1", 1), ("completed", "op-1", 1)]
    assert (await ledger.usage()).facts_count == 2


async def test_a_replay_and_a_refused_commit_store_no_facts(ledger: Ledger, resource: str) -> None:
    await ledger.commit(request(0, 20, operation="op-1"))

    replayed = await ledger.commit(request(0, 20, operation="op-1"))
    with pytest.raises(MvuError) as conflict:
        await ledger.commit(request(0, 30, operation="op-2"))  # stale: the head is at 1

    assert replayed.replayed and conflict.value.code == Code.REVISION_CONFLICT.value
    assert len(await ledger.facts()) == 2
    assert (await ledger.usage()).facts_count == 2


async def test_facts_the_store_refuses_roll_back_alone(ledger: Ledger, resource: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    written = FactLog.insert_facts

    def refusing(self: FactLog, tx: Any, facts: Any) -> list[int]:
        written(self, tx, facts)  # the rows are written, then refused: the savepoint takes them back
        raise MvuError(Code.LIMIT, "too many facts")

    monkeypatch.setattr(FactLog, "insert_facts", refusing)
    outcome = await ledger.commit(request(0, 20, operation="op-1"))
    monkeypatch.undo()

    assert (outcome.revision, outcome.fact_error) == (1, Code.LIMIT.value)
    head = await ledger.head("mvu:a")
    assert (head.revision, head.variables) == (1, {"stat_data": {"hp": 20}})
    assert await ledger.facts() == [] and (await ledger.usage()).facts_count == 0
    assert (await ledger.commit(request(1, 30, operation="op-2"))).fact_error is None
    assert len(await ledger.facts()) == 2
    assert await ledger.audit() == []


async def test_facts_refused_before_the_writer_runs_leave_the_commit_standing(ledger: Ledger, resource: str) -> None:
    bad = CommitRequest("mvu:a", 0, "manual", {"stat_data": {"hp": 2}}, "fp", {"manual": True},
                        operation_id="op-1", facts=({"phase": 7},))  # a phase is a string

    outcome = await ledger.commit(bad)

    assert (outcome.revision, outcome.fact_error) == (1, Code.JSON.value)
    assert (await ledger.head("mvu:a")).revision == 1 and await ledger.facts() == []


async def test_a_failure_that_is_no_refusal_is_reported_as_a_fact_write_failure(
        ledger: Ledger, resource: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: FactLog, tx: Any, facts: Any) -> list[int]:
        raise RuntimeError("the facts store broke")

    monkeypatch.setattr(FactLog, "insert_facts", broken)
    outcome = await ledger.commit(request(0, 20, operation="op-1"))

    assert (outcome.revision, outcome.fact_error) == (1, Code.FACT_WRITE.value)
    assert (await ledger.head("mvu:a")).variables == {"stat_data": {"hp": 20}}
