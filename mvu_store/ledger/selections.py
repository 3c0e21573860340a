"""Sessions: what a session selected, its activation boundaries, the templates it selects from,
and imported legacy files (the original's ``mvu-state.json``, byte for byte)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import and_, bindparam, select

from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import tables as t
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.query import LEDGER, Query
from mvu_store.ledger.rules import check_text
from mvu_store.ledger.store import Store
from mvu_store.ledger.writer import WriteTx

_s, _a, _tp, _b, _l = t.selections.c, t.activations.c, t.templates.c, t.blobs.c, t.legacy_files.c

_SELECTION = Query(
    "selection",
    lambda: select(_s.template_id).where(_s.ledger_id == LEDGER, _s.session_id == bindparam("session_id")),
)
ACTIVATIONS = Query(
    "activations",
    lambda: select(_a.owner_id, _a.seq).where(_a.ledger_id == LEDGER, _a.session_id == bindparam("session_id")),
)
_TEMPLATE = Query("template", lambda: _select_templates().where(_tp.id == bindparam("id")))
_TEMPLATES = Query("templates", lambda: _select_templates().order_by(_tp.position))
_LEGACY_DIGEST = Query(
    "legacy-digest", lambda: select(_l.sha256).where(_l.ledger_id == LEDGER, _l.name == bindparam("name"))
)
_LEGACY_FILE = Query("legacy-file", lambda: select(_l.body).where(_l.ledger_id == LEDGER, _l.name == bindparam("name")))


class Selections:
    """Selections, activation boundaries (DIGEST I-5), templates and legacy files."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def set_selection(self, tx: WriteTx, session_id: str, template_id: str | None) -> None:
        """Record the template a session selected (None: an explicit unselect)."""
        check_text("session id", session_id, t.ID)
        check_text("template id", template_id, t.ID)
        self._store.upsert_row(tx, t.selections, {"session_id": session_id}, {"template_id": template_id})

    def set_activation(self, tx: WriteTx, owner_id: str, session_id: str, seq: int) -> None:
        """Set the activation boundary of a template or resource in a session (DIGEST I-5)."""
        check_text("owner id", owner_id, t.ID)
        check_text("session id", session_id, t.ID)
        self._store.upsert_row(tx, t.activations, {"owner_id": owner_id, "session_id": session_id}, {"seq": seq})

    async def selection(self, session_id: str) -> tuple[bool, str | None]:
        """Whether the session ever selected or unselected, and the template it selected."""
        row = await self._store.read_one(_SELECTION, session_id=session_id)
        return (row is not None, row["template_id"] if row is not None else None)

    async def activations(self, session_id: str) -> dict[str, int]:
        """The activation boundaries in a session, by owner (template or resource id)."""
        rows = await self._store.read_all(ACTIVATIONS, session_id=session_id)
        return {row["owner_id"]: int(row["seq"]) for row in rows}

    async def put_template(self, template_id: str, definition: JsonValue) -> None:
        """Create or replace a template definition (templates are not CAS resources)."""
        await self.revise_template(template_id, lambda _current: definition)

    async def revise_template(self, template_id: str,
                              revise: Callable[[JsonValue], JsonValue]) -> tuple[JsonValue, JsonValue]:
        """Replace a template by ``revise(current)`` (None when there is none) in one unit of work;
        returns ``(current, revised)``. The writer runs one unit at a time across processes too
        (``Store._serialize``), so no other write comes between the read and the write. ``revise``
        runs on the writer thread: it must be quick, and raising refuses the unit. An unchanged
        definition is not written again."""
        check_text("template id", template_id, t.ID)

        def work(tx: WriteTx) -> tuple[JsonValue, JsonValue]:
            row = tx.one(_TEMPLATE, id=template_id)
            current = None if row is None else json.loads(row["body"])
            revised = revise(current)
            blob = Blob.of(revised)
            if row is None or row["definition_hash"] != blob.hash:
                store = self._store
                store.upsert_row(tx, t.templates, {"id": template_id}, {"definition_hash": store.put_blob(tx, blob)},
                                 lambda: {"position": store.next_position(tx, t.templates, None, None)})
            return current, revised

        return await self._store.write(work)

    def keep_template(self, tx: WriteTx, template_id: str, definition: JsonValue) -> JsonValue:
        """The stored template ``template_id``, or ``definition`` stored as it when there is none
        (inside a unit of work: an import uses a card discovered before as it stands)."""
        check_text("template id", template_id, t.ID)
        row = tx.one(_TEMPLATE, id=template_id)
        if row is not None:
            return json.loads(row["body"])
        position = self._store.next_position(tx, t.templates, None, None)
        self._store.insert_row(tx, t.templates, {"id": template_id, "position": position,
                                          "definition_hash": self._store.put_blob(tx, Blob.of(definition))})
        return definition

    async def templates(self) -> dict[str, JsonValue]:
        rows = await self._store.read_all(_TEMPLATES)
        return {row["id"]: json.loads(row["body"]) for row in rows}

    async def template(self, template_id: str) -> JsonValue:
        """One template definition, or None."""
        row = await self._store.read_one(_TEMPLATE, id=template_id)
        return None if row is None else json.loads(row["body"])

    async def legacy_digest(self, name: str) -> str | None:
        """The sha256 of an imported legacy file (DIGEST L-1), or None: cheap to ask often."""
        row = await self._store.read_one(_LEGACY_DIGEST, name=name)
        return None if row is None else str(row["sha256"])

    async def legacy_file(self, name: str) -> bytes | None:
        """An imported legacy file, byte for byte (kept, never rewritten: DIGEST L-1)."""
        row = await self._store.read_one(_LEGACY_FILE, name=name)
        return None if row is None else bytes(row["body"])


def _select_templates() -> Any:
    return (
        select(_tp.id, _tp.definition_hash, _b.body)
        .join(t.blobs, and_(_b.ledger_id == _tp.ledger_id, _b.hash == _tp.definition_hash))
        .where(_tp.ledger_id == LEDGER)
    )
