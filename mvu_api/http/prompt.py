"""The prompt routes: ``POST /prompt`` expands world-book text, ``GET /prompt/current`` checks it,
``POST /request-observed`` reports the model request (``dsh-request-observed`` facts).

A host in another language sends the entry texts (or one template text) that carry
``{{format_message_variable::...}}`` with the session scope and, for a send, the turn; it gets the
expanded texts, the revision they were read at and a token. Just before it sends the request it
asks whether the token is still current: the lease of the read lives in this process, so a token
is an opaque handle to it, kept for a bounded number of reads (an evicted or unknown token is
never current: currency is never assumed).
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from mvu_api.http.bodies import read_model
from mvu_api.http.docs import json_request, ok, problems
from mvu_api.http.wire import check_wire_scope, json_response
from mvu_store.errors import Code, MvuError
from mvu_store.service import MvuService

MAX_ENTRIES = 1_000
MAX_TOKENS = 4_096
_PROMPT_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["scope"], "additionalProperties": False,
    "properties": {
        "scope": {"type": "object", "description": "{authority: 'local', sessionId}",
                  "required": ["sessionId"], "additionalProperties": False,
                  "properties": {"authority": {"type": "string", "enum": ["local"]},
                                 "sessionId": {"type": "string", "minLength": 1}}},
        "entries": {"type": "array", "maxItems": MAX_ENTRIES, "description": "world-book entries, in order",
                    "items": {"type": "object", "required": ["text"], "additionalProperties": False,
                              "properties": {"text": {"type": "string"}, "active": {"type": "boolean"}}}},
        "text": {"type": "string", "description": "one template text, instead of entries"},
        "id": {"type": "string", "description": "the resource; without it, the session's one state"},
        "turn": {"type": "integer", "minimum": 0, "description": "a send at this turn reads its checkpoint"},
        "step": {"type": "integer", "minimum": 0},
        "preview": {"type": "boolean", "default": False},
        "consumer": {"type": "string", "minLength": 1, "maxLength": 300, "default": "world-book:http"},
    },
}
_PROMPT_BODY_EXAMPLE: dict[str, Any] = {
    "scope": {"authority": "local", "sessionId": "s1"}, "turn": 2,
    "entries": [{"text": "{{format_message_variable::stat_data}}"}, {"text": "rules", "active": False}],
}
_PROMPT_EXAMPLE: dict[str, Any] = {
    "id": "mvu:instance-1", "revision": 3, "configRevision": None, "texts": ["艾莉:\n  好感度: 35"],
    "token": "k3JX0dQb7o1y5m2HqzL4eA",
}


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    text: str
    active: bool = True


class PromptBody(BaseModel):
    """``{scope, entries | text, id?, turn?, step?, preview?, consumer?}``, camelCase only."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    scope: Any = None
    entries: list[_Entry] | None = Field(default=None, max_length=MAX_ENTRIES)
    text: str | None = None
    id: str | None = None
    turn: Annotated[int, Field(ge=0)] | None = None
    step: Annotated[int, Field(ge=0)] | None = None
    preview: bool = False
    consumer: Annotated[str, Field(min_length=1, max_length=300)] = "world-book:http"


class ObservedBody(BaseModel):
    """``{sessionId, messages}``: the request the host gives the model, as it gives it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    sessionId: str  # the wire's name
    messages: list[Any]



class _Leases:
    """Tokens of recent reads and their leases, the oldest forgotten first."""

    def __init__(self) -> None:
        self._leases: OrderedDict[str, Callable[[], bool]] = OrderedDict()

    def keep(self, lease: Callable[[], bool]) -> str:
        token = secrets.token_urlsafe(16)
        self._leases[token] = lease
        while len(self._leases) > MAX_TOKENS:
            self._leases.popitem(last=False)
        return token

    def current(self, token: str) -> bool:
        lease = self._leases.get(token)
        if lease is None:
            return False
        if lease() is not True:
            del self._leases[token]  # it never becomes current again
            return False
        return True


def prompt_router(service: MvuService, *, body_timeout: float, stopping: asyncio.Event | None) -> APIRouter:
    router = APIRouter()
    leases = _Leases()

    @router.post("/prompt", operation_id="renderPrompt",
                 responses={**problems(400, 401, 403, 413, 503), **ok(_PROMPT_EXAMPLE)},
                 summary="Expand the state macros of world-book entries or a template text",
                 openapi_extra=json_request(_PROMPT_SCHEMA, examples={"entries": {"value": _PROMPT_BODY_EXAMPLE}}))
    async def prompt(request: Request) -> Response:
        data = await read_model(request, PromptBody, seconds=body_timeout, stopping=stopping)
        if isinstance(data, Response):
            return data
        if (data.entries is None) == (data.text is None):
            raise MvuError(Code.OPERATION, "send either entries or text", field="entries")
        entries = [entry.model_dump() for entry in data.entries] if data.entries is not None \
            else [{"text": data.text}]
        rendered = await service.render_world_book(
            scope=check_wire_scope(data.scope), entries=entries, id=data.id, turn=data.turn, step=data.step,
            preview=data.preview, consumer_id=data.consumer)
        answer: dict[str, Any] = {"id": rendered.id, "revision": rendered.revision,
                                  "configRevision": rendered.config_revision,
                                  "token": leases.keep(rendered.check_current)}
        if data.text is not None:
            answer["text"] = rendered.texts[0]
        else:
            answer["texts"] = rendered.texts
        return json_response(answer)

    @router.get("/prompt/current", operation_id="promptCurrent",
                responses={**problems(400, 401, 503), **ok({"current": True})},
                summary="Whether a rendered prompt is still current (false once anything it read changed)")
    async def current(token: Annotated[str, Query(max_length=64)]) -> Response:
        return json_response({"current": leases.current(token)})

    @router.post("/request-observed", operation_id="observeRequest",
                 responses={**problems(400, 401, 413, 503), **ok({"facts": []})},
                 summary="Report the model request: dsh-request-observed facts when it is the recorded assembly's",
                 openapi_extra=json_request(ObservedBody))
    async def observed(request: Request) -> Response:
        data = await read_model(request, ObservedBody, seconds=body_timeout, stopping=stopping)
        if isinstance(data, Response):
            return data
        return json_response({"facts": await service.observe_request(session_id=data.sessionId,
                                                                     messages=data.messages)})

    return router
