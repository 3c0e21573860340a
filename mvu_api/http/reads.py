"""The read routes: ``/resources``, ``/resource``, ``/history``, ``/facts``.

Each parses its query (the JSON ``scope`` through :mod:`mvu_api.http.wire`), calls one
``MvuService`` read and answers with the service's camelCase JSON.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BeforeValidator
from starlette.responses import Response

from mvu_api.http.docs import HISTORICAL_EXAMPLE, RECORD_EXAMPLE, SCOPE_EXAMPLE, ok, problems
from mvu_api.http.hosting import session_missing
from mvu_api.http.wire import (
    MAX_SCOPE_CHARS,
    conditional_response,
    json_list_response,
    json_response,
    parse_scope_param,
)
from mvu_store.errors import Code, MvuError
from mvu_store.service import HistoryEntry, MvuService, StateRecord
from mvu_store.store_host import StoreHost

_SCOPE_DOC = (f"JSON object `{{authority: 'local', sessionId}}`, at most {MAX_SCOPE_CHARS} characters, camelCase "
              "keys only. sessionId is required: the sessionless management view is not served over HTTP.")
_ID_DOC = "A resource id, e.g. `mvu:instance-…` or a configured `mvu:…` id."

ScopeParam = Annotated[str, Query(description=_SCOPE_DOC, json_schema_extra={"maxLength": MAX_SCOPE_CHARS},
                                  openapi_examples={"session": {"value": SCOPE_EXAMPLE}})]
HistoricalScopeParam = Annotated[str, Query(
    description=_SCOPE_DOC + " A historical read adds messageId and/or endEventId.",
    json_schema_extra={"maxLength": MAX_SCOPE_CHARS},
    openapi_examples={"current": {"value": SCOPE_EXAMPLE}, "historical": {"value": HISTORICAL_EXAMPLE}})]
IdParam = Annotated[str, Query(description=_ID_DOC, openapi_examples={"instance": {"value": "mvu:hero"}})]
IF_NONE_MATCH = {
    "name": "If-None-Match", "in": "header", "required": False,
    "description": 'ETags of answers the client holds (`"r<revision>-<digest>"`, as ETag gave them), or `*`: when '
                   "one is the current answer's (weak comparison, RFC 9110 13.1.2), the answer is 304 without a body",
    "schema": {"type": "string"}}
NOT_MODIFIED: dict[int | str, dict[str, Any]] = {304: {
    "description": "The answer is the one If-None-Match names: no body; ETag repeats it",
    "headers": {"ETag": {"schema": {"type": "string"}}}}}
MAX_HISTORY_PAGE = 1000
_DIGITS = re.compile(r"[0-9]+")


def plain_digits(raw: object) -> object:
    """A paging number as the wire spells it: ASCII digits only (not "+5", " 5", "1.0" or "1e3")."""
    if isinstance(raw, str) and not _DIGITS.fullmatch(raw):
        raise ValueError("must be an integer in plain decimal digits")
    return raw


LimitParam = Annotated[int | None, Query(
    ge=1, le=MAX_HISTORY_PAGE, openapi_examples={"newest": {"value": 50}},
    description=f"At most this many entries (1 to {MAX_HISTORY_PAGE}): the newest whose position is below `before`, "
                "oldest first. Without limit and before, the whole history."), BeforeValidator(plain_digits)]
BeforeParam = Annotated[int | None, Query(
    ge=0, openapi_examples={"older": {"value": 120}},
    description="Only entries whose `position` (their index in the resource's whole history, oldest 0) is below "
                "this; the next older page is `before=` the first entry's position."), BeforeValidator(plain_digits)]


def reads_router(service: MvuService, host: StoreHost | None = None) -> APIRouter:
    """``host``: the store that keeps the sessions, when it is one: a session it does not keep
    lists nothing but 404, with what to do (a mistyped id would otherwise read as an empty one)."""
    router = APIRouter()

    @router.get("/resources", operation_id="listResources",
                response_model=list[StateRecord],
                responses={**problems(400, 401, 403, 404, 503), **ok([RECORD_EXAMPLE])},
                summary="Every record the scope may read (404 for a session the store does not keep)")
    async def resources(scope: ScopeParam) -> Response:
        parsed = parse_scope_param(scope)
        if host is not None and await host.session(parsed["sessionId"]) is None:
            raise session_missing(parsed["sessionId"])
        records = await service.list(scope=parsed)
        return await json_list_response(records, StateRecord.to_json)

    @router.get("/resource", operation_id="readResource",
                response_model=StateRecord,
                responses={**problems(400, 401, 403, 404, 503), **ok(RECORD_EXAMPLE), **NOT_MODIFIED},
                summary="One record, current or historical; its ETag names its revision and answer",
                openapi_extra={"parameters": [IF_NONE_MATCH]})
    async def resource(request: Request, id: IdParam, scope: HistoricalScopeParam) -> Response:
        record = await service.read_json(id=id, scope=parse_scope_param(scope, historical=True))
        if record is None:
            raise MvuError(Code.MISSING, f"no resource {id[:200]!r}", id=id[:200])
        return conditional_response(request.headers.get("if-none-match"), record.body, record.revision,
                                    record.digest)

    @router.get("/history", operation_id="history",
                response_model=list[HistoryEntry], responses=problems(400, 401, 403, 503),
                summary="The session's versions, failures included (empty for an unknown id)")
    async def history(
        id: IdParam, scope: ScopeParam,
        include_before: Annotated[bool, Query(alias="includeBefore",
                                              description="Add beforeAvailable / before (A-6)")] = False,
        limit: LimitParam = None, before: BeforeParam = None,
    ) -> Response:
        entries = await service.history(id=id, scope=parse_scope_param(scope), include_before=include_before,
                                        limit=limit, before=before)
        return await json_list_response(entries, HistoryEntry.to_json)

    @router.get("/facts", operation_id="facts",
                response_model=list[dict[str, Any]], responses=problems(400, 401, 403, 503),
                summary="Bounded, content-free trigger observations (empty for an unknown id)")
    async def facts(id: IdParam, scope: ScopeParam) -> Response:
        return json_response(await service.facts(id=id, scope=parse_scope_param(scope)))

    return router
