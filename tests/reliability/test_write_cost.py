"""The work of one write must not grow with the ledger's history (issue 2: O(change), not O(ledger)).

Timings are noisy, so these tests count SQLite virtual-machine steps instead (a progress handler
on the writer's own connection, installed and removed by units of work that run in order on the
single writer): a deterministic measure of how many rows a write visits.

Found with the commit-path benchmark, whose single-writer rate fell as its history grew:
``_next_position(t.receipts, "resource_id", ...)`` computes ``max(position)`` over the receipts
of a resource, and ``position`` is in no index of ``receipts`` (the primary key is
``(ledger_id, resource_id, operation_id)``), so every commit with an operation id scans all the
resource's receipts (~4 ms per commit at 20,000 receipts, measured). ``_next_position(t.resources,
None, None)`` does the same over all resources for every ``create_resource`` / ``fork``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger
from mvu_store.ledger.writer import WriteTx

STEP = 10  # VM instructions per progress-handler call (counted per statement)


class StepCounter:
    def __init__(self) -> None:
        self.calls = 0

    def _tick(self) -> int:
        self.calls += 1
        return 0

    async def measure(self, ledger: Ledger, write: object) -> int:
        """VM steps (in units of STEP) of the awaitable ``write`` on the ledger's writer connection."""

        def install(tx: WriteTx) -> None:
            tx.cursor.connection.set_progress_handler(self._tick, STEP)

        def remove(tx: WriteTx) -> None:
            tx.cursor.connection.set_progress_handler(None, 0)

        await ledger._store.write(install)
        self.calls = 0
        await write  # type: ignore[misc]
        steps = self.calls
        await ledger._store.write(remove)
        return steps


def commit(resource: str, expected: int) -> CommitRequest:
    return CommitRequest(
        resource_id=resource, expected_revision=expected, kind="manual",
        variables={"n": expected + 1, "pad": "p" * 500}, fingerprint=f"{expected + 1}".rjust(64, "0"),
        source={"manual": True}, operation_id=f"op-{expected + 1}",
    )


def new(resource: str) -> NewResource:
    return NewResource(id=resource, kind="instance", initial={"n": 0}, definition={})


async def commit_steps(ledger: Ledger, resource: str, revision: int, samples: int = 5) -> tuple[int, int]:
    """(median VM steps of a commit, revision after) for ``samples`` commits from ``revision``."""
    counter = StepCounter()
    steps = []
    for _ in range(samples):
        steps.append(await counter.measure(ledger, ledger.commit(commit(resource, revision))))
        revision += 1
    return sorted(steps)[samples // 2], revision


@pytest.mark.slow
async def test_commit_work_does_not_grow_with_the_resource_history(tmp_path: Path) -> None:
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'cost.sqlite3'}", synchronous="OFF")
    try:
        await ledger.create_resource(new("r"))
        early, revision = await commit_steps(ledger, "r", 0)
        while revision < 1500:
            await ledger.commit(commit("r", revision))
            revision += 1
        late, revision = await commit_steps(ledger, "r", revision)
        assert late <= early * 1.5, f"a commit costs {early} x {STEP} VM steps at 5 versions, {late} at 1,500"
    finally:
        await ledger.close()


@pytest.mark.slow
async def test_create_resource_work_does_not_grow_with_the_ledger(tmp_path: Path) -> None:
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'cost.sqlite3'}", synchronous="OFF")
    try:
        counter = StepCounter()
        early = sorted([await counter.measure(ledger, ledger.create_resource(new(f"a{i}"))) for i in range(5)])[2]
        for index in range(1500):
            await ledger.create_resource(new(f"b{index}"))
        late = sorted([await counter.measure(ledger, ledger.create_resource(new(f"c{i}"))) for i in range(5)])[2]
        assert late <= early * 1.5, f"a create costs {early} x {STEP} VM steps at 5 resources, {late} at 1,505"
    finally:
        await ledger.close()
