"""``POST /mvu/prompt`` and ``GET /mvu/prompt/current``: the macro for hosts in other languages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from mvu_api.http import create_app
from mvu_store.memory_host import MemoryHost
from mvu_store.prompt import format_message_variable
from mvu_store.service import MvuService
from tests.prompt.test_request_observed import assembled_turn
from tests.service.support import PLAIN, playing

PROMPT = "/pmp-dsh-tavern/api/v1/mvu/prompt"
OBSERVED = "/pmp-dsh-tavern/api/v1/mvu/request-observed"
SCOPE = {"authority": "local", "sessionId": "s1"}
MACRO = "{{format_message_variable::stat_data}}"


@pytest.fixture
async def client(service: MvuService) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(service, token="t")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test",
                                 headers={"Authorization": "Bearer t"}) as http:
        yield http


async def current(client: httpx.AsyncClient, token: str) -> Any:
    response = await client.get(f"{PROMPT}/current", params={"token": token})
    assert response.status_code == 200, response.text
    return response.json()["current"]


async def test_entries_expand_with_the_revision_and_a_token_that_goes_stale(
        client: httpx.AsyncClient, service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    seen: list[dict[str, Any]] = []
    service.observe(seen.append)
    entries = [{"text": "状态：\n  " + MACRO}, {"text": "rules, no state"}, {"text": MACRO, "active": False}]
    response = await client.post(PROMPT, json={"scope": SCOPE, "entries": entries, "preview": True})
    assert response.status_code == 200, response.text
    body = response.json()
    stat = {"hp": 10, "items": []}
    assert body["texts"] == ["状态：\n  " + format_message_variable(stat, "  "), "rules, no state", None]
    assert (body["id"], body["revision"], body["configRevision"]) == (instance, 0, None)
    assert await current(client, body["token"]) is True
    assert {fact["phase"] for fact in seen} == {"started", "triggered"}
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 4);")
    assert await current(client, body["token"]) is False
    assert await current(client, "unknown") is False


async def test_a_template_text_without_the_macro_reads_nothing(client: httpx.AsyncClient, service: MvuService,
                                                               host: MemoryHost) -> None:
    await playing(service, host, card=PLAIN)
    seen: list[dict[str, Any]] = []
    service.observe(seen.append)
    response = await client.post(PROMPT, json={"scope": SCOPE, "text": "Hello {{user}}"})
    assert response.status_code == 200, response.text
    assert (response.json()["text"], response.json()["revision"], seen) == ("Hello {{user}}", None, [])


async def test_a_refused_state_stops_the_prompt(client: httpx.AsyncClient, service: MvuService,
                                                host: MemoryHost) -> None:
    await playing(service, host, card=PLAIN)
    service.register_usage(lambda request: None, provider_id="dsh-memory-manager")
    response = await client.post(PROMPT, json={"scope": SCOPE, "text": MACRO})
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "MVU_USAGE_DENIED"


async def test_bad_bodies_are_refused(client: httpx.AsyncClient, service: MvuService, host: MemoryHost) -> None:
    await playing(service, host, card=PLAIN)
    for body, code in (({"scope": SCOPE}, "MVU_OPERATION"),
                       ({"scope": SCOPE, "text": MACRO, "entries": []}, "MVU_OPERATION"),
                       ({"scope": {"authority": "local"}, "text": MACRO}, "MVU_SCOPE"),
                       ({"scope": SCOPE, "text": MACRO, "turn": -1}, "MVU_OPERATION"),
                       ({"scope": SCOPE, "text": MACRO, "extra": 1}, "MVU_OPERATION")):
        response = await client.post(PROMPT, json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["code"] == code, body


async def test_a_reported_model_request_gives_its_observed_facts(client: httpx.AsyncClient, service: MvuService,
                                                                host: MemoryHost) -> None:
    instance, data = await assembled_turn(service, host)
    host.append("s1", "request/assembly", data)
    answer = await client.post(OBSERVED, json={"sessionId": "s1", "messages": data["messages"]})
    assert answer.status_code == 200, answer.text
    assert [(fact["id"], fact["phase"]) for fact in answer.json()["facts"]] == [
        (instance, phase) for phase in ("started", "triggered", "applied", "completed")]
    other = await client.post(OBSERVED, json={"sessionId": "s1", "messages": []})
    assert other.json() == {"facts": []}
    refused = await client.post(OBSERVED, json={"sessionId": "s1"})
    assert refused.status_code == 400
