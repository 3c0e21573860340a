"""The host-fact routes a remote host reports card facts with (docs/cards.md): its playthroughs
(membership, the timeline's variants and head) and its card scripts' grants. Kept in the
server's memory (:class:`mvu_store.host.HostFacts`): report them again after a restart."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from mvu_api.http.bodies import read_model
from mvu_api.http.docs import json_request, ok, problems
from mvu_api.http.wire import json_response
from mvu_store.host import Playthrough, TimelineNode, Variant
from mvu_store.store_host import MAX_ID, MAX_NODES, StoreHost

IdPath = Annotated[str, Path(min_length=1, max_length=MAX_ID)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)


class VariantBody(_Body):
    id: str
    session_id: str = Field(alias="sessionId")
    end_event_id: int = Field(alias="endEventId", ge=0)
    session_format_version: int | None = Field(default=None, alias="sessionFormatVersion", ge=1)


class NodeBody(_Body):
    id: str
    variants: list[VariantBody] = Field(default_factory=list)


class HeadBody(_Body):
    node_id: str = Field(alias="nodeId")
    variant_id: str = Field(alias="variantId")


class PlaythroughBody(_Body):
    character_id: str = Field(alias="characterId")
    root_session_id: str = Field(alias="rootSessionId")
    nodes: list[NodeBody] = Field(default_factory=list, max_length=MAX_NODES)
    head: HeadBody | None = None


class GrantBody(_Body):
    source_identity: dict[str, Any] = Field(alias="sourceIdentity")
    scope: dict[str, Any]
    write: bool = True


def card_facts_router(host: StoreHost, *, body_timeout: float, stopping: asyncio.Event | None) -> APIRouter:
    router = APIRouter(tags=["host"])

    async def body_of(request: Request, model: type[_Body]) -> Any:
        return await read_model(request, model, seconds=body_timeout, stopping=stopping)

    @router.put("/playthroughs/{playthroughId}", operation_id="reportPlaythrough",
                responses={**problems(400, 401, 413), **ok({"playthroughId": "p1"})},
                summary="Report a playthrough as the host has it now (ends every lease taken on it before)",
                openapi_extra=json_request(PlaythroughBody))
    async def report(request: Request, playthrough_id: Annotated[str, Path(alias="playthroughId", min_length=1,
                                                                           max_length=MAX_ID)]) -> Response:
        data = await body_of(request, PlaythroughBody)
        if isinstance(data, Response):
            return data
        nodes = tuple(TimelineNode(node.id, tuple(Variant(v.id, v.session_id, v.end_event_id,
                                                          v.session_format_version) for v in node.variants))
                      for node in data.nodes)
        head = (data.head.node_id, data.head.variant_id) if data.head is not None else None
        host.facts.report_playthrough(Playthrough(playthrough_id, data.character_id, data.root_session_id, nodes,
                                                  head))
        return json_response({"playthroughId": playthrough_id})

    @router.delete("/playthroughs/{playthroughId}", operation_id="removePlaythrough",
                   responses={**problems(400, 401), **ok({"removed": True})},
                   summary="Detach a playthrough: card scopes in it are refused until it is reported again")
    async def remove(playthrough_id: Annotated[str, Path(alias="playthroughId", min_length=1,
                                                         max_length=MAX_ID)]) -> Response:
        return json_response({"removed": host.facts.remove_playthrough(playthrough_id)})

    @router.put("/card-grants/{grantId}", operation_id="grantCardWrite",
                responses={**problems(400, 401, 413), **ok({"grantId": "g1"})},
                summary="Let one enabled card script (its source identity) write through one scope",
                openapi_extra=json_request(GrantBody))
    async def grant(request: Request, grant_id: Annotated[str, Path(alias="grantId", min_length=1,
                                                                    max_length=MAX_ID)]) -> Response:
        data = await body_of(request, GrantBody)
        if isinstance(data, Response):
            return data
        host.facts.grant(grant_id, source_identity=data.source_identity, scope=data.scope, write=data.write)
        return json_response({"grantId": grant_id})

    @router.delete("/card-grants/{grantId}", operation_id="revokeCardGrant",
                   responses={**problems(400, 401), **ok({"removed": True})},
                   summary="Revoke a card script's grant: its bindings can no longer write")
    async def revoke(grant_id: Annotated[str, Path(alias="grantId", min_length=1, max_length=MAX_ID)]) -> Response:
        return json_response({"removed": host.facts.revoke_grant(grant_id)})

    return router
