"""Views: what a session's read needs from the ledger, in one round trip.

A read in a session's scope looks up the session's pending seed, its instances, its selection
and the selected template, the shared resources, the legacy file's digest and the record's head.
Each lookup costs SQLite microseconds, but as a round trip of its own it also costs a thread hop
and a connection checkout, which under load cost milliseconds. :meth:`Views.session_rows` reads
them all on one reader connection (one snapshot on SQLite) in two statements: the session's
header (selection, selected template, pending seed, legacy digest) and its resources with the
head states asked for.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, case, exists, false, or_, select, true

from mvu_store.host import SessionTail
from mvu_store.ledger import tables as t
from mvu_store.ledger.host_sessions import stored_tail
from mvu_store.ledger.query import LEDGER, Query, ReadRows
from mvu_store.ledger.records import ResourceRecord, SessionRows, SessionRowsQuery, StoredTemplate
from mvu_store.ledger.resources import failure_since_head
from mvu_store.ledger.rows import columns, record
from mvu_store.ledger.selections import ACTIVATIONS
from mvu_store.ledger.store import Store

_s, _sd, _l, _tp, _b, _r = t.selections.c, t.seeds.c, t.legacy_files.c, t.templates.c, t.blobs.c, t.resources.c

SHARED_KINDS = ("configured", "copy", "shared")
"""The resource kinds every session may see (besides its own instances)."""


def _header() -> Any:
    selected = select(_s.template_id).where(_s.ledger_id == LEDGER, _s.session_id == bindparam("session_id"))
    template = (
        select(_tp.definition_hash, _b.body)
        .join(t.blobs, and_(_b.ledger_id == _tp.ledger_id, _b.hash == _tp.definition_hash))
        .where(_tp.ledger_id == LEDGER, _tp.id == selected.scalar_subquery())
    )
    return select(
        exists(selected).label("selected"),
        selected.scalar_subquery().label("template_id"),
        template.with_only_columns(_tp.definition_hash).scalar_subquery().label("definition_hash"),
        template.with_only_columns(_b.body).scalar_subquery().label("body"),
        exists().where(_sd.ledger_id == LEDGER, _sd.target_session_id == bindparam("session_id"),
                       _sd.installed.is_(False)).label("seed_pending"),
        select(_l.sha256).where(_l.ledger_id == LEDGER, _l.name == bindparam("legacy_name"))
        .scalar_subquery().label("legacy_digest"),
    )


_HEADER = Query("session-header", _header)
"""Whether the session selected and what (with that template), whether a seed targets it, and the
digest of a legacy file (``session_id``, ``legacy_name``)."""

_TEMPLATE = Query(
    "stored-template",
    lambda: select(_tp.definition_hash, _b.body)
    .join(t.blobs, and_(_b.ledger_id == _tp.ledger_id, _b.hash == _tp.definition_hash))
    .where(_tp.ledger_id == LEDGER, _tp.id == bindparam("id")),
)


@functools.cache
def _resources_query(heads: int | None, instance_heads: bool) -> Query:
    """The session's instances and every shared-kind resource, in creation order, with the head
    state of the ``heads`` ids ``:head_0`` ... (None: of every one) and, with ``instance_heads``,
    of every instance."""

    def build() -> Any:
        wanted: ColumnElement[bool] = true() if heads is None else false() if heads == 0 else _r.id.in_(
            [bindparam(f"head_{n}") for n in range(heads)])
        if instance_heads:
            wanted = or_(wanted, _r.kind == "instance")
        return (
            select(*columns(t.resources, ResourceRecord), _b.body.label("head_body"),
                   case((wanted, failure_since_head())).label("head_failure"))
            .outerjoin(t.blobs, and_(_b.ledger_id == _r.ledger_id, _b.hash == _r.head_hash, wanted))
            .where(_r.ledger_id == LEDGER,
                   or_(and_(_r.session_id == bindparam("session_id"), _r.kind == "instance"),
                       _r.kind.in_([bindparam(f"shared_kind_{n}", kind) for n, kind in enumerate(SHARED_KINDS)])))
            .order_by(_r.position)
        )

    return Query(f"session-resources:{heads}:{instance_heads}", build)


class Views:
    """Reads that gather, in one round trip, what a session's read or turn needs."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def session_rows(self, query: SessionRowsQuery, *, brief: bool = False) -> SessionRows:
        """The session's rows (see :class:`SessionRowsQuery`); ``brief`` as in ``Store.read_rows``."""
        return await self._store.read_rows(lambda rows: _session_rows(rows, query), brief=brief)

    async def session_rows_since(self, query: SessionRowsQuery, after_seq: int, *,
                                 brief: bool) -> tuple[SessionTail | None, SessionRows]:
        """The session's events after ``after_seq`` as the store-backed host keeps them
        (:meth:`HostSessions.host_session_tail`), then :meth:`session_rows`, in one round trip."""

        def read(rows: ReadRows) -> tuple[SessionTail | None, SessionRows]:
            tail = stored_tail(rows, query.session_id, after_seq)
            return None if tail is None else tail.session_tail(), _session_rows(rows, query)

        return await self._store.read_rows(read, brief=brief)


def _session_rows(rows: ReadRows, query: SessionRowsQuery) -> SessionRows:
    session_id = query.session_id
    wanted = None if query.heads is None else sorted(set(query.heads))
    header = rows.one(_HEADER, session_id=session_id, legacy_name=query.legacy_name)
    assert header is not None  # a SELECT without FROM has one row
    template_id = header["template_id"]
    templates: dict[str, StoredTemplate | None] = {}
    if template_id is not None:
        templates[template_id] = None if header["definition_hash"] is None else StoredTemplate(
            header["definition_hash"], header["body"])
    for other in query.template_ids - set(templates):
        found = rows.one(_TEMPLATE, id=other)
        templates[other] = None if found is None else StoredTemplate(found["definition_hash"], found["body"])
    binds = {} if wanted is None else {f"head_{n}": head for n, head in enumerate(wanted)}
    listed = rows.all(_resources_query(None if wanted is None else len(wanted), query.turn), session_id=session_id,
                      **binds)
    resources = [(record(ResourceRecord, row), row["head_body"]) for row in listed]
    failures = {row["id"]: row["head_failure"] for row in listed if row["head_failure"] is not None}
    return SessionRows(
        session_id=session_id, seed_pending=bool(header["seed_pending"]), selected=bool(header["selected"]),
        template_id=template_id, templates=templates,
        instances=tuple(resource for resource, _ in resources if resource.kind == "instance"),
        shared=tuple(resource for resource, _ in resources if resource.kind != "instance"),
        legacy_digest=header["legacy_digest"],
        heads={resource.id: body for resource, body in resources if body is not None},
        failures=failures,
        activations={row["owner_id"]: int(row["seq"]) for row in rows.all(ACTIVATIONS, session_id=session_id)}
        if query.turn else None)
