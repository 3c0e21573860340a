"""The routes that explain a state: ``/changes`` (a path's story, a version's or a turn's changes)
and ``/diff`` (what differs between two points of a playthrough).

Each parses its query, calls ``MvuService.changes`` or ``MvuService.diff`` (scoped and refused as
``/history`` is) and answers with the service's camelCase JSON, written off the loop when it is
long (a page of up to a thousand changes or differences, with their values).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BeforeValidator
from starlette.responses import Response

from mvu_api.http.docs import CHANGES_EXAMPLE, DIFF_EXAMPLE, ok, problems
from mvu_api.http.reads import MAX_HISTORY_PAGE, BeforeParam, IdParam, ScopeParam, plain_digits
from mvu_api.http.wire import json_response, json_text, parse_scope_param
from mvu_store.service import MAX_SESSION_ID, Changes, MvuService, StateDiff, off_loop

# Answers with more entries than this are written in a worker thread.
_ON_LOOP_ENTRIES = 64

PathParam = Annotated[str | None, Query(
    description="A JSON pointer into stat_data (RFC 6901: `/hp`, `/items/0`, `~1` for `/` in a key, `''` for the "
                "whole of it): this path's story, paged by `before` / `limit`, through a fork child's lineage.",
    openapi_examples={"hp": {"value": "/hp"}})]
RevisionParam = Annotated[int | None, Query(
    ge=0, description="That version's changes: a revision of `id` itself (0: its creation's, what its opening "
                      "changed; none for a fork child).",
    openapi_examples={"second": {"value": 2}}), BeforeValidator(plain_digits)]
TurnParam = Annotated[int | None, Query(
    ge=0, description="That turn's changes, of `sessionId` (by default the scope's session).",
    openapi_examples={"first": {"value": 1}}), BeforeValidator(plain_digits)]
TurnSessionParam = Annotated[str | None, Query(
    alias="sessionId", min_length=1, max_length=MAX_SESSION_ID,
    description="With `turn`: the session whose turn it is (a parent's, for a turn a fork child inherits).")]
ChangesLimitParam = Annotated[int | None, Query(
    ge=1, le=MAX_HISTORY_PAGE, openapi_examples={"newest": {"value": 50}},
    description=f"With `path`: at most this many changes (1 to {MAX_HISTORY_PAGE}, default 100), the newest whose "
                "position is below `before`, oldest first; a page never splits a version."),
    BeforeValidator(plain_digits)]
FromParam = Annotated[int, Query(
    alias="from", ge=0, description="The revision of `id` to compare from (0: the state it started from; a fork "
                                    "child's: its fork point).",
    openapi_examples={"start": {"value": 0}}), BeforeValidator(plain_digits)]
ToParam = Annotated[int | None, Query(
    ge=0, description="The revision of `toId` (or `id`) to compare to; by default its current one.",
    openapi_examples={"later": {"value": 2}}), BeforeValidator(plain_digits)]
ToIdParam = Annotated[str | None, Query(
    alias="toId", min_length=1,
    description="Another resource to compare to: one the scope may read, or one of the same lineage (another "
                "branch, swipe or session of the playthrough).",
    openapi_examples={"swipe": {"value": "mvu:instance-…"}})]


async def _answer(data: dict[str, Any], entries: int) -> Response:
    if entries <= _ON_LOOP_ENTRIES:
        return json_response(data)
    body = await off_loop(lambda: json_text(data).encode())
    return Response(body, media_type="application/json")


def change_reads_router(service: MvuService) -> APIRouter:
    router = APIRouter()

    @router.get("/changes", operation_id="changes", response_model=Changes,
                responses={**problems(400, 401, 403, 404, 503), **ok(CHANGES_EXAMPLE)},
                summary="Why a value is what it is: a path's story, a version's or a turn's changes (one of "
                        "path, revision, turn)")
    async def changes(id: IdParam, scope: ScopeParam, path: PathParam = None, revision: RevisionParam = None,
                      turn: TurnParam = None, session_id: TurnSessionParam = None,
                      limit: ChangesLimitParam = None, before: BeforeParam = None) -> Response:
        answer = await service.changes(id=id, scope=parse_scope_param(scope), path=path, revision=revision,
                                       turn=turn, session_id=session_id, limit=limit, before=before)
        return await _answer(answer.to_json(), len(answer.changes))

    @router.get("/diff", operation_id="diff", response_model=StateDiff,
                responses={**problems(400, 401, 403, 404, 503), **ok(DIFF_EXAMPLE)},
                summary="What differs in stat_data between two revisions, of one resource or two of a playthrough")
    async def diff(id: IdParam, scope: ScopeParam, from_: FromParam, to: ToParam = None,
                   to_id: ToIdParam = None) -> Response:
        answer = await service.diff(id=id, scope=parse_scope_param(scope), from_revision=from_, to_revision=to,
                                    to_id=to_id)
        return await _answer(answer.to_json(), len(answer.changes))

    return router
