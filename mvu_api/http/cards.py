"""The card-script routes: ``GET /snapshot``, ``POST /card-binding``, ``POST /card-write`` and
``POST /card-binding/revoke`` (docs/cards.md).

The scope is the card's (a message, a greeting or an initial scope), as JSON in the query or the
body; the snapshot and the write answer in the bare snapshot shape. Refusals are problems with
the service's codes (:mod:`mvu_api.http.problems`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from mvu_api.http.bodies import json_body, read_model
from mvu_api.http.docs import json_request, ok, problems
from mvu_api.http.reads import IF_NONE_MATCH, NOT_MODIFIED
from mvu_api.http.wire import conditional_response, json_response, json_text
from mvu_store.errors import Code, MvuError
from mvu_store.service import MAX_SCOPE_CHARS, MvuService

MAX_CARD_BODY_BYTES = 2 * 1024 * 1024
T = TypeVar("T")
SNAPSHOT_EXAMPLE = {"version": 1, "scope": {"playthroughId": "p1", "sessionId": "s1", "nodeId": "n1",
                                            "variantId": "v1", "endEventId": 2},
                    "revision": 1, "currentRevision": 1, "status": "available",
                    "variables": {"stat_data": {"hp": 9}}, "resourceId": "mvu:instance-…"}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


class BindingBody(_Body):
    scope: dict[str, Any]
    grant_id: Any = Field(alias="grantId")
    source_identity: Any = Field(alias="sourceIdentity")
    binding_id: Any = Field(default=None, alias="bindingId")


class WriteBody(_Body):
    capability: Any
    operation: Any
    value: Any
    expected_revision: Any = Field(alias="expectedRevision")
    operation_id: Any = Field(alias="operationId")
    cause: Any


class RevokeBody(_Body):
    capability: Any


def card_scope_param(raw: str) -> dict[str, Any]:
    """The ``scope`` query parameter: JSON, at most 4,000 characters; anything else ``MVU_SCOPE``."""
    if len(raw) > MAX_SCOPE_CHARS:
        raise MvuError(Code.SCOPE, f"scope is at most {MAX_SCOPE_CHARS} characters", field="scope")
    try:
        return json_body(raw.encode("utf-8", "surrogatepass"))
    except MvuError:
        raise MvuError(Code.SCOPE, "scope must be a JSON object", field="scope") from None


@contextlib.asynccontextmanager
async def _client_gone(request: Request) -> AsyncIterator[asyncio.Event]:
    """An event set when the client disconnects (the body is read by then: the next ASGI
    message is the disconnect), so a bind or write it no longer waits for commits nothing."""
    gone = asyncio.Event()

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.ensure_future(watch())
    try:
        yield gone
    finally:
        watcher.cancel()


async def _unless_gone(request: Request, call: Callable[[asyncio.Event], Awaitable[T]]) -> T:
    """``call(signal)`` with the client's disconnect as its signal; a call it cancelled ends as a
    disconnect (answered 499, which nobody reads)."""
    async with _client_gone(request) as gone:
        try:
            return await call(gone)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if gone.is_set() and task is not None and not task.cancelling():
                raise ClientDisconnect() from None
            raise


ScopeParam = Annotated[str, Query(description="The card scope as JSON (a message, greeting or initial scope), "
                                              f"at most {MAX_SCOPE_CHARS} characters",
                                  json_schema_extra={"maxLength": MAX_SCOPE_CHARS})]


def cards_router(service: MvuService, *, body_timeout: float, stopping: asyncio.Event | None) -> APIRouter:
    router = APIRouter(tags=["cards"])

    async def body_of(request: Request, model: type[_Body]) -> Any:
        return await read_model(request, model, seconds=body_timeout, stopping=stopping, limit=MAX_CARD_BODY_BYTES)

    @router.get("/snapshot", operation_id="cardSnapshot",
                responses={**problems(400, 401, 403, 409, 503), **ok(SNAPSHOT_EXAMPLE), **NOT_MODIFIED},
                summary="The read-only state a card script's scope sees (the bare snapshot shape); its ETag "
                        "names the answer, and If-None-Match with it answers 304",
                openapi_extra={"parameters": [IF_NONE_MATCH]})
    async def snapshot(request: Request, scope: ScopeParam) -> Response:
        answer = await service.snapshot(scope=card_scope_param(scope))
        body = json_text(answer).encode()
        return conditional_response(request.headers.get("if-none-match"), body, int(answer["revision"]),
                                    hashlib.sha256(body).hexdigest())

    @router.post("/card-binding", operation_id="cardBinding",
                 responses={**problems(400, 401, 403, 409, 413, 503),
                            **ok({"capability": "0b7c4d7e-…", "snapshot": SNAPSHOT_EXAMPLE})},
                 summary="Bind an enabled card script to its scope's one resource: a capability to write",
                 openapi_extra=json_request(BindingBody))
    async def bind(request: Request) -> Response:
        data = await body_of(request, BindingBody)
        if isinstance(data, Response):
            return data
        return json_response(await _unless_gone(request, lambda signal: service.create_card_binding(
            scope=data.scope, grant_id=data.grant_id, source_identity=data.source_identity,
            binding_id=data.binding_id, signal=signal)))

    @router.post("/card-write", operation_id="cardWrite", responses={**problems(400, 401, 403, 409, 413, 503),
                                                                     **ok(SNAPSHOT_EXAMPLE)},
                 summary="A card script's patch or replace through its capability (CAS, idempotent)",
                 openapi_extra=json_request(WriteBody))
    async def write(request: Request) -> Response:
        data = await body_of(request, WriteBody)
        if isinstance(data, Response):
            return data
        return json_response(await _unless_gone(request, lambda signal: service.card_write(
            capability=data.capability, operation=data.operation, value=data.value,
            expected_revision=data.expected_revision, operation_id=data.operation_id, cause=data.cause,
            signal=signal)))

    @router.post("/card-binding/revoke", operation_id="revokeCardBinding",
                 responses={**problems(400, 401, 413, 503), **ok({"ok": True})},
                 summary="End a card capability (always succeeds)",
                 openapi_extra=json_request(RevokeBody))
    async def revoke(request: Request) -> Response:
        data = await body_of(request, RevokeBody)
        if isinstance(data, Response):
            return data
        service.revoke_card_binding(capability=data.capability)
        return json_response({"ok": True})

    return router
