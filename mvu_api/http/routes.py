"""The trace primitives of DIGEST H-1 under ``/pmp-dsh-tavern/api/v1/mvu/``.

Each route parses the wire (a JSON ``scope`` in the query, the update body), calls one
``MvuService`` method and answers with the service's camelCase JSON. Refusals are raised as
``MvuError`` and become problem+json in :mod:`mvu_api.http.problems`; the update route records
where its expected revision and operation id came from (body or header), which decides 409 vs
412 and 409 vs 422 there.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from mvu_api.http.problems import BODY_TIMEOUT, problem
from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import MAX_STATE_BYTES
from mvu_store.service import MvuService
from mvu_store.service.models import MAX_OPERATION_ID, MAX_SESSION_ID, HistoryEntry, StateRecord, UpdateReceipt

API_PREFIX = "/pmp-dsh-tavern/api/v1"
MVU_PREFIX = f"{API_PREFIX}/mvu"
MAX_SCOPE_CHARS = 4_000
# A body carries one state (at most 2 MiB as canonical JSON) plus its envelope fields; the slack
# covers those and modest formatting. Clients should send compact JSON.
MAX_BODY_BYTES = MAX_STATE_BYTES + 64 * 1024
# The whole body must arrive within this many seconds (a stalled upload is 408, not a held worker).
BODY_TIMEOUT_SECONDS = 30.0
# Once the server is stopping, a body still arriving gets this long before a 503.
STOP_BODY_SECONDS = 2.0
_HISTORICAL_KEYS = ("messageId", "endEventId")
_SCOPE_FIELDS = frozenset({"authority", "sessionId", *_HISTORICAL_KEYS})
_UPDATE_FIELDS = frozenset({"id", "scope", "content", "expectedRevision", "operationId"})
# The Python service also takes snake_case; the wire is camelCase only.
_SNAKE = {"session_id": "sessionId", "message_id": "messageId", "end_event_id": "endEventId",
          "expected_revision": "expectedRevision", "operation_id": "operationId"}
# Strong ETags only (RFC 9110 13.1.1: If-Match uses the strong comparison, so a weak tag never
# matches); a weak one is refused with 400 rather than read as the revision it names.
_ETAG = re.compile(r'^\s*"r(0|[1-9][0-9]{0,17})"\s*$')
_WEAK_ETAG = re.compile(r'^\s*W/', re.IGNORECASE)

SCOPE_EXAMPLE = '{"authority":"local","sessionId":"s1"}'
HISTORICAL_EXAMPLE = '{"authority":"local","sessionId":"s1","messageId":"s1-m1"}'
_SCOPE_DOC = (f"JSON object `{{authority: 'local', sessionId}}`, at most {MAX_SCOPE_CHARS} characters, camelCase "
              "keys only. sessionId is required: the sessionless management view is not served over HTTP.")
_ID_DOC = "A resource id, e.g. `mvu:instance-…` or a configured `mvu:…` id."

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


def _ok(example: Any) -> dict[int | str, dict[str, Any]]:
    return {200: {"content": {"application/json": {"example": example}}}}


def _problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    reasons = {400: "Malformed request or refused by the service (`code` says which)",
               401: "Missing or wrong bearer token", 403: "Not writable (read-only, legacy, denied)",
               404: "No such resource", 409: "Revision or idempotency conflict, ambiguous target",
               412: "If-Match names a stale revision", 413: "Body over 2 MiB + slack",
               422: "Idempotency-Key reused with another payload",
               503: "Storage busy (see Retry-After); nothing was written"}
    answers: dict[int | str, dict[str, Any]] = {
        status: {"description": reasons[status], "content": {"application/problem+json": {"schema": _PROBLEM_SCHEMA}}}
        for status in statuses}
    if 409 in answers:
        answers[409]["content"]["application/problem+json"]["example"] = CONFLICT_EXAMPLE
    return answers


def _json(data: Any, *, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data, ensure_ascii=False, separators=(",", ":")), media_type="application/json",
                    headers=headers)


def parse_scope_param(raw: str, *, historical: bool = False) -> dict[str, Any]:
    """The ``scope`` query parameter: a JSON object of bounded size; historical coordinates only
    where ``historical`` (``/resource``)."""
    if len(raw) > MAX_SCOPE_CHARS:
        raise MvuError(Code.LIMIT, f"scope is at most {MAX_SCOPE_CHARS} characters", field="scope",
                       limit=MAX_SCOPE_CHARS)
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise MvuError(Code.SCOPE, "scope must be a JSON object") from None
    return check_wire_scope(value, historical=historical)


def check_wire_scope(value: Any, *, historical: bool = False) -> dict[str, Any]:
    """A scope as HTTP accepts it, stricter than the service: camelCase keys only, a non-empty
    ``sessionId`` always (the sessionless management view stays in-process, DIGEST H-1), and
    ``messageId`` / ``endEventId`` only where ``historical``."""
    if not isinstance(value, dict):
        raise MvuError(Code.SCOPE, "scope must be a JSON object", field="scope")
    for key in value:
        if key in _SNAKE:
            raise MvuError(Code.SCOPE, f"scope.{key} is not a wire field: the wire is camelCase ({_SNAKE[key]})",
                           field=f"scope.{key}")
        if key not in _SCOPE_FIELDS:
            raise MvuError(Code.SCOPE, f"unknown scope field {str(key)[:64]!r}", field=f"scope.{str(key)[:64]}")
    if not historical and any(key in value for key in _HISTORICAL_KEYS):
        raise MvuError(Code.SCOPE, "only /mvu/resource reads a historical scope (messageId / endEventId)",
                       field="scope")
    session_id = value.get("sessionId")
    if not isinstance(session_id, str) or not session_id or len(session_id) > MAX_SESSION_ID:
        raise MvuError(Code.SCOPE, f"scope.sessionId is required: a string of 1 to {MAX_SESSION_ID} characters "
                                   "(the management view is not served over HTTP)", field="scope.sessionId")
    return value  # the service checks the rest (authority, historical coordinates) as for any caller


ScopeParam = Annotated[str, Query(description=_SCOPE_DOC, json_schema_extra={"maxLength": MAX_SCOPE_CHARS},
                                  openapi_examples={"session": {"value": SCOPE_EXAMPLE}})]
IdParam = Annotated[str, Query(description=_ID_DOC, openapi_examples={"instance": {"value": "mvu:hero"}})]


def build_router(service: MvuService, *, body_timeout: float = BODY_TIMEOUT_SECONDS,
                 stopping: asyncio.Event | None = None) -> APIRouter:
    router = APIRouter(prefix="/mvu", tags=["mvu"])

    @router.get("/resources", operation_id="listResources",
                response_model=list[StateRecord],
                responses={**_problems(400, 401, 403, 503), **_ok([RECORD_EXAMPLE])},
                summary="Every record the scope may read")
    async def resources(scope: ScopeParam) -> Response:
        records = await service.list(scope=parse_scope_param(scope))
        return _json([record.to_json() for record in records])

    @router.get("/resource", operation_id="readResource",
                response_model=StateRecord,
                responses={**_problems(400, 401, 403, 404, 503), **_ok(RECORD_EXAMPLE)},
                summary="One record, current or historical; ETag is its revision")
    async def resource(
        id: IdParam,
        scope: Annotated[str, Query(description=_SCOPE_DOC + " A historical read adds messageId and/or endEventId.",
                                    json_schema_extra={"maxLength": MAX_SCOPE_CHARS},
                                    openapi_examples={"current": {"value": SCOPE_EXAMPLE},
                                                      "historical": {"value": HISTORICAL_EXAMPLE}})],
    ) -> Response:
        record = await service.read(id=id, scope=parse_scope_param(scope, historical=True))
        if record is None:
            raise MvuError(Code.MISSING, f"no resource {id[:200]!r}", id=id[:200])
        return _json(record.to_json(), headers={"ETag": f'"r{record.revision}"'})

    @router.get("/history", operation_id="history",
                response_model=list[HistoryEntry], responses=_problems(400, 401, 403, 503),
                summary="The session's versions, failures included (empty for an unknown id)")
    async def history(
        id: IdParam, scope: ScopeParam,
        include_before: Annotated[bool, Query(alias="includeBefore",
                                              description="Add beforeAvailable / before (DIGEST A-6)")] = False,
    ) -> Response:
        entries = await service.history(id=id, scope=parse_scope_param(scope), include_before=include_before)
        return _json([entry.to_json() for entry in entries])

    @router.get("/facts", operation_id="facts",
                response_model=list[dict[str, Any]], responses=_problems(400, 401, 403, 503),
                summary="Bounded, content-free trigger observations (empty for an unknown id)")
    async def facts(id: IdParam, scope: ScopeParam) -> Response:
        return _json(await service.facts(id=id, scope=parse_scope_param(scope)))

    @router.post("/update", operation_id="update", response_model=UpdateReceipt,
                 responses={**_problems(400, 401, 403, 404, 409, 412, 413, 422, 503), **_ok(RECEIPT_EXAMPLE)},
                 summary="CAS + idempotent edit of the current content",
                 openapi_extra={
                     "parameters": [
                         {"name": "If-Match", "in": "header", "required": False,
                          "description": 'Alternative to expectedRevision: the ETag `"r<revision>"` read before',
                          "schema": {"type": "string", "pattern": '^"r[0-9]+"$'}},
                         {"name": "Idempotency-Key", "in": "header", "required": False,
                          "description": "Alternative to operationId",
                          "schema": {"type": "string", "minLength": 1, "maxLength": 200}},
                     ],
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": UPDATE_SCHEMA, "examples": {"edit": {"value": UPDATE_EXAMPLE}}}}},
                 })
    async def update(request: Request) -> Response:
        body = await _read_body(request, seconds=body_timeout, stopping=stopping)
        if isinstance(body, Response):
            return body
        data = _update_body(body)
        expected = data.get("expectedRevision")
        if_match = request.headers.get("if-match")
        if if_match is not None:
            request.state.if_match = True
            if _WEAK_ETAG.match(if_match):
                raise MvuError(Code.OPERATION, "If-Match needs a strong ETag: a weak one (W/...) never matches "
                                               "(RFC 9110 strong comparison)")
            match = _ETAG.match(if_match)
            if match is None:
                raise MvuError(Code.OPERATION, 'If-Match takes one ETag "r<revision>" from a read')
            if expected is not None and expected != int(match.group(1)):
                raise MvuError(Code.OPERATION, "If-Match and expectedRevision disagree")
            expected = int(match.group(1))
        operation_id = data.get("operationId")
        key = request.headers.get("idempotency-key")
        if key is not None:
            request.state.idempotency_key = True
            if operation_id is not None and operation_id != key:
                raise MvuError(Code.OPERATION, "Idempotency-Key and operationId disagree")
            operation_id = key
        if expected is None:
            raise MvuError(Code.OPERATION, "expectedRevision (or If-Match) is required")
        if operation_id is None:
            raise MvuError(Code.OPERATION, "operationId (or Idempotency-Key) is required")
        if "scope" not in data:
            raise MvuError(Code.SCOPE, "scope is required", field="scope")
        scope = check_wire_scope(data["scope"])
        receipt = await service.update(id=data["id"], content=data.get("content"), expected_revision=expected,
                                       operation_id=operation_id, scope=scope)
        headers = {"ETag": f'"r{receipt.revision}"'}
        if receipt.replayed:
            headers["Idempotent-Replayed"] = "true"
        return _json(receipt.to_json(), headers=headers)

    return router


async def _read_body(request: Request, *, seconds: float, stopping: asyncio.Event | None) -> bytes | Response:
    """The body, or a problem: 413 as soon as it is known to pass ``MAX_BODY_BYTES``, 408 when it
    has not all arrived within ``seconds``, 503 when the server starts stopping meanwhile
    (a stalled upload must not hold the shutdown). ``ClientDisconnect`` propagates (see app.py)."""
    request.state.write = True
    too_large = problem(413, Code.LIMIT, f"a request body is at most {MAX_BODY_BYTES} bytes", limit=MAX_BODY_BYTES)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return too_large

    async def collect() -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    reading = asyncio.ensure_future(collect())
    stop = asyncio.ensure_future(stopping.wait()) if stopping is not None else None
    try:
        waiting: set[asyncio.Future[Any]] = {reading} if stop is None else {reading, stop}
        await asyncio.wait(waiting, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        if not reading.done() and stop is not None and stop.done():
            # A body already on its way (sent before the signal) still gets a moment to arrive;
            # only an upload that stays stalled is cut short.
            await asyncio.wait({reading}, timeout=max(0.0, min(STOP_BODY_SECONDS, deadline - loop.time())))
    finally:
        for task in (reading, stop):
            if task is not None and not task.done():
                task.cancel()
    if reading.done() and not reading.cancelled():
        body = reading.result()  # re-raises ClientDisconnect
        return too_large if body is None else body
    # The rest of the body will never be read: the connection cannot carry another request.
    if stop is not None and stop.done():
        return problem(503, Code.DISPOSED, "the server is stopping; nothing was written: retry later",
                       headers={"Connection": "close"})
    return problem(408, BODY_TIMEOUT, f"the request body did not arrive within {seconds:g} s; nothing was written",
                   headers={"Connection": "close"})


def _update_body(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise MvuError(Code.JSON, "the body must be one JSON object") from None
    if not isinstance(data, dict):
        raise MvuError(Code.JSON, "the body must be one JSON object")
    for key in data:
        if key in _SNAKE:
            raise MvuError(Code.OPERATION, f"{key} is not a wire field: the wire is camelCase ({_SNAKE[key]})",
                           field=key)
    unknown = sorted(set(data) - _UPDATE_FIELDS)
    if unknown:
        raise MvuError(Code.OPERATION, f"unknown field {unknown[0][:64]!r}", field=unknown[0][:64])
    if not isinstance(data.get("id"), str):
        raise MvuError(Code.OPERATION, "id must be a string", field="id")
    for field in ("expectedRevision", "operationId"):
        if field in data and data[field] is None:
            del data[field]
    expected = data.get("expectedRevision")
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int) or expected < 0):
        raise MvuError(Code.OPERATION, "expectedRevision must be a non-negative integer", field="expectedRevision")
    operation_id = data.get("operationId")
    if operation_id is not None and (not isinstance(operation_id, str) or not operation_id
                                     or len(operation_id) > MAX_OPERATION_ID):
        raise MvuError(Code.OPERATION, f"operationId must be a string of 1 to {MAX_OPERATION_ID} characters",
                       field="operationId")
    return data


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
                                 "sessionId": {"type": "string", "minLength": 1, "maxLength": 200}}},
        "content": {"type": "object", "description": "The variables envelope: stat_data and the rest",
                    "required": ["stat_data"], "properties": {"stat_data": {"type": "object"}}},
        "expectedRevision": {"type": "integer", "minimum": 0,
                             "description": "The revision read (or send If-Match instead)"},
        "operationId": {"type": "string", "minLength": 1, "maxLength": 200,
                        "description": "Idempotency: the same id and request replays (or send Idempotency-Key)"},
    },
}
