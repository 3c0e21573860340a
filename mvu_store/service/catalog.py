"""Resources as the service sees them: a ledger row and its definition, or a legacy record.

Definitions are content-addressed blobs, immutable once written, so they are cached by hash for
the life of the process: a read of a resource costs its row, not its definition again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mvu_store.bounded import BoundedCache
from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import Ledger
from mvu_store.ledger.records import Head, ResourceRecord, VersionRecord
from mvu_store.service.legacy import CAPABILITIES, LEGACY_FILE, LegacyResource, parse_legacy
from mvu_store.service.models import Scope, storable
from mvu_store.service.session_view import LedgerReads

_DEFINITION_CACHE = 4096

SeenHead = tuple[Head, VersionRecord | None]
"""A resource's head as one read saw it, with the version it is at (None: no version wrote it)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One readable resource: a ledger row with its definition, or a legacy record."""

    id: str
    definition: dict[str, Any]
    row: ResourceRecord | None = None
    legacy: LegacyResource | None = None
    initial: JsonValue = None
    """Set on an instance not allocated yet (a read allocates nothing): the content it starts with."""

    @property
    def name(self) -> str:
        name = self.definition.get("name")
        return name if isinstance(name, str) and name else self.id

    @property
    def session_ids(self) -> list[str]:
        ids = self.definition.get("sessionIds")
        return [item for item in ids if isinstance(item, str)] if isinstance(ids, list) else []

    @property
    def is_instance(self) -> bool:
        return self.row is not None and self.row.kind == "instance"

    @property
    def takes_replies(self) -> bool:
        """Whether the store chain applies replies to it: not a legacy record, not a failed
        initialisation, and not a copy (a manual resource: I-11; feeding it the session's replies
        would apply them a second time)."""
        return self.legacy is None and self.source_error is None and not (self.row and self.row.kind == "copy")

    @property
    def instance(self) -> dict[str, JsonValue] | None:
        """The durable session identity of an instance, keys in the original's order."""
        if self.row is None or self.row.session_id is None or self.row.session_created_at is None:
            return None
        return {"sessionId": self.row.session_id, "createdAt": self.row.session_created_at}

    @property
    def source_error(self) -> str | None:
        if self.legacy is not None:
            return Code.MIGRATION_REQUIRED.value
        error = self.definition.get("sourceError")
        return error if isinstance(error, str) else None

    @property
    def stored_management_mode(self) -> str:
        if self.legacy is not None:
            return self.legacy.stored_management_mode
        assert self.row is not None
        mode = self.row.management_mode or self.definition.get("managementMode")
        return mode if mode in ("native", "managed") else "native"

    @property
    def revision(self) -> int:
        if self.legacy is not None:
            return self.legacy.revision
        assert self.row is not None
        return self.row.revision

    def accessible(self, scope: Scope) -> bool:
        """Whether ``scope`` may see this resource: a management scope sees all (DIGEST A-2)."""
        if scope.session_id is None:
            return True
        if self.legacy is not None:
            return self.legacy.accessible(scope.session_id)
        return any(item in ("*", scope.session_id) for item in self.session_ids)

    def require_access(self, scope: Scope) -> None:
        if not self.accessible(scope):
            raise MvuError(Code.SCOPE_MISMATCH, f"{self.id} is not bound to session {scope.session_id!r}",
                           id=self.id, session_id=scope.session_id)

    def require_writable(self) -> None:
        """Legacy records never change (L-1); a failed initialisation blocks execution (I-6)."""
        if self.legacy is not None:
            raise MvuError(Code.MIGRATION_REQUIRED, f"{self.id} is legacy shared state: read it and recover it "
                                                    "into a new playthrough explicitly", id=self.id,
                           capabilities=CAPABILITIES)
        if self.source_error is not None:
            raise MvuError(Code.READ_ONLY, f"{self.id} failed to initialise ({self.source_error})", id=self.id,
                           source_error=self.source_error)


class Catalog:
    """Reads resources and legacy records for the service, with the definition cache."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._definitions: BoundedCache[str, dict[str, Any]] = BoundedCache(_DEFINITION_CACHE)
        self._legacy: tuple[str, dict[str, LegacyResource]] | None = None

    async def definition(self, definition_hash: str) -> dict[str, Any]:
        cached = self._definitions.get(definition_hash)
        if cached is not None:
            return cached
        return self._keep(definition_hash, await self._ledger.blob(definition_hash))

    def known_definition(self, definition_hash: str, body: str) -> dict[str, Any]:
        """The definition stored as ``body`` (its canonical text, read with its hash)."""
        cached = self._definitions.get(definition_hash)
        return cached if cached is not None else self._keep(definition_hash, json.loads(body))

    def _keep(self, definition_hash: str, body: JsonValue) -> dict[str, Any]:
        definition = body if isinstance(body, dict) else {}
        self._definitions.put(definition_hash, definition)
        return definition

    async def entry_of(self, row: ResourceRecord) -> Entry:
        return Entry(row.id, await self.definition(row.definition_hash), row=row)

    async def legacy(self, reads: LedgerReads | None = None) -> dict[str, LegacyResource]:
        """The legacy file's records (parsed once per distinct file); ``reads``: where to look up
        its digest (the ledger by default)."""
        digest = await (reads or self._ledger).legacy_digest(LEGACY_FILE)
        if digest is None:
            return {}
        if self._legacy is None or self._legacy[0] != digest:
            data = await self._ledger.legacy_file(LEGACY_FILE)
            self._legacy = (digest, parse_legacy(data or b""))
        return self._legacy[1]

    async def entry(self, resource_id: str) -> Entry | None:
        if not storable(resource_id):
            return None  # an id no row can have
        row = await self._ledger.resource(resource_id)
        if row is not None:
            return await self.entry_of(row)
        return await self._legacy_entry(resource_id)

    async def entry_with_head(self, resource_id: str) -> tuple[Entry, SeenHead | None] | None:
        """:meth:`entry`, with the head and its version when the entry is a ledger row (read in
        the same round trip: for a write that needs both)."""
        if not storable(resource_id):
            return None
        found = await self._ledger.resource_head(resource_id)
        if found is not None:
            row, head, version = found
            return await self.entry_of(row), (head, version)
        legacy = await self._legacy_entry(resource_id)
        return None if legacy is None else (legacy, None)

    async def _legacy_entry(self, resource_id: str) -> Entry | None:
        legacy = (await self.legacy()).get(resource_id)
        return Entry(resource_id, legacy.definition, legacy=legacy) if legacy is not None else None

    async def entries(self, *, session_id: str | None = None, instances: list[Entry] | None = None,
                      reads: LedgerReads | None = None) -> list[Entry]:
        """Resources a session may see (its instances and every non-instance resource), or all.

        ``instances``: the session's instances, when the caller has just read them; ``reads``:
        where to look rows up (the ledger by default).
        """
        ledger = reads or self._ledger
        listed: list[Entry] = []
        if session_id is None:
            rows = await self._ledger.resources()
        elif instances is None:
            rows = await ledger.resources(session_id=session_id, kinds=("instance",))
        else:
            listed, rows = list(instances), []
        if session_id is not None:
            rows += await ledger.resources(kinds=("shared", "configured", "copy"))
        entries = listed + [await self.entry_of(row) for row in rows]
        known = {entry.id for entry in entries}
        entries += [Entry(legacy.id, legacy.definition, legacy=legacy)
                    for legacy in (await self.legacy(reads)).values() if legacy.id not in known]
        return entries
