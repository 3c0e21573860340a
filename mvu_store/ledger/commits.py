"""Commits: state versions under row-version CAS, idempotency receipts, and the management mode.

A head only moves through :meth:`Commits._cas` (``UPDATE ... WHERE revision = :expected``). A
request with an operation id is decided by its receipt, one without by its version key; either
way the same fingerprint replays the stored result and another is ``MVU_IDEMPOTENCY_CONFLICT``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from sqlalchemy import and_, bindparam, func, select, update

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, canonical_text, dumps
from mvu_store.ledger import tables as t
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.change_rows import table_rows
from mvu_store.ledger.fact_log import FactLog, PreparedFact, prepare_facts
from mvu_store.ledger.query import LEDGER, Query, Row
from mvu_store.ledger.records import CommitOutcome, CommitRequest
from mvu_store.ledger.resources import VERSION_BY_KEY
from mvu_store.ledger.results import restored_result, stored_result
from mvu_store.ledger.rules import check_request, check_text, default_key
from mvu_store.ledger.store import Store, now_ms
from mvu_store.ledger.writer import WriteTx

_r, _x, _v, _b = t.resources.c, t.receipts.c, t.versions.c, t.blobs.c

_HEAD_AND_RECEIPT = Query(
    "head-and-receipt",
    lambda: select(
        _r.revision, _r.head_key, _x.fingerprint, _x.revision.label("receipt_revision"), _x.version_key, _x.result,
        # The position a new version of the resource takes, in the same statement (a commit
        # writes no version before it inserts its own).
        select(func.coalesce(func.max(_v.position) + 1, 0))
        .where(_v.ledger_id == LEDGER, _v.resource_id == bindparam("id"))
        .scalar_subquery()
        .label("next_position"),
    )
    .select_from(
        t.resources.outerjoin(
            t.receipts,
            and_(_x.ledger_id == _r.ledger_id, _x.resource_id == _r.id, _x.operation_id == bindparam("operation_id")),
        )
    )
    .where(_r.ledger_id == LEDGER, _r.id == bindparam("id")),
)


_VERSION_STATE = Query(
    "version-state",
    lambda: select(_b.body)
    .select_from(t.versions.join(t.blobs, and_(_b.ledger_id == _v.ledger_id, _b.hash == _v.variables_hash)))
    .where(_v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), _v.key == bindparam("key")),
)
"""The state a resource's own version wrote (``resource_id``, ``key``), as stored text."""


class Commits:
    """Writing versions and preferences under CAS and idempotency."""

    def __init__(self, store: Store, facts: FactLog) -> None:
        self._store, self._facts = store, facts

    async def commit(self, request: CommitRequest) -> CommitOutcome:
        """Write one state version under CAS and idempotency (see :class:`CommitRequest`).

        Refusals: ``MVU_MISSING`` (no such resource), ``REVISION_CONFLICT`` with
        ``current_revision`` (stale ``expected_revision``), ``MVU_IDEMPOTENCY_CONFLICT`` (same
        operation id or message, other request), ``MVU_LIMIT`` (state over budget) and
        ``PLAY_STORAGE_LIMIT`` (ledger over budget). A refused commit writes nothing.
        """
        check_request(request)
        blob = self._store.prepare_state(request.variables, request.encoded)
        source = canonical_text(request.source)
        meta = canonical_text(request.meta)
        key = request.key or default_key(request)
        # A key derived from the operation id is covered by the receipt check.
        check_key = request.operation_id is None or request.key is not None
        facts: list[PreparedFact] | str
        try:
            facts = prepare_facts(request.facts)
        except Exception as error:  # facts are an observation: refusing them never refuses the write
            facts = _fact_refusal(error)
        return await self._store.write(lambda tx: self._commit(tx, request, blob, key, source, meta, check_key, facts))

    def _head_and_receipt(self, tx: WriteTx, resource_id: str, operation_id: str | None) -> Row:
        """A resource's revision, head key and next version position, with the receipt of
        ``operation_id`` if there is one, in one statement (the first of every commit);
        ``MVU_MISSING`` without a resource."""
        row = tx.one(_HEAD_AND_RECEIPT, id=resource_id, operation_id=operation_id)
        if row is None:
            raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
        return row

    @staticmethod
    def _receipt_replay(tx: WriteTx, request: CommitRequest, row: Row) -> CommitOutcome | None:
        """The stored outcome of this operation id, or a conflict when it served another request."""
        if row["fingerprint"] is None:
            return None
        if row["fingerprint"] != request.fingerprint:
            raise MvuError(
                Code.IDEMPOTENCY_CONFLICT,
                "this operation id was already used for a different request",
                operation_id=request.operation_id,
            )
        key = row["version_key"]

        def state() -> JsonValue:
            found = tx.one(_VERSION_STATE, resource_id=request.resource_id, key=key)
            assert found is not None, "the audited foreign key: a commit receipt's version exists"
            return json.loads(found["body"])

        return CommitOutcome(request.resource_id, int(row["receipt_revision"]), key,
                             restored_result(row["result"], state), True)

    def _key_replay(self, tx: WriteTx, request: CommitRequest, key: str) -> CommitOutcome | None:
        """The stored outcome when this version key (a reply's message) was already written."""
        version = tx.one(VERSION_BY_KEY, resource_id=request.resource_id, key=key)
        if version is None:
            return None
        if version["fingerprint"] != request.fingerprint:
            raise MvuError(
                Code.IDEMPOTENCY_CONFLICT, "this version key was already written by a different request", key=key
            )
        revision = int(version["revision"])
        result: dict[str, JsonValue] = {"id": request.resource_id, "revision": revision, "versionKey": key}
        if version["error"] is not None:
            result["error"] = version["error"]
        return CommitOutcome(request.resource_id, revision, key, result, True)

    def _commit(
        self, tx: WriteTx, request: CommitRequest, blob: Blob, key: str, source: str, meta: str, check_key: bool,
        facts: list[PreparedFact] | str,
    ) -> CommitOutcome:
        row = self._head_and_receipt(tx, request.resource_id, request.operation_id)
        replay = self._receipt_replay(tx, request, row) or (self._key_replay(tx, request, key) if check_key else None)
        if replay is not None:
            return replay
        current_revision, head_key = int(row["revision"]), row["head_key"]
        if current_revision != request.expected_revision:
            raise self._conflict(request, current_revision)
        # Every commit claims the next revision; a failed reply (the original's "poison"
        # receipt) claims it too, but leaves the head where it was.
        moves_head = request.kind in t.COMMITTED_KINDS
        revision = current_revision + 1
        # The blob first: the head references it (foreign key). A refused CAS rolls it back.
        variables_hash = self._store.put_blob(tx, blob)
        # The revision (and the head) only move through this conditional write. Transactions of
        # a ledger are serialised (see Store._serialize), so it fails only if that guarantee was broken.
        head = {"head_key": key, "head_hash": blob.hash} if moves_head else {}
        if not self._cas(tx, request.resource_id, request.expected_revision, **head):
            raise self._conflict(request, current_revision)
        result = request.result
        if result is None:
            result = {"id": request.resource_id, "revision": revision, "versionKey": key}
            if request.error is not None:
                result["error"] = request.error
        position = int(row["next_position"])
        session_id, message_seq = request.source.get("sessionId"), request.source.get("messageSeq")
        self._store.insert_row(
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
                "session_id": session_id,
                "message_seq": message_seq,
                "operation_id": request.operation_id,
                "fingerprint": request.fingerprint,
                "error": request.error,
                "source": source,
                "meta": meta,
                "created_at": now_ms(),
            },
        )
        if request.changes:
            # What the version did, path by path: in its transaction, charged with it (one statement).
            self._store.insert_rows(tx, t.changes, table_rows(
                request.changes, resource_id=request.resource_id, position=position, revision=revision,
                session_id=session_id, message_seq=message_seq))
        if request.operation_id is not None:
            # A commit's receipt takes its version's position: receipts stay in append order
            # without another lookup. A result made here holds checked texts and an int and no
            # state: its text needs no walk of its values.
            stored = dumps(result) if request.result is None else stored_result(result, request.variables)
            self._insert_receipt(tx, request.resource_id, request.operation_id, "commit", request.fingerprint,
                                 revision, key, stored, position)
        return CommitOutcome(request.resource_id, revision, key, result, False, self._facts_of_commit(tx, facts))

    def _facts_of_commit(self, tx: WriteTx, facts: list[PreparedFact] | str) -> str | None:
        """Insert a commit's facts (or pass on the refusal of preparing them) in a savepoint: a
        failure of theirs rolls back alone and is returned as a code; only a savepoint that
        cannot be rolled back to fails the commit, as any of its statements would."""
        if isinstance(facts, str):
            return facts
        if not facts:
            return None
        tx.cursor.execute("SAVEPOINT commit_facts")
        refusal: str | None = None
        try:
            self._facts.insert_facts(tx, facts)
        except Exception as error:  # an optional write must never fail the update it observed
            tx.cursor.execute("ROLLBACK TO SAVEPOINT commit_facts")
            refusal = _fact_refusal(error)
        tx.cursor.execute("RELEASE SAVEPOINT commit_facts")
        return refusal

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
        cursor = tx.execute(_cas_query(tuple(sorted(changes))), id=resource_id, expected=expected,
                            revision=expected + 1, **changes)
        return bool(cursor.rowcount == 1)

    def _insert_receipt(
        self, tx: WriteTx, resource_id: str, operation_id: str, kind: str, fingerprint: str, revision: int,
        version_key: str | None, text: str, position: int,
    ) -> None:
        self._store.insert_row(
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
                "created_at": now_ms(),
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
            replay = self._receipt_replay(tx, request, row)
            if replay is not None:
                return replay
            current = int(row["revision"])
            if current != expected_revision:
                raise self._conflict(request, current)
            revision = expected_revision + 1
            if not self._cas(tx, resource_id, expected_revision, management_mode=mode):
                raise self._conflict(request, current)
            result = {"id": resource_id, "managementMode": mode, "revision": revision}
            position = self._store.next_position(tx, t.receipts, "resource_id", resource_id)
            self._insert_receipt(tx, resource_id, operation_id, "management", fingerprint, revision, None,
                                 canonical_text(result), position)
            return CommitOutcome(resource_id, revision, None, result, False)

        return await self._store.write(work)


@functools.cache
def _cas_query(names: tuple[str, ...]) -> Query:
    return Query(
        "cas:" + ",".join(names),
        lambda: update(t.resources)
        .where(_r.ledger_id == LEDGER, _r.id == bindparam("id"), _r.revision == bindparam("expected"))
        .values(revision=bindparam("revision"), **{name: bindparam(name) for name in names}),
    )


def _fact_refusal(error: Exception) -> str:
    """The code a commit reports for facts it could not store."""
    return error.code if isinstance(error, MvuError) else Code.FACT_WRITE.value
