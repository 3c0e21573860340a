"""Request bodies: read whole within a size and a time budget, then parsed into their model.

A body carries one state (at most 2 MiB as canonical JSON) plus its envelope fields; a stalled
upload is 408, not a held worker, and a server that starts stopping does not wait for one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.responses import Response

from mvu_api.http.problems import BODY_TIMEOUT, problem
from mvu_api.http.wire import SNAKE
from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import MAX_STATE_BYTES, unique_keys
from mvu_store.service import MAX_OPERATION_ID

# The slack covers the envelope fields and modest formatting. Clients should send compact JSON.
MAX_BODY_BYTES = MAX_STATE_BYTES + 64 * 1024
# The whole body must arrive within this many seconds.
BODY_TIMEOUT_SECONDS = 30.0
# Once the server is stopping, a body still arriving gets this long before a 503.
STOP_BODY_SECONDS = 2.0


async def read_body(request: Request, *, seconds: float, stopping: asyncio.Event | None,
                    limit: int = MAX_BODY_BYTES) -> bytes | Response:
    """The body, or a problem: 413 as soon as it is known to pass ``limit`` bytes, 408 when it
    has not all arrived within ``seconds``, 503 when the server starts stopping meanwhile
    (a stalled upload must not hold the shutdown). ``ClientDisconnect`` propagates (see app.py)."""
    request.state.write = True
    too_large = problem(413, Code.LIMIT, f"a request body is at most {limit} bytes", limit=limit)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return too_large

    async def collect() -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
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


class UpdateBody(BaseModel):
    """``POST /update``: ``{id, scope, content, expectedRevision, operationId}``, camelCase only.

    ``scope`` is checked by :func:`~mvu_api.http.wire.check_wire_scope` (as a query scope is) and
    ``content`` by the service; ``expectedRevision`` and ``operationId`` may come from headers
    instead, so null is the same as absent.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str
    scope: Any = None
    content: Any = None
    expected_revision: Annotated[int, Field(ge=0)] | None = Field(default=None, alias="expectedRevision")
    operation_id: Annotated[str, Field(min_length=1, max_length=MAX_OPERATION_ID)] | None = Field(
        default=None, alias="operationId")

    @property
    def has_scope(self) -> bool:
        return "scope" in self.model_fields_set


_FIELD_REFUSALS = {"id": "id must be a string", "expectedRevision": "expectedRevision must be a non-negative integer",
                   "operationId": f"operationId must be a string of 1 to {MAX_OPERATION_ID} characters"}

Body = TypeVar("Body", bound=BaseModel)


def json_body(body: bytes) -> dict[str, Any]:
    """The body as one JSON object, or ``MVU_JSON``."""
    try:
        data = json.loads(body, object_pairs_hook=unique_keys)
    except (ValueError, RecursionError):
        raise MvuError(Code.JSON, "the body must be one JSON object") from None
    if not isinstance(data, dict):
        raise MvuError(Code.JSON, "the body must be one JSON object")
    return data


def parse_body(model: type[Body], body: bytes, refusals: Mapping[str, str] | None = None) -> Body:
    """A JSON body as ``model``, or ``MVU_JSON`` (not one JSON object) / ``MVU_OPERATION`` naming
    the first wrong field: a snake_case key, then an unknown key, then a bad value (``refusals``
    words it by field, else pydantic's message)."""
    try:
        return model.model_validate(json_body(body))
    except ValidationError as error:
        raise _refusal(error, refusals or {}) from None


async def read_model(request: Request, model: type[Body], *, seconds: float, stopping: asyncio.Event | None,
                     limit: int = MAX_BODY_BYTES) -> Body | Response:
    """:func:`read_body` then :func:`parse_body`: the body as ``model``, or the problem answering
    a body that did not arrive whole."""
    body = await read_body(request, seconds=seconds, stopping=stopping, limit=limit)
    return body if isinstance(body, Response) else parse_body(model, body)


@dataclass(frozen=True, slots=True)
class BodyReader:
    """:func:`read_body` and :func:`read_model` with a router's time budget and the server's
    stopping signal given once, for route groups that share them."""

    seconds: float
    stopping: asyncio.Event | None

    async def body(self, request: Request, limit: int = MAX_BODY_BYTES) -> bytes | Response:
        return await read_body(request, seconds=self.seconds, stopping=self.stopping, limit=limit)

    async def model(self, request: Request, model: type[Body]) -> Body | Response:
        return await read_model(request, model, seconds=self.seconds, stopping=self.stopping)


def update_body(body: bytes) -> UpdateBody:
    """The update body (see :func:`parse_body`)."""
    return parse_body(UpdateBody, body, _FIELD_REFUSALS)


def _refusal(error: ValidationError, refusals: Mapping[str, str]) -> MvuError:
    issues = error.errors()
    extra = [str(issue["loc"][0]) for issue in issues if issue["type"] == "extra_forbidden"]
    snake = [key for key in extra if key in SNAKE]
    if snake:
        return MvuError(Code.OPERATION, f"{snake[0]} is not a wire field: the wire is camelCase ({SNAKE[snake[0]]})",
                        field=snake[0])
    if extra:
        unknown = min(extra)[:64]
        return MvuError(Code.OPERATION, f"unknown field {unknown!r}", field=unknown)
    field = str(issues[0]["loc"][0]) if issues[0]["loc"] else ""  # field errors come in the model's order
    message = refusals.get(field) or f"{field}: {issues[0]['msg']}"
    return MvuError(Code.OPERATION, message, field=field)
