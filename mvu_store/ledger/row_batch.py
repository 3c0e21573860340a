"""Many rows in one statement per table: what a bulk writer (a chat import) queues and flushes.

A chat import writes tens of thousands of rows of a few kinds (states as blobs, their versions,
the file's lines, events). One ``INSERT`` per row costs Python more than SQLite: the driver
call, the parameters, the bytes. :func:`insert_batch` takes a batch and runs one ``executemany``
per table, charging the bytes as :meth:`Store.insert_row` and :meth:`Store.put_blob` do (a blob
already stored is neither written again nor charged).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, select

from mvu_store.ledger import tables as t
from mvu_store.ledger.audit import row_bytes
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.query import LEDGER, Query
from mvu_store.ledger.store import Store
from mvu_store.ledger.writer import WriteTx

BATCH_TABLES = {table.name: table for table in (t.versions, t.changes, t.chat_lines, t.selections, t.activations)}
"""The tables a batch may hold rows of (besides blobs), in the order they are written: a row's
foreign keys point at blobs, at rows written before the batch and at rows of a table before its
own (a change row at its version)."""

_KNOWN_CHUNK = 256
"""Blob hashes looked up per statement (one compiled statement per power of two up to it)."""


@dataclass(slots=True)
class RowBatch:
    """Rows waiting to be written: blobs by hash, and rows by table name (:data:`BATCH_TABLES`)."""

    blobs: dict[str, Blob] = field(default_factory=dict)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    size: int = 0
    """The bytes queued (blob texts and rows' charged text, before a stored blob is found): at
    least what the batch will charge."""

    def add_blob(self, blob: Blob) -> str:
        if blob.hash not in self.blobs:
            self.blobs[blob.hash] = blob
            self.size += blob.size
        return blob.hash

    def take_blob(self, digest: str) -> Blob | None:
        """The blob queued under ``digest``, no longer queued (None: none is)."""
        blob = self.blobs.pop(digest, None)
        if blob is not None:
            self.size -= blob.size
        return blob

    def add_row(self, table: str, row: dict[str, Any]) -> None:
        """``row`` without ``ledger_id`` and ``bytes``: the ledger adds them."""
        row["bytes"] = row_bytes(BATCH_TABLES[table], row)
        self.rows.setdefault(table, []).append(row)
        self.size += row["bytes"]

    def __bool__(self) -> bool:
        return bool(self.blobs or self.rows)


def insert_batch(store: Store, tx: WriteTx, batch: RowBatch) -> None:
    """Write ``batch`` in the unit of work ``tx``: its blobs not yet stored, then its rows, one
    statement per table; the batch is emptied."""
    known = _known_blobs(tx, list(batch.blobs))
    fresh = [blob for digest, blob in batch.blobs.items() if digest not in known]
    if fresh:
        store.insert_rows(tx, t.blobs, [{"hash": blob.hash, "size": blob.size, "body": blob.text} for blob in fresh])
        tx.charge(sum(blob.size for blob in fresh))
    for name, table in BATCH_TABLES.items():
        rows = batch.rows.get(name)
        if rows:
            store.insert_rows(tx, table, rows)
    batch.blobs, batch.rows, batch.size = {}, {}, 0


def _known_blobs(tx: WriteTx, hashes: list[str]) -> set[str]:
    known: set[str] = set()
    for start in range(0, len(hashes), _KNOWN_CHUNK):
        chunk = hashes[start:start + _KNOWN_CHUNK]
        size = 1 << max(len(chunk) - 1, 0).bit_length()
        # The last binds repeat the last hash: IN does not mind duplicates.
        binds = {f"hash_{n}": chunk[min(n, len(chunk) - 1)] for n in range(size)}
        known.update(row["hash"] for row in tx.all(_known_query(size), **binds))
    return known


@functools.cache
def _known_query(size: int) -> Query:
    """The stored blobs among ``:hash_0`` ... ``:hash_<size - 1>`` (their hashes only)."""
    b = t.blobs.c
    return Query(f"known-blobs:{size}", lambda: select(b.hash).where(
        b.ledger_id == LEDGER, b.hash.in_([bindparam(f"hash_{n}") for n in range(size)])))
