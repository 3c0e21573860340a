"""The incremental history reads: own versions after a position, and many states in one read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mvu_store.ledger import CommitOutcome, CommitRequest, Ledger, NewResource
from mvu_store.ledger.blob import Blob
from tests.round_trips import count_round_trips


def manual(resource_id: str, revision: int, hp: int) -> CommitRequest:
    return CommitRequest(resource_id=resource_id, expected_revision=revision, kind="manual",
                         variables={"stat_data": {"hp": hp}}, fingerprint=f"fp-{resource_id}-{hp}",
                         source={"manual": True}, operation_id=f"{resource_id}-{revision}")


def new(resource_id: str) -> NewResource:
    return NewResource(id=resource_id, kind="instance", initial={"stat_data": {"hp": 100}}, definition={})


async def play(ledger: Ledger, resource_id: str, hps: list[int]) -> list[CommitOutcome]:
    """Commit one version per hp, from revision 0 (a fork child starts there too)."""
    return [await ledger.commit(manual(resource_id, revision, hp)) for revision, hp in enumerate(hps)]


async def forked_child(ledger: Ledger) -> list[CommitOutcome]:
    """A parent with four versions and a child forked at the second that wrote three of its own."""
    await ledger.create_resource(new("mvu:parent"))
    parent = await play(ledger, "mvu:parent", [90, 80, 70, 60])
    await ledger.fork("mvu:parent", new("mvu:child"), at_key=parent[1].version_key)
    return await play(ledger, "mvu:child", [50, 40, 30])


async def test_after_a_position_only_own_later_versions_none_inherited(ledger: Ledger) -> None:
    own = await forked_child(ledger)
    everything = await ledger.versions("mvu:child")
    assert [(v.resource_id, v.inherited) for v in everything] == [("mvu:parent", True)] * 2 + [("mvu:child", False)] * 3
    first_own = everything[2]

    later = await ledger.versions("mvu:child", after_position=first_own.position)

    assert [v.key for v in later] == [o.version_key for o in own[1:]]
    assert all(v.resource_id == "mvu:child" and not v.inherited for v in later)
    assert later == everything[3:]


async def test_before_every_own_version_the_inherited_ones_still_stay_out(ledger: Ledger) -> None:
    own = await forked_child(ledger)

    # The parent's positions 0 and 1 are inherited; numbered like the child's own, they must not come back.
    assert [v.key for v in await ledger.versions("mvu:child", after_position=-1)] == [o.version_key for o in own]
    assert [v.key for v in await ledger.versions("mvu:child", include_lineage=False)] == [o.version_key for o in own]


async def test_after_the_last_position_there_is_nothing_new(ledger: Ledger) -> None:
    await forked_child(ledger)
    last = (await ledger.versions("mvu:child"))[-1]
    assert await ledger.versions("mvu:child", after_position=last.position) == []


async def test_a_parent_after_a_position_is_not_mixed_with_its_child(ledger: Ledger) -> None:
    await forked_child(ledger)
    later = await ledger.versions("mvu:parent", after_position=1)
    assert [(v.resource_id, v.position, v.revision) for v in later] == [("mvu:parent", 2, 3), ("mvu:parent", 3, 4)]


async def test_blobs_returns_the_stored_states_in_one_read_and_leaves_missing_ones_out(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    await forked_child(ledger)
    history = await ledger.versions("mvu:child")
    hashes = [v.variables_hash for v in history]
    missing = "0" * 64
    reads = count_round_trips(ledger, monkeypatch)
    found = await ledger.blobs([*hashes, missing, hashes[0]])

    assert reads == [1]
    assert missing not in found
    assert found == {v.variables_hash: {"stat_data": {"hp": hp}} for v, hp in zip(history, [90, 80, 50, 40, 30],
                                                                                strict=True)}


async def test_blobs_of_more_hashes_than_one_statement_binds_are_all_found_in_one_read(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    states = [Blob.of({"stat_data": {"n": n}}) for n in range(600)]
    await ledger._store.write(lambda tx: [ledger._store.put_blob(tx, blob) for blob in states])
    reads = count_round_trips(ledger, monkeypatch)
    for count in (1, 3, 256, 257, 600):
        found = await ledger.blobs([blob.hash for blob in states[:count]])
        assert found == {blob.hash: {"stat_data": {"n": n}} for n, blob in enumerate(states[:count])}
    assert reads == [5]


async def test_blobs_of_nothing_reads_nothing(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    async def refused(_work: Callable[[Any], Any]) -> Any:
        raise AssertionError("read")

    monkeypatch.setattr(ledger._store, "read", refused)
    monkeypatch.setattr(ledger._store, "read_rows", refused)
    assert await ledger.blobs([]) == {}


async def test_blobs_of_another_ledger_are_not_this_ones(ledger: Ledger, others: Any) -> None:
    other = await others()
    await other.create_resource(new("mvu:elsewhere"))
    await play(other, "mvu:elsewhere", [1])
    head = await other.resource("mvu:elsewhere")
    assert head is not None
    assert await ledger.blobs([head.head_hash]) == {}
    assert await other.blobs([head.head_hash]) == {head.head_hash: {"stat_data": {"hp": 1}}}
