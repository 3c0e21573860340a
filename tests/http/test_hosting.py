"""The host routes in-process, over a real service and StoreHost on SQLite: cards, sessions,
events (replay, conflict, gap, nothing partial), selection and seeds (docs/host-protocol.md)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mvu_api.http import create_app
from mvu_store.ledger import open_ledger
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost
from mvu_store.store_host.events import MAX_REPLY_BYTES
from tests.http.support import MVU
from tests.service.support import INITVAR, SCHEMA
from tests.test_cards import png

CARD: dict[str, Any] = {"spec": "chara_card_v3", "spec_version": "3.0", "data": {
    "name": "Hero", "first_mes": "Hello.",
    "character_book": {"entries": [{"comment": "[initvar]", "content": INITVAR, "enabled": True},
                                   {"comment": "schema", "content": SCHEMA, "enabled": True}]}}}
CREATED = 1_700_000_000_000


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    host = StoreHost(ledger)
    app = create_app(MvuService(ledger=ledger, host=host), token="t", host=host)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test",
                                     headers={"Authorization": "Bearer t"}) as http:
            yield http
    finally:
        await ledger.close()


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    return body


def turn(seq: int, number: int, text: str, message_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    said = {"source": {"kind": "user"}, "content": [{"type": "text", "text": "go"}]}
    return ([{"seq": seq, "type": "turn/start", "data": {"turn": number}},
             {"seq": seq + 1, "type": "user/message", "data": {"turn": number, "message": said}}],
            [{"seq": seq + 2, "type": "assistant/message",
              "data": {"turn": number, "message": {"id": message_id, "content": [{"type": "text", "text": text}]}}},
             {"seq": seq + 3, "type": "turn/end", "data": {"turn": number, "reason": {"kind": "completed"}}}])


async def events(client: httpx.AsyncClient, session_id: str, batch: list[dict[str, Any]]) -> httpx.Response:
    return await client.post(f"{MVU}/sessions/{session_id}/events", json={"events": batch})


async def ready(client: httpx.AsyncClient, session_id: str = "s1") -> str:
    """A registered card, a session that selected it; its instance id."""
    assert (await client.post(f"{MVU}/cards?characterId=hero", content=json.dumps(CARD),
                              headers={"Content-Type": "application/json"})).status_code == 200
    assert (await client.post(f"{MVU}/sessions", json={"sessionId": session_id, "createdAt": CREATED})).status_code \
        == 201
    selected = await client.put(f"{MVU}/sessions/{session_id}/selection", json={"characterId": "hero"})
    assert selected.status_code == 200, selected.text
    instance: str = selected.json()["instanceId"]
    return instance


async def read(client: httpx.AsyncClient, instance: str, session_id: str = "s1") -> dict[str, Any]:
    scope = json.dumps({"authority": "local", "sessionId": session_id})
    response = await client.get(f"{MVU}/resource", params={"id": instance, "scope": scope})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_card_registers_from_json_or_png_and_a_broken_one_says_why(client: httpx.AsyncClient) -> None:
    answer = await client.post(f"{MVU}/cards?characterId=hero", content=json.dumps(CARD),
                               headers={"Content-Type": "application/json"})
    assert answer.status_code == 200 and answer.json()["characterId"] == "hero"
    assert answer.json()["id"].startswith("mvu:character-") and "sourceError" not in answer.json()
    from_png = await client.post(f"{MVU}/cards?characterId=hero2", content=png(ccv3=CARD),
                                 headers={"Content-Type": "image/png"})
    assert from_png.status_code == 200 and from_png.json()["name"] == "Hero"
    broken = {**CARD, "data": {**CARD["data"], "character_book": {"entries": [
        {"comment": "[initvar]", "content": "a: [1", "enabled": True}]}}}
    failing = await client.post(f"{MVU}/cards?characterId=broken", content=json.dumps(broken),
                                headers={"Content-Type": "application/json"})
    assert failing.status_code == 200 and failing.json()["sourceError"]
    problem(await client.post(f"{MVU}/cards?characterId=x", content=b"{}", headers={"Content-Type": "text/plain"}),
            400, "MVU_OPERATION")
    problem(await client.post(f"{MVU}/cards?characterId=x", content=b"{nope",
                              headers={"Content-Type": "application/json"}), 400, "MVU_JSON")
    problem(await client.post(f"{MVU}/cards", content=json.dumps(CARD), headers={"Content-Type": "application/json"}),
            400, "MVU_OPERATION")


async def test_sessions_are_created_once_and_tell_where_they_end(client: httpx.AsyncClient) -> None:
    created = await client.post(f"{MVU}/sessions", json={"sessionId": "s1", "createdAt": CREATED})
    assert created.status_code == 201 and created.json()["lastSeq"] == -1
    again = await client.post(f"{MVU}/sessions", json={"sessionId": "s1", "createdAt": CREATED})
    assert again.status_code == 200 and again.json() == created.json()
    problem(await client.post(f"{MVU}/sessions", json={"sessionId": "s1", "createdAt": CREATED + 1}), 409,
            "MVU_ID_CONFLICT")
    for bad, field in (({"sessionId": "s2"}, "createdAt"), ({"sessionId": "s2", "createdAt": 1, "extra": 1}, "extra"),
                       ({"session_id": "s2", "createdAt": 1}, "session_id"),
                       ({"sessionId": "s2", "createdAt": 1, "formatVersion": "4"}, "formatVersion")):
        assert problem(await client.post(f"{MVU}/sessions", json=bad), 400, "MVU_OPERATION")["field"] == field
    problem(await client.post(f"{MVU}/sessions", json={"sessionId": "a/b", "createdAt": 1}), 400, "MVU_SCOPE")
    problem(await client.get(f"{MVU}/sessions/s2"), 404, "MVU_MISSING")
    appended = await events(client, "s1", turn(0, 1, "hi", "m1")[0])
    header = await client.get(f"{MVU}/sessions/s1")
    assert header.status_code == 200 and header.json()["lastSeq"] == 1
    assert header.json()["fingerprint"] == appended.json()["fingerprint"]


async def test_turns_apply_replays_do_nothing_and_conflicts_and_gaps_store_nothing(client: httpx.AsyncClient) -> None:
    instance = await ready(client)
    start, finish = turn(0, 1, "_.set('hp', 50, 70);", "m1")
    opened = await events(client, "s1", start)
    assert opened.status_code == 200 and opened.json()["appended"] == 2
    assert [c["turn"] for c in opened.json()["checkpoints"]] == [1] and opened.json()["ingest"] is None
    closed = (await events(client, "s1", finish)).json()
    assert closed["error"] is None and closed["lastSeq"] == 3
    assert [(o["resourceId"], o["status"]) for o in closed["ingest"]["outcomes"]] == [(instance, "committed")]
    assert (await read(client, instance))["content"]["stat_data"]["hp"] == 70
    replay = (await events(client, "s1", start + finish)).json()
    assert (replay["appended"], replay["replayed"], replay["checkpoints"]) == (0, 4, [])
    assert (await read(client, instance))["revision"] == 1
    before = (await client.get(f"{MVU}/sessions/s1")).json()
    changed = [{**finish[0], "data": {**finish[0]["data"], "message": {"id": "m1", "content": "other"}}}]
    assert problem(await events(client, "s1", changed), 409, "MVU_EVENT_CONFLICT")["seq"] == 2
    assert problem(await events(client, "s1", turn(5, 2, "x", "m2")[0]), 409, "MVU_EVENT_GAP")["lastSeq"] == 3
    # One bad event refuses the whole batch: the good one before it is not stored either.
    second, _ = turn(4, 2, "x", "m2")
    problem(await events(client, "s1", [second[0], {**second[1], "type": "user/said"}]), 400, "MVU_OPERATION")
    problem(await events(client, "s1", [{**second[0], "extra": True}]), 400, "MVU_OPERATION")
    problem(await client.post(f"{MVU}/sessions/s1/events", json={"events": second, "more": 1}), 400, "MVU_OPERATION")
    assert (await client.get(f"{MVU}/sessions/s1")).json() == before
    problem(await events(client, "nope", second), 404, "MVU_MISSING")


async def test_a_failed_reply_and_a_diagnostic_are_reported_per_instance(client: httpx.AsyncClient) -> None:
    instance = await ready(client)
    start, finish = turn(0, 1, "_.set('gold', 10, 'lots'); _.set('hp', 50, 60);", "m1")
    await events(client, "s1", start)
    outcome = (await events(client, "s1", finish)).json()["ingest"]["outcomes"][0]
    assert outcome["status"] == "committed" and outcome["diagnostics"]
    start, finish = turn(4, 2, "_.set('__proto__.x', 1);", "m2")
    await events(client, "s1", start)
    outcome = (await events(client, "s1", finish)).json()["ingest"]["outcomes"][0]
    assert outcome["status"] == "failed" and outcome["error"] == "MVU_PATH"
    assert (await read(client, instance))["content"]["stat_data"]["hp"] == 60


async def test_sizes_are_bounded(client: httpx.AsyncClient) -> None:
    await ready(client)
    start, finish = turn(0, 1, "é" * (MAX_REPLY_BYTES // 2) + "x", "m1")
    await events(client, "s1", start)
    assert problem(await events(client, "s1", finish), 400, "MVU_LIMIT")["limit"] == MAX_REPLY_BYTES
    huge = [{"seq": 2, "type": "user/message",
             "data": {"turn": 1, "message": {"source": {"kind": "user"}, "content": "x" * (3 * 1024 * 1024)}}}]
    problem(await events(client, "s1", huge), 413, "MVU_LIMIT")
    assert (await client.get(f"{MVU}/sessions/s1")).json()["lastSeq"] == 1


async def test_a_reply_swipe_over_the_wire_starts_from_the_swiped_turns_checkpoint(client: httpx.AsyncClient) -> None:
    await ready(client)
    first, first_end = turn(0, 1, "_.set('hp', 50, 70);", "m1")
    second, second_end = turn(4, 2, "_.set('hp', 70, 20);", "m2")
    for batch in (first, first_end, second, second_end):
        assert (await events(client, "s1", batch)).json()["error"] is None
    captured = await client.post(f"{MVU}/seeds", json={"sessionId": "s1", "kind": "reply-swipe", "atEventId": 6,
                                                       "prefixEndEventId": 2})
    assert captured.status_code == 200, captured.text
    ticket = captured.json()["ticket"]
    assert isinstance(ticket, str)
    child = {"sessionId": "s1-swipe", "createdAt": CREATED + 1, "parentSession": "s1"}
    assert (await client.post(f"{MVU}/sessions", json=child)).status_code == 201
    # The prefix ends at the reply before the swiped turn; that turn ends "forked" in the child.
    prefix = first + first_end[:1] + [{"seq": 3, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "forked"}}},
                                      {"seq": 4, "type": "session/end-seed", "data": {}}]
    assert (await events(client, "s1-swipe", prefix)).status_code == 200
    installed = await client.post(f"{MVU}/seeds/install", json={"ticket": ticket, "sessionId": "s1-swipe"})
    assert installed.status_code == 200, installed.text
    (instance,) = installed.json()["instanceIds"]
    # The swiped turn starts again from its checkpoint: hp 70, not the parent's 20.
    assert (await read(client, instance, "s1-swipe"))["content"]["stat_data"]["hp"] == 70
    again = await client.post(f"{MVU}/seeds/install", json={"ticket": ticket, "sessionId": "s1-swipe"})
    assert again.json()["instanceIds"] == [instance]
    problem(await client.post(f"{MVU}/seeds/install", json={"ticket": ticket, "sessionId": "s1"}), 400,
            "MVU_SEED_CONFLICT")
    problem(await client.post(f"{MVU}/seeds", json={"sessionId": "s1", "kind": "swipe", "atEventId": 6}), 400,
            "MVU_SEED")


async def test_a_refused_ingest_is_reported_in_the_answer_and_the_events_stay(tmp_path: Path) -> None:
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host,
                         resources=[{"id": "mvu:world", "session_ids": ["*"], "initial": {"stat_data": {"n": 0}}}])
    app = create_app(service, token="t", host=host)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test",
                                     headers={"Authorization": "Bearer t"}) as http:
            await http.post(f"{MVU}/sessions", json={"sessionId": "p", "createdAt": 1})
            await http.post(f"{MVU}/sessions", json={"sessionId": "c", "createdAt": 2, "parentSession": "p"})
            answer = await events(http, "c", turn(0, 1, "hi", "m1")[0])
            assert answer.status_code == 200 and answer.json()["appended"] == 2
            assert answer.json()["error"]["code"] == "MVU_SEED_REQUIRED"
            assert answer.json()["error"]["status"] == 400
    finally:
        await ledger.close()


async def test_names_reach_macros_per_session_and_per_call_and_the_turns_time_is_the_clock(
        client: httpx.AsyncClient) -> None:
    clocked = SCHEMA.replace("mood: z.enum", "since: z.number().prefault(() => Date.now()),\n  mood: z.enum")
    named = {**CARD, "data": {**CARD["data"], "character_book": {"entries": [
        {"comment": "[InitVar]初始化变量勿开", "content": INITVAR + "伙伴: {{user}}\n", "enabled": False},
        {"comment": "schema", "content": clocked.replace("gold:", "伙伴: z.string(),\n  gold:"), "enabled": True}]}}}
    registered = await client.post(f"{MVU}/cards?characterId=hero&at=1748822400000", content=json.dumps(named),
                                   headers={"Content-Type": "application/json"})
    assert registered.status_code == 200 and "sourceError" not in registered.json(), registered.text
    assert registered.json()["problems"] == [] and "disabled" in registered.json()["notes"][0]
    await client.post(f"{MVU}/sessions", json={"sessionId": "s1", "createdAt": CREATED})
    names = [{"seq": 0, "type": "session/names", "data": {"user": "爱丽丝", "char": "Hero"}}]
    assert (await events(client, "s1", names)).json()["error"] is None
    selected = await client.put(f"{MVU}/sessions/s1/selection", json={"characterId": "hero"})
    instance = selected.json()["instanceId"]
    content = (await read(client, instance))["content"]["stat_data"]
    assert (content["伙伴"], content["since"]) == ("爱丽丝", 1_748_822_400_000)
    start, finish = turn(1, 1, "_.set('伙伴', '{{char}}与<user>');\n_.unset('since');", "m1")
    await events(client, "s1", start)
    finish[1]["data"]["at"] = 1_748_908_800_000
    answer = await client.post(f"{MVU}/sessions/s1/events", json={"events": finish, "names": {"char": "白雪"}})
    assert answer.json()["ingest"]["outcomes"][0]["status"] == "committed", answer.text
    content = (await read(client, instance))["content"]["stat_data"]
    assert (content["伙伴"], content["since"]) == ("白雪与爱丽丝", 1_748_908_800_000)
    problem(await client.post(f"{MVU}/sessions/s1/events", json={"events": finish, "names": {"user": ""}}),
            400, "MVU_OPERATION")
    problem(await client.post(f"{MVU}/cards?characterId=h2&at=-5", content=json.dumps(named),
                              headers={"Content-Type": "application/json"}), 400, "MVU_OPERATION")


async def test_a_session_or_character_not_there_yet_is_answered_with_what_to_do(client: httpx.AsyncClient) -> None:
    scope = json.dumps({"authority": "local", "sessionId": "s1"})
    listed = problem(await client.get(f"{MVU}/resources", params={"scope": scope}), 404, "MVU_MISSING")
    assert "no session 's1'" in listed["detail"] and "POST /mvu/sessions" in listed["detail"]
    assert (await client.post(f"{MVU}/sessions", json={"sessionId": "s1", "createdAt": CREATED})).status_code == 201
    assert (await client.get(f"{MVU}/resources", params={"scope": scope})).json() == []
    selected = problem(await client.put(f"{MVU}/sessions/s1/selection", json={"characterId": "hero"}), 404,
                       "MVU_MISSING")
    assert "no card is registered for character 'hero'" in selected["detail"]
    assert "POST /mvu/cards" in selected["detail"] and "discovered" not in selected["detail"]
    assert (await client.post(f"{MVU}/cards?characterId=hero", content=json.dumps(CARD),
                              headers={"Content-Type": "application/json"})).status_code == 200
    # The card registered: the same selection now works.
    assert (await client.put(f"{MVU}/sessions/s1/selection", json={"characterId": "hero"})).status_code == 200


async def test_a_greeting_flip_over_the_wire_leaves_one_live_copy_for_every_read(client: httpx.AsyncClient) -> None:
    card = {**CARD, "data": {**CARD["data"], "alternate_greetings": ["Hello again."]}}
    assert (await client.post(f"{MVU}/cards?characterId=hero", content=json.dumps(card),
                              headers={"Content-Type": "application/json"})).status_code == 200
    assert (await client.post(f"{MVU}/sessions", json={"sessionId": "s1", "createdAt": CREATED})).status_code == 201
    copies: dict[int, str] = {}
    for index in (0, 1, 0):
        selected = await client.put(f"{MVU}/sessions/s1/selection",
                                    json={"characterId": "hero", "greetingIndex": index})
        assert selected.status_code == 200, selected.text
        copies[index] = selected.json()["instanceId"]
    live, draft = copies[0], copies[1]
    assert live != draft
    scope = {"authority": "local", "sessionId": "s1"}

    async def only_the_live_copy_is_read() -> None:
        listed = await client.get(f"{MVU}/resources", params={"scope": json.dumps(scope)})
        assert [record["id"] for record in listed.json()] == [live]
        problem(await client.get(f"{MVU}/resource", params={"id": draft, "scope": json.dumps(scope)}), 404,
                "MVU_MISSING")
        macro = "{{format_message_variable::stat_data}}"
        rendered = await client.post(f"{MVU}/prompt", json={"scope": scope, "text": macro, "preview": True})
        assert rendered.status_code == 200 and rendered.json()["id"] == live

    await only_the_live_copy_is_read()
    first, second = turn(0, 1, "_.set('hp', 70);", "m1")
    assert (await events(client, "s1", first + second)).status_code == 200
    assert (await read(client, live))["revision"] == 1
    await only_the_live_copy_is_read()
