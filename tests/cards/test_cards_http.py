"""Card scripts over HTTP with a real ``mvu serve``: the host reports its playthrough and its card
script's grant (``PUT /mvu/playthroughs/…``, ``PUT /mvu/card-grants/…``); the script reads
``GET /mvu/snapshot``, binds with ``POST /mvu/card-binding`` and writes with ``POST /mvu/card-write``,
first through the initial scope of the empty session, then through the head message's scope."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.cards.card_support import HP_CARD_JSON
from tests.cards.wire import append, ok, problem, register, select, session, turn
from tests.http.support import MVU, Server

CARD = HP_CARD_JSON
INITIAL = {"mode": "initial", "playthroughId": "pw", "sessionId": "w1", "characterId": "hpc"}
GREETING = {**INITIAL, "mode": "greeting"}
MESSAGE = {"playthroughId": "pw", "sessionId": "w1", "nodeId": "n1", "variantId": "v1", "endEventId": 2}


def _identity(scope: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "sha256": "d" * 64, "scope": scope}


def _snapshot(client: httpx.Client, scope: Any) -> httpx.Response:
    return client.get(f"{MVU}/snapshot", params={"scope": scope if isinstance(scope, str) else json.dumps(scope)})


def _grant(client: httpx.Client, grant_id: str, scope: dict[str, Any]) -> None:
    ok(client.put(f"{MVU}/card-grants/{grant_id}", json={"sourceIdentity": _identity(scope), "scope": scope}))


def _bind(client: httpx.Client, grant_id: str, scope: dict[str, Any]) -> httpx.Response:
    return client.post(f"{MVU}/card-binding", json={"scope": scope, "grantId": grant_id,
                                                    "sourceIdentity": _identity(scope)})


def _write(client: httpx.Client, capability: str, operation_id: str, expected: int, **body: Any) -> httpx.Response:
    return client.post(f"{MVU}/card-write", json={
        "capability": capability, "operation": "patch", "value": [{"op": "delta", "path": "/hp", "value": -2}],
        "expectedRevision": expected, "operationId": operation_id, "cause": "user-interaction", **body})


def test_a_card_script_reads_binds_and_writes_the_opening_then_the_head_message(served: Server) -> None:
    with served.client() as client:
        register(client, "hpc", CARD)
        session(client, "w1")
        ok(select(client, "w1", "hpc"))
        problem(_snapshot(client, INITIAL), 403, "MVU_READ_ONLY")  # no playthrough reported yet
        ok(client.put(f"{MVU}/playthroughs/pw", json={"characterId": "hpc", "rootSessionId": "w1"}))
        greeting = ok(_snapshot(client, GREETING))
        assert greeting["variables"]["stat_data"] == {"hp": 10} and len(greeting["viewIdentity"]["selectionToken"]) \
            == 64
        problem(_bind(client, "g-initial", INITIAL), 403, "MVU_WRITE_DENIED")
        _grant(client, "g-initial", INITIAL)
        bound = ok(_bind(client, "g-initial", INITIAL))
        assert "capability" in bound and bound["snapshot"]["status"] == "available"
        replace = {"operation": "replace", "value": {"stat_data": {"hp": 7}}}
        written = ok(_write(client, bound["capability"], "seven", 0, **replace))
        assert written["revision"] == 1 and written["variables"]["stat_data"] == {"hp": 7}
        assert "ok" not in written
        answer = append(client, "w1", turn(0, 1, "_.add('hp', -1);", "m1"))
        assert answer["error"] is None
        problem(_write(client, bound["capability"], "late", 1, **replace), 403, "MVU_READ_ONLY")
        problem(_snapshot(client, INITIAL), 403, "MVU_READ_ONLY")
        assert ok(_snapshot(client, GREETING))["variables"]["stat_data"] == {"hp": 7}

        ok(client.put(f"{MVU}/playthroughs/pw", json={
            "characterId": "hpc", "rootSessionId": "w1", "head": {"nodeId": "n1", "variantId": "v1"},
            "nodes": [{"id": "n1", "variants": [{"id": "v1", "sessionId": "w1", "endEventId": 2}]}]}))
        head = ok(_snapshot(client, MESSAGE))
        assert head["variables"]["stat_data"] == {"hp": 6} and head["revision"] == head["currentRevision"] == 2
        _grant(client, "g-message", MESSAGE)
        capability = ok(_bind(client, "g-message", MESSAGE))["capability"]
        written = ok(_write(client, capability, "click", 2))
        assert written["variables"]["stat_data"] == {"hp": 4} and written["revision"] == 3
        assert ok(_write(client, capability, "click", 2)) == written
        problem(_write(client, capability, "stale", 2), 409, "REVISION_CONFLICT")
        problem(_write(client, capability, "click", 3, value=[]), 409, "MVU_IDEMPOTENCY_CONFLICT")
        facts = ok(client.get(f"{MVU}/facts", params={"id": written["resourceId"], "scope": json.dumps(
            {"sessionId": "w1"})}))
        applied = [fact for fact in facts if fact["phase"] == "applied" and fact.get("on") == "card_variable_update"]
        assert len(applied) == 2 and all(fact["configRevision"] is None for fact in applied)
        ok(client.delete(f"{MVU}/card-grants/g-message"))
        problem(_write(client, capability, "after", 3), 403, "MVU_WRITE_DENIED")
        assert ok(client.post(f"{MVU}/card-binding/revoke", json={"capability": capability})) == {"ok": True}
        assert ok(_snapshot(client, MESSAGE))["variables"]["stat_data"] == {"hp": 4}


def test_card_routes_refuse_bad_scopes_and_bodies_with_typed_problems(served: Server) -> None:
    with served.client() as client:
        problem(_snapshot(client, "x" * 4001), 400, "MVU_SCOPE")
        problem(_snapshot(client, "{not json"), 400, "MVU_SCOPE")
        problem(_snapshot(client, {**MESSAGE, "messageId": "m1"}), 400, "MVU_SCOPE")
        problem(_snapshot(client, {**GREETING, "greetingIndex": -1}), 400, "MVU_SCOPE")
        problem(_snapshot(client, [1]), 400, "MVU_SCOPE")
        problem(client.post(f"{MVU}/card-write", content=b"[" * (2 * 1024 * 1024 + 1),
                            headers={"Content-Type": "application/json"}), 413, "MVU_LIMIT")
        problem(client.post(f"{MVU}/card-write", json={"capability": "nope"}), 400, "MVU_OPERATION")
        problem(_write(client, "nope", "x", 0), 403, "MVU_WRITE_DENIED")
        problem(client.post(f"{MVU}/card-binding", json={"scope": MESSAGE, "grantId": "g",
                                                         "sourceIdentity": {"version": 1}}), 400, "MVU_SCOPE")
        problem(client.put(f"{MVU}/playthroughs/bad", json={"characterId": "c", "rootSessionId": "r",
                                                            "head": {"nodeId": "x", "variantId": "y"}}),
                400, "MVU_OPERATION")
        assert ok(client.delete(f"{MVU}/playthroughs/never")) == {"removed": False}


def test_a_greeting_view_read_over_http_binds_the_initial_scope_until_the_selection_changes(served: Server) -> None:
    with served.client() as client:
        register(client, "hpv", CARD.replace(b'"first_mes": "Hello."', b'"first_mes": "Hello.", '
                                                                    b'"alternate_greetings": ["Hi."]'))
        session(client, "w2")
        ok(select(client, "w2", "hpv"))
        ok(client.put(f"{MVU}/playthroughs/pv", json={"characterId": "hpv", "rootSessionId": "w2"}))
        greeting = {"mode": "greeting", "playthroughId": "pv", "sessionId": "w2", "characterId": "hpv",
                    "greetingIndex": 0}
        view = ok(_snapshot(client, greeting))["viewIdentity"]
        assert view["greetingIndex"] == 0
        viewed = {**greeting, "mode": "initial", "selectionToken": view["selectionToken"]}
        _grant(client, "g-view", viewed)
        capability = ok(_bind(client, "g-view", viewed))["capability"]
        assert ok(_write(client, capability, "view", 0))["revision"] == 1
        problem(_snapshot(client, {**greeting, "greetingIndex": 1}), 403, "MVU_READ_ONLY")
        problem(_snapshot(client, {**greeting, "greetingIndex": -1}), 400, "MVU_SCOPE")
        problem(_snapshot(client, {**greeting, "selectionToken": "foreign"}), 400, "MVU_SCOPE")
        problem(_snapshot(client, {**greeting, "messageId": "m"}), 400, "MVU_SCOPE")
        ok(select(client, "w2", "hpv", greetingIndex=1))
        ok(select(client, "w2", "hpv", greetingIndex=0))
        problem(_bind(client, "g-view", viewed), 403, "MVU_READ_ONLY")
        assert ok(_snapshot(client, greeting))["currentRevision"] == 1


def test_a_polled_snapshot_answers_304_until_the_state_changes(served: Server) -> None:
    with served.client() as client:
        register(client, "hpe", CARD)
        session(client, "w9")
        ok(select(client, "w9", "hpe"))
        ok(client.put(f"{MVU}/playthroughs/p9", json={"characterId": "hpe", "rootSessionId": "w9"}))
        scope = {**GREETING, "playthroughId": "p9", "sessionId": "w9", "characterId": "hpe"}
        first = _snapshot(client, scope)
        tag = first.headers["ETag"]
        assert first.status_code == 200 and tag.startswith('"r0-')
        again = client.get(f"{MVU}/snapshot", params={"scope": json.dumps(scope)}, headers={"If-None-Match": tag})
        assert again.status_code == 304 and again.content == b"" and again.headers["ETag"] == tag
        initial = {**scope, "mode": "initial"}
        _grant(client, "g9", initial)
        capability = ok(_bind(client, "g9", initial))["capability"]
        ok(_write(client, capability, "nine", 0, operation="replace", value={"stat_data": {"hp": 9}}))
        changed = client.get(f"{MVU}/snapshot", params={"scope": json.dumps(scope)}, headers={"If-None-Match": tag})
        assert changed.status_code == 200 and changed.headers["ETag"] != tag
        assert changed.json()["variables"]["stat_data"] == {"hp": 9}
