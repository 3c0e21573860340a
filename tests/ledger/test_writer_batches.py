"""How the single writer forms batches and isolates their units (``mvu_store/ledger/writer.py``).

What a loop submits in one iteration reaches the writer as one batch. Units of a batch share its
transaction: on SQLite without a savepoint each, so a unit that fails before writing costs the
others nothing, and one that fails after writing has the batch run again with a savepoint per
unit; on PostgreSQL every unit has its savepoint. Either way a failing unit leaves nothing and
the others land.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import Ledger
from mvu_store.ledger.writer import WriteTx


class Refused(Exception):
    pass


def storing(ledger: Ledger, tag: str, runs: Counter[str], cursors: list[int], *,
            fail: bool = False) -> Callable[[WriteTx], str]:
    """A unit that stores a blob of its own (and then raises, with ``fail``)."""
    blob = ledger._store.prepare_state({"stat_data": {"tag": tag}})

    def unit(tx: WriteTx) -> str:
        runs[tag] += 1
        cursors.append(id(tx.cursor))
        ledger._store.put_blob(tx, blob)
        if fail:
            raise Refused(blob.hash)
        return blob.hash

    return unit


def refusing(tag: str, runs: Counter[str], cursors: list[int]) -> Callable[[WriteTx], None]:
    """A unit that reads, then refuses before it writes anything (as a stale commit does)."""

    def unit(tx: WriteTx) -> None:
        runs[tag] += 1
        cursors.append(id(tx.cursor))
        tx.cursor.execute("SELECT 1").fetchall()
        raise MvuError(Code.REVISION_CONFLICT, "refused before writing")

    return unit


async def stored(ledger: Ledger, blob_hash: str) -> bool:
    def count(connection: Any) -> int:
        return int(connection.exec_driver_sql(
            f"SELECT count(*) FROM blobs WHERE ledger_id = '{ledger.ledger_id}' AND hash = '{blob_hash}'"
        ).scalar_one())

    return await ledger._store.read(count) == 1


async def test_writes_submitted_together_share_one_transaction(ledger: Ledger) -> None:
    runs: Counter[str] = Counter()
    cursors: list[int] = []
    hashes = await asyncio.gather(*(ledger._store.write(storing(ledger, f"u{index}", runs, cursors))
                                    for index in range(16)))
    assert len(set(cursors)) == 1, "16 writes of one loop iteration did not form one batch"
    assert all([await stored(ledger, blob_hash) for blob_hash in hashes])
    assert await ledger.audit() == []


async def test_a_unit_refused_before_writing_costs_its_batch_nothing(ledger: Ledger) -> None:
    runs: Counter[str] = Counter()
    cursors: list[int] = []
    before = await ledger.usage()
    results = await asyncio.gather(
        ledger._store.write(storing(ledger, "first", runs, cursors)),
        ledger._store.write(refusing("refused", runs, cursors)),
        ledger._store.write(storing(ledger, "last", runs, cursors)),
        return_exceptions=True,
    )
    first, refused, last = results
    assert isinstance(refused, MvuError) and refused.code == Code.REVISION_CONFLICT
    assert isinstance(first, str) and isinstance(last, str)
    assert await stored(ledger, first) and await stored(ledger, last)
    # One transaction, each unit run once: nothing had to be undone.
    assert runs == {"first": 1, "refused": 1, "last": 1}
    assert len(set(cursors)) == 1
    assert (await ledger.usage()).used_bytes > before.used_bytes
    assert await ledger.audit() == []


async def test_a_unit_failing_after_writing_leaves_nothing_and_spares_its_batch(ledger: Ledger) -> None:
    runs: Counter[str] = Counter()
    cursors: list[int] = []
    before = await ledger.usage()
    first, failed, last = await asyncio.gather(
        ledger._store.write(storing(ledger, "first", runs, cursors)),
        ledger._store.write(storing(ledger, "failed", runs, cursors, fail=True)),
        ledger._store.write(storing(ledger, "last", runs, cursors)),
        return_exceptions=True,
    )
    assert isinstance(failed, Refused)
    assert not await stored(ledger, str(failed))
    assert isinstance(first, str) and isinstance(last, str)
    assert await stored(ledger, first) and await stored(ledger, last)
    kept = ledger._store.prepare_state({"stat_data": {"tag": "first"}}).size + ledger._store.prepare_state(
        {"stat_data": {"tag": "last"}}).size
    assert (await ledger.usage()).used_bytes == before.used_bytes + kept
    # SQLite ran the batch shared up to the failure, then again with a savepoint per unit.
    again = 1 if ledger.dialect == "postgresql" else 2
    assert runs == {"first": again, "failed": again, "last": 1}
    assert await ledger.audit() == []


@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
async def test_close_finishes_a_write_its_loop_has_not_handed_over_yet(ledger: Ledger) -> None:
    runs: Counter[str] = Counter()
    task = asyncio.create_task(ledger._store.write(storing(ledger, "late", runs, [])))
    await asyncio.sleep(0)  # the write is submitted; its loop hands it to the writer next iteration
    ledger._store._writer.close()  # the writer itself, before that iteration
    blob_hash = await task
    assert runs == {"late": 1}
    with pytest.raises(MvuError) as refused:
        await ledger._store.write(storing(ledger, "after", runs, []))
    assert refused.value.code == Code.DISPOSED
    await ledger.close()
    assert blob_hash
