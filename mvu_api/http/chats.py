"""The chat routes: a SillyTavern chat file in (``POST /chats/import``) and out (``GET
/chats/{sessionId}/export``), for hosts that bring their players' chats (docs/sillytavern.md).

The upload is written to a temporary file as it arrives (a chat of any size in bounded memory;
each piece must come within the body timeout, a stalled upload is 408) and imported from there
in one unit of work on the ledger's writer, never on the event loop.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.background import BackgroundTask
from starlette.responses import FileResponse, Response

from mvu_api.http.docs import ok, problems
from mvu_api.http.hosting import SessionIdPath
from mvu_api.http.problems import BODY_TIMEOUT, problem
from mvu_api.http.wire import json_response
from mvu_store.chats import export_chat, import_chat
from mvu_store.errors import Code
from mvu_store.ledger import Ledger

MAX_CHAT_BYTES = 1024 * 1024 * 1024
"""An uploaded chat file; the ledger's budget bounds what it may store."""
_SPOOL_BYTES = 1024 * 1024
IMPORT_EXAMPLE: dict[str, Any] = {
    "sessionId": "st-3e4cc03fb09e4da960002b33", "sha256": "3e4c…", "size": 11458, "imported": True,
    "templateId": "mvu:character-…", "templateFrom": "first-recorded-state", "instanceId": "mvu:instance-…",
    "messages": 17, "states": 18, "branches": ["st-3e4cc03fb09e4da960002b33.swipe-4-0"],
    "transitions": {"agreed": 10, "differed": 1, "unchecked": 0},
    "differences": [{"message": 8, "line": 10, "swipe": 1, "paths": ["/艾琳/金币"], "count": 1}],
    "lastSeq": 34, "nextTurn": 9}


def _unlink(path: str) -> None:
    Path(path).unlink(missing_ok=True)


async def _spool(request: Request, seconds: float) -> str | Response:
    """The body in a temporary file (its path), or a 413 / 408 problem."""
    handle, name = tempfile.mkstemp(prefix="mvu-chat-", suffix=".jsonl")
    os.close(handle)
    size = 0
    pending: list[bytes] = []

    def write(chunks: list[bytes]) -> None:
        with open(name, "ab") as out:
            out.writelines(chunks)

    stream = request.stream().__aiter__()
    try:
        while True:
            try:
                chunk = await asyncio.wait_for(anext(stream), seconds)
            except StopAsyncIteration:
                break
            except TimeoutError:
                await asyncio.to_thread(_unlink, name)
                return problem(408, BODY_TIMEOUT, f"the chat file stalled for {seconds:g} s; nothing was written",
                               headers={"Connection": "close"})
            size += len(chunk)
            if size > MAX_CHAT_BYTES:
                await asyncio.to_thread(_unlink, name)
                return problem(413, Code.LIMIT, f"a chat file is at most {MAX_CHAT_BYTES} bytes",
                               limit=MAX_CHAT_BYTES)
            pending.append(chunk)
            if sum(map(len, pending)) >= _SPOOL_BYTES:
                await asyncio.to_thread(write, pending)
                pending = []
        await asyncio.to_thread(write, pending)
    except BaseException:
        await asyncio.to_thread(_unlink, name)
        raise
    return name


def chats_router(ledger: Ledger, *, body_timeout: float) -> APIRouter:
    router = APIRouter(tags=["chats"])

    @router.post("/chats/import", operation_id="importChat",
                 responses={**problems(400, 401, 404, 409, 413, 503), **ok(IMPORT_EXAMPLE)},
                 summary="Import a SillyTavern chat file (.jsonl, the request body): one session, every recorded "
                         "state a version, each reply checked; the same file again changes nothing",
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/jsonl": {"schema": {"type": "string", "format": "binary"}}}}})
    async def import_(
        request: Request,
        session_id: Annotated[str | None, Query(alias="sessionId", description="The session to create (default: "
                                                "st- and the file's digest)")] = None,
        character_id: Annotated[str | None, Query(alias="characterId", description="A registered card (POST "
                                                  "/cards) whose declaration checks and governs the chat")] = None,
    ) -> Response:
        request.state.write = True
        spooled = await _spool(request, body_timeout)
        if isinstance(spooled, Response):
            return spooled
        try:
            summary = await import_chat(ledger, spooled, character_id=character_id, session_id=session_id)
        finally:
            await asyncio.to_thread(_unlink, spooled)
        return json_response(summary.to_dict())

    @router.get("/chats/{sessionId}/export", operation_id="exportChat",
                responses={**problems(400, 401, 404), 200: {"description": "The chat file", "content": {
                    "application/jsonl": {"schema": {"type": "string", "format": "binary"}}}}},
                summary="A session as a SillyTavern chat file: its messages, each with the variables "
                        "MagVarUpdate keeps")
    async def export(session_id: SessionIdPath) -> Response:
        handle, name = tempfile.mkstemp(prefix="mvu-chat-", suffix=".jsonl")
        os.close(handle)
        try:
            await export_chat(ledger, session_id, name)
        except BaseException:
            await asyncio.to_thread(_unlink, name)
            raise
        return FileResponse(name, media_type="application/jsonl", filename=f"{session_id}.jsonl",
                            background=BackgroundTask(_unlink, name))

    return router
