"""The original's transport, for clients ported from it: ``/pmp-dsh-tavern/api/v1/original/mvu/…``.

The nine routes of the original's HTTP bridge answer here with its shapes, so a client written
for it works by pointing its API base at ``…/api/v1/original``: ``{ok: true, records | record |
versions}`` (an unknown id on ``resource`` is 200 with ``record: null``; ``history`` always with
``before``; ``facts`` with ``unavailable`` and ``maxRecords``), the bare snapshot and card shapes,
and refusals as ``{ok: false, code, error}`` with the original's statuses (409 for a conflict or an
ambiguity, 403 for a denial or a read-only scope, 400 else; a storage fault of this store keeps
its own 5xx, which the original has no code for). The rest of this API (``…/api/v1/mvu/…``) keeps
its own shapes and RFC 9457 problems (docs/http-api.md, "The wire and the original's transport").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from mvu_api.http.bodies import parse_body, read_body, update_body
from mvu_api.http.cards import MAX_CARD_BODY_BYTES, BindingBody, RevokeBody, WriteBody, card_scope_param
from mvu_api.http.problems import status_of
from mvu_api.http.wire import MAX_SCOPE_CHARS, check_wire_scope, json_text, parse_scope_param
from mvu_store.errors import Code, MvuError
from mvu_store.ledger import FACTS_MAX_RECORDS
from mvu_store.service import RESOURCE_ID, MvuService

ORIGINAL_PREFIX = "/original/mvu"
GET_ACTIONS = frozenset({"resources", "resource", "history", "facts", "snapshot"})
POST_ACTIONS = frozenset({"update", "card-binding", "card-write", "card-binding/revoke"})
_STATUS: dict[str, int] = {Code.AMBIGUOUS: 409, Code.REVISION_CONFLICT: 409, Code.IDEMPOTENCY_CONFLICT: 409,
           Code.WRITE_DENIED: 403, Code.READ_ONLY: 403, Code.USAGE_DENIED: 403}
# The original tells the real message only for these refusals of an edit's content.
_TOLD = frozenset({Code.SCHEMA, Code.SCHEMA_CODE, Code.PARSE, Code.PATH, Code.LIMIT})
FIXED_ERROR = "MVU operation rejected for this binding"
MAX_ERROR_CHARS = 1_200


def original_error(error: MvuError, action: str) -> Response:
    """``{ok: false, code, error}`` with the original's status (a storage fault keeps its 5xx)."""
    own = status_of(error.code)
    status = own if own >= 500 else _STATUS.get(error.code, 400)
    told = action == "update" and error.code in _TOLD
    return _answer({"ok": False, "code": str(error.code),
                    "error": error.message[:MAX_ERROR_CHARS] if told else FIXED_ERROR}, status)


def _answer(data: Any, status: int = 200) -> Response:
    return Response(json_text(data), status_code=status, media_type="application/json")


def _query(request: Request, name: str, *, required: bool = True) -> str:
    value = request.query_params.get(name)
    if value is None:
        if required:
            raise MvuError(Code.SCOPE, f"{name} is required", field=name)
        return ""
    return value


def _resource_id(value: Any) -> Any:
    """The original refuses an id that is no ``mvu:`` resource id with ``MVU_SCOPE`` (here a read
    of it would answer ``record: null``)."""
    if not isinstance(value, str) or not RESOURCE_ID.match(value):
        raise MvuError(Code.SCOPE, "id must be an 'mvu:' resource id", field="id")
    return value


async def _read(service: MvuService, request: Request, action: str) -> Any:
    """A GET action's answer, as the original gives it."""
    if action == "snapshot":
        return await service.snapshot(scope=card_scope_param(_query(request, "scope")))
    raw = _query(request, "scope")
    if len(raw) > MAX_SCOPE_CHARS:  # the original: MVU_SCOPE, where this API says MVU_LIMIT
        raise MvuError(Code.SCOPE, f"scope is at most {MAX_SCOPE_CHARS} characters", field="scope")
    scope = parse_scope_param(raw, historical=action == "resource")
    if action == "resources":
        return {"ok": True, "records": [record.to_json() for record in await service.list(scope=scope)]}
    resource_id = _resource_id(_query(request, "id"))
    if action == "resource":
        record = await service.read(id=resource_id, scope=scope)
        return {"ok": True, "record": None if record is None else record.to_json()}
    if action == "history":
        versions = await service.history(id=resource_id, scope=scope, include_before=True)
        return {"ok": True, "versions": [entry.to_json() for entry in versions]}
    try:
        records = await service.facts(id=resource_id, scope=scope)
    except MvuError as error:
        if status_of(error.code) < 500:
            raise
        # The facts are optional metadata: unreadable, they are unavailable, never a failure.
        return {"ok": True, "records": [], "unavailable": True, "maxRecords": FACTS_MAX_RECORDS}
    return {"ok": True, "records": records, "unavailable": False, "maxRecords": FACTS_MAX_RECORDS}


async def _write(service: MvuService, body: bytes, action: str) -> Any:
    """A POST action's answer to its whole ``body``, as the original gives it."""
    if action == "update":
        edit = update_body(body)
        scope = check_wire_scope(edit.scope)
        _resource_id(edit.id)
        record = await service.read(id=edit.id, scope=scope)
        if record is None or record.legacy or record.source_error is not None \
                or (record.capabilities or {}).get("edit") is False:
            raise MvuError(Code.READ_ONLY, "this record cannot be edited")
        if edit.expected_revision is None or edit.operation_id is None:
            raise MvuError(Code.OPERATION, "expectedRevision and operationId are required")
        receipt = await service.update(id=edit.id, content=edit.content, expected_revision=edit.expected_revision,
                                       operation_id=edit.operation_id, scope=scope)
        return receipt.to_json()
    if action == "card-binding":
        binding = parse_body(BindingBody, body)
        return await service.create_card_binding(scope=binding.scope, grant_id=binding.grant_id,
                                                 source_identity=binding.source_identity,
                                                 binding_id=binding.binding_id)
    if action == "card-write":
        write = parse_body(WriteBody, body)
        return await service.card_write(capability=write.capability, operation=write.operation, value=write.value,
                                        expected_revision=write.expected_revision,
                                        operation_id=write.operation_id, cause=write.cause)
    service.revoke_card_binding(capability=parse_body(RevokeBody, body).capability)
    return {"ok": True}


def original_router(service: MvuService, *, body_timeout: float, stopping: asyncio.Event | None) -> APIRouter:
    router = APIRouter(prefix=ORIGINAL_PREFIX)

    async def body_of(request: Request) -> bytes:
        body = await read_body(request, seconds=body_timeout, stopping=stopping, limit=MAX_CARD_BODY_BYTES)
        if isinstance(body, Response):  # a body too large, too slow, or a server stopping
            code = {413: Code.LIMIT, 503: Code.DISPOSED}.get(body.status_code, Code.OPERATION)
            raise MvuError(code, "the request body did not arrive whole")
        return body

    async def reads(request: Request, action: str) -> Any:
        return await _read(service, request, action)

    async def writes(request: Request, action: str) -> Any:
        return await _write(service, await body_of(request), action)

    handlers: dict[str, Callable[[Request, str], Awaitable[Any]]] = {
        **{action: reads for action in GET_ACTIONS}, **{action: writes for action in POST_ACTIONS}}

    @router.api_route("/{action:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    async def original(request: Request, action: str) -> Response:
        handler = handlers.get(action)
        if handler is None:
            return _answer({"ok": False, "code": "NOT_FOUND", "error": FIXED_ERROR}, 404)
        if request.method != ("GET" if action in GET_ACTIONS else "POST"):
            return _answer({"ok": False, "code": "METHOD_NOT_ALLOWED", "error": FIXED_ERROR}, 405)
        try:
            return _answer(await handler(request, action))
        except MvuError as error:
            return original_error(error, action)

    return router
