"""The write route: ``POST /update``, a CAS + idempotent edit.

The expected revision and the operation id come from the body or from a header (``If-Match``,
``Idempotency-Key``); the route records which (``request.state``), since that decides 409 vs 412
and 409 vs 422 in :mod:`mvu_api.http.problems`.
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

from fastapi import APIRouter, Request
from starlette.responses import Response

from mvu_api.http.bodies import read_body, update_body
from mvu_api.http.docs import RECEIPT_EXAMPLE, UPDATE_EXAMPLE, UPDATE_SCHEMA, ok, problems
from mvu_api.http.wire import check_wire_scope, etag, if_match_revision, json_response
from mvu_store.errors import Code, MvuError
from mvu_store.service import MAX_OPERATION_ID, MvuService, UpdateReceipt

_T = TypeVar("_T")

_HEADERS = [
    {"name": "If-Match", "in": "header", "required": False,
     "description": 'Alternative to expectedRevision: the ETag a read gave (`"r<revision>-<digest>"`), or '
                    '`"r<revision>"`; the revision in it guards the edit',
     "schema": {"type": "string", "pattern": '^"r[0-9]+(-[0-9a-f]{16})?"$'}},
    {"name": "Idempotency-Key", "in": "header", "required": False,
     "description": "Alternative to operationId",
     "schema": {"type": "string", "minLength": 1, "maxLength": MAX_OPERATION_ID}},
]


def _either(from_body: _T | None, from_header: _T | None, disagree: str) -> _T | None:
    """One value sent in the body, a header or both (then they must agree)."""
    if from_header is None:
        return from_body
    if from_body is not None and from_body != from_header:
        raise MvuError(Code.OPERATION, disagree)
    return from_header


def writes_router(service: MvuService, *, body_timeout: float, stopping: asyncio.Event | None) -> APIRouter:
    router = APIRouter()

    @router.post("/update", operation_id="update", response_model=UpdateReceipt,
                 responses={**problems(400, 401, 403, 404, 409, 412, 413, 422, 503), **ok(RECEIPT_EXAMPLE)},
                 summary="CAS + idempotent edit of the current content",
                 openapi_extra={
                     "parameters": _HEADERS,
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": UPDATE_SCHEMA, "examples": {"edit": {"value": UPDATE_EXAMPLE}}}}},
                 })
    async def update(request: Request) -> Response:
        body = await read_body(request, seconds=body_timeout, stopping=stopping)
        if isinstance(body, Response):
            return body
        data = update_body(body)
        if_match = request.headers.get("if-match")
        key = request.headers.get("idempotency-key")
        request.state.if_match = if_match is not None
        request.state.idempotency_key = key is not None
        expected = _either(data.expected_revision, None if if_match is None else if_match_revision(if_match),
                           "If-Match and expectedRevision disagree")
        operation_id = _either(data.operation_id, key, "Idempotency-Key and operationId disagree")
        if expected is None:
            raise MvuError(Code.OPERATION, "expectedRevision (or If-Match) is required")
        if operation_id is None:
            raise MvuError(Code.OPERATION, "operationId (or Idempotency-Key) is required")
        if not data.has_scope:
            raise MvuError(Code.SCOPE, "scope is required", field="scope")
        receipt = await service.update(id=data.id, content=data.content, expected_revision=expected,
                                       operation_id=operation_id, scope=check_wire_scope(data.scope))
        headers = {"ETag": etag(receipt.revision)}
        if receipt.replayed:
            headers["Idempotent-Replayed"] = "true"
        return json_response(receipt.to_json(), headers=headers)

    return router
