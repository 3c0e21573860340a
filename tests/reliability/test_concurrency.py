"""Concurrency contract of the ledger, on SQLite and PostgreSQL (the ``ledger`` fixture).

- many writers with one expected revision: exactly one wins, the others get
  ``REVISION_CONFLICT`` with the current revision, and leave nothing behind;
- concurrent replays of one operation id apply once, the rest are flagged ``replayed``;
- one operation id with another fingerprint is ``MVU_IDEMPOTENCY_CONFLICT``;
- a unit of work that raises after writing leaves nothing behind, also inside a batch of
  successful units (the writer's group commit, one SAVEPOINT per unit);
- a task cancelled while its commit is queued, or while its unit runs, leaves nothing; one
  cancelled at a random moment leaves the whole commit or nothing, and a retry lands it once;
- two OS processes incrementing one counter in one SQLite file under CAS lose no update.

Every scenario ends with the SQL audits (``audit_findings``) clean.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import CommitOutcome, CommitRequest, Ledger, NewResource, open_ledger
from mvu_store.ledger.writer import WriteTx

CHILD = Path(__file__).with_name("ledger_child.py")
PAD = "v" * 4000  # a realistic 4 KiB state


def variables(resource: str, tag: object) -> dict[str, Any]:
    return {"stat_data": {"owner": resource, "tag": str(tag), "pad": PAD}}


def fp(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def request(resource: str, expected: int, op: str, *, fingerprint: str | None = None,
            tag: object = None) -> CommitRequest:
    return CommitRequest(
        resource_id=resource,
        expected_revision=expected,
        kind="manual",
        variables=variables(resource, op if tag is None else tag),
        fingerprint=fingerprint or fp(resource, op),
        source={"op": op, "manual": True},
        operation_id=op,
    )


async def create(ledger: Ledger, resource: str) -> None:
    await ledger.create_resource(
        NewResource(id=resource, kind="instance", initial=variables(resource, "initial"), definition={"d": 1})
    )


async def rows(ledger: Ledger, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    params = {"ledger_id": ledger.ledger_id, **params}
    result = await ledger._store.read(lambda c: c.execute(text(sql), params).all())
    return [tuple(row) for row in result]


async def versions_of(ledger: Ledger, resource: str) -> list[tuple[Any, ...]]:
    """(revision, key, operation_id) of a resource's own versions, in order."""
    return await rows(
        ledger,
        "SELECT revision, key, operation_id FROM versions WHERE ledger_id = :ledger_id AND resource_id = :r"
        " ORDER BY position",
        r=resource,
    )


async def receipts_of(ledger: Ledger, resource: str) -> dict[str, tuple[Any, ...]]:
    found = await rows(
        ledger,
        "SELECT operation_id, revision, version_key FROM receipts WHERE ledger_id = :ledger_id AND resource_id = :r",
        r=resource,
    )
    return {row[0]: (int(row[1]), row[2]) for row in found}


async def blob_exists(ledger: Ledger, blob_hash: str) -> bool:
    found = await rows(ledger, "SELECT 1 FROM blobs WHERE ledger_id = :ledger_id AND hash = :h", h=blob_hash)
    return bool(found)


async def assert_consistent(ledger: Ledger, resource: str) -> int:
    """Revisions 1..head without holes, one receipt per version, head = newest. Returns the head."""
    head = await ledger.head(resource)
    history = await versions_of(ledger, resource)
    assert [int(row[0]) for row in history] == list(range(1, head.revision + 1))
    receipts = await receipts_of(ledger, resource)
    assert receipts == {row[2]: (int(row[0]), row[1]) for row in history}
    if history:
        assert head.version_key == history[-1][1]
    return head.revision


async def assert_audit_clean(ledger: Ledger) -> None:
    assert await ledger.audit() == []


def conflict_revision(error: BaseException) -> int:
    assert isinstance(error, MvuError), repr(error)
    assert error.code == Code.REVISION_CONFLICT, repr(error)
    return int(error.details["current_revision"])


class WriterGate:
    """Holds the single writer thread inside a unit until released, so that work queues up."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def unit(self, _tx: WriteTx) -> None:
        self.entered.set()
        assert self.release.wait(30), "the gate was never released"

    async def close_on(self, ledger: Ledger) -> asyncio.Task[None]:
        task = asyncio.create_task(ledger._store.write(self.unit))
        assert await asyncio.to_thread(self.entered.wait, 30)
        return task


# -- CAS ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("writers", [2, 16])
async def test_same_expected_revision_exactly_one_wins(ledger: Ledger, writers: int) -> None:
    await create(ledger, "cas")
    await ledger.commit(request("cas", 0, "first"))
    results = await asyncio.gather(
        *(ledger.commit(request("cas", 1, f"racer-{index}")) for index in range(writers)), return_exceptions=True
    )
    winners = [result for result in results if isinstance(result, CommitOutcome)]
    assert len(winners) == 1, results
    assert winners[0].revision == 2
    assert not winners[0].replayed
    losers = [result for result in results if not isinstance(result, CommitOutcome)]
    assert [conflict_revision(error) for error in losers] == [2] * (writers - 1)
    assert all(error.details["expected_revision"] == 1 for error in losers if isinstance(error, MvuError))
    # The head is the winner's state, and the losers left no version and no receipt.
    head = await ledger.head("cas")
    assert head.revision == 2
    winner_op = next(f"racer-{i}" for i, result in enumerate(results) if isinstance(result, CommitOutcome))
    assert head.variables == variables("cas", winner_op)
    assert [row[2] for row in await versions_of(ledger, "cas")] == ["first", winner_op]
    assert set(await receipts_of(ledger, "cas")) == {"first", winner_op}
    await assert_audit_clean(ledger)


async def test_two_ledger_instances_on_one_database_one_winner_per_revision(
    ledger: Ledger, ledger_url: str, ledger_id: str
) -> None:
    """Two writers (two writer threads and connections) race on the same revisions."""
    other = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        await create(ledger, "shared")
        for revision in range(5):
            attempts = [
                (ledger if index % 2 else other).commit(request("shared", revision, f"r{revision}-{index}"))
                for index in range(8)
            ]
            results = await asyncio.gather(*attempts, return_exceptions=True)
            winners = [result for result in results if isinstance(result, CommitOutcome)]
            assert len(winners) == 1, results
            assert winners[0].revision == revision + 1
            for result in results:
                if isinstance(result, CommitOutcome):
                    continue
                assert isinstance(result, MvuError), repr(result)
                # A deadlock victim between the two writers is refused as busy: nothing written.
                assert result.code in (Code.REVISION_CONFLICT, Code.STORAGE_BUSY), repr(result)
                if result.code == Code.REVISION_CONFLICT:
                    assert result.details["current_revision"] == revision + 1
        assert await assert_consistent(ledger, "shared") == 5
        await assert_audit_clean(ledger)
    finally:
        await other.close()


# -- idempotency --------------------------------------------------------------------------------


async def test_concurrent_replays_of_one_operation_apply_once(ledger: Ledger) -> None:
    await create(ledger, "idem")
    same = request("idem", 0, "op-once")
    results = await asyncio.gather(*(ledger.commit(same) for _ in range(12)))
    assert sorted(result.replayed for result in results) == [False] + [True] * 11
    assert {(result.revision, result.version_key) for result in results} == {(1, results[0].version_key)}
    assert len({str(result.result) for result in results}) == 1
    assert len(await versions_of(ledger, "idem")) == 1
    assert list(await receipts_of(ledger, "idem")) == ["op-once"]
    # Later, with the head moved on, the old request still replays (the receipt decides, not CAS).
    await ledger.commit(request("idem", 1, "op-next"))
    late = await ledger.commit(same)
    assert late.replayed
    assert late.revision == 1
    assert await assert_consistent(ledger, "idem") == 2
    await assert_audit_clean(ledger)


async def test_concurrent_replays_across_two_ledger_instances_apply_once(
    ledger: Ledger, ledger_url: str, ledger_id: str
) -> None:
    other = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        await create(ledger, "idem2")
        same = request("idem2", 0, "op-twice")
        results = await asyncio.gather(
            *((ledger if index % 2 else other).commit(same) for index in range(10)), return_exceptions=True
        )
        outcomes = [result for result in results if isinstance(result, CommitOutcome)]
        for result in results:
            if not isinstance(result, CommitOutcome):
                assert isinstance(result, MvuError), repr(result)
                assert result.code == Code.STORAGE_BUSY, repr(result)
        assert [result.replayed for result in outcomes].count(False) == 1, results
        assert {result.revision for result in outcomes} == {1}
        assert await assert_consistent(ledger, "idem2") == 1
        await assert_audit_clean(ledger)
    finally:
        await other.close()


async def test_same_operation_id_other_fingerprint_is_an_idempotency_conflict(ledger: Ledger) -> None:
    await create(ledger, "fp")
    await ledger.commit(request("fp", 0, "op-a", fingerprint=fp("one")))
    for expected in (0, 1):  # a stale or a current expected revision: the receipt decides first
        with pytest.raises(MvuError) as caught:
            await ledger.commit(request("fp", expected, "op-a", fingerprint=fp("two"), tag="other"))
        assert caught.value.code == Code.IDEMPOTENCY_CONFLICT
    # Concurrently: one of the two requests sharing an operation id wins, the other conflicts.
    results = await asyncio.gather(
        ledger.commit(request("fp", 1, "op-b", fingerprint=fp("b1"), tag="b1")),
        ledger.commit(request("fp", 1, "op-b", fingerprint=fp("b2"), tag="b2")),
        return_exceptions=True,
    )
    assert sum(isinstance(result, CommitOutcome) for result in results) == 1, results
    errors = [result for result in results if isinstance(result, MvuError)]
    assert [error.code for error in errors] == [Code.IDEMPOTENCY_CONFLICT]
    assert await assert_consistent(ledger, "fp") == 2
    winner = next(i for i, result in enumerate(results) if isinstance(result, CommitOutcome))
    assert (await ledger.head("fp")).variables == variables("fp", f"b{winner + 1}")
    await assert_audit_clean(ledger)


# -- failing units ------------------------------------------------------------------------------


class Boom(RuntimeError):
    pass


def failing_unit(ledger: Ledger, resource: str, tag: object, seen: list[Any]) -> Callable[[WriteTx], None]:
    """A unit that stores a blob (charged), moves a resource's revision, then raises."""
    blob = ledger._store.prepare_state(variables(resource, f"doomed-{tag}"))

    def unit(tx: WriteTx) -> None:
        seen.append(tx.cursor)
        ledger._store.put_blob(tx, blob)
        tx.cursor.execute(
            f"UPDATE resources SET revision = revision + 100 WHERE ledger_id = '{ledger.ledger_id}'"
            f" AND id = '{resource}'"
        )
        raise Boom(blob.hash)

    return unit


def succeeding_unit(ledger: Ledger, resource: str, tag: object, seen: list[Any]) -> Callable[[WriteTx], str]:
    blob = ledger._store.prepare_state(variables(resource, f"kept-{tag}"))

    def unit(tx: WriteTx) -> str:
        seen.append(tx.cursor)
        return ledger._store.put_blob(tx, blob)

    return unit


async def test_exception_inside_a_unit_leaves_nothing(ledger: Ledger) -> None:
    await create(ledger, "boom")
    before = await ledger.usage()
    with pytest.raises(Boom) as caught:
        await ledger._store.write(failing_unit(ledger, "boom", "alone", []))
    assert not await blob_exists(ledger, str(caught.value))
    assert (await ledger.head("boom")).revision == 0
    assert await ledger.usage() == before
    await assert_audit_clean(ledger)


async def test_exception_inside_a_batched_unit_leaves_nothing_and_spares_the_others(ledger: Ledger) -> None:
    for index in range(8):
        await create(ledger, f"mix-{index}")
    gate = WriterGate()
    held = await gate.close_on(ledger)
    seen: list[Any] = []
    jobs: list[Any] = []
    kinds: list[str] = []
    for index in range(48):
        resource = f"mix-{index % 8}"
        kind = ("fail", "ok", "commit")[index % 3]
        kinds.append(kind)
        if kind == "fail":
            jobs.append(ledger._store.write(failing_unit(ledger, resource, index, seen)))
        elif kind == "ok":
            jobs.append(ledger._store.write(succeeding_unit(ledger, resource, index, seen)))
        else:
            jobs.append(ledger.commit(request(resource, index // 24, f"c-{index}")))
    tasks = [asyncio.create_task(job) for job in jobs]
    await asyncio.sleep(0.05)  # every job is queued behind the gate
    gate.release.set()
    await held
    results = await asyncio.gather(*tasks, return_exceptions=True)

    # The writer really batched failing and succeeding units into shared transactions.
    batches: dict[int, int] = {}
    for cursor in seen:
        batches[id(cursor)] = batches.get(id(cursor), 0) + 1
    assert max(batches.values()) >= 10, batches
    for kind, result in zip(kinds, results, strict=True):
        if kind == "fail":
            assert isinstance(result, Boom), repr(result)
            assert not await blob_exists(ledger, str(result))
        elif kind == "ok":
            assert isinstance(result, str), repr(result)
            assert await blob_exists(ledger, result)
        else:
            # The commits come in two rounds per resource (expected 0, then 1): both land.
            assert isinstance(result, CommitOutcome), repr(result)
    for index in range(8):
        # The failing units' revision bumps (+100 each) were rolled back with them.
        assert await assert_consistent(ledger, f"mix-{index}") == 2
    await assert_audit_clean(ledger)


async def test_database_error_inside_a_batched_unit_spares_the_others(ledger: Ledger) -> None:
    """A statement the database refuses (duplicate key) fails its unit alone, on both engines."""
    await create(ledger, "dup")
    existing = (await ledger.resource("dup"))
    assert existing is not None
    gate = WriterGate()
    held = await gate.close_on(ledger)
    seen: list[Any] = []

    def duplicate(tx: WriteTx) -> None:
        seen.append(tx.cursor)
        tx.cursor.execute(
            "INSERT INTO blobs (ledger_id, hash, size, body) VALUES"
            f" ('{ledger.ledger_id}', '{existing.initial_hash}', 1, 'x')"
        )

    tasks = [asyncio.create_task(ledger._store.write(succeeding_unit(ledger, "dup", "before", seen))),
             asyncio.create_task(ledger._store.write(duplicate)),
             asyncio.create_task(ledger.commit(request("dup", 0, "after")))]
    await asyncio.sleep(0.05)
    gate.release.set()
    await held
    before_hash, refused, after = await asyncio.gather(*tasks, return_exceptions=True)
    assert len({id(cursor) for cursor in seen}) == 1, "the units did not share a transaction"
    assert isinstance(refused, MvuError), repr(refused)
    assert isinstance(before_hash, str)
    assert await blob_exists(ledger, before_hash)
    assert isinstance(after, CommitOutcome), repr(after)
    assert await assert_consistent(ledger, "dup") == 1
    await assert_audit_clean(ledger)


# -- cancellation -------------------------------------------------------------------------------


async def test_cancelled_while_queued_writes_nothing(ledger: Ledger) -> None:
    for index in range(12):
        await create(ledger, f"q-{index}")
    gate = WriterGate()
    held = await gate.close_on(ledger)
    tasks = [asyncio.create_task(ledger.commit(request(f"q-{index}", 0, f"q-op-{index}"))) for index in range(12)]
    await asyncio.sleep(0.05)
    for task in tasks[::2]:
        task.cancel()
    await asyncio.sleep(0)
    gate.release.set()
    await held
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for index, result in enumerate(results):
        if index % 2 == 0:
            assert isinstance(result, asyncio.CancelledError), repr(result)
            assert await assert_consistent(ledger, f"q-{index}") == 0
            assert await receipts_of(ledger, f"q-{index}") == {}
        else:
            assert isinstance(result, CommitOutcome), repr(result)
            assert await assert_consistent(ledger, f"q-{index}") == 1
    await assert_audit_clean(ledger)


@pytest.mark.parametrize("batched", [False, True])
async def test_cancelled_while_its_unit_runs_writes_nothing(ledger: Ledger, batched: bool) -> None:
    """The caller gives up while the writer is inside its unit: the unit is rolled back."""
    await create(ledger, "mid")
    gate = WriterGate()
    held = await gate.close_on(ledger) if batched else None
    seen: list[Any] = []
    neighbour = asyncio.create_task(ledger._store.write(succeeding_unit(ledger, "mid", "neighbour", seen))) if batched \
        else None
    inside = threading.Event()
    resume = threading.Event()
    blob = ledger._store.prepare_state(variables("mid", "cancelled"))

    def slow(tx: WriteTx) -> None:
        seen.append(tx.cursor)
        ledger._store.put_blob(tx, blob)
        inside.set()
        assert resume.wait(30)

    task = asyncio.create_task(ledger._store.write(slow))
    await asyncio.sleep(0.05)
    if gate is not None:
        gate.release.set()
    assert await asyncio.to_thread(inside.wait, 30)
    task.cancel()
    await asyncio.sleep(0)
    resume.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    if held is not None:
        await held
    if neighbour is not None:
        kept = await neighbour
        # The neighbour shared the cancelled unit's transaction; that one was rolled back and
        # the neighbour ran again on its own, so it is kept whole.
        assert await blob_exists(ledger, kept)
        assert len({id(cursor) for cursor in seen}) == 2
    await ledger._store.write(lambda _tx: None)  # a barrier: the writer is past that transaction
    assert not await blob_exists(ledger, blob.hash)
    await assert_audit_clean(ledger)


async def test_random_cancellation_leaves_whole_commits_or_nothing(ledger: Ledger) -> None:
    rng = random.Random(7)
    resources = [f"cancel-{index}" for index in range(16)]
    for resource in resources:
        await create(ledger, resource)
    in_flight: dict[str, CommitRequest] = {}
    counter = 0

    async def chain(resource: str) -> None:
        nonlocal counter
        while True:
            head = await ledger.head(resource)
            counter += 1
            req = request(resource, head.revision, f"{resource}-op-{counter}")
            in_flight[resource] = req
            await ledger.commit(req)
            del in_flight[resource]

    cancelled = 0
    for _round in range(6):
        tasks = [asyncio.create_task(chain(resource)) for resource in resources]
        await asyncio.sleep(rng.uniform(0.02, 0.15))
        for task in rng.sample(tasks, len(tasks)):
            task.cancel()
            await asyncio.sleep(rng.uniform(0, 0.004))
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(result, asyncio.CancelledError) for result in results), results
        cancelled += len(in_flight)
        await ledger._store.write(lambda _tx: None)  # a barrier: whatever was queued has settled
        for resource in resources:
            revision = await assert_consistent(ledger, resource)
            pending = in_flight.pop(resource, None)
            if pending is None:
                continue
            receipts = await receipts_of(ledger, resource)
            landed = pending.operation_id in receipts
            # Whole or nothing: landed means it is the head; not landed means no trace of it.
            assert revision == pending.expected_revision + (1 if landed else 0)
            # The client retries the request it never heard back about: it lands exactly once.
            retried = await ledger.commit(pending)
            assert retried.revision == pending.expected_revision + 1
            assert retried.replayed == landed
            assert await assert_consistent(ledger, resource) == pending.expected_revision + 1
    assert cancelled > 0, "no commit was ever cancelled in flight: the test exercised nothing"
    await assert_audit_clean(ledger)


# -- two processes ------------------------------------------------------------------------------


def test_two_processes_on_one_sqlite_file_lose_no_update(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    per_process = 120
    processes = [
        subprocess.Popen(
            [sys.executable, str(CHILD), "increment", str(db), "counter", str(per_process)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(2)
    ]
    successes = conflicts = 0
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        done = out.split()[-3:]
        assert done[0] == "DONE", out
        successes += int(done[1])
        conflicts += int(done[2])
    assert successes == 2 * per_process

    async def check() -> None:
        ledger = await open_ledger(f"sqlite:///{db}")
        try:
            head = await ledger.head("counter")
            assert head.variables == {"counter": successes}
            assert await assert_consistent(ledger, "counter") == successes
            await assert_audit_clean(ledger)
        finally:
            await ledger.close()

    asyncio.run(check())
    print(f"two processes: {successes} increments, {conflicts} CAS conflicts retried")


# -- two writers creating one resource ----------------------------------------------------------


async def test_concurrent_creates_of_one_id_one_wins_the_rest_are_id_conflicts(
    ledger: Ledger, ledger_url: str, ledger_id: str, request: pytest.FixtureRequest
) -> None:
    """Two writers (two ledger instances: two processes in production) race to create ids."""
    other = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        codes: list[str] = []
        for index in range(20):
            creators = [ledger, other, ledger, other]
            results = await asyncio.gather(
                *(writer.create_resource(NewResource(id=f"race-{index}", kind="instance",
                                                     initial=variables(f"race-{index}", n), definition={"d": 1}))
                  for n, writer in enumerate(creators)),
                return_exceptions=True,
            )
            assert sum(not isinstance(result, BaseException) for result in results) == 1, results
            codes.extend(result.code for result in results if isinstance(result, MvuError))
            assert len(codes) == 3 * (index + 1), results
        assert set(codes) == {Code.ID_CONFLICT}, sorted(set(codes))
        await assert_audit_clean(ledger)
    finally:
        await other.close()


# -- budget under concurrency -------------------------------------------------------------------


async def test_concurrent_commits_never_take_the_ledger_past_its_budget(
    ledger: Ledger, ledger_url: str, ledger_id: str
) -> None:
    resources = [f"budget-{index}" for index in range(16)]
    for resource in resources:
        await create(ledger, resource)
    base = (await ledger.usage()).used_bytes
    limit = base + 5 * 4_300  # room for about five 4 KiB commits, not sixteen
    tight = await open_ledger(ledger_url, ledger_id=ledger_id, ledger_limit_bytes=limit)
    try:
        results = await asyncio.gather(
            *(tight.commit(request(resource, 0, f"{resource}-op")) for resource in resources), return_exceptions=True
        )
        landed = [result for result in results if isinstance(result, CommitOutcome)]
        refused = [result for result in results if not isinstance(result, CommitOutcome)]
        assert landed, "nothing fitted"
        assert refused, "everything fitted: the limit did not bite"
        usage = await tight.usage()
        assert usage.limit_bytes == limit
        assert usage.used_bytes <= limit
        for error in refused:
            assert isinstance(error, MvuError), repr(error)
            assert error.code == Code.STORAGE_LIMIT, repr(error)
            assert error.details["limit"] == limit
            assert error.details["used"] + error.details["requested"] > limit
            # No refusal was spurious: what is left cannot hold it either.
            assert usage.used_bytes + error.details["requested"] > limit
        for resource, result in zip(resources, results, strict=True):
            assert await assert_consistent(tight, resource) == (1 if isinstance(result, CommitOutcome) else 0)
        await assert_audit_clean(tight)
    finally:
        await tight.close()
