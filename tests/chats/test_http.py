"""The chat routes in-process over a real service and StoreHost: import, continue over the host
routes, the inspector's reads, export; refusals as problems, nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from mvu_api.http.app import OPENAPI_PATH
from tests.chats.synthetic import ChatSpec, chat_lines, chat_text
from tests.chats.test_cli import card_file
from tests.http import test_hosting
from tests.http.support import MVU

JSONL = {"Content-Type": "application/jsonl"}
client = test_hosting.client
"""The fixture of the host routes' tests: the app in-process over a real service and StoreHost."""


async def _get(client: httpx.AsyncClient, path: str, **params: str) -> Any:
    response = await client.get(f"{MVU}{path}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_import_continue_inspect_and_export_over_http(client: httpx.AsyncClient) -> None:
    spec = ChatSpec(language="zh", turns=4, edited=(3,))
    original = chat_text(chat_lines(spec))
    response = await client.post(f"{MVU}/chats/import", params={"sessionId": "imported"}, content=original,
                                 headers=JSONL)
    assert response.status_code == 200, response.text
    summary = response.json()
    assert summary["sessionId"] == "imported" and summary["transitions"]["differed"] == 1
    again = await client.post(f"{MVU}/chats/import", params={"sessionId": "imported"}, content=original,
                              headers=JSONL)
    assert again.json() == {**summary, "imported": False}

    # A host plays the next turn over the host routes: it applies to the last recorded state.
    seq, turn = summary["lastSeq"] + 1, summary["nextTurn"]
    said = {"source": {"kind": "user"}, "content": [{"type": "text", "text": "再来"}]}
    reply = {"id": "m-next", "content": [{"type": "text", "text": "_.add('艾琳.金币', 7);//赏"}]}
    batch = [{"seq": seq, "type": "turn/start", "data": {"turn": turn}},
             {"seq": seq + 1, "type": "user/message", "data": {"turn": turn, "message": said}},
             {"seq": seq + 2, "type": "assistant/message", "data": {"turn": turn, "message": reply}},
             {"seq": seq + 3, "type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}}]
    fed = await client.post(f"{MVU}/sessions/imported/events", json={"events": batch})
    assert fed.status_code == 200, fed.text
    scope = json.dumps({"authority": "local", "sessionId": "imported"})
    record = await _get(client, "/resource", id=summary["instanceId"], scope=scope)
    last = chat_lines(spec)[-1]["variables"][-1]["stat_data"]
    assert record["content"]["stat_data"]["艾琳"]["金币"] == last["艾琳"]["金币"] + 7

    # The inspector's reads show it like any other chat.
    sessions = {session["sessionId"] for session in await _get(client, "/inspector/sessions")}
    assert {"imported", *summary["branches"]} <= sessions
    turns = await _get(client, "/inspector/sessions/imported/turns")
    assert [item["turn"] for item in turns["turns"]] == list(range(turn + 1)) and turns["runningTurn"] is None
    history = await _get(client, "/history", id=summary["instanceId"], scope=scope)
    shown = summary["states"] - len(summary["branches"])  # the branches' states are in their own sessions
    assert [entry["kind"] for entry in history] == ["import"] * shown + ["reply"]
    listed = await _get(client, "/resources", scope=scope)
    assert [item["id"] for item in listed] == [summary["instanceId"]]

    exported = await client.get(f"{MVU}/chats/imported/export")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("application/jsonl")
    lines = exported.content.splitlines()
    assert lines[:-2] == original.splitlines() and len(lines) == len(original.splitlines()) + 2


async def test_a_refused_file_is_a_problem_and_writes_nothing(client: httpx.AsyncClient) -> None:
    lines = chat_text(chat_lines(ChatSpec(language="en", turns=3))).splitlines()
    lines[4] = b'{"mes": "x", "swipes": ["x"], "swipe_id": 1}'
    response = await client.post(f"{MVU}/chats/import", params={"sessionId": "bad"}, content=b"\n".join(lines),
                                 headers=JSONL)
    assert response.status_code == 400 and response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "MVU_JSON" and body["line"] == 5
    assert await _get(client, "/inspector/sessions") == []
    missing = await client.get(f"{MVU}/chats/bad/export")
    assert missing.status_code == 404 and missing.json()["code"] == "MVU_MISSING"
    unknown = await client.post(f"{MVU}/chats/import", params={"characterId": "nobody"}, content=b"\n".join(lines),
                                headers=JSONL)
    assert unknown.status_code == 404 and unknown.json()["code"] == "MVU_MISSING"


async def test_the_openapi_document_names_the_chat_routes(client: httpx.AsyncClient) -> None:
    response = await client.get(OPENAPI_PATH)
    assert response.status_code == 200
    document = response.json()
    paths = document["paths"]
    assert "post" in paths[f"{MVU}/chats/import"] and "get" in paths[f"{MVU}/chats/{{sessionId}}/export"]


async def test_a_registered_card_checks_and_governs_an_imported_chat(client: httpx.AsyncClient,
                                                                      tmp_path: Path) -> None:
    card = json.loads(card_file(tmp_path / "erin.json").read_text())
    registered = await client.post(f"{MVU}/cards?characterId=erin", content=json.dumps(card),
                                   headers={"Content-Type": "application/json"})
    assert registered.status_code == 200, registered.text
    chat = chat_text(chat_lines(ChatSpec(language="en", turns=2, gap=0)))
    response = await client.post(f"{MVU}/chats/import", params={"characterId": "erin", "sessionId": "carded"},
                                 content=chat, headers=JSONL)
    assert response.status_code == 200, response.text
    summary = response.json()
    assert summary["templateFrom"] == "card" and summary["templateId"] == registered.json()["id"]
    assert summary["transitions"] == {"agreed": 3, "differed": 0, "unchecked": 1}
