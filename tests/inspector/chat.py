"""Chats played into a real ``mvu serve`` through its host routes, as a chat program would."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from mvu_store.host import turn_events
from tests.http.support import MVU


def card(name: str, initvar: str, schema: str | None = None) -> dict[str, Any]:
    """A SillyTavern v3 card: the starting state in an ``[initvar]`` entry, a Zod declaration in an
    enabled Tavern Helper script when ``schema`` is given."""
    scripts = [{"type": "script", "enabled": True, "name": "MVU schema", "id": f"{name}-schema",
                "content": schema}] if schema else []
    return {"spec": "chara_card_v3", "spec_version": "3.0", "data": {
        "name": name, "description": "", "first_mes": "",
        "extensions": {"tavern_helper": {"scripts": scripts}},
        "character_book": {"name": name, "entries": [
            {"id": 0, "keys": [], "comment": "[initvar] starting state", "content": initvar, "enabled": True}]}}}


def register(client: httpx.Client, character_id: str, body: dict[str, Any]) -> None:
    answer = client.post(f"{MVU}/cards", params={"characterId": character_id}, content=json.dumps(body),
                         headers={"Content-Type": "application/json"})
    assert answer.status_code == 200 and answer.json().get("sourceError") is None, answer.text


@dataclass
class Chat:
    client: httpx.Client
    session_id: str
    seq: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    """Every event sent, in order."""

    @classmethod
    def open(cls, client: httpx.Client, session_id: str, character_id: str) -> Chat:
        created = client.post(f"{MVU}/sessions", json={"sessionId": session_id, "createdAt": 1767225600000})
        assert created.status_code == 201, created.text
        selected = client.put(f"{MVU}/sessions/{session_id}/selection", json={"characterId": character_id})
        assert selected.status_code == 200 and selected.json()["instanceId"], selected.text
        return cls(client, session_id)

    def send(self, pairs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        events = [{"seq": self.seq + n, "type": kind, "data": data} for n, (kind, data) in enumerate(pairs)]
        answer = self.client.post(f"{MVU}/sessions/{self.session_id}/events", json={"events": events})
        assert answer.status_code == 200 and answer.json()["error"] is None, answer.text
        self.seq += len(events)
        self.events += events
        result: dict[str, Any] = answer.json()
        return result

    def start(self, turn: int, user: str = "go") -> None:
        """The user sent a message: the turn runs until :meth:`finish`."""
        request, _ = turn_events(turn=turn, user=user, reply="", message_id="")
        self.send(request)

    def finish(self, turn: int, reply: str) -> dict[str, Any]:
        _, answer = turn_events(turn=turn, user="", reply=reply, message_id=f"{self.session_id}-m{turn}")
        return self.send(answer)

    def play(self, turn: int, reply: str, user: str = "go") -> dict[str, Any]:
        self.start(turn, user)
        return self.finish(turn, reply)

    def fork(self, child_id: str) -> Chat:
        """A branch at the last reply, as a host makes one: the seed captured first, then the
        child with the copied prefix, then the seed installed."""
        reply = max(e["seq"] for e in self.events if e["type"] == "assistant/message")
        ticket = self.client.post(f"{MVU}/seeds", json={"sessionId": self.session_id, "kind": "fork",
                                                          "atEventId": reply})
        assert ticket.status_code == 200 and ticket.json()["ticket"], ticket.text
        created = self.client.post(f"{MVU}/sessions", json={"sessionId": child_id, "createdAt": 1767225700000,
                                                             "parentSession": self.session_id})
        assert created.status_code == 201, created.text
        child = Chat(self.client, child_id)
        copied = [e for e in self.events if e["seq"] <= reply]
        last_turn = copied[-1]["data"]["turn"]
        child.send([(e["type"], e["data"]) for e in copied] + [
            ("turn/end", {"turn": last_turn, "reason": {"kind": "forked"}}), ("session/end-seed", {})])
        installed = self.client.post(f"{MVU}/seeds/install", json={"ticket": ticket.json()["ticket"],
                                                                    "sessionId": child_id})
        assert installed.status_code == 200 and installed.json()["instanceIds"], installed.text
        return child

    def instance(self) -> str:
        [record] = [r for r in self.client.get(f"{MVU}/resources", params={"scope": json.dumps(
            {"authority": "local", "sessionId": self.session_id})}).json() if r["id"].startswith("mvu:instance-")]
        return str(record["id"])
