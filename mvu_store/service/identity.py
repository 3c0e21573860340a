"""Resource ids and durable session identity (DIGEST I-1 ... I-3).

Ids are the original's, so a ledger imported from it keeps resolving: a discovered template is
``mvu:character-`` + 32 hex of sha256(characterId); an instance is ``mvu:instance-`` + 48 hex of
sha256(JSON.stringify([templateId, {sessionId, createdAt}])).
"""

from __future__ import annotations

import functools

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionSnapshot
from mvu_store.jsonvalue import JsonValue, js_json, sha256_hex


def character_template_id(character_id: str) -> str:
    return "mvu:character-" + sha256_hex(character_id)[:32]


def instance_id(template_id: str, identity: dict[str, JsonValue]) -> str:
    session_id, created_at = identity["sessionId"], identity["createdAt"]
    if isinstance(session_id, str) and (created_at is None or isinstance(created_at, str | int | float)):
        return _scalar_instance_id(template_id, session_id, created_at)  # every read asks again
    return _instance_id(template_id, session_id, created_at)


def _instance_id(template_id: str, session_id: JsonValue, created_at: JsonValue) -> str:
    # Key order as the original builds the identity: the hash is of JSON.stringify's text.
    return "mvu:instance-" + sha256_hex(js_json([template_id, {"sessionId": session_id, "createdAt": created_at}]))[:48]


# typed: 1, 1.0 and True are equal keys to Python, not the same JSON text.
_scalar_instance_id = functools.lru_cache(maxsize=4096, typed=True)(_instance_id)


def session_identity(snapshot: SessionSnapshot | None, session_id: str) -> dict[str, JsonValue]:
    """``{sessionId, createdAt}`` of a durable session, or ``MVU_SESSION_IDENTITY`` (I-3)."""
    if snapshot is None:
        raise MvuError(Code.SESSION_IDENTITY, f"the host has no durable session {session_id!r}", session_id=session_id)
    identity = snapshot.header.identity()
    if snapshot.header.id != session_id or identity is None:
        raise MvuError(Code.SESSION_IDENTITY, f"session {session_id!r} has no durable identity (id + createdAt)",
                       session_id=session_id)
    return identity
