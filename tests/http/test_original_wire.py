"""The original's transport under ``…/api/v1/original/mvu``: a client ported from it works as is.

Each answer is checked against the original's shape (``{ok, records | record | versions}``,
``{ok: false, code, error}`` with its statuses, ``record: null`` for an unknown id, ``before`` on
every history entry, ``unavailable`` and ``maxRecords`` on facts)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from mvu_store.host import Playthrough
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.prompt.test_http import client
from tests.service.conftest import host, service
from tests.service.support import HERO, playing

__all__ = ["client", "host", "service"]

ORIGINAL = "/pmp-dsh-tavern/api/v1/original/mvu"
SCOPE = json.dumps({"authority": "local", "sessionId": "s1"})
FIXED = "MVU operation rejected for this binding"


async def _get(client: httpx.AsyncClient, action: str, **query: str) -> httpx.Response:
    return await client.get(f"{ORIGINAL}/{action}", params={"scope": SCOPE, **query})


def _update(instance: str, hp: Any, expected: int, operation_id: str) -> dict[str, Any]:
    return {"id": instance, "scope": {"authority": "local", "sessionId": "s1"}, "expectedRevision": expected,
            "operationId": operation_id, "content": {"stat_data": {"hp": hp, "gold": 10}}}


async def test_reads_answer_in_the_original_envelopes(client: httpx.AsyncClient, service: MvuService,
                                                      host: MemoryHost) -> None:
    instance = await playing(service, host, card=HERO)
    await host.turn("s1", turn=1, user="go", reply="_.set('hp', 70);")
    listed = (await _get(client, "resources")).json()
    assert listed["ok"] is True and [record["id"] for record in listed["records"]] == [instance]
    found = (await _get(client, "resource", id=instance)).json()
    assert found["ok"] is True and found["record"]["content"]["stat_data"]["hp"] == 70
    unknown = await _get(client, "resource", id="mvu:nobody")
    assert (unknown.status_code, unknown.json()) == (200, {"ok": True, "record": None})
    versions = (await _get(client, "history", id=instance)).json()
    assert versions["ok"] is True and [entry["beforeAvailable"] for entry in versions["versions"]] == [True]
    assert versions["versions"][0]["before"]["hp"] == 50
    facts = (await _get(client, "facts", id=instance)).json()
    assert (facts["ok"], facts["unavailable"], facts["maxRecords"]) == (True, False, 2048)
    assert "applied" in [fact["phase"] for fact in facts["records"]]


async def test_an_edit_and_its_refusals_answer_as_the_original(client: httpx.AsyncClient, service: MvuService,
                                                               host: MemoryHost) -> None:
    instance = await playing(service, host, card=HERO)
    saved = await client.post(f"{ORIGINAL}/update", json=_update(instance, 40, 0, "edit"))
    assert saved.status_code == 200 and "ok" not in saved.json()
    assert (saved.json()["revision"], saved.json()["content"]["stat_data"]["hp"]) == (1, 40)
    stale = await client.post(f"{ORIGINAL}/update", json=_update(instance, 41, 0, "stale"))
    assert (stale.status_code, stale.json()) == (409, {"ok": False, "code": "REVISION_CONFLICT", "error": FIXED})
    # Only an edit's content refusals tell their message.
    bad = await client.post(f"{ORIGINAL}/update", json=_update(instance, 5, 1, "bad") | {
        "content": {"stat_data": {"hp": 5, "gold": -1}}})
    assert bad.status_code == 400 and bad.json()["code"] == "MVU_SCHEMA" and bad.json()["error"] != FIXED
    missing = await client.post(f"{ORIGINAL}/update", json=_update("mvu:nobody", 1, 0, "x"))
    assert (missing.status_code, missing.json()["code"]) == (403, "MVU_READ_ONLY")


async def test_transport_refusals_answer_as_the_original(client: httpx.AsyncClient, service: MvuService,
                                                         host: MemoryHost) -> None:
    await playing(service, host, card=HERO)
    wrong = await client.post(f"{ORIGINAL}/resources")
    assert (wrong.status_code, wrong.json()["code"]) == (405, "METHOD_NOT_ALLOWED")
    malformed = await client.get(f"{ORIGINAL}/resources", params={"scope": "{"})
    assert (malformed.status_code, malformed.json()) == (400, {"ok": False, "code": "MVU_SCOPE", "error": FIXED})
    no_scope = await client.get(f"{ORIGINAL}/resources")
    assert (no_scope.status_code, no_scope.json()["code"]) == (400, "MVU_SCOPE")
    # An id that is no 'mvu:' resource id is MVU_SCOPE there, not an unknown record.
    for action in ("resource", "history", "facts"):
        odd = await _get(client, action, id="not an id")
        assert (odd.status_code, odd.json()["code"]) == (400, "MVU_SCOPE"), action
    odd_edit = await client.post(f"{ORIGINAL}/update", json=_update("mvu:" + "x" * 161, 1, 0, "e"))
    assert (odd_edit.status_code, odd_edit.json()["code"]) == (400, "MVU_SCOPE")
    # A scope over 4,000 characters is MVU_SCOPE there (this API's own routes say MVU_LIMIT).
    padded = json.dumps({"authority": "local", "sessionId": "s1", "messageId": "m" * 4_000})
    for action in ("resources", "resource", "snapshot"):
        long = await client.get(f"{ORIGINAL}/{action}", params={"scope": padded, "id": "mvu:x"})
        assert (long.status_code, long.json()["code"]) == (400, "MVU_SCOPE"), action
    denied = await client.post(f"{ORIGINAL}/card-write", json={
        "capability": "0b7c4d7e-0000-4000-8000-000000000000", "operation": "patch", "value": [],
        "expectedRevision": 0, "operationId": "op", "cause": "script"})
    assert (denied.status_code, denied.json()) == (403, {"ok": False, "code": "MVU_WRITE_DENIED", "error": FIXED})
    revoked = await client.post(f"{ORIGINAL}/card-binding/revoke", json={"capability": "anything"})
    assert revoked.json() == {"ok": True}
    unauthenticated = await client.get(f"{ORIGINAL}/resources", params={"scope": SCOPE},
                                       headers={"Authorization": "Bearer wrong"})
    assert unauthenticated.status_code == 401


async def test_card_routes_answer_the_bare_shapes_under_the_original_prefix(client: httpx.AsyncClient,
                                                                           service: MvuService,
                                                                           host: MemoryHost) -> None:
    await service.discover(definition={"character_id": "c", "name": "C", "initvar": ["hp: 10\n"]})
    host.create_session("s", created_at=1000)
    await service.select_character(session_id="s", character_id="c")
    scope = {"mode": "initial", "playthroughId": "p", "sessionId": "s", "characterId": "c"}
    identity = {"version": 1, "sha256": "c" * 64, "scope": scope}
    host.facts.report_playthrough(Playthrough("p", "c", "s"))
    host.facts.grant("grant", source_identity=identity, scope=scope)
    read = await client.get(f"{ORIGINAL}/snapshot", params={"scope": json.dumps(scope)})
    assert read.status_code == 200 and "ok" not in read.json() and read.json()["revision"] == 0
    bound = (await client.post(f"{ORIGINAL}/card-binding", json={
        "scope": scope, "grantId": "grant", "sourceIdentity": identity,
        "bindingId": "0b7c4d7e-0000-4000-8000-000000000001"})).json()
    assert bound["capability"] == "0b7c4d7e-0000-4000-8000-000000000001" and bound["snapshot"]["revision"] == 0
    written = await client.post(f"{ORIGINAL}/card-write", json={
        "capability": bound["capability"], "operation": "replace", "value": {"stat_data": {"hp": 4}},
        "expectedRevision": 0, "operationId": "four", "cause": "user-interaction"})
    assert written.status_code == 200 and written.json()["variables"]["stat_data"] == {"hp": 4}
    stale = await client.post(f"{ORIGINAL}/card-write", json={
        "capability": bound["capability"], "operation": "replace", "value": {"stat_data": {"hp": 5}},
        "expectedRevision": 0, "operationId": "five", "cause": "user-interaction"})
    assert (stale.status_code, stale.json()) == (409, {"ok": False, "code": "REVISION_CONFLICT", "error": FIXED})
    greeting = await client.post(f"{ORIGINAL}/card-binding", json={
        "scope": {**scope, "mode": "greeting"}, "grantId": "grant", "sourceIdentity": identity})
    assert (greeting.status_code, greeting.json()["code"]) == (403, "MVU_READ_ONLY")
