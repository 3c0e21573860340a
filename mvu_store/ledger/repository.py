"""The Ledger: transactions, CAS, receipts, budgets, blobs, lineage.

Every write is one unit of work on the single writer (``writer.py``) and follows one order:
receipt check -> row-version CAS -> writes -> budget -> commit. A unit that raises leaves
nothing behind (its SAVEPOINT or transaction rolls back). Reads run on their own connections
and see committed data only. Driver errors are translated on both paths by
``dialect.translate``: a busy or lost database is ``MVU_STORAGE_BUSY``, never a raw exception.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import BindParameter, Engine, Table, and_, bindparam, func, insert, select, text, update
from sqlalchemy.sql import ClauseElement

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, canonical_text, measure_state
from mvu_store.ledger import tables as t
from mvu_store.ledger.audit import row_bytes
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.dialect import dialect_of, translated
from mvu_store.ledger.records import (
    CheckpointRecord,
    CommitOutcome,
    CommitRequest,
    Finding,
    Head,
    NewResource,
    ResourceRecord,
    SeedChild,
    SeedRecord,
    Usage,
    VersionRecord,
)
from mvu_store.ledger.rules import check_request, check_text, default_key, fact_fields, indexable
from mvu_store.ledger.writer import Sql, Writer, WriteTx

T = TypeVar("T")

FACTS_MAX_RECORDS = 2_048
FACTS_MAX_BYTES = 1024 * 1024
_LEDGER: BindParameter[str] = bindparam("ledger_id")


def _now_ms() -> int:
    return int(time.time() * 1000)


class Ledger:
    """One budget domain of the store. Create with :func:`mvu_store.ledger.open_ledger`."""

    def __init__(self, *, writer_engine: Engine, reader_engine: Engine, ledger_id: str, state_limit_bytes: int) -> None:
        self.ledger_id = ledger_id
        self._dialect = dialect_of(writer_engine)
        self.dialect = self._dialect.name
        self._writer_engine = writer_engine
        self._reader_engine = reader_engine
        self._writer = Writer(writer_engine, ledger_id, self._settle, serialize=self._serialize)
        self._sql = self._writer.statements
        self._state_limit = state_limit_bytes
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Finish queued writes, stop the writer and dispose both engines (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        self._writer.close()
        self._writer_engine.dispose()
        self._reader_engine.dispose()

    async def __aenter__(self) -> Ledger:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @property
    def url(self) -> str:
        return self._writer_engine.url.render_as_string(hide_password=True)

    @property
    def state_limit_bytes(self) -> int:
        return self._state_limit

    # -- low level ----------------------------------------------------------------------------

    async def write(self, work: Callable[[WriteTx], T]) -> T:
        """Run ``work`` as one atomic unit on the writer (for in-package use: importers)."""
        if self._closed:
            raise MvuError(Code.DISPOSED, "the ledger is closed")
        return await self._writer.submit(work)

    async def read(self, work: Callable[[Any], T]) -> T:
        """Run ``work(connection)`` on a reader connection (committed data only), off the loop.

        A driver error is translated as on the writer: a locked or lost database is
        ``MVU_STORAGE_BUSY``, a damaged one ``MVU_STORAGE_CORRUPT``.
        """
        if self._closed:
            raise MvuError(Code.DISPOSED, "the ledger is closed")

        def run() -> T:
            with self._reader_engine.connect() as connection:
                return work(connection)

        with translated():
            return await asyncio.to_thread(run)

    def _compiled(self, name: str, build: Callable[[], ClauseElement], keys: list[str] | None = None) -> Sql:
        return self._sql.sql(name, build, keys)

    def _insert_sql(self, table: Table) -> Sql:
        return self._compiled(f"insert:{table.name}", lambda: insert(table), _column_names(table))

    def _insert_ignore_sql(self, table: Table) -> Sql:
        """INSERT that does nothing when the primary key exists (content-addressed rows)."""

        return self._compiled(
            f"insert-ignore:{table.name}", lambda: self._dialect.insert_ignore(table), _column_names(table)
        )

    def put_blob(self, tx: WriteTx, blob: Blob) -> str:
        """Store a payload once; only the first copy is charged to the budget."""
        cursor = tx.execute(
            self._insert_ignore_sql(t.blobs),
            {"ledger_id": self.ledger_id, "hash": blob.hash, "size": blob.size, "body": blob.text},
        )
        if cursor.rowcount == 1:
            tx.charge(blob.size)
        return blob.hash

    def insert_row(self, tx: WriteTx, table: Table, values: dict[str, Any]) -> int:
        """Insert one row, computing and charging its ``bytes``; returns them.

        Facts are the exception: they are bounded on their own (DIGEST A-5), not charged.
        """
        row = {"ledger_id": self.ledger_id, **values}
        if "bytes" in table.c:
            row["bytes"] = row_bytes(table, row)
        tx.execute(self._insert_sql(table), row)
        if "bytes" not in table.c:
            return 0
        if table is not t.facts:
            tx.charge(row["bytes"])
        return int(row["bytes"])

    def _serialize(self, tx: WriteTx) -> None:
        """Make every transaction of this ledger run one at a time, across processes too.

        Units of work read, then write (next positions, receipts, fact counters). SQLite's
        ``BEGIN IMMEDIATE`` already serialises writers of the file; on PostgreSQL the ledger's
        usage row is the lock: every charged unit updates it anyway, so taking it at the start
        costs no concurrency within a ledger and rules out write skew between processes.
        """
        if not self._dialect.locks_ledger_row:
            return
        sql = self._compiled(
            "lock-ledger",
            lambda: select(t.ledger.c.ledger_id).where(t.ledger.c.ledger_id == _LEDGER).with_for_update(),
        )
        tx.execute(sql, {"ledger_id": self.ledger_id})

    def _settle(self, tx: WriteTx) -> None:
        """Charge a unit's bytes with one conditional UPDATE: over budget refuses the unit."""
        if tx.charged == 0:
            return
        sql = self._compiled(
            "budget",
            lambda: update(t.ledger)
            .where(t.ledger.c.ledger_id == _LEDGER)
            .where(t.ledger.c.used_bytes + bindparam("delta") <= t.ledger.c.limit_bytes)
            .values(used_bytes=t.ledger.c.used_bytes + bindparam("delta")),
        )
        if tx.execute(sql, {"ledger_id": self.ledger_id, "delta": tx.charged}).rowcount == 1:
            return
        row = tx.fetchone(
            self._compiled(
                "usage",
                lambda: select(t.ledger.c.used_bytes, t.ledger.c.limit_bytes).where(t.ledger.c.ledger_id == _LEDGER),
            ),
            {"ledger_id": self.ledger_id},
        )
        used, limit = row if row else (0, 0)
        raise MvuError(
            Code.STORAGE_LIMIT,
            f"storing {tx.charged} more bytes would exceed the ledger's {limit}-byte budget ({used} used)",
            limit=limit,
            used=used,
            requested=tx.charged,
        )

    def prepare_state(self, variables: JsonValue) -> Blob:
        """Check a variables envelope against the state budget (MVU_LIMIT) and encode it."""
        _, data, _ = measure_state(variables, max_bytes=self._state_limit)
        return Blob(data.decode(), data)

    # -- resources ----------------------------------------------------------------------------

    def _resource_row(self, tx: WriteTx, resource_id: str) -> tuple[Any, ...] | None:
        sql = self._compiled(
            "resource-head",
            lambda: select(
                t.resources.c.revision,
                t.resources.c.head_key,
                t.resources.c.head_hash,
                t.resources.c.parent_id,
                t.resources.c.parent_position,
            ).where(t.resources.c.ledger_id == _LEDGER, t.resources.c.id == bindparam("id")),
        )
        return tx.fetchone(sql, {"ledger_id": self.ledger_id, "id": resource_id})

    def resource_exists(self, tx: WriteTx, resource_id: str) -> bool:
        return self._resource_row(tx, resource_id) is not None

    def next_position(self, tx: WriteTx, table: Table, owner_column: str | None, owner: str | None) -> int:
        def build() -> ClauseElement:
            query = select(func.coalesce(func.max(table.c.position) + 1, 0)).where(table.c.ledger_id == _LEDGER)
            if owner_column:
                query = query.where(table.c[owner_column] == bindparam("owner"))
            return query

        row = tx.fetchone(
            self._compiled(f"next-position:{table.name}", build),
            {"ledger_id": self.ledger_id, "owner": owner},
        )
        return int(row[0]) if row else 0

    def insert_resource(
        self,
        tx: WriteTx,
        new: NewResource,
        *,
        revision: int = 0,
        head: tuple[str | None, str] | None = None,
        lineage: tuple[str, int] | None = None,
    ) -> None:
        """Insert a resource row (the initial envelope and definition as blobs)."""
        check_text("resource id", new.id, t.ID)
        check_text("template id", new.template_id, t.ID)
        check_text("session id", new.session_id, t.ID)
        check_text("management mode", new.management_mode, 16)
        if new.kind not in t.RESOURCE_KINDS:
            raise MvuError(Code.OPERATION, f"unknown resource kind {new.kind!r}", kind=new.kind)
        if self._resource_row(tx, new.id) is not None:
            raise MvuError(Code.ID_CONFLICT, f"resource {new.id!r} already exists", id=new.id)
        initial = self.prepare_state(new.initial)
        initial_hash = self.put_blob(tx, initial)
        definition_hash = self.put_blob(tx, Blob.of(new.definition))
        head_key, head_hash = head if head else (None, initial_hash)
        meta = canonical_text(new.meta)
        self.insert_row(
            tx,
            t.resources,
            {
                "id": new.id,
                "position": self.next_position(tx, t.resources, None, None),
                "kind": new.kind,
                "template_id": new.template_id,
                "session_id": new.session_id,
                "session_created_at": (
                    None if new.session_created_at is None else canonical_text(new.session_created_at)
                ),
                "revision": revision,
                "head_key": head_key,
                "head_hash": head_hash,
                "definition_hash": definition_hash,
                "initial_hash": initial_hash,
                "management_mode": new.management_mode,
                "parent_id": lineage[0] if lineage else None,
                "parent_position": lineage[1] if lineage else None,
                "meta": meta,
            },
        )

    async def create_resource(self, new: NewResource) -> ResourceRecord:
        """Create a resource at revision 0 whose content is ``new.initial``.

        An existing id is ``MVU_ID_CONFLICT``; an initial envelope over the state budget is
        ``MVU_LIMIT``; a ledger without room is ``PLAY_STORAGE_LIMIT``.
        """
        await self.write(lambda tx: self.insert_resource(tx, new))
        return await self._require(new.id)

    async def fork(self, source_id: str, new: NewResource, *, at_key: str | None) -> ResourceRecord:
        """Create ``new`` as a child of ``source_id`` whose head is the version ``at_key``.

        The child links to the version's owner (the source or one of its ancestors) instead of
        copying history: one row, whatever the length of the parent's history.
        """

        await self.write(lambda tx: self.insert_fork(tx, source_id, new, at_key))
        return await self._require(new.id)

    def insert_fork(self, tx: WriteTx, source_id: str, new: NewResource, at_key: str | None) -> None:
        """:meth:`fork` inside a unit of work."""
        if self._resource_row(tx, source_id) is None:
            raise MvuError(Code.MISSING, f"no resource {source_id!r}", id=source_id)
        if at_key is None:
            self.insert_resource(tx, new)
            return
        owner, position, variables_hash = self._find_in_lineage(tx, source_id, at_key)
        self.insert_resource(tx, new, head=(at_key, variables_hash), lineage=(owner, position))

    def _find_in_lineage(self, tx: WriteTx, resource_id: str, key: str) -> tuple[str, int, str]:
        """The (owner, position, variables hash) of version ``key`` visible from a resource."""
        sql = self._compiled(
            "version-by-key",
            lambda: select(t.versions.c.position, t.versions.c.variables_hash).where(
                t.versions.c.ledger_id == _LEDGER,
                t.versions.c.resource_id == bindparam("resource_id"),
                t.versions.c.key == bindparam("key"),
            ),
        )
        current: str | None = resource_id
        cut: int | None = None
        while current is not None:
            row = tx.fetchone(sql, {"ledger_id": self.ledger_id, "resource_id": current, "key": key})
            if row is not None and (cut is None or row[0] <= cut):
                return current, int(row[0]), str(row[1])
            resource = self._resource_row(tx, current)
            current, cut = (resource[3], resource[4]) if resource else (None, None)
        raise MvuError(Code.MISSING, f"version {key} is not in the history of {resource_id!r}", key=key)

    # -- commits ------------------------------------------------------------------------------

    async def commit(self, request: CommitRequest) -> CommitOutcome:
        """Write one state version under CAS and idempotency (see :class:`CommitRequest`).

        Refusals: ``MVU_MISSING`` (no such resource), ``REVISION_CONFLICT`` with
        ``current_revision`` (stale ``expected_revision``), ``MVU_IDEMPOTENCY_CONFLICT`` (same
        operation id or message, other request), ``MVU_LIMIT`` (state over budget) and
        ``PLAY_STORAGE_LIMIT`` (ledger over budget). A refused commit writes nothing.
        """
        check_request(request)
        blob = self.prepare_state(request.variables)
        source = canonical_text(request.source)
        meta = canonical_text(request.meta)
        key = request.key or default_key(request)
        # A key derived from the operation id is covered by the receipt check.
        check_key = request.operation_id is None or request.key is not None
        return await self.write(lambda tx: self._commit(tx, request, blob, key, source, meta, check_key))

    def _head_and_receipt(self, tx: WriteTx, resource_id: str, operation_id: str | None) -> tuple[Any, ...]:
        """A resource's revision and head key, with the receipt of ``operation_id`` if there is
        one, in one statement (the first of every commit); ``MVU_MISSING`` without a resource."""
        r, x = t.resources.c, t.receipts.c
        sql = self._compiled(
            "head-and-receipt",
            lambda: select(r.revision, r.head_key, x.fingerprint, x.revision, x.version_key, x.result)
            .select_from(
                t.resources.outerjoin(
                    t.receipts,
                    and_(
                        x.ledger_id == r.ledger_id, x.resource_id == r.id, x.operation_id == bindparam("operation_id")
                    ),
                )
            )
            .where(r.ledger_id == _LEDGER, r.id == bindparam("id")),
        )
        row = tx.fetchone(sql, {"ledger_id": self.ledger_id, "id": resource_id, "operation_id": operation_id})
        if row is None:
            raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
        return row

    @staticmethod
    def _receipt_replay(request: CommitRequest, receipt: tuple[Any, ...]) -> CommitOutcome | None:
        """The stored outcome of this operation id, or a conflict when it served another request."""
        fingerprint, revision, version_key, result = receipt
        if fingerprint is None:
            return None
        if fingerprint != request.fingerprint:
            raise MvuError(
                Code.IDEMPOTENCY_CONFLICT,
                "this operation id was already used for a different request",
                operation_id=request.operation_id,
            )
        return CommitOutcome(request.resource_id, int(revision), version_key, json.loads(result), True)

    def _key_replay(self, tx: WriteTx, request: CommitRequest, key: str) -> CommitOutcome | None:
        """The stored outcome when this version key (a reply's message) was already written."""
        version = tx.fetchone(
            self._compiled(
                "version-replay",
                lambda: select(t.versions.c.fingerprint, t.versions.c.revision, t.versions.c.error).where(
                    t.versions.c.ledger_id == _LEDGER,
                    t.versions.c.resource_id == bindparam("resource_id"),
                    t.versions.c.key == bindparam("key"),
                ),
            ),
            {"ledger_id": self.ledger_id, "resource_id": request.resource_id, "key": key},
        )
        if version is None:
            return None
        if version[0] != request.fingerprint:
            raise MvuError(
                Code.IDEMPOTENCY_CONFLICT, "this version key was already written by a different request", key=key
            )
        result: dict[str, JsonValue] = {"id": request.resource_id, "revision": int(version[1]), "versionKey": key}
        if version[2] is not None:
            result["error"] = version[2]
        return CommitOutcome(request.resource_id, int(version[1]), key, result, True)

    def _commit(
        self, tx: WriteTx, request: CommitRequest, blob: Blob, key: str, source: str, meta: str, check_key: bool
    ) -> CommitOutcome:
        row = self._head_and_receipt(tx, request.resource_id, request.operation_id)
        replay = self._receipt_replay(request, row[2:]) or (self._key_replay(tx, request, key) if check_key else None)
        if replay is not None:
            return replay
        current_revision, head_key = int(row[0]), row[1]
        if current_revision != request.expected_revision:
            raise self._conflict(request, current_revision)
        # Every commit claims the next revision; a failed reply (the original's "poison"
        # receipt) claims it too, but leaves the head where it was.
        moves_head = request.kind in t.COMMITTED_KINDS
        revision = current_revision + 1
        # The blob first: the head references it (foreign key). A refused CAS rolls it back.
        variables_hash = self.put_blob(tx, blob)
        # The revision (and the head) only move through this conditional write. Transactions of
        # a ledger are serialised (see _serialize), so it fails only if that guarantee was broken.
        head = {"head_key": key, "head_hash": blob.hash} if moves_head else {}
        if not self._cas(tx, request.resource_id, request.expected_revision, **head):
            raise self._conflict(request, current_revision)
        result = request.result
        if result is None:
            result = {"id": request.resource_id, "revision": revision, "versionKey": key}
            if request.error is not None:
                result["error"] = request.error
        position = self.next_position(tx, t.versions, "resource_id", request.resource_id)
        self.insert_row(
            tx,
            t.versions,
            {
                "resource_id": request.resource_id,
                "key": key,
                "position": position,
                "kind": request.kind,
                "revision": revision,
                # The original's failed version names no parent: it is not part of the head chain.
                "parent_key": head_key if moves_head else None,
                "variables_hash": variables_hash,
                "session_id": request.source.get("sessionId"),
                "message_seq": request.source.get("messageSeq"),
                "operation_id": request.operation_id,
                "fingerprint": request.fingerprint,
                "error": request.error,
                "source": source,
                "meta": meta,
                "created_at": _now_ms(),
            },
        )
        if request.operation_id is not None:
            # A commit's receipt takes its version's position: receipts stay in append order
            # without another lookup.
            self._insert_receipt(tx, request.resource_id, request.operation_id, "commit", request.fingerprint,
                                 revision, key, result, position)
        return CommitOutcome(request.resource_id, revision, key, result, False)

    def _conflict(self, request: CommitRequest, current: int) -> MvuError:
        return MvuError(
            Code.REVISION_CONFLICT,
            f"expected revision {request.expected_revision}, the resource is at {current}",
            id=request.resource_id,
            expected_revision=request.expected_revision,
            current_revision=current,
        )

    def _cas(self, tx: WriteTx, resource_id: str, expected: int, **changes: Any) -> bool:
        """Move a resource to revision ``expected + 1`` with ``changes``, only if it is still at
        ``expected``: the one conditional write through which a head ever moves."""
        names = sorted(changes)
        sql = self._compiled(
            "cas:" + ",".join(names),
            lambda: update(t.resources)
            .where(
                t.resources.c.ledger_id == _LEDGER,
                t.resources.c.id == bindparam("id"),
                t.resources.c.revision == bindparam("expected"),
            )
            .values(revision=bindparam("revision"), **{name: bindparam(name) for name in names}),
        )
        params = {"ledger_id": self.ledger_id, "id": resource_id, "expected": expected, "revision": expected + 1,
                  **changes}
        return bool(tx.execute(sql, params).rowcount == 1)

    def _insert_receipt(
        self, tx: WriteTx, resource_id: str, operation_id: str, kind: str, fingerprint: str, revision: int,
        version_key: str | None, result: JsonValue, position: int,
    ) -> None:
        text = canonical_text(result)
        self.insert_row(
            tx,
            t.receipts,
            {
                "resource_id": resource_id,
                "operation_id": operation_id,
                "position": position,
                "kind": kind,
                "fingerprint": fingerprint,
                "revision": revision,
                "version_key": version_key,
                "result": text,
                "created_at": _now_ms(),
            },
        )

    async def set_management_mode(
        self, resource_id: str, *, mode: str, expected_revision: int, operation_id: str, fingerprint: str
    ) -> CommitOutcome:
        """Store the management-mode preference under CAS + idempotency (DIGEST I-8)."""
        if mode not in ("native", "managed"):
            raise MvuError(Code.CONFIG, f"management mode is 'native' or 'managed', not {mode!r}", mode=mode)
        check_text("resource id", resource_id, t.ID)
        check_text("operation id", operation_id, t.ID)
        check_text("fingerprint", fingerprint, t.HASH)

        def work(tx: WriteTx) -> CommitOutcome:
            request = CommitRequest(resource_id, expected_revision, "manual", None, fingerprint, {"manual": True},
                                    operation_id=operation_id)
            row = self._head_and_receipt(tx, resource_id, operation_id)
            replay = self._receipt_replay(request, row[2:])
            if replay is not None:
                return replay
            if int(row[0]) != expected_revision:
                raise self._conflict(request, int(row[0]))
            revision = expected_revision + 1
            if not self._cas(tx, resource_id, expected_revision, management_mode=mode):
                raise self._conflict(request, int(row[0]))
            result = {"id": resource_id, "managementMode": mode, "revision": revision}
            position = self.next_position(tx, t.receipts, "resource_id", resource_id)
            self._insert_receipt(tx, resource_id, operation_id, "management", fingerprint, revision, None, result,
                                 position)
            return CommitOutcome(resource_id, revision, None, result, False)

        return await self.write(work)

    async def put_checkpoint(self, resource_id: str, *, session_id: str, turn: int, seq: int,
                             meta: dict[str, JsonValue] | None = None) -> CheckpointRecord:
        """Freeze the current head as the pre-turn baseline of ``turn`` (DIGEST F-6).

        The first checkpoint of a turn wins; asking again returns it unchanged.
        """
        check_text("resource id", resource_id, t.ID)
        check_text("session id", session_id or None, t.ID)
        text = canonical_text(meta or {})

        def work(tx: WriteTx) -> CheckpointRecord:
            existing = self._checkpoint(tx, resource_id, session_id, turn)
            if existing is not None:
                return existing
            resource = self._resource_row(tx, resource_id)
            if resource is None:
                raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
            record = CheckpointRecord(
                resource_id=resource_id,
                position=self.next_position(tx, t.checkpoints, "resource_id", resource_id),
                session_id=session_id,
                turn=turn,
                seq=seq,
                revision=int(resource[0]),
                version_key=resource[1],
                variables_hash=resource[2],
                meta=json.loads(text),
            )
            self.insert_row(tx, t.checkpoints, {
                "resource_id": resource_id, "position": record.position, "session_id": session_id, "turn": turn,
                "seq": seq, "revision": record.revision, "version_key": record.version_key,
                "variables_hash": record.variables_hash, "meta": text,
            })
            return record

        return await self.write(work)

    def _checkpoint(self, tx: WriteTx, resource_id: str, session_id: str, turn: int) -> CheckpointRecord | None:
        c = t.checkpoints.c
        sql = self._compiled(
            "checkpoint",
            lambda: select(*(c[name] for name in _CHECKPOINT_COLUMNS)).where(
                c.ledger_id == _LEDGER,
                c.resource_id == bindparam("resource_id"),
                c.session_id == bindparam("session_id"),
                c.turn == bindparam("turn"),
            ),
        )
        row = tx.fetchone(sql, {"ledger_id": self.ledger_id, "resource_id": resource_id, "session_id": session_id,
                                "turn": turn})
        return None if row is None else _checkpoint_record(row)

    # -- templates and facts ------------------------------------------------------------------

    async def put_template(self, template_id: str, definition: JsonValue) -> None:
        """Create or replace a template definition (templates are not CAS resources)."""
        check_text("template id", template_id, t.ID)
        blob = Blob.of(definition)

        def work(tx: WriteTx) -> None:
            definition_hash = self.put_blob(tx, blob)
            sql = self._compiled(
                "template-update",
                lambda: update(t.templates)
                .where(t.templates.c.ledger_id == _LEDGER, t.templates.c.id == bindparam("id"))
                .values(definition_hash=bindparam("definition_hash")),
            )
            params = {"ledger_id": self.ledger_id, "id": template_id, "definition_hash": definition_hash}
            if tx.execute(sql, params).rowcount == 0:
                position = self.next_position(tx, t.templates, None, None)
                self.insert_row(tx, t.templates, {"id": template_id, "position": position,
                                                  "definition_hash": definition_hash})

        await self.write(work)

    async def templates(self) -> dict[str, JsonValue]:
        rows = await self.read(
            lambda c: c.execute(
                select(t.templates.c.id, t.blobs.c.body)
                .join(t.blobs, and_(t.blobs.c.ledger_id == t.templates.c.ledger_id,
                                    t.blobs.c.hash == t.templates.c.definition_hash))
                .where(t.templates.c.ledger_id == self.ledger_id)
                .order_by(t.templates.c.position)
            ).all()
        )
        return {row[0]: json.loads(row[1]) for row in rows}

    async def append_fact(self, record: dict[str, JsonValue]) -> int:
        """Append a fact; evict the oldest beyond 2,048 records or 1 MiB (DIGEST A-5).

        A fact is content-free by construction: only the fields of the original facts format
        are kept, each a scalar, strings cut to 300 characters, so no variables or chat text
        can end up here whatever a caller passes.
        """
        return (await self.append_facts([record]))[0]

    async def append_facts(self, records: list[dict[str, JsonValue]]) -> list[int]:
        """Append several facts in one unit (see :meth:`append_fact`)."""
        prepared = [(canonical_text(fields), fields) for fields in map(fact_fields, records)]
        return await self.write(lambda tx: self.insert_facts(tx, prepared))

    def insert_facts(self, tx: WriteTx, facts: list[tuple[str, dict[str, Any]]]) -> list[int]:
        """Insert facts ``(canonical text, fields)`` in order, evicting the oldest beyond the bound;
        the store's counters are read and written once for all of them."""
        if not facts:
            return []
        counters = tx.fetchone(
            self._compiled(
                "facts-counters",
                lambda: select(t.ledger.c.facts_count, t.ledger.c.facts_bytes, t.ledger.c.facts_next_seq).where(
                    t.ledger.c.ledger_id == _LEDGER
                ),
            ),
            {"ledger_id": self.ledger_id},
        )
        assert counters is not None, "open_ledger creates the ledger row"
        count, total, next_seq = int(counters[0]), int(counters[1]), int(counters[2])
        oldest = self._compiled(
            "facts-oldest",
            lambda: select(t.facts.c.seq, t.facts.c.bytes)
            .where(t.facts.c.ledger_id == _LEDGER)
            .order_by(t.facts.c.seq)
            .limit(1),
        )
        evict = self._compiled(
            "facts-evict",
            lambda: t.facts.delete().where(t.facts.c.ledger_id == _LEDGER, t.facts.c.seq == bindparam("seq")),
        )
        seqs = []
        for body, fields in facts:
            size = self.insert_row(tx, t.facts, {
                "seq": next_seq,
                "phase": str(fields.get("phase", ""))[:16],
                "session_id": indexable(fields.get("sessionId")),
                "recorded_at": int(fields["recordedAt"]) if isinstance(fields.get("recordedAt"), int) else _now_ms(),
                "body": body,
            })
            if size > FACTS_MAX_BYTES:
                raise MvuError(Code.LIMIT, "a fact record is larger than the facts store", limit=FACTS_MAX_BYTES)
            seqs.append(next_seq)
            count, total, next_seq = count + 1, total + size, next_seq + 1
            while count > FACTS_MAX_RECORDS or total > FACTS_MAX_BYTES:
                row = tx.fetchone(oldest, {"ledger_id": self.ledger_id})
                assert row is not None
                tx.execute(evict, {"ledger_id": self.ledger_id, "seq": row[0]})
                count, total = count - 1, total - int(row[1])
        tx.execute(
            self._compiled(
                "facts-update",
                lambda: update(t.ledger)
                .where(t.ledger.c.ledger_id == _LEDGER)
                .values(facts_count=bindparam("count"), facts_bytes=bindparam("total"),
                        facts_next_seq=bindparam("next_seq")),
            ),
            {"ledger_id": self.ledger_id, "count": count, "total": total, "next_seq": next_seq},
        )
        return seqs

    async def facts(self, *, session_id: str | None = None) -> list[JsonValue]:
        query = select(t.facts.c.body).where(t.facts.c.ledger_id == self.ledger_id).order_by(t.facts.c.seq)
        if session_id is not None:
            query = query.where(t.facts.c.session_id == session_id)
        rows = await self.read(lambda c: c.execute(query).all())
        return [json.loads(row[0]) for row in rows]

    # -- reads --------------------------------------------------------------------------------

    async def usage(self) -> Usage:
        row = await self.read(
            lambda c: c.execute(
                select(t.ledger.c.used_bytes, t.ledger.c.limit_bytes, t.ledger.c.state_limit_bytes,
                       t.ledger.c.facts_count, t.ledger.c.facts_bytes).where(t.ledger.c.ledger_id == self.ledger_id)
            ).one()
        )
        return Usage(*(int(value) for value in row))

    async def resource(self, resource_id: str) -> ResourceRecord | None:
        query = self._resources_query().where(t.resources.c.id == resource_id)
        rows = await self.read(lambda c: c.execute(query).all())
        return _resource(rows[0]) if rows else None

    async def resources(
        self, *, session_id: str | None = None, kinds: tuple[str, ...] | None = None
    ) -> list[ResourceRecord]:
        """Resources in creation order; ``session_id`` keeps an instance session's, ``kinds`` some kinds."""
        query = self._resources_query().order_by(t.resources.c.position)
        if session_id is not None:
            query = query.where(t.resources.c.session_id == session_id)
        if kinds is not None:
            query = query.where(t.resources.c.kind.in_(kinds))
        rows = await self.read(lambda c: c.execute(query).all())
        return [_resource(row) for row in rows]

    def _resources_query(self) -> Any:
        c = t.resources.c
        return select(
            c.id, c.position, c.kind, c.template_id, c.session_id, c.session_created_at, c.revision, c.head_key,
            c.head_hash, c.definition_hash, c.initial_hash, c.management_mode, c.parent_id, c.parent_position, c.meta,
        ).where(c.ledger_id == self.ledger_id)

    async def _require(self, resource_id: str) -> ResourceRecord:
        record = await self.resource(resource_id)
        if record is None:
            raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
        return record

    async def head(self, resource_id: str) -> Head:
        """The current revision, version key and variables of a resource (``MVU_MISSING``)."""
        c = t.resources.c

        def read(connection: Any) -> Any:
            return connection.execute(
                select(c.revision, c.head_key, t.blobs.c.body)
                .join(t.blobs, and_(t.blobs.c.ledger_id == c.ledger_id, t.blobs.c.hash == c.head_hash))
                .where(c.ledger_id == self.ledger_id, c.id == resource_id)
            ).first()

        row = await self.read(read)
        if row is None:
            raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
        return Head(resource_id, int(row[0]), row[1], json.loads(row[2]))

    async def blob(self, blob_hash: str) -> JsonValue:
        """A stored payload (a state, a definition, a seed) by its hash."""
        rows = await self.read(
            lambda c: c.execute(
                select(t.blobs.c.body).where(t.blobs.c.ledger_id == self.ledger_id, t.blobs.c.hash == blob_hash)
            ).all()
        )
        if not rows:
            raise MvuError(Code.MISSING, f"no blob {blob_hash}", hash=blob_hash)
        return json.loads(rows[0][0])

    async def blobs(self, hashes: list[str]) -> dict[str, JsonValue]:
        """Stored payloads by hash, in one read (a history page's states); missing ones are absent."""
        wanted = sorted(set(hashes))
        if not wanted:
            return {}
        rows = await self.read(
            lambda c: c.execute(
                select(t.blobs.c.hash, t.blobs.c.body).where(t.blobs.c.ledger_id == self.ledger_id,
                                                             t.blobs.c.hash.in_(wanted))
            ).all()
        )
        return {row[0]: json.loads(row[1]) for row in rows}

    async def versions(self, resource_id: str, *, include_lineage: bool = True,
                       after_position: int | None = None) -> list[VersionRecord]:
        """The resource's history, oldest first: inherited ancestry (by lineage), then its own.

        With ``after_position``, only the resource's own versions written after that position
        (lineage is fixed when a child is created, so nothing inherited is ever new).
        """

        def read(connection: Any) -> list[VersionRecord]:
            chain: list[tuple[str, int | None, bool]] = [(resource_id, None, False)]
            parent = connection.execute(
                select(t.resources.c.parent_id, t.resources.c.parent_position).where(
                    t.resources.c.ledger_id == self.ledger_id, t.resources.c.id == resource_id)
            ).first()
            while include_lineage and after_position is None and parent is not None and parent[0] is not None:
                chain.append((parent[0], int(parent[1]), True))
                parent = connection.execute(
                    select(t.resources.c.parent_id, t.resources.c.parent_position).where(
                        t.resources.c.ledger_id == self.ledger_id, t.resources.c.id == parent[0])
                ).first()
            history: list[VersionRecord] = []
            for owner, cut, inherited in reversed(chain):
                c = t.versions.c
                query = select(
                    c.resource_id, c.key, c.position, c.kind, c.revision, c.parent_key, c.variables_hash, c.source,
                    c.meta, c.operation_id, c.fingerprint, c.error, c.created_at,
                ).where(c.ledger_id == self.ledger_id, c.resource_id == owner).order_by(c.position)
                if cut is not None:
                    query = query.where(c.position <= cut)
                if after_position is not None:
                    query = query.where(c.position > after_position)
                history.extend(
                    VersionRecord(
                        row[0], row[1], int(row[2]), row[3], int(row[4]), row[5], row[6], json.loads(row[7]),
                        json.loads(row[8]), row[9], row[10], row[11], int(row[12]), inherited,
                    )
                    for row in connection.execute(query)
                )
            return history

        return await self.read(read)

    async def checkpoints(self, resource_id: str) -> list[CheckpointRecord]:
        c = t.checkpoints.c
        rows = await self.read(
            lambda connection: connection.execute(
                select(*(c[name] for name in _CHECKPOINT_COLUMNS))
                .where(c.ledger_id == self.ledger_id, c.resource_id == resource_id)
                .order_by(c.position)
            ).all()
        )
        return [_checkpoint_record(row) for row in rows]

    # -- sessions: selections, activation boundaries, pending seeds, legacy files ---------------

    def set_selection(self, tx: WriteTx, session_id: str, template_id: str | None) -> None:
        """Record the template a session selected (None: an explicit unselect)."""
        check_text("session id", session_id, t.ID)
        check_text("template id", template_id, t.ID)
        sql = self._compiled(
            "selection-update",
            lambda: update(t.selections)
            .where(t.selections.c.ledger_id == _LEDGER, t.selections.c.session_id == bindparam("session_id"))
            .values(template_id=bindparam("template_id")),
        )
        params = {"ledger_id": self.ledger_id, "session_id": session_id, "template_id": template_id}
        if tx.execute(sql, params).rowcount == 0:
            self.insert_row(tx, t.selections, {"session_id": session_id, "template_id": template_id})

    def set_activation(self, tx: WriteTx, owner_id: str, session_id: str, seq: int) -> None:
        """Set the activation boundary of a template or resource in a session (DIGEST I-5)."""
        check_text("owner id", owner_id, t.ID)
        check_text("session id", session_id, t.ID)
        sql = self._compiled(
            "activation-update",
            lambda: update(t.activations)
            .where(t.activations.c.ledger_id == _LEDGER, t.activations.c.owner_id == bindparam("owner_id"),
                   t.activations.c.session_id == bindparam("session_id"))
            .values(seq=bindparam("seq")),
        )
        params = {"ledger_id": self.ledger_id, "owner_id": owner_id, "session_id": session_id, "seq": seq}
        if tx.execute(sql, params).rowcount == 0:
            self.insert_row(tx, t.activations, {"owner_id": owner_id, "session_id": session_id, "seq": seq})

    async def selection(self, session_id: str) -> tuple[bool, str | None]:
        """Whether the session ever selected or unselected, and the template it selected."""
        c = t.selections.c
        row = await self.read(
            lambda connection: connection.execute(
                select(c.template_id).where(c.ledger_id == self.ledger_id, c.session_id == session_id)
            ).first()
        )
        return (row is not None, row[0] if row is not None else None)

    async def activations(self, session_id: str) -> dict[str, int]:
        """The activation boundaries in a session, by owner (template or resource id)."""
        c = t.activations.c
        rows = await self.read(
            lambda connection: connection.execute(
                select(c.owner_id, c.seq).where(c.ledger_id == self.ledger_id, c.session_id == session_id)
            ).all()
        )
        return {row[0]: int(row[1]) for row in rows}

    async def template(self, template_id: str) -> JsonValue:
        """One template definition, or None."""
        c = t.templates.c
        row = await self.read(
            lambda connection: connection.execute(
                select(t.blobs.c.body)
                .join(t.blobs, and_(t.blobs.c.ledger_id == c.ledger_id, t.blobs.c.hash == c.definition_hash))
                .where(c.ledger_id == self.ledger_id, c.id == template_id)
            ).first()
        )
        return None if row is None else json.loads(row[0])

    async def seed_pending(self, target_session_id: str) -> bool:
        """Whether an uninstalled seed ticket targets this session (DIGEST F-5: MVU_SEED_PENDING)."""
        c = t.seeds.c
        row = await self.read(
            lambda connection: connection.execute(
                select(c.ticket).where(c.ledger_id == self.ledger_id, c.target_session_id == target_session_id,
                                       c.installed.is_(False)).limit(1)
            ).first()
        )
        return row is not None

    async def legacy_digest(self, name: str) -> str | None:
        """The sha256 of an imported legacy file (DIGEST L-1), or None: cheap to ask often."""
        c = t.legacy_files.c
        row = await self.read(
            lambda connection: connection.execute(
                select(c.sha256).where(c.ledger_id == self.ledger_id, c.name == name)
            ).first()
        )
        return None if row is None else str(row[0])

    async def legacy_file(self, name: str) -> bytes | None:
        """An imported legacy file, byte for byte (kept, never rewritten: DIGEST L-1)."""
        c = t.legacy_files.c
        row = await self.read(
            lambda connection: connection.execute(
                select(c.body).where(c.ledger_id == self.ledger_id, c.name == name)
            ).first()
        )
        return None if row is None else bytes(row[0])

    async def checkpoint(self, resource_id: str, *, session_id: str, turn: int) -> CheckpointRecord | None:
        """The frozen baseline of one turn, or None."""
        c = t.checkpoints.c
        row = await self.read(
            lambda connection: connection.execute(
                select(*(c[name] for name in _CHECKPOINT_COLUMNS)).where(
                    c.ledger_id == self.ledger_id, c.resource_id == resource_id, c.session_id == session_id,
                    c.turn == turn)
            ).first()
        )
        return None if row is None else _checkpoint_record(row)

    # -- seeds (fork / swipe / retry tickets, DIGEST F-1 ... F-7) --------------------------------

    async def put_seed(self, ticket: str, *, kind: str, source_session_id: str, target_session_id: str | None,
                       body: dict[str, JsonValue]) -> None:
        """Store a captured seed; a ticket is never reused (``MVU_ID_CONFLICT``).

        A seed that names its target session (a root swipe or retry) is ``MVU_SEED_CONFLICT``
        when another uninstalled seed targets that session or the session already has an
        instance: checked inside the unit, so two concurrent captures cannot both claim it.
        """
        check_text("ticket", ticket, 64)
        check_text("seed kind", kind, 16)
        check_text("session id", source_session_id, t.ID)
        check_text("session id", target_session_id, t.ID)
        blob = Blob.of(body)
        seeds, resources = t.seeds.c, t.resources.c
        pending = self._compiled(
            "seed-target-pending",
            lambda: select(seeds.ticket).where(seeds.ledger_id == _LEDGER,
                                               seeds.target_session_id == bindparam("target"),
                                               seeds.installed.is_(False)).limit(1),
        )
        taken = self._compiled(
            "seed-target-instance",
            lambda: select(resources.id).where(resources.ledger_id == _LEDGER, resources.kind == "instance",
                                               resources.session_id == bindparam("target")).limit(1),
        )

        def work(tx: WriteTx) -> None:
            if target_session_id is not None:
                params = {"ledger_id": self.ledger_id, "target": target_session_id}
                if tx.fetchone(pending, params) is not None or tx.fetchone(taken, params) is not None:
                    raise MvuError(Code.SEED_CONFLICT, "the target session already has state or a creation intent",
                                   session_id=target_session_id)
            self.put_blob(tx, blob)
            self.insert_row(tx, t.seeds, {
                "ticket": ticket, "position": self.next_position(tx, t.seeds, None, None), "kind": kind,
                "source_session_id": source_session_id, "target_session_id": target_session_id,
                "installed": False, "body_hash": blob.hash,
            })

        await self.write(work)

    async def seed(self, ticket: str) -> SeedRecord | None:
        c = t.seeds.c
        row = await self.read(
            lambda connection: connection.execute(
                select(c.ticket, c.kind, c.source_session_id, c.target_session_id, c.installed, t.blobs.c.body)
                .join(t.blobs, and_(t.blobs.c.ledger_id == c.ledger_id, t.blobs.c.hash == c.body_hash))
                .where(c.ledger_id == self.ledger_id, c.ticket == ticket)
            ).first()
        )
        if row is None:
            return None
        return SeedRecord(row[0], row[1], row[2], row[3], bool(row[4]), json.loads(row[5]))

    async def install_seed(self, ticket: str, *, target_session_id: str, body: dict[str, JsonValue],
                           children: list[SeedChild]) -> None:
        """Install a seed's children and mark it installed, atomically: all of it or nothing.

        A ticket already installed (by anyone) is ``MVU_SEED_CONFLICT``; a child id that exists
        is ``MVU_ID_CONFLICT`` (the child was initialised before its seed).
        """
        check_text("session id", target_session_id, t.ID)
        blob = Blob.of(body)
        c = t.seeds.c
        mark = self._compiled(
            "seed-install",
            lambda: update(t.seeds)
            .where(c.ledger_id == _LEDGER, c.ticket == bindparam("ticket"), c.installed.is_(False))
            .values(installed=True, target_session_id=bindparam("target"), body_hash=bindparam("body_hash")),
        )

        def work(tx: WriteTx) -> None:
            self.put_blob(tx, blob)
            params = {"ledger_id": self.ledger_id, "ticket": ticket, "target": target_session_id,
                      "body_hash": blob.hash}
            if tx.execute(mark, params).rowcount != 1:
                raise MvuError(Code.SEED_CONFLICT, "the seed is unknown or was already installed", ticket=ticket)
            for child in children:
                self.insert_fork(tx, child.source_id, child.new, child.at_key)
                self.set_activation(tx, child.new.id, target_session_id, child.activation_seq)
                for position, point in enumerate(child.checkpoints):
                    text = canonical_text(point.meta)
                    self.insert_row(tx, t.checkpoints, {
                        "resource_id": child.new.id, "position": position, "session_id": target_session_id,
                        "turn": point.turn, "seq": point.seq, "revision": point.revision,
                        "version_key": point.version_key, "variables_hash": point.variables_hash, "meta": text,
                    })

        await self.write(work)

    async def audit(self) -> list[Finding]:
        """Run the ``audit_*`` views (the same SQL an auditor runs) for this ledger."""
        rows = await self.read(
            lambda c: c.execute(
                text("SELECT check_name, ledger_id, subject, detail FROM audit_findings WHERE ledger_id = :ledger_id"),
                {"ledger_id": self.ledger_id},
            ).all()
        )
        return [Finding(*row) for row in rows]


_CHECKPOINT_COLUMNS = ("resource_id", "position", "session_id", "turn", "seq", "revision", "version_key",
                       "variables_hash", "meta")


def _checkpoint_record(row: Any) -> CheckpointRecord:
    """A ``checkpoints`` row, selected as ``_CHECKPOINT_COLUMNS``, as a record."""
    return CheckpointRecord(row[0], int(row[1]), row[2], int(row[3]), int(row[4]), int(row[5]), row[6], row[7],
                            json.loads(row[8]))


@functools.cache
def _column_names(table: Table) -> list[str]:
    return [column.name for column in table.columns]


def _resource(row: Any) -> ResourceRecord:
    return ResourceRecord(
        row[0], int(row[1]), row[2], row[3], row[4], None if row[5] is None else json.loads(row[5]), int(row[6]),
        row[7], row[8], row[9], row[10], row[11], row[12], None if row[13] is None else int(row[13]),
        json.loads(row[14]),
    )
