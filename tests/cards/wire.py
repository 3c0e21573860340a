"""Calls of the HTTP card tests against a real server: cards, sessions, events and selections."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.http.support import MVU


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    return body


def register(client: httpx.Client, character_id: str, card: bytes) -> Any:
    return ok(client.post(f"{MVU}/cards", params={"characterId": character_id}, content=card,
                          headers={"Content-Type": "application/json"}))


def session(client: httpx.Client, session_id: str, events: list[dict[str, Any]] | None = None) -> None:
    ok(client.post(f"{MVU}/sessions", json={"sessionId": session_id, "createdAt": 1000}), 201)
    if events:
        append(client, session_id, events)


def append(client: httpx.Client, session_id: str, events: list[dict[str, Any]]) -> Any:
    return ok(client.post(f"{MVU}/sessions/{session_id}/events", json={"events": events}))


def select(client: httpx.Client, session_id: str, character_id: str | None, **extra: Any) -> httpx.Response:
    return client.put(f"{MVU}/sessions/{session_id}/selection", json={"characterId": character_id, **extra})


def record(client: httpx.Client, resource_id: str, session_id: str) -> Any:
    scope = json.dumps({"authority": "local", "sessionId": session_id})
    return ok(client.get(f"{MVU}/resource", params={"id": resource_id, "scope": scope}))


def turn(seq: int, number: int, reply: str, message_id: str) -> list[dict[str, Any]]:
    said = {"source": {"kind": "user"}, "content": [{"type": "text", "text": "go"}]}
    answer = {"id": message_id, "content": [{"type": "text", "text": reply}]}
    return [{"seq": seq, "type": "turn/start", "data": {"turn": number}},
            {"seq": seq + 1, "type": "user/message", "data": {"turn": number, "message": said}},
            {"seq": seq + 2, "type": "assistant/message", "data": {"turn": number, "message": answer}},
            {"seq": seq + 3, "type": "turn/end", "data": {"turn": number, "reason": {"kind": "completed"}}}]
