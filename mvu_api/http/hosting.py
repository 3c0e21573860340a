"""The host routes: what a chat program in any language calls to feed the service.

Cards become templates, sessions and their events are kept in the store (``StoreHost``), a
batch of events is appended and then checkpointed / ingested as its turn events call for
(``mvu_store.store_host.feed``), characters are selected, and seeds carry state into branches.
The wire format is documented in docs/host-protocol.md.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from mvu_api.http.bodies import BodyReader
from mvu_api.http.docs import (
    APPEND_EXAMPLE,
    APPENDED_EXAMPLE,
    CARD_EXAMPLE,
    SESSION_EXAMPLE,
    SESSION_INFO_EXAMPLE,
    json_request,
    ok,
    problems,
)
from mvu_api.http.problems import error_body
from mvu_api.http.wire import json_response
from mvu_store.cards import MAX_INPUT_BYTES, read_card
from mvu_store.errors import Code, MvuError
from mvu_store.js import MAX_SAFE_INTEGER
from mvu_store.lang import MAX_NAME_CHARS, Names
from mvu_store.ledger import StoredSession
from mvu_store.service import MAX_SESSION_ID, MvuService, off_loop
from mvu_store.store_host import StoreHost, check_store_session_id, feed

SessionIdPath = Annotated[str, Path(alias="sessionId", description="A session id: 1 to 160 of A-Z a-z 0-9 _ . : -",
                                    openapi_examples={"session": {"value": "s1"}})]
_CARD_TYPES = ("application/json", "image/png")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)


class SessionBody(_Body):
    # The values are checked by StoreHost (mvu_store.store_host.host.session_header), one rule
    # for HTTP and Python hosts; here only their JSON types.
    session_id: str = Field(alias="sessionId")
    created_at: int | float | str = Field(alias="createdAt")
    format_version: int = Field(default=4, alias="formatVersion")
    parent_session: str | None = Field(default=None, alias="parentSession")
    origin: str | None = None
    inherited_event_count: int | None = Field(default=None, alias="inheritedEventCount")


class NamesBody(_Body):
    """The names `{{user}}` / `{{char}}` (and `<user>`, `<char>`, `<bot>`) stand for in this call."""

    user: str | None = Field(default=None, min_length=1, max_length=MAX_NAME_CHARS)
    char: str | None = Field(default=None, min_length=1, max_length=MAX_NAME_CHARS)

    def names(self) -> Names:
        return Names(user=self.user, char=self.char)


class EventsBody(_Body):
    events: list[Any]
    names: NamesBody | None = None


class SelectionBody(_Body):
    character_id: str | None = Field(alias="characterId")
    names: NamesBody | None = None
    greeting_index: int | None = Field(default=None, alias="greetingIndex", ge=0, le=999)


EventId = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]


class CaptureBody(_Body):
    session_id: str = Field(alias="sessionId", min_length=1, max_length=MAX_SESSION_ID)
    kind: str = Field(max_length=32, json_schema_extra={"enum": ["fork", "reply-swipe", "request-retry"]})
    at_event_id: EventId = Field(alias="atEventId")
    prefix_end_event_id: EventId | None = Field(default=None, alias="prefixEndEventId")
    target_session_id: str | None = Field(default=None, alias="targetSessionId", min_length=1,
                                          max_length=MAX_SESSION_ID)


class InstallBody(_Body):
    ticket: str = Field(min_length=1, max_length=64)
    session_id: str = Field(alias="sessionId", min_length=1, max_length=MAX_SESSION_ID)


def session_missing(session_id: str) -> MvuError:
    """``MVU_MISSING`` (404) for a session the store does not keep, saying how one comes to be."""
    return MvuError(Code.MISSING, f"no session {session_id!r}: a host creates it with POST /mvu/sessions, registers "
                                  "the card with POST /mvu/cards and selects it with PUT /mvu/sessions/{sessionId}/"
                                  "selection (docs/host-protocol.md)", session_id=session_id)


def session_json(stored: StoredSession) -> dict[str, Any]:
    header = stored.header
    return {"sessionId": header.id, "createdAt": header.created_at, "formatVersion": header.version,
            "parentSession": header.parent_session, "origin": header.origin,
            "inheritedEventCount": header.inherited_event_count, "lastSeq": stored.last_seq,
            "fingerprint": stored.fingerprint}


def hosting_router(service: MvuService, host: StoreHost, *, body_timeout: float,
                   stopping: asyncio.Event | None) -> APIRouter:
    """The host routes, in the order the OpenAPI document lists them: the card, the session,
    feeding it (events, the character), the seeds of forks, swipes and retries."""
    router = APIRouter()
    bodies = BodyReader(body_timeout, stopping)
    _card_route(router, service, bodies)
    _session_routes(router, host, bodies)
    _feeding_routes(router, service, host, bodies)
    _seed_routes(router, service, bodies)
    return router


def _card_route(router: APIRouter, service: MvuService, bodies: BodyReader) -> None:
    @router.post("/cards", operation_id="registerCard", responses={**problems(400, 401, 413), **ok(CARD_EXAMPLE)},
                 summary="Register a character card (JSON or PNG) as a template; never runs it",
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/json": {"schema": {"type": "object"}},
                     "image/png": {"schema": {"type": "string", "format": "binary"}}}}})
    async def register_card(
        request: Request,
        character_id: Annotated[str, Query(alias="characterId", min_length=1, max_length=MAX_SESSION_ID,
                                           description="The host's id for this character (its template is "
                                                       "`mvu:character-<hash of it>`)")],
        session_id: Annotated[str | None, Query(alias="sessionId", description="A session that may use it")] = None,
        at: Annotated[int | None, Query(ge=0, le=MAX_SAFE_INTEGER,
                                        description="The registration's time (ms since the epoch): the clock a "
                                                    "declaration reads while the initial data is parsed")] = None,
    ) -> Response:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media not in _CARD_TYPES:
            raise MvuError(Code.OPERATION, "a card is sent as application/json or image/png", field="Content-Type")
        body = await bodies.body(request, MAX_INPUT_BYTES)
        if isinstance(body, Response):
            return body
        card = await off_loop(lambda: read_card(body, name=character_id))  # parsing is CPU work
        template = await service.discover(definition={**card.definition(character_id), "at": at},
                                          session_id=session_id)
        return json_response({**template.to_json(), "problems": list(card.problems), "notes": list(card.notes)})


def _session_routes(router: APIRouter, host: StoreHost, bodies: BodyReader) -> None:
    @router.post("/sessions", operation_id="createSession", status_code=201,
                 responses={**problems(400, 401, 409), **ok(SESSION_INFO_EXAMPLE),
                            201: {"description": "Created", "content": {"application/json": {
                                "example": SESSION_INFO_EXAMPLE}}}},
                 summary="Create a session (the same header again is a replay: 200)",
                 openapi_extra=json_request(SessionBody, example=SESSION_EXAMPLE))
    async def create_session(request: Request) -> Response:
        data = await bodies.model(request, SessionBody)
        if isinstance(data, Response):
            return data
        stored, created = await host.create_session(
            data.session_id, created_at=data.created_at, version=data.format_version,
            parent_session=data.parent_session, origin=data.origin, inherited_event_count=data.inherited_event_count)
        answer = json_response(session_json(stored))
        answer.status_code = 201 if created else 200
        return answer

    @router.get("/sessions/{sessionId}", operation_id="readSession",
                responses={**problems(400, 401, 404), **ok(SESSION_INFO_EXAMPLE)},
                summary="A session's header, its last event id and the fingerprint after it")
    async def read_session(session_id: SessionIdPath) -> Response:
        stored = await host.session(session_id)
        if stored is None:
            raise session_missing(session_id)
        return json_response(session_json(stored))


def _feeding_routes(router: APIRouter, service: MvuService, host: StoreHost, bodies: BodyReader) -> None:
    @router.post("/sessions/{sessionId}/events", operation_id="appendEvents",
                 responses={**problems(400, 401, 404, 409, 413), **ok(APPENDED_EXAMPLE)},
                 summary="Append events in order; a turn/start checkpoints, a completed turn/end ingests",
                 openapi_extra=json_request(EventsBody, example=APPEND_EXAMPLE))
    async def append_events(request: Request, session_id: SessionIdPath) -> Response:
        data = await bodies.model(request, EventsBody)
        if isinstance(data, Response):
            return data
        result = await feed(service, host, session_id, data.events, None if data.names is None else data.names.names())
        appended = result.appended
        return json_response({
            **session_json(appended.session), "appended": appended.appended, "replayed": appended.replayed,
            "checkpoints": [info.to_json() for info in result.checkpoints],
            "ingest": None if result.ingest is None else result.ingest.to_json(),
            "error": None if result.error is None else error_body(result.error),
        })

    @router.put("/sessions/{sessionId}/selection", operation_id="selectCharacter",
                responses={**problems(400, 401, 404), **ok({"sessionId": "s1", "templateId": "mvu:character-…",
                                                            "instanceId": "mvu:instance-…", "boundary": 0})},
                summary="Select a registered character for the session (null unselects)",
                openapi_extra=json_request(SelectionBody, example={"characterId": "hero"}))
    async def select(request: Request, session_id: SessionIdPath) -> Response:
        data = await bodies.model(request, SelectionBody)
        if isinstance(data, Response):
            return data
        check_store_session_id(session_id)
        result = await service.select_character(session_id=session_id, character_id=data.character_id,
                                                names=None if data.names is None else data.names.names(),
                                                greeting_index=data.greeting_index)
        return json_response(result.model_dump(mode="json", by_alias=True))


def _seed_routes(router: APIRouter, service: MvuService, bodies: BodyReader) -> None:
    @router.post("/seeds", operation_id="captureSeed",
                 responses={**problems(400, 401), **ok({"ticket": "c3f1…"})},
                 summary="Freeze the state a fork, reply swipe or request retry starts from (ticket or null)",
                 openapi_extra=json_request(CaptureBody, example={"sessionId": "s1", "kind": "reply-swipe",
                                                                   "atEventId": 9, "prefixEndEventId": 4}))
    async def capture(request: Request) -> Response:
        data = await bodies.model(request, CaptureBody)
        if isinstance(data, Response):
            return data
        ticket = await service.capture_session_seed(
            session_id=data.session_id, kind=data.kind, at_event_id=data.at_event_id,
            prefix_end_event_id=data.prefix_end_event_id, target_session_id=data.target_session_id)
        return json_response({"ticket": ticket})

    @router.post("/seeds/install", operation_id="installSeed",
                 responses={**problems(400, 401), **ok({"sessionId": "s1-swipe", "instanceIds": ["mvu:instance-…"]})},
                 summary="Install a captured seed into the child session the host created",
                 openapi_extra=json_request(InstallBody, example={"ticket": "c3f1…", "sessionId": "s1-swipe"}))
    async def install(request: Request) -> Response:
        data = await bodies.model(request, InstallBody)
        if isinstance(data, Response):
            return data
        instances = await service.install_session_seed(ticket=data.ticket, session_id=data.session_id)
        return json_response({"sessionId": data.session_id, "instanceIds": instances})
