"""Three reads the inspector page needs and the trace routes do not give: which sessions there
are, a session's turns with the one still running (its ``turn/start`` came, its ``turn/end`` not
yet), and the reply a turn ended with, read as the turn read it (its text and the commands found
in it, for the page to mark each with its outcome). Everything else the page shows it derives
from ``/resources``, ``/resource``, ``/history`` and ``/facts``. They sit beside the host routes
(``/mvu/inspector/…``), behind the same token or the page's sign-in, and are documented in
docs/host-protocol.md.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path
from starlette.responses import Response

from mvu_api.http.docs import TURN_REPLY_EXAMPLE, ok, problems
from mvu_api.http.hosting import SessionIdPath, session_json, session_missing
from mvu_api.http.wire import json_response
from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionEvent
from mvu_store.service import off_loop, turn_reply
from mvu_store.store_host import StoreHost

MAX_TURN = 2**53 - 1
"""The largest turn number a host can write (JavaScript's safe integers)."""


def turns_of(events: tuple[SessionEvent, ...]) -> list[dict[str, Any]]:
    """Each turn the events start, in order: where it starts and ends and how it ended (``end``
    is the ``turn/end`` reason's kind, None while the turn runs)."""
    turns: dict[int, dict[str, Any]] = {}
    for event in events:
        turn = event.data.get("turn")
        if type(turn) is not int:
            continue
        if event.type == "turn/start":
            turns[turn] = {"turn": turn, "startSeq": event.seq, "endSeq": None, "end": None, "running": True}
        elif event.type == "turn/end" and turn in turns:
            reason = event.data.get("reason")
            kind = reason.get("kind") if isinstance(reason, dict) else None
            turns[turn].update(endSeq=event.seq, end=kind if isinstance(kind, str) else None, running=False)
    return list(turns.values())


def inspector_router(host: StoreHost) -> APIRouter:
    router = APIRouter(prefix="/inspector", tags=["inspector"])

    @router.get("/sessions", operation_id="inspectorSessions", responses=problems(401),
                summary="Every session the store keeps, by id (for the inspector page)")
    async def sessions() -> Response:
        stored = [await host.session(session_id) for session_id in await host.ledger.host_session_ids()]
        return json_response([session_json(found) for found in stored if found is not None])

    @router.get("/sessions/{sessionId}/turns", operation_id="inspectorTurns", responses=problems(400, 401, 404),
                summary="A session's turns, the running one marked (for the inspector page)")
    async def turns(session_id: SessionIdPath) -> Response:
        snapshot = await host.inspect(session_id)
        if snapshot is None:
            raise session_missing(session_id)
        listed = turns_of(snapshot.events)
        return json_response({"sessionId": session_id, "lastSeq": snapshot.last_seq, "turns": listed,
                              "runningTurn": next((t["turn"] for t in listed if t["running"]), None)})

    @router.get("/sessions/{sessionId}/turns/{turn}/reply", operation_id="inspectorTurnReply",
                responses={**problems(400, 401, 404), **ok(TURN_REPLY_EXAMPLE)},
                summary="The reply a turn ended with and the commands found in it (for the inspector page)")
    async def reply(session_id: SessionIdPath, turn: int = Path(ge=0, le=MAX_TURN)) -> Response:
        snapshot = await host.inspect(session_id)
        if snapshot is None:
            raise session_missing(session_id)
        found = await off_loop(lambda: turn_reply(snapshot, turn))
        if found is None:
            raise MvuError(Code.MISSING, f"turn {turn} of session {session_id!r} has no reply: it has not ended, or "
                           "ended without an assistant message (GET /inspector/sessions/{sessionId}/turns lists "
                           "its turns)",
                           session_id=session_id, turn=turn)
        return json_response({"sessionId": session_id, **found.to_json()})

    return router
