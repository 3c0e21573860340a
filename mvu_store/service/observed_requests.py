"""``dsh-request-observed`` facts: the state reached a model request (A-4).

The host reports the request it gives the model (its messages); the session's last recorded
``request/assembly`` is compared with it. Only when an assembler the original trusts recorded it
and its messages are the very ones reported does each state block a node of it carries give the
facts ``started``, ``triggered``, ``applied`` and ``completed`` with ``detail:
'dsh-request-observed'``: the state was in the request. That is all they say: not that the
network send succeeded, nor anything of the request's text (facts are content-free, A-5).
"""

from __future__ import annotations

from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import event_turn
from mvu_store.jsonvalue import JsonValue
from mvu_store.prompt.observed import OWNERS, evidence, messages_digest
from mvu_store.service.context import ObserveContext, Signal, check_signal
from mvu_store.service.models import check_session_id
from mvu_store.service.trigger_facts import Facts

DETAIL = "dsh-request-observed"
_PHASES = ("started", "triggered", "applied", "completed")


async def observe_request(ctx: ObserveContext, session_id: Any, messages: Any,
                          signal: Signal | None) -> list[dict[str, JsonValue]]:
    """The facts the reported ``messages`` prove (none when they are not the recorded ones)."""
    check_signal(signal)
    check_session_id(session_id)
    if not isinstance(messages, list):
        raise MvuError(Code.OPERATION, "messages must be the model request's list of messages", field="messages")
    log = await ctx.sessions.log(session_id)
    if log is None:
        raise MvuError(Code.SESSION_IDENTITY, f"the host has no durable session {session_id!r}",
                       session_id=session_id)
    recorded = next((event for event in reversed(log.snapshot().events) if event.type == "request/assembly"), None)
    if recorded is None:
        return []
    found = evidence(recorded.data)
    if found.owner not in OWNERS or found.messages_sha256 != messages_digest(messages):
        return []
    turn = event_turn(recorded)
    request_id = f"{session_id}:{recorded.seq}"
    facts = Facts(sessionId=session_id, requestId=request_id, turn=turn if type(turn) is int else None,
                  turnKind="unknown", on="before_model_request", detail=DETAIL)
    for block in found.observed:
        for phase in _PHASES:
            facts.add(phase, id=block.get("resourceId"), eventId=f"{request_id}:{block.get('blockId')}",
                      revision=block.get("revision"), configRevision=block.get("configRevision"))
    check_signal(signal)
    await facts.write(ctx.ledger, ctx.usage)
    return facts.records
