"""Resources: creation, forks and their lineage, heads, blobs, versions and checkpoints.

A fork child links to the version it starts from (its owner and position) instead of copying
history, so its history is read through its ancestry: :func:`_ancestry` walks it the same way for
the writer (finding a fork point) and for readers (a history with what it inherits).
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, case, select

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, canonical_text
from mvu_store.ledger import tables as t
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.change_rows import CREATION_POSITION, table_rows
from mvu_store.ledger.query import LEDGER, Query, ReadRows, Row, Rows
from mvu_store.ledger.records import CheckpointRecord, Head, NewResource, ResourceRecord, VersionRecord
from mvu_store.ledger.rows import columns, record, values
from mvu_store.ledger.rules import check_changes, check_text
from mvu_store.ledger.store import Store
from mvu_store.ledger.writer import WriteTx

_r, _v, _c, _b = t.resources.c, t.versions.c, t.checkpoints.c, t.blobs.c

_HEAD_ROW = Query(
    "resource-head",
    lambda: select(_r.revision, _r.head_key, _r.head_hash, _r.parent_id, _r.parent_position).where(
        _r.ledger_id == LEDGER, _r.id == bindparam("id")
    ),
)
"""A resource's revision, head and lineage link (``id``): what a write checks first."""

VERSION_BY_KEY = Query(
    "version-by-key",
    lambda: select(_v.position, _v.variables_hash, _v.fingerprint, _v.revision, _v.error).where(
        _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), _v.key == bindparam("key")
    ),
)
"""One of a resource's own versions by key (``resource_id``, ``key``)."""

_VERSION_RECORD = Query(
    "version-record",
    lambda: select(*columns(t.versions, VersionRecord, without=("inherited",))).where(
        _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), _v.key == bindparam("key")
    ),
)
_RESOURCE = Query("resource", lambda: _select_resources().where(_r.id == bindparam("id")))
def failure_since_head() -> ColumnElement[Any]:
    """The ``meta`` of the resource's (``resources`` of the enclosing query) last version when it
    is a failed receipt, else NULL: one seek on the versions' primary key. A failed receipt
    claims a revision but leaves the head where it was, so the head alone cannot tell a read
    that the latest turn failed."""
    last = (select(case((_v.kind == "failed", _v.meta)))
            .where(_v.ledger_id == _r.ledger_id, _v.resource_id == _r.id)
            .order_by(_v.position.desc()).limit(1))
    return last.scalar_subquery()


_HEAD = Query(
    "head",
    lambda: select(_r.revision, _r.head_key.label("version_key"), _b.body.label("variables"),
                   failure_since_head().label("failure"))
    .join(t.blobs, and_(_b.ledger_id == _r.ledger_id, _b.hash == _r.head_hash))
    .where(_r.ledger_id == LEDGER, _r.id == bindparam("id")),
)
_CHECKPOINT = Query(
    "checkpoint",
    lambda: select(*columns(t.checkpoints, CheckpointRecord)).where(
        _c.ledger_id == LEDGER,
        _c.resource_id == bindparam("resource_id"),
        _c.session_id == bindparam("session_id"),
        _c.turn == bindparam("turn"),
    ),
)
_CHECKPOINTS = Query(
    "checkpoints",
    lambda: select(*columns(t.checkpoints, CheckpointRecord))
    .where(_c.ledger_id == LEDGER, _c.resource_id == bindparam("resource_id"))
    .order_by(_c.position),
)


def _ancestry(rows: Rows, resource_id: str) -> Iterator[tuple[str, int]]:
    """The resources whose history ``resource_id`` reads through lineage, nearest first, each
    with the last position it inherits from them."""
    link = rows.one(_HEAD_ROW, id=resource_id)
    while link is not None and link["parent_id"] is not None:
        yield link["parent_id"], int(link["parent_position"])
        link = rows.one(_HEAD_ROW, id=link["parent_id"])


Owner = tuple[str, int | None, int]
"""A resource whose versions another's history shows: its id, the last position shown (None: all,
the resource itself) and the history index its position 0 has there."""


def lineage(rows: Rows, resource_id: str) -> list[Owner] | None:
    """The owners of ``resource_id``'s history, itself first, then its ancestors nearest first;
    None without the resource. A history lists the oldest ancestor's versions up to its cut, then
    the next one's and so on (``Resources.versions``): positions count from 0 in every resource, so
    an owner's offset is the number of versions the owners before it show."""
    if rows.one(_HEAD_ROW, id=resource_id) is None:
        return None
    chain: list[tuple[str, int | None]] = [(resource_id, None), *_ancestry(rows, resource_id)]
    owners: list[Owner] = []
    offset = 0
    for owner, cut in reversed(chain):
        owners.append((owner, cut, offset))
        offset += 0 if cut is None else cut + 1
    return owners[::-1]


def _in_lineage(rows: Rows, query: Query, resource_id: str, key: str) -> tuple[str, Row] | None:
    """Version ``key`` as ``resource_id``'s history shows it: its owner (the resource itself or
    the ancestor it inherits it from) and its row by ``query`` (a lookup by ``resource_id``, ``key``)."""
    owners: Iterator[tuple[str, int | None]] = itertools.chain([(resource_id, None)], _ancestry(rows, resource_id))
    for owner, cut in owners:
        row = rows.one(query, resource_id=owner, key=key)
        if row is not None and (cut is None or row["position"] <= cut):
            return owner, row
    return None


def _head(rows: Rows, resource_id: str) -> Head:
    row = rows.one(_HEAD, id=resource_id)
    if row is None:
        raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
    return record(Head, row, resource_id=resource_id)


def _head_version(rows: Rows, resource_id: str) -> tuple[Head, VersionRecord | None]:
    head = _head(rows, resource_id)
    found = None if head.version_key is None else _in_lineage(rows, _VERSION_RECORD, resource_id, head.version_key)
    if found is None:
        return head, None
    owner, row = found
    return head, record(VersionRecord, row, inherited=owner != resource_id)


def _checkpoint_at(rows: Rows, resource_id: str, session_id: str, turn: int) -> CheckpointRecord | None:
    row = rows.one(_CHECKPOINT, resource_id=resource_id, session_id=session_id, turn=turn)
    return None if row is None else record(CheckpointRecord, row)


class Resources:
    """Creating, forking and reading resources, their history and their checkpoints."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # -- writes -------------------------------------------------------------------------------

    def resource_exists(self, tx: WriteTx, resource_id: str) -> bool:
        return tx.one(_HEAD_ROW, id=resource_id) is not None

    def insert_resource(
        self,
        tx: WriteTx,
        new: NewResource,
        *,
        revision: int = 0,
        head: tuple[str | None, str] | None = None,
        lineage: tuple[str, int] | None = None,
    ) -> None:
        """Insert a resource row (the initial envelope and definition as blobs) and the
        ``changes`` rows of its creation (``new.changes``)."""
        check_text("resource id", new.id, t.ID)
        check_text("template id", new.template_id, t.ID)
        check_text("session id", new.session_id, t.ID)
        check_text("management mode", new.management_mode, 16)
        if new.kind not in t.RESOURCE_KINDS:
            raise MvuError(Code.OPERATION, f"unknown resource kind {new.kind!r}", kind=new.kind)
        check_changes(new.changes)
        if new.changes and (head is not None or lineage is not None):
            # A fork child's story before its own versions is its parent's (read through its
            # lineage); an imported resource's creation rows come with its other rows.
            raise MvuError(Code.OPERATION, f"only a resource created at its initial state records what its creation "
                                           f"changed ({new.id!r} starts elsewhere)", id=new.id)
        if self.resource_exists(tx, new.id):
            raise MvuError(Code.ID_CONFLICT, f"resource {new.id!r} already exists", id=new.id)
        initial = self._store.prepare_state(new.initial, new.encoded_initial)
        initial_hash = self._store.put_blob(tx, initial)
        definition_hash = self._store.put_blob(tx, Blob.of(new.definition))
        head_key, head_hash = head if head else (None, initial_hash)
        meta = canonical_text(new.meta)
        self._store.insert_row(
            tx,
            t.resources,
            {
                "id": new.id,
                "position": self._store.next_position(tx, t.resources, None, None),
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
        if new.changes:
            # What the opening changed: charged with the resource, in its unit (one statement).
            self._store.insert_rows(tx, t.changes, table_rows(
                new.changes, resource_id=new.id, position=CREATION_POSITION, revision=0,
                session_id=new.session_id, message_seq=None))

    async def create_resource(self, new: NewResource) -> ResourceRecord:
        """Create a resource at revision 0 whose content is ``new.initial``.

        An existing id is ``MVU_ID_CONFLICT``; an initial envelope over the state budget is
        ``MVU_LIMIT``; a ledger without room is ``PLAY_STORAGE_LIMIT``.
        """
        await self._store.write(lambda tx: self.insert_resource(tx, new))
        return await self._require(new.id)

    async def fork(self, source_id: str, new: NewResource, *, at_key: str | None) -> ResourceRecord:
        """Create ``new`` as a child of ``source_id`` whose head is the version ``at_key``.

        The child links to the version's owner (the source or one of its ancestors) instead of
        copying history: one row, whatever the length of the parent's history.
        """

        await self._store.write(lambda tx: self.insert_fork(tx, source_id, new, at_key))
        return await self._require(new.id)

    def insert_fork(self, tx: WriteTx, source_id: str, new: NewResource, at_key: str | None) -> None:
        """:meth:`fork` inside a unit of work."""
        if not self.resource_exists(tx, source_id):
            raise MvuError(Code.MISSING, f"no resource {source_id!r}", id=source_id)
        if at_key is None:
            self.insert_resource(tx, new)
            return
        owner, position, variables_hash = self._find_in_lineage(tx, source_id, at_key)
        self.insert_resource(tx, new, head=(at_key, variables_hash), lineage=(owner, position))

    def _find_in_lineage(self, tx: WriteTx, resource_id: str, key: str) -> tuple[str, int, str]:
        """The (owner, position, variables hash) of version ``key`` visible from a resource."""
        found = _in_lineage(tx, VERSION_BY_KEY, resource_id, key)
        if found is None:
            raise MvuError(Code.MISSING, f"version {key} is not in the history of {resource_id!r}", key=key)
        owner, row = found
        return owner, int(row["position"]), str(row["variables_hash"])

    async def put_checkpoint(self, resource_id: str, *, session_id: str, turn: int, seq: int,
                             meta: dict[str, JsonValue] | None = None) -> CheckpointRecord:
        """Freeze the current head as the pre-turn baseline of ``turn`` (DIGEST F-6).

        The first checkpoint of a turn wins; asking again returns it unchanged.
        """
        check_text("resource id", resource_id, t.ID)
        check_text("session id", session_id or None, t.ID)
        stored_meta = json.loads(canonical_text(meta or {}))

        def work(tx: WriteTx) -> CheckpointRecord:
            existing = _checkpoint_at(tx, resource_id, session_id, turn)
            if existing is not None:
                return existing
            head = tx.one(_HEAD_ROW, id=resource_id)
            if head is None:
                raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
            point = CheckpointRecord(
                resource_id=resource_id,
                position=self._store.next_position(tx, t.checkpoints, "resource_id", resource_id),
                session_id=session_id,
                turn=turn,
                seq=seq,
                revision=int(head["revision"]),
                version_key=head["head_key"],
                variables_hash=head["head_hash"],
                meta=stored_meta,
            )
            self.insert_checkpoint(tx, point)
            return point

        return await self._store.write(work)

    def insert_checkpoint(self, tx: WriteTx, point: CheckpointRecord) -> None:
        self._store.insert_row(tx, t.checkpoints, values(point))

    # -- reads --------------------------------------------------------------------------------

    async def resource(self, resource_id: str) -> ResourceRecord | None:
        """A resource's row by id (a lookup by key: on the loop for SQLite)."""
        row = await self._store.read_rows(lambda rows: rows.one(_RESOURCE, id=resource_id), brief=True)
        return None if row is None else record(ResourceRecord, row)

    async def resources(
        self, *, session_id: str | None = None, kinds: tuple[str, ...] | None = None
    ) -> list[ResourceRecord]:
        """Resources in creation order; ``session_id`` keeps an instance session's, ``kinds`` some kinds."""
        query = _resources_query(session_id is not None, None if kinds is None else tuple(sorted(set(kinds))))
        rows = await self._store.read_all(query, session_id=session_id)
        return [record(ResourceRecord, row) for row in rows]

    async def _require(self, resource_id: str) -> ResourceRecord:
        found = await self.resource(resource_id)
        if found is None:
            raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
        return found

    async def head(self, resource_id: str) -> Head:
        """The current revision, version key and variables of a resource (``MVU_MISSING``)."""
        return await self._store.read_rows(lambda rows: _head(rows, resource_id), brief=True)

    async def head_version(self, resource_id: str) -> tuple[Head, VersionRecord | None]:
        """:meth:`head` with the version it is at (its own or inherited; None for a head no
        version wrote, as a new resource's), in one round trip."""
        return await self._store.read_rows(lambda rows: _head_version(rows, resource_id), brief=True)

    async def resource_head(self, resource_id: str) -> tuple[ResourceRecord, Head, VersionRecord | None] | None:
        """:meth:`resource` and :meth:`head_version` in one round trip (one snapshot); None
        without the resource."""

        def read(rows: ReadRows) -> tuple[ResourceRecord, Head, VersionRecord | None] | None:
            row = rows.one(_RESOURCE, id=resource_id)
            if row is None:
                return None
            return record(ResourceRecord, row), *_head_version(rows, resource_id)

        return await self._store.read_rows(read, brief=True)

    async def blob(self, blob_hash: str) -> JsonValue:
        """A stored payload (a state, a definition, a seed) by its hash."""
        found = await self.blobs([blob_hash])
        if blob_hash not in found:
            raise MvuError(Code.MISSING, f"no blob {blob_hash}", hash=blob_hash)
        return found[blob_hash]

    async def blobs(self, hashes: list[str]) -> dict[str, JsonValue]:
        """Stored payloads by hash, in one read (a history page's states); missing ones are absent."""
        wanted = sorted(set(hashes))
        if not wanted:
            return {}

        def read(rows: ReadRows) -> dict[str, JsonValue]:
            return {blob_hash: json.loads(body) for blob_hash, body in blob_bodies(rows, wanted).items()}

        return await self._store.read_rows(read)

    async def versions(self, resource_id: str, *, include_lineage: bool = True,
                       after_position: int | None = None) -> list[VersionRecord]:
        """The resource's history, oldest first: inherited ancestry (by lineage), then its own.

        With ``after_position``, only the resource's own versions written after that position
        (lineage is fixed when a child is created, so nothing inherited is ever new).
        """

        def read(rows: ReadRows) -> list[VersionRecord]:
            owners: list[tuple[str, int | None]] = [(resource_id, None)]
            if include_lineage and after_position is None:
                owners.extend(_ancestry(rows, resource_id))
            history: list[VersionRecord] = []
            for owner, cut in reversed(owners):
                query = _history_query(cut is not None, after_position is not None)
                history.extend(
                    record(VersionRecord, row, inherited=owner != resource_id)
                    for row in rows.all(query, resource_id=owner, cut=cut, after=after_position)
                )
            return history

        return await self._store.read_rows(read)

    async def last_message_seq(self, resource_id: str, session_id: str | None) -> int | None:
        """The message sequence number of the latest version in the resource's history (its own,
        then what it inherits) that a message of ``session_id`` (None: of no session) wrote, or
        None. A search backwards by position that stops at the first match: an edit needs the
        session's last message, not the whole history it would otherwise read."""

        def read(rows: ReadRows) -> int | None:
            owners = itertools.chain([(resource_id, None)], _ancestry(rows, resource_id))
            for owner, cut in owners:
                query = _last_message_query(session_id is not None, cut is not None)
                row = rows.one(query, resource_id=owner, session_id=session_id, cut=cut)
                if row is not None:
                    return int(row["message_seq"])
            return None

        return await self._store.read_rows(read)

    async def own_version(self, resource_id: str, key: str) -> VersionRecord | None:
        """One of the resource's own versions (never an inherited one) by its key, by index."""
        row = await self._store.read_rows(lambda rows: rows.one(_VERSION_RECORD, resource_id=resource_id, key=key),
                                   brief=True)
        return None if row is None else record(VersionRecord, row, inherited=False)

    async def checkpoints(self, resource_id: str) -> list[CheckpointRecord]:
        rows = await self._store.read_all(_CHECKPOINTS, resource_id=resource_id)
        return [record(CheckpointRecord, row) for row in rows]

    async def checkpoint(self, resource_id: str, *, session_id: str, turn: int) -> CheckpointRecord | None:
        """The frozen baseline of one turn, or None."""
        return await self._store.read_rows(lambda rows: _checkpoint_at(rows, resource_id, session_id, turn), brief=True)


def _select_resources() -> Any:
    return select(*columns(t.resources, ResourceRecord)).where(_r.ledger_id == LEDGER)


@functools.cache
def _resources_query(by_session: bool, kinds: tuple[str, ...] | None) -> Query:
    def build() -> Any:
        query = _select_resources().order_by(_r.position)
        if by_session:
            query = query.where(_r.session_id == bindparam("session_id"))
        if kinds is not None:
            query = query.where(_r.kind.in_([bindparam(f"kind_{n}", kind) for n, kind in enumerate(kinds)]))
        return query

    return Query(f"resources:{by_session}:{','.join(kinds) if kinds is not None else '*'}", build)


def blob_bodies(rows: ReadRows, hashes: list[str]) -> dict[str, str]:
    """The stored text of each blob in ``hashes`` that exists, by hash (inside one round trip)."""
    found: dict[str, str] = {}
    for start in range(0, len(hashes), _MAX_BLOBS_QUERY):
        chunk = hashes[start:start + _MAX_BLOBS_QUERY]
        size = _blobs_query_size(len(chunk))
        # The query's last binds repeat the last hash: IN does not mind duplicates.
        binds = {f"hash_{n}": chunk[min(n, len(chunk) - 1)] for n in range(size)}
        found.update((row["hash"], row["body"]) for row in rows.all(_blobs_query(size), **binds))
    return found


# Blobs are looked up in chunks of up to this many hashes, with one query per power of two up to
# it (a list of any length costs one compiled statement of the next size, not one per length).
_MAX_BLOBS_QUERY = 256


def _blobs_query_size(count: int) -> int:
    return 1 << max(count - 1, 0).bit_length()


@functools.cache
def _blobs_query(size: int) -> Query:
    """The blobs whose hash is one of ``:hash_0`` ... ``:hash_<size - 1>``."""
    return Query(f"blobs:{size}", lambda: select(_b.hash, _b.body).where(
        _b.ledger_id == LEDGER, _b.hash.in_([bindparam(f"hash_{n}") for n in range(size)])))


@functools.cache
def _last_message_query(by_session: bool, cut: bool) -> Query:
    """The message_seq of a resource's latest version of ``:session_id`` (or of no session) that
    has one, at or before ``:cut`` (inherited)."""

    def build() -> Any:
        session = _v.session_id == bindparam("session_id") if by_session else _v.session_id.is_(None)
        query = select(_v.message_seq).where(
            _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), session, _v.message_seq.is_not(None)
        ).order_by(_v.position.desc()).limit(1)
        return query.where(_v.position <= bindparam("cut")) if cut else query

    return Query(f"last-message:{by_session}:{cut}", build)


@functools.cache
def _history_query(cut: bool, after: bool) -> Query:
    """A resource's own versions in order: up to ``:cut`` (inherited) or after ``:after`` (new)."""

    def build() -> Any:
        query = select(*columns(t.versions, VersionRecord, without=("inherited",))).where(
            _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id")
        ).order_by(_v.position)
        if cut:
            query = query.where(_v.position <= bindparam("cut"))
        if after:
            query = query.where(_v.position > bindparam("after"))
        return query

    return Query(f"history:{cut}:{after}", build)
