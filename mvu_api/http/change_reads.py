"""The routes that explain a state: ``/changes`` (a path's story, a version's or a turn's changes)
and ``/diff`` (what differs between two points of a playthrough).

Each parses its query and answers with ``MvuService.changes_json`` or ``MvuService.diff_json``
(scoped and refused as ``/history`` is): the camelCase JSON of ``Changes`` / ``StateDiff``, which
the service writes from the rows (off the loop when it is long), not through the models, and
keeps until the resource's head moves. Each answer has a strong ETag, and ``If-None-Match`` with
it answers 304, as ``/resource`` does.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BeforeValidator
from starlette.responses import Response

from mvu_api.http.docs import CHANGES_EXAMPLE, DIFF_EXAMPLE, ok, problems
from mvu_api.http.reads import (
    IF_NONE_MATCH,
    MAX_HISTORY_PAGE,
    NOT_MODIFIED,
    BeforeParam,
    IdParam,
    ScopeParam,
    plain_digits,
)
from mvu_api.http.wire import conditional_response, parse_scope_param
from mvu_store.service import MAX_SESSION_ID, Changes, MvuService, StateDiff

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


def change_reads_router(service: MvuService) -> APIRouter:
    router = APIRouter()

    @router.get("/changes", operation_id="changes", response_model=Changes,
                responses={**problems(400, 401, 403, 404, 503), **ok(CHANGES_EXAMPLE), **NOT_MODIFIED},
                summary="Why a value is what it is: a path's story, a version's or a turn's changes (one of "
                        "path, revision, turn); its ETag names the answer",
                openapi_extra={"parameters": [IF_NONE_MATCH]})
    async def changes(request: Request, id: IdParam, scope: ScopeParam, path: PathParam = None,
                      revision: RevisionParam = None, turn: TurnParam = None, session_id: TurnSessionParam = None,
                      limit: ChangesLimitParam = None, before: BeforeParam = None) -> Response:
        answer = await service.changes_json(
            id=id, scope=parse_scope_param(scope), path=path, revision=revision, turn=turn, session_id=session_id,
            limit=limit, before=before)
        return conditional_response(request.headers.get("if-none-match"), answer.body, answer.revision,
                                    answer.digest)

    @router.get("/diff", operation_id="diff", response_model=StateDiff,
                responses={**problems(400, 401, 403, 404, 503), **ok(DIFF_EXAMPLE), **NOT_MODIFIED},
                summary="What differs in stat_data between two revisions, of one resource or two of a "
                        "playthrough; its ETag names the answer",
                openapi_extra={"parameters": [IF_NONE_MATCH]})
    async def diff(request: Request, id: IdParam, scope: ScopeParam, from_: FromParam, to: ToParam = None,
                   to_id: ToIdParam = None) -> Response:
        answer = await service.diff_json(id=id, scope=parse_scope_param(scope), from_revision=from_,
                                         to_revision=to, to_id=to_id)
        return conditional_response(request.headers.get("if-none-match"), answer.body, answer.revision,
                                    answer.digest)

    return router
