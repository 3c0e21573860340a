"""The legacy shared ledger (``mvu-state.json``) as read-only resources (DIGEST L-1, I-9).

The imported file is kept byte for byte in ``legacy_files``; this module only reads it. Each of
its records is listed as ``legacy: true`` with ``sourceError: MVU_MIGRATION_REQUIRED`` and no
capabilities: it is never updated, copied, given to the model or inherited from, and never
split by session. A session bound to a legacy record that has history cannot start a new
instance of the same id: that needs an explicit recovery (L-3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionSnapshot
from mvu_store.jsonvalue import JsonValue
from mvu_store.service.session_replies import has_conversation

LEGACY_FILE = "mvu-state.json"
CAPABILITIES = {"edit": False, "copy": False, "management": False}


@dataclass(frozen=True, slots=True)
class LegacyResource:
    id: str
    definition: dict[str, Any]
    record: dict[str, Any]

    @property
    def name(self) -> str:
        name = self.definition.get("name")
        return name if isinstance(name, str) else self.id

    @property
    def session_ids(self) -> list[str]:
        ids = self.definition.get("sessionIds")
        return [item for item in ids if isinstance(item, str)] if isinstance(ids, list) else []

    @property
    def versions(self) -> list[dict[str, Any]]:
        versions = self.record.get("versions")
        return [item for item in versions if isinstance(item, dict)] if isinstance(versions, list) else []

    @property
    def revision(self) -> int:
        revision = self.record.get("revision")
        return revision if isinstance(revision, int) and not isinstance(revision, bool) else 0

    @property
    def stored_management_mode(self) -> str:
        mode = self.record.get("managementMode") or self.definition.get("managementMode")
        return mode if mode in ("native", "managed") else "native"

    def current(self) -> tuple[JsonValue, str | None]:
        """The current content and its version key (the definition's initial without one)."""
        key = self.record.get("currentKey")
        for version in self.versions:
            if key is not None and version.get("key") == key:
                return version.get("variables"), key
        return self.definition.get("initial", {"stat_data": {}}), None

    def accessible(self, session_id: str | None) -> bool:
        return session_id is None or any(item in ("*", session_id) for item in self.session_ids) or any(
            _source(version).get("sessionId") == session_id for version in self.versions
        )

    def binds(self, snapshot: SessionSnapshot) -> bool:
        """Whether this record already holds state of the session (the original's test)."""
        session_id = snapshot.header.id
        bound = session_id in self.session_ids or any(
            _source(version).get("sessionId") == session_id for version in self.versions
        ) or ("*" in self.session_ids and has_conversation(snapshot))
        return bound and (bool(self.versions) or self.revision > 0)


def _source(version: dict[str, Any]) -> dict[str, Any]:
    source = version.get("source")
    return source if isinstance(source, dict) else {}


def parse_legacy(data: bytes) -> dict[str, LegacyResource]:
    """The records of a legacy file (validated at import; a damaged one is ``MVU_VERSION``)."""
    try:
        document = json.loads(data)
    except ValueError:
        raise MvuError(Code.VERSION, "the legacy ledger is not JSON") from None
    if not isinstance(document, dict) or document.get("version") != 1 or not isinstance(
            document.get("resources"), dict):
        raise MvuError(Code.VERSION, "unsupported legacy MVU storage version")
    resources: dict[str, LegacyResource] = {}
    for resource_id, record in document["resources"].items():
        if not isinstance(record, dict):
            continue
        definition = record.get("definition")
        if not isinstance(definition, dict):
            listed = record.get("versions")
            versions: list[Any] = listed if isinstance(listed, list) else []
            sessions = list(dict.fromkeys(
                _source(v)["sessionId"] for v in versions
                if isinstance(v, dict) and isinstance(_source(v).get("sessionId"), str)
            ))
            first = versions[0].get("variables") if versions and isinstance(versions[0], dict) else None
            definition = {"id": resource_id, "sessionIds": sessions, "initial": first or {"stat_data": {}}}
        resources[resource_id] = LegacyResource(resource_id, definition, record)
    return resources
