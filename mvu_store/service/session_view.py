"""A session's ledger rows from one round trip, answering the lookups a read makes.

The parts that list a session's resources (:mod:`allocation`, :mod:`catalog`) ask their
questions through :class:`LedgerReads`. The ledger is one; a :class:`SessionView` is another: it
answers from the rows :meth:`~mvu_store.ledger.Ledger.session_rows` read in one round trip
(with the session's new events, when the host keeps them in the ledger), and asks the ledger only
what those rows cannot tell (another session, a template nobody asked for).
So a read or a turn costs one round trip instead of one per lookup, and every answer comes from
one snapshot. A view is read afresh for every call. A turn may allocate through it: an
allocation calls :meth:`SessionView.wrote`, and from then on the view asks the ledger, which has
what was written. A turn's commits do not: the pipeline takes a head from the view only for an
instance it has not moved yet in this call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol

from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import Ledger
from mvu_store.ledger.records import Head, ResourceRecord, SessionRows, SessionRowsQuery
from mvu_store.ledger.session_rows import SHARED_KINDS
from mvu_store.service.identity import character_template_id
from mvu_store.service.legacy import LEGACY_FILE
from mvu_store.service.models import ResourceConfig, storable

Definition = Callable[[str, str], dict[str, Any]]
"""A definition from its hash and stored text."""


class LedgerReads(Protocol):
    """The lookups that list a session's resources (the ledger's methods of these names)."""

    async def seed_pending(self, target_session_id: str) -> bool: ...

    async def activations(self, session_id: str) -> dict[str, int]: ...

    async def resources(self, *, session_id: str | None = None,
                        kinds: tuple[str, ...] | None = None) -> list[ResourceRecord]: ...

    async def selection(self, session_id: str) -> tuple[bool, str | None]: ...

    async def template(self, template_id: str) -> JsonValue: ...

    async def legacy_digest(self, name: str) -> str | None: ...

    async def head(self, resource_id: str) -> Head: ...


class SessionView:
    """:class:`LedgerReads` answered from one session's :class:`SessionRows`."""

    def __init__(self, ledger: Ledger, rows: SessionRows, definition: Definition) -> None:
        """``definition`` decodes a template's stored text (``Catalog.known_definition``, which
        caches it by hash)."""
        self._ledger = ledger
        self._rows = rows
        self._definition = definition
        self._current = True

    @staticmethod
    def reader(session_id: str, *, configs: Sequence[ResourceConfig], heads: Collection[str] | None,
               turn: bool = False) -> SessionRowsQuery:
        """What the session's rows are read with: the templates its configured resources start
        from, the head state of ``heads`` (None: of every resource it may see) and, for a
        ``turn``, the session's activation boundaries and its instances' heads."""
        template_ids = frozenset(character_template_id(config.character_id) for config in configs
                                 if config.character_id is not None)
        # An id no row can have is nobody's head.
        wanted = None if heads is None else tuple(head for head in heads if storable(head))
        return SessionRowsQuery(session_id, LEGACY_FILE, template_ids=template_ids, heads=wanted, turn=turn)

    def wrote(self) -> None:
        """Something was written since the rows were read: answer from the ledger from now on."""
        self._current = False

    def _own(self, session_id: str | None) -> bool:
        return self._current and session_id == self._rows.session_id

    async def activations(self, session_id: str) -> dict[str, int]:
        if self._own(session_id) and self._rows.activations is not None:
            return dict(self._rows.activations)
        return await self._ledger.activations(session_id)

    async def seed_pending(self, target_session_id: str) -> bool:
        if self._own(target_session_id):
            return self._rows.seed_pending
        return await self._ledger.seed_pending(target_session_id)

    async def resources(self, *, session_id: str | None = None,
                        kinds: tuple[str, ...] | None = None) -> list[ResourceRecord]:
        if self._own(session_id) and kinds == ("instance",):
            return list(self._rows.instances)
        if self._current and session_id is None and kinds is not None and tuple(sorted(set(kinds))) == SHARED_KINDS:
            return list(self._rows.shared)
        return await self._ledger.resources(session_id=session_id, kinds=kinds)

    async def selection(self, session_id: str) -> tuple[bool, str | None]:
        if self._own(session_id):
            return self._rows.selected, self._rows.template_id
        return await self._ledger.selection(session_id)

    async def template(self, template_id: str) -> JsonValue:
        if not self._current or template_id not in self._rows.templates:
            return await self._ledger.template(template_id)
        stored = self._rows.templates[template_id]
        if stored is None:
            return None
        definition: dict[str, Any] = self._definition(stored.definition_hash, stored.body)
        return definition

    async def legacy_digest(self, name: str) -> str | None:
        if self._current and name == LEGACY_FILE:
            return self._rows.legacy_digest
        return await self._ledger.legacy_digest(name)

    async def head(self, resource_id: str) -> Head:
        text = self._rows.heads.get(resource_id) if self._current else None
        if text is None:
            return await self._ledger.head(resource_id)
        row = self._row(resource_id)
        assert row is not None  # a head read is a listed row's
        failure = self._rows.failures.get(resource_id)
        return Head(resource_id, row.revision, row.head_key, json.loads(text),
                    None if failure is None else json.loads(failure))

    def _row(self, resource_id: str) -> ResourceRecord | None:
        """The resource's row in the view, if it is one of the session's."""
        return next((row for row in (*self._rows.instances, *self._rows.shared) if row.id == resource_id), None)

    def lists(self, resource_id: str) -> bool:
        """Whether the view's rows include the resource (as one of the session's)."""
        return self._row(resource_id) is not None

    def holds_head(self, resource_id: str) -> bool:
        """Whether :meth:`head` answers from the view (the head of the row in it)."""
        return self._current and resource_id in self._rows.heads
