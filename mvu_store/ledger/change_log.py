"""Each variable's story: reads of the ``changes`` table, and the states a diff compares.

A resource's history includes what it inherits through lineage (``resources.lineage``): a fork
child's story of a path goes on into its parent's versions up to the fork point, and every
change carries the index of its version in the child's whole history, the cursor history pages
use too (``position``). The rows of the oldest owner's creation, what its opening changed, come
before its first version: position -1 (``CREATION_POSITION``), revision 0. Rows are read by
``ix_changes_path`` (a path's story, a seek per owner that stops after one page, which SQLite's
planner takes only when told: ``dialect.seek_on``) and ``ix_changes_session_turn`` (a turn's
changes); a version's by its primary key. Nothing here decodes a value: an entry keeps
``before``/``after`` as the canonical JSON text they are stored as.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, select, text

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import tables as t
from mvu_store.ledger.change_rows import CREATION_POSITION, column_text
from mvu_store.ledger.dialect import seek_on
from mvu_store.ledger.query import LEDGER, Query, ReadRows
from mvu_store.ledger.records import ChangeEntry, ChangePage, StatePoint
from mvu_store.ledger.resources import Owner, blob_bodies, lineage
from mvu_store.ledger.store import Store

MAX_VERSION_CHANGES = 1_000
"""Changes one version's or one turn's read lists at most (``truncated`` beyond)."""

_ch, _v, _r = t.changes.c, t.versions.c, t.resources.c
_ALL = 2**31 - 1
"""A position no version reaches (positions are 32-bit integers)."""
# In ChangeEntry's order: _entries reads rows of them by position.
_COLUMNS = ("resource_id", "position", "seq", "revision", "session_id", "turn", "message_seq", "path", "op",
            "status", "actor", "before", "after", "omitted", "command", "code", "reason", "message", "derived")


def _select_changes() -> Any:
    return select(*(_ch[name] for name in _COLUMNS)).where(_ch.ledger_id == LEDGER,
                                                           _ch.resource_id == bindparam("resource_id"))


@functools.cache
def _path_query(by_session: bool) -> Query:
    """One owner's changes of ``:path`` below ``:below``, newest first, at most ``:n`` (by
    ``ix_changes_path``); ``by_session``: only those of ``:session_id``."""

    def build() -> Any:
        query = _select_changes().where(seek_on(_ch.path == bindparam("path")), _ch.position < bindparam("below"))
        if by_session:
            query = query.where(_ch.session_id == bindparam("session_id"))
        return query.order_by(_ch.position.desc(), _ch.seq.desc()).limit(bindparam("n"))

    return Query(f"path-changes:{by_session}", build)


_VERSION_ROWS = Query("version-changes", lambda: _select_changes().where(
    _ch.position == bindparam("position")).order_by(_ch.seq).limit(bindparam("n")))
_TURN_ROWS = Query("turn-changes", lambda: _select_changes().where(
    _ch.session_id == bindparam("session_id"), seek_on(_ch.turn == bindparam("turn")),
    _ch.position < bindparam("below"),
).order_by(_ch.position, _ch.seq).limit(bindparam("n")))
_VERSION_AT = Query("version-at-position", lambda: select(_v.key, _v.revision, _v.variables_hash).where(
    _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), _v.position == bindparam("position")))
# The predicate repeats the partial index's, so both databases use uq_versions_revision.
_VERSION_OF_REVISION = Query("version-of-revision", lambda: select(_v.key, _v.position, _v.variables_hash).where(
    _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), _v.revision == bindparam("revision"),
    text(t.REVISION_PREDICATE)))
_POINT_HEAD = Query("point-head", lambda: select(
    _r.revision, _r.head_key, _r.head_hash, _r.initial_hash, _r.parent_id, _r.parent_position,
).where(_r.ledger_id == LEDGER, _r.id == bindparam("id")))


def _entries(rows: list[tuple[Any, ...]], offset: int, inherited: bool) -> list[ChangeEntry]:
    """The entries of rows of ``_COLUMNS`` (tuples: a page holds a thousand), their positions
    moved by ``offset``; the values stay the text they are stored as (see ChangeEntry)."""
    return [ChangeEntry(owner, offset + position, seq, revision, session_id, turn, message_seq, path, op, status,
                        actor, before, after, bool(omitted), command, code, reason, message, bool(derived), inherited)
            for (owner, position, seq, revision, session_id, turn, message_seq, path, op, status, actor, before,
                 after, omitted, command, code, reason, message, derived) in rows]


def _owners(rows: ReadRows, resource_id: str) -> list[Owner]:
    owners = lineage(rows, resource_id)
    if owners is None:
        raise MvuError(Code.MISSING, f"no resource {resource_id!r}", id=resource_id)
    return owners


def _newest_page(found: list[ChangeEntry], limit: int) -> ChangePage:
    """A page of at most ``limit`` changes from ``found`` (newest first, up to ``limit + 1``),
    oldest first. A page holds whole versions: the oldest one it would cut comes whole on the next
    page, unless it alone fills the page (then its newest ``limit`` changes, ``truncated``)."""
    if len(found) <= limit:
        return ChangePage(tuple(reversed(found)))
    page, extra = found[:limit], found[limit]
    truncated = False
    if page[-1].position == extra.position:
        whole = [entry for entry in page if entry.position != extra.position]
        page, truncated = (whole, False) if whole else (page, True)
    oldest = page[-1].position
    # Nothing is older than a creation's rows: no next page (a cut one says truncated).
    return ChangePage(tuple(reversed(page)), next_before=oldest if oldest > CREATION_POSITION else None,
                      truncated=truncated)


class ChangeLog:
    """Reading the changes of a resource's history, and the states of its revisions."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def path_changes(self, resource_id: str, path: str, *, before_position: int | None, limit: int,
                           session_id: str | None = None) -> ChangePage:
        """A path's story: the newest ``limit`` changes of ``path`` (a JSON pointer) whose version
        is below ``before_position`` in the resource's history, oldest first, through its lineage.
        ``session_id``: only the resource's own changes of that session (what a shared resource's
        history shows a session; inherited ones always show). ``MVU_MISSING`` without the resource.
        ``path`` is looked up as the rows store it (NUL and lone surrogates replaced)."""
        path = column_text(path)

        def read(rows: ReadRows) -> ChangePage:
            found: list[ChangeEntry] = []
            for owner, cut, offset in _owners(rows, resource_id):
                below = _ALL if cut is None else cut + 1
                if before_position is not None:
                    below = min(below, before_position - offset)
                if below <= CREATION_POSITION:
                    continue
                own = owner == resource_id
                query = _path_query(own and session_id is not None)
                found.extend(_entries(rows.tuples(
                    query, resource_id=owner, path=path, below=below, session_id=session_id,
                    n=limit + 1 - len(found)), offset, not own))
                if len(found) > limit:
                    break
            return _newest_page(found, limit)

        return await self._store.read_rows(read, brief=True)

    async def version_changes(self, resource_id: str, *, revision: int | None = None,
                              position: int | None = None) -> ChangePage | None:
        """One version's changes in order: the resource's own version of ``revision``, or the
        version at ``position`` of its history (an inherited one too). Revision 0 is the
        resource's creation: what its opening changed (a page, empty for a resource whose creation
        changed nothing, or a fork child's). None when it has no such version; ``MVU_MISSING``
        without the resource."""

        def read(rows: ReadRows) -> ChangePage | None:
            owners = _owners(rows, resource_id)
            if revision == 0:
                owner, at, offset = resource_id, CREATION_POSITION, owners[0][2]
            elif revision is not None:
                found = rows.one(_VERSION_OF_REVISION, resource_id=resource_id, revision=revision)
                if found is None:
                    return None
                owner, at, offset = resource_id, int(found["position"]), owners[0][2]
            else:
                assert position is not None
                shown = next(((owner, position - offset, offset) for owner, cut, offset in owners
                              if offset <= position and (cut is None or position - offset <= cut)), None)
                if shown is None or rows.one(_VERSION_AT, resource_id=shown[0], position=shown[1]) is None:
                    return None
                owner, at, offset = shown
            listed = rows.tuples(_VERSION_ROWS, resource_id=owner, position=at, n=MAX_VERSION_CHANGES + 1)
            entries = tuple(_entries(listed[:MAX_VERSION_CHANGES], offset, owner != resource_id))
            return ChangePage(entries, truncated=len(listed) > MAX_VERSION_CHANGES)

        return await self._store.read_rows(read, brief=True)

    async def turn_changes(self, resource_id: str, *, session_id: str, turn: int) -> ChangePage:
        """The changes the versions of ``turn`` of ``session_id`` made in the resource's history
        (its own and those it inherits), in order. ``MVU_MISSING`` without the resource."""

        def read(rows: ReadRows) -> ChangePage:
            found: list[ChangeEntry] = []
            for owner, cut, offset in reversed(_owners(rows, resource_id)):
                found.extend(_entries(rows.tuples(
                    _TURN_ROWS, resource_id=owner, session_id=session_id, turn=turn,
                    below=_ALL if cut is None else cut + 1, n=MAX_VERSION_CHANGES + 1 - len(found)),
                    offset, owner != resource_id))
                if len(found) > MAX_VERSION_CHANGES:
                    break
            return ChangePage(tuple(found[:MAX_VERSION_CHANGES]), truncated=len(found) > MAX_VERSION_CHANGES)

        return await self._store.read_rows(read, brief=True)

    async def states_at(self, points: Sequence[tuple[str, int | None]]) -> list[StatePoint]:
        """The stored state of each ``(resource id, revision)`` (None: its current one), in one
        round trip. Revision 0 is the state the resource started from (a fork child's: the
        version it forked at); any other is one of its own versions. ``MVU_MISSING`` for a
        resource or a revision it never had."""

        def read(rows: ReadRows) -> list[StatePoint]:
            resolved = [self._point(rows, resource_id, revision) for resource_id, revision in points]
            bodies = blob_bodies(rows, sorted({state_hash for _, state_hash in resolved}))
            return [StatePoint(point.resource_id, point.revision, point.version_key, bodies[state_hash], point.root)
                    for point, state_hash in resolved]

        return await self._store.read_rows(read, brief=True)

    @staticmethod
    def _point(rows: ReadRows, resource_id: str, revision: int | None) -> tuple[StatePoint, str]:
        """A point without its text, and the hash of its state."""
        root = _owners(rows, resource_id)[-1][0]
        head = rows.one(_POINT_HEAD, id=resource_id)
        assert head is not None  # _owners found it
        current = int(head["revision"])
        if revision is None or revision == current:
            return StatePoint(resource_id, current, head["head_key"], "", root), str(head["head_hash"])
        if revision == 0:
            if head["parent_id"] is None:
                return StatePoint(resource_id, 0, None, "", root), str(head["initial_hash"])
            fork = rows.one(_VERSION_AT, resource_id=head["parent_id"], position=head["parent_position"])
            assert fork is not None  # the fork's foreign key
            return StatePoint(resource_id, 0, fork["key"], "", root), str(fork["variables_hash"])
        found = rows.one(_VERSION_OF_REVISION, resource_id=resource_id, revision=revision) \
            if revision < current else None
        if found is None:
            raise MvuError(Code.MISSING, f"{resource_id!r} has no revision {revision} (it is at {current})",
                           id=resource_id, revision=revision)
        return StatePoint(resource_id, revision, found["key"], "", root), str(found["variables_hash"])
