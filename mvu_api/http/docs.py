"""The OpenAPI 3.1 document: examples, the problem+json schema, the update body's schema, and
the finishing touches on FastAPI's generated document (bearer security, no 422 validation
answers: malformed parameters are 400 problems here)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from mvu_store.service import MAX_OPERATION_ID, MAX_SESSION_ID

DESCRIPTION = """The MVU state service over HTTP (requirement H-1, docs/requirements.md in the repository).

Every request needs `Authorization: Bearer <token>`. Reads take the scope as JSON in the query
string, `{authority: 'local', sessionId}` (sessionId required, camelCase keys only); the update
body is `{id, scope, content, expectedRevision, operationId}`. Errors are
RFC 9457 problem+json with the stable `code` as an extension member (`REVISION_CONFLICT` carries
`expectedRevision` and `currentRevision`, `PLAY_STORAGE_LIMIT` `limit` and `used`)."""

SCOPE_EXAMPLE = '{"authority":"local","sessionId":"s1"}'
HISTORICAL_EXAMPLE = '{"authority":"local","sessionId":"s1","messageId":"s1-m1"}'

RECORD_EXAMPLE: dict[str, Any] = {
    "id": "mvu:hero", "name": "Hero", "type": "mvu-state", "authority": "local",
    "scope": {"authority": "local", "sessionId": "s1"},
    "content": {"stat_data": {"hp": 70, "gold": 10}, "display_data": {"hp": 70, "gold": 10}},
    "revision": 1, "currentRevision": 1, "historical": False, "versionKey": "4f1c…", "managementMode": "native",
    "storedManagementMode": "native",
}
RECEIPT_EXAMPLE: dict[str, Any] = {
    "id": "mvu:hero", "type": "mvu-state", "content": {"stat_data": {"hp": 20, "gold": 3}}, "revision": 2,
    "scope": {"authority": "local", "sessionId": "s1"}, "authority": "local", "replayed": False,
}
CONFLICT_EXAMPLE: dict[str, Any] = {
    "type": "urn:mvu-store:problem:REVISION_CONFLICT", "title": "Revision conflict", "status": 409,
    "detail": "expected revision 1, the resource is at 2", "code": "REVISION_CONFLICT", "id": "mvu:hero",
    "expectedRevision": 1, "currentRevision": 2,
}
UPDATE_EXAMPLE: dict[str, Any] = {
    "id": "mvu:hero",
    "scope": {"authority": "local", "sessionId": "s1"},
    "content": {"stat_data": {"hp": 20, "gold": 3}},
    "expectedRevision": 1,
    "operationId": "edit-1",
}
UPDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "scope", "content"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "scope": {"type": "object", "description": "{authority: 'local', sessionId}; never historical",
                  "required": ["sessionId"], "additionalProperties": False,
                  "properties": {"authority": {"type": "string", "enum": ["local"]},
                                 "sessionId": {"type": "string", "minLength": 1, "maxLength": MAX_SESSION_ID}}},
        "content": {"type": "object", "description": "The variables envelope: stat_data and the rest",
                    "required": ["stat_data"], "properties": {"stat_data": {"type": "object"}}},
        "expectedRevision": {"type": "integer", "minimum": 0,
                             "description": "The revision read (or send If-Match instead)"},
        "operationId": {"type": "string", "minLength": 1, "maxLength": MAX_OPERATION_ID,
                        "description": "Idempotency: the same id and request replays (or send Idempotency-Key)"},
    },
}

CARD_EXAMPLE: dict[str, Any] = {
    "id": "mvu:character-9b1c…", "name": "Hero", "characterId": "hero", "discovered": True, "sessionIds": [],
    "managementMode": "native", "interpreterVersion": 1, "changed": True, "problems": [],
}
SESSION_EXAMPLE: dict[str, Any] = {"sessionId": "s1", "createdAt": 1700000000000}
SESSION_INFO_EXAMPLE: dict[str, Any] = {
    "sessionId": "s1", "createdAt": 1700000000000, "formatVersion": 4, "parentSession": None, "origin": None,
    "inheritedEventCount": None, "lastSeq": -1, "fingerprint": "5d0e…",
}
APPEND_EXAMPLE: dict[str, Any] = {"events": [
    {"seq": 2, "type": "assistant/message",
     "data": {"turn": 1, "message": {"id": "s1-m1", "content": [{"type": "text", "text": "_.add('gold', 5);"}]}}},
    {"seq": 3, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}},
]}
APPENDED_EXAMPLE: dict[str, Any] = {
    **SESSION_INFO_EXAMPLE, "lastSeq": 3, "appended": 2, "replayed": 0, "checkpoints": [],
    "ingest": {"sessionId": "s1", "outcomes": [{"resourceId": "mvu:instance-…", "turn": 1, "messageSeq": 2,
                                                "versionKey": "8a2f…", "status": "committed", "revision": 1,
                                                "changed": True, "diagnostics": [],
                                                "commands": [{"kind": "applied", "command": "_.add('gold', 5);",
                                                              "start": 0, "end": 17, "index": 0, "op": "add",
                                                              "path": "/gold", "before": 10, "after": 15}],
                                                "ignoredTotal": 0, "possibleTotal": 0}],
                "factErrors": []},
    "error": None,
}

_PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status"],
    "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
        "detail": {"type": "string"}, "code": {"type": "string"},
        "expectedRevision": {"type": "integer"}, "currentRevision": {"type": "integer"},
        "limit": {"type": "integer"}, "used": {"type": "integer"},
    },
    "additionalProperties": True,
}
_REASONS = {400: "Malformed request or refused by the service (`code` says which)",
            401: "Missing or wrong bearer token", 403: "Not writable (read-only, legacy, denied)",
            404: "No such resource or session",
            409: "Revision or idempotency conflict, ambiguous target, an id or event already taken, an event gap",
            412: "If-Match names a stale revision", 413: "Body over 2 MiB + slack",
            422: "Idempotency-Key reused with another payload",
            503: "Storage busy (see Retry-After); nothing was written"}


def json_request(model: type[BaseModel] | dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A route's ``openapi_extra`` for a required JSON body: ``model``'s schema (camelCase, as
    sent) or a schema given as is, with ``extra`` (``example=`` / ``examples=``) beside it."""
    schema = model if isinstance(model, dict) else model.model_json_schema(by_alias=True)
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema, **extra}}}}


def ok(example: Any) -> dict[int | str, dict[str, Any]]:
    """A route's 200 answer with its example."""
    return {200: {"content": {"application/json": {"example": example}}}}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """A route's refusals: problem+json under each of ``statuses`` (409 with an example)."""
    answers: dict[int | str, dict[str, Any]] = {
        status: {"description": _REASONS[status],
                 "content": {"application/problem+json": {"schema": _PROBLEM_SCHEMA}}}
        for status in statuses}
    if 409 in answers:
        answers[409]["content"]["application/problem+json"]["example"] = CONFLICT_EXAMPLE
    return answers


def install_openapi(app: FastAPI) -> None:
    """Serve FastAPI's document with the bearer scheme and without its generated 422 answers."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "The token `mvu serve` printed at first start (or --token / MVU_TOKEN)"}}
            schema["security"] = [{"bearer": []}]
            # Malformed parameters are 400 problems here, not FastAPI's 422 (422 means a reused
            # Idempotency-Key): drop the generated validation responses.
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    generated = operation.get("responses", {}).get("422", {})
                    if "HTTPValidationError" in str(generated):
                        del operation["responses"]["422"]
                    # The transport answers any route so when its head is over the bound (h11_protocol.py).
                    operation.setdefault("responses", {})["431"] = {
                        "description": "Request Header Fields Too Large (MVU_HEAD_TOO_LARGE)",
                        "content": {"application/problem+json": {"schema": _PROBLEM_SCHEMA}}}
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

CHANGES_EXAMPLE: dict[str, Any] = {
    "id": "mvu:instance-…",
    "changes": [
        {"resourceId": "mvu:instance-…", "inherited": False, "position": 3, "revision": 4, "seq": 0,
         "sessionId": "s1", "turn": 4, "messageSeq": 13, "path": "/hp", "op": "add", "status": "applied",
         "actor": "reply", "before": 70, "after": 50, "omitted": False, "command": "_.add('hp', -20);//hit",
         "derived": False},
        {"resourceId": "mvu:instance-…", "inherited": False, "position": 4, "revision": 5, "seq": 1,
         "sessionId": "s1", "turn": 5, "messageSeq": 17, "path": "/hp", "op": "set", "status": "refused",
         "actor": "reply", "before": 50, "omitted": False, "command": "_.set('hp', 'lots');",
         "code": "MVU_SCHEMA", "message": "hp: expected number, received string", "derived": False},
    ],
    "nextBefore": 3,
    "truncated": False,
}
DIFF_EXAMPLE: dict[str, Any] = {
    "from": {"id": "mvu:instance-…", "revision": 0, "versionKey": None},
    "to": {"id": "mvu:instance-…", "revision": 2, "versionKey": "8a2f…"},
    "changes": [{"path": "/hp", "op": "replace", "before": 100, "after": 50},
                {"path": "/mood", "op": "add", "after": "wary"},
                {"path": "/items/2", "op": "remove", "before": "rope"}],
    "truncated": False,
}
TURN_REPLY_EXAMPLE: dict[str, Any] = {
    "sessionId": "s1", "turn": 1, "messageSeq": 2, "messageId": "s1-m1",
    "text": "Hit. _.set('hp', 40);//ouch",
    "commands": [{"command": "_.set('hp', 40);//ouch", "start": 5, "end": 27, "op": "set", "path": "/hp"}],
    "error": None,
}
