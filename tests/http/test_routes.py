"""Each route against a real ``mvu serve`` process: auth, reads, edits, conflicts, replays,
budgets, legacy and errored sources, malformed scopes and bodies."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx
import pytest

from tests.http.support import API, MVU, SHARED, Seeded, Server, scope

PROBLEM = "application/problem+json"


def q(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def problem_of(response: httpx.Response, status: int, code: str | None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == status and isinstance(body["title"], str) and isinstance(body["type"], str)
    assert body.get("code") == code, body
    return body


@pytest.fixture
def client(server: Server) -> httpx.Client:
    return server.client()


def edit(client: httpx.Client, resource_id: str, session: str | None, stat: dict[str, Any], *,
         expected: int | None = None, operation: str | None = None, headers: dict[str, str] | None = None,
         **extra: Any) -> httpx.Response:
    body: dict[str, Any] = {"id": resource_id, "scope": scope(session), "content": {"stat_data": stat}, **extra}
    if expected is not None:
        body["expectedRevision"] = expected
    if operation is not None:
        body["operationId"] = operation
    return client.post(f"{MVU}/update", json=body, headers=headers)


# -- authentication ------------------------------------------------------------------------------


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Bearertest-token-0123456789", "Basic abc", "",
                                    "Bearer", "Basic test-token-0123456789"])
@pytest.mark.parametrize("path", [f"{MVU}/resources?scope=%7B%7D", f"{MVU}/resource?id=mvu:world-0&scope=%7B%7D",
                                  f"{MVU}/update", f"{API}/openapi.json", "/nowhere", f"{MVU}/history"])
def test_every_route_needs_the_token_and_learns_nothing_without_it(server: Server, header: str | None,
                                                                   path: str) -> None:
    headers = {} if header is None else {"Authorization": header}
    response = httpx.get(f"{server.base}{path}", headers=headers)
    body = problem_of(response, 401, "MVU_UNAUTHORIZED")
    assert set(body) == {"type", "title", "status", "detail", "code"}
    assert "mvu:" not in response.text
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer", "bEaReR"])
def test_the_authorization_scheme_is_case_insensitive(server: Server, scheme: str) -> None:
    response = httpx.get(f"{server.base}{API}/openapi.json", headers={"Authorization": f"{scheme} {server.token}"})
    assert response.status_code == 200, response.text


def test_the_server_binds_loopback(server: Server) -> None:
    assert server.base.startswith("http://127.0.0.1:")
    assert any(line.startswith("  token:    from --token") for line in server.lines)


# -- reads ---------------------------------------------------------------------------------------


def test_resources_lists_the_session_view(client: httpx.Client, seeded: Seeded) -> None:
    mine = client.get(f"{MVU}/resources", params={"scope": q(scope("s1"))})
    assert mine.status_code == 200 and mine.headers["content-type"] == "application/json"
    ids = [record["id"] for record in mine.json()]
    assert seeded.instances["s1"] in ids and seeded.instances["s2"] not in ids
    assert "mvu:shared-old" in ids and set(SHARED) <= set(ids)


# DIGEST H-1: the current scope is {authority: 'local', sessionId}; the management view stays in-process.
SESSIONLESS = [{"authority": "local"}, {}, {"authority": "local", "sessionId": None},
               {"authority": "local", "sessionId": ""}, {"authority": "local", "sessionId": 7}]


@pytest.mark.parametrize("raw", SESSIONLESS)
def test_every_route_refuses_a_scope_without_a_session(client: httpx.Client, seeded: Seeded,
                                                       raw: dict[str, Any]) -> None:
    instance = seeded.instances["s1"]
    for route, params in (("resources", {}), ("resource", {"id": instance}), ("history", {"id": instance}),
                          ("facts", {"id": instance})):
        body = problem_of(client.get(f"{MVU}/{route}", params={**params, "scope": q(raw)}), 400, "MVU_SCOPE")
        assert "sessionId" in body["detail"], body
    update = client.post(f"{MVU}/update", json={"id": SHARED[3], "scope": raw, "content": {"stat_data": {"n": 1}},
                                                "expectedRevision": 0, "operationId": "no-session"})
    assert "sessionId" in problem_of(update, 400, "MVU_SCOPE")["detail"]


@pytest.mark.parametrize("extra", [{"messageId": "s1-m1"}, {"endEventId": 3}])
def test_only_resource_takes_a_historical_scope(client: httpx.Client, seeded: Seeded, extra: dict[str, Any]) -> None:
    instance = seeded.instances["s1"]
    historical = q(scope("s1", **extra))
    for route, params in (("resources", {}), ("history", {"id": instance}), ("facts", {"id": instance})):
        problem_of(client.get(f"{MVU}/{route}", params={**params, "scope": historical}), 400, "MVU_SCOPE")
    update = client.post(f"{MVU}/update", json={"id": SHARED[3], "scope": scope("s1", **extra),
                                                "content": {"stat_data": {"n": 1}}, "expectedRevision": 0,
                                                "operationId": "historical"})
    problem_of(update, 400, "MVU_SCOPE")
    assert client.get(f"{MVU}/resource", params={"id": instance, "scope": historical}).status_code == 200


@pytest.mark.parametrize(("key", "camel"), [("session_id", "sessionId"), ("message_id", "messageId"),
                                            ("end_event_id", "endEventId")])
def test_snake_case_scope_keys_are_refused(client: httpx.Client, seeded: Seeded, key: str, camel: str) -> None:
    value: Any = 1 if key == "end_event_id" else ("s1-m1" if key == "message_id" else "s1")
    raw = {"authority": "local", **({"sessionId": "s1"} if key != "session_id" else {}), key: value}
    response = client.get(f"{MVU}/resource", params={"id": seeded.instances["s1"], "scope": q(raw)})
    body = problem_of(response, 400, "MVU_SCOPE")
    assert camel in body["detail"] and key in body["detail"], body
    update = client.post(f"{MVU}/update", json={"id": SHARED[3], "scope": raw, "content": {"stat_data": {"n": 1}},
                                                "expectedRevision": 0, "operationId": "snake"})
    problem_of(update, 400, "MVU_SCOPE")


@pytest.mark.parametrize(("key", "camel", "value"), [("expected_revision", "expectedRevision", 0),
                                                     ("operation_id", "operationId", "snake-op")])
def test_snake_case_body_keys_are_refused(client: httpx.Client, key: str, camel: str, value: Any) -> None:
    body: dict[str, Any] = {"id": SHARED[3], "scope": scope("s1"), "content": {"stat_data": {"n": 1}},
                            "expectedRevision": 0, "operationId": "snake-body"}
    del body[camel]
    body[key] = value
    refused = problem_of(client.post(f"{MVU}/update", json=body), 400, "MVU_OPERATION")
    assert camel in refused["detail"], refused


@pytest.mark.parametrize(("field", "value", "named"), [("expectedRevision", -1, "expectedRevision"),
                                                       ("expectedRevision", True, "expectedRevision"),
                                                       ("operationId", "", "operationId"),
                                                       ("operationId", 5, "operationId")])
def test_body_errors_name_the_camel_case_field(client: httpx.Client, field: str, value: Any, named: str) -> None:
    body: dict[str, Any] = {"id": SHARED[3], "scope": scope("s1"), "content": {"stat_data": {"n": 1}},
                            "expectedRevision": 0, "operationId": "named", field: value}
    assert named in problem_of(client.post(f"{MVU}/update", json=body), 400, "MVU_OPERATION")["detail"]


def test_resource_reads_current_with_an_etag_and_historical_by_message(client: httpx.Client, seeded: Seeded) -> None:
    instance = seeded.instances["s1"]
    current = client.get(f"{MVU}/resource", params={"id": instance, "scope": q(scope("s1"))})
    assert current.status_code == 200
    record = current.json()
    # The revision, and a digest of the answer's bytes: equal ETags mean equal answers.
    assert current.headers["etag"] == f'"r{record["revision"]}-{hashlib.sha256(current.content).hexdigest()[:16]}"'
    assert set(record) >= {"id", "name", "type", "authority", "scope", "content", "revision", "currentRevision",
                           "historical", "versionKey", "managementMode", "templateId", "instance"}
    first = client.get(f"{MVU}/resource", params={"id": instance, "scope": q(scope("s1", messageId="s1-m1"))})
    assert first.status_code == 200
    old = first.json()
    assert old["historical"] is True and old["content"]["stat_data"]["hp"] == 70
    assert old["revision"] == 1 and old["currentRevision"] == record["currentRevision"]


def test_history_and_facts(client: httpx.Client, seeded: Seeded) -> None:
    instance = seeded.instances["s1"]
    plain = client.get(f"{MVU}/history", params={"id": instance, "scope": q(scope("s1"))}).json()
    assert [(entry["kind"], entry["revision"]) for entry in plain[:2]] == [("reply", 1), ("reply", 2)]
    assert "beforeAvailable" not in plain[0]
    before = client.get(f"{MVU}/history", params={"id": instance, "scope": q(scope("s1")),
                                                  "includeBefore": "true"}).json()
    assert before[1]["beforeAvailable"] is True and before[1]["before"]["hp"] == 70
    facts = client.get(f"{MVU}/facts", params={"id": instance, "scope": q(scope("s1"))})
    assert facts.status_code == 200
    assert {fact["phase"] for fact in facts.json()} >= {"started", "applied", "completed"}
    assert client.get(f"{MVU}/history", params={"id": "mvu:nothing", "scope": q(scope("s1"))}).json() == []


def history_of(client: httpx.Client, resource: str, session: str, **paging: int) -> list[dict[str, Any]]:
    response = client.get(f"{MVU}/history", params={"id": resource, "scope": q(scope(session)), **paging})
    assert response.status_code == 200, response.text
    entries: list[dict[str, Any]] = response.json()
    return entries


def test_history_entries_carry_their_position(client: httpx.Client, seeded: Seeded) -> None:
    whole = history_of(client, seeded.instances["s1"], "s1")
    assert len(whole) >= 2
    assert [entry["position"] for entry in whole] == list(range(len(whole)))


def test_history_pages_are_the_newest_entries_below_before(client: httpx.Client, seeded: Seeded) -> None:
    instance = seeded.instances["s1"]
    whole = history_of(client, instance, "s1")
    keys = [entry["key"] for entry in whole]
    for before in range(len(whole) + 2):
        below = [entry["key"] for entry in whole if entry["position"] < before]
        assert [entry["key"] for entry in history_of(client, instance, "s1", before=before)] == below
        for limit in (1, 2, 1000):
            page = history_of(client, instance, "s1", limit=limit, before=before)
            assert [entry["key"] for entry in page] == below[-limit:], (limit, before)
    assert [entry["key"] for entry in history_of(client, instance, "s1", limit=1)] == keys[-1:]
    # The next older page starts before the first entry's position.
    newest = history_of(client, instance, "s1", limit=1)
    older = history_of(client, instance, "s1", limit=1, before=newest[0]["position"])
    assert [entry["key"] for entry in older] == keys[-2:-1]


def test_a_missing_resource_is_404(client: httpx.Client) -> None:
    response = client.get(f"{MVU}/resource", params={"id": "mvu:nothing", "scope": q(scope("s1"))})
    assert problem_of(response, 404, "MVU_MISSING")["id"] == "mvu:nothing"
    problem_of(edit(client, "mvu:nothing", "s1", {"n": 1}, expected=0, operation="x"), 404, "MVU_MISSING")


def test_unknown_routes_and_wrong_methods(client: httpx.Client) -> None:
    problem_of(client.get(f"{MVU}/nothing"), 404, "MVU_NOT_FOUND")
    # A trailing slash is another route, not a redirect.
    for path in ("resources/", "resource/", "update/"):
        trailing = client.get(f"{MVU}/{path}", params={"scope": q(scope("s1"))})
        problem_of(trailing, 404, "MVU_NOT_FOUND")
        assert "location" not in trailing.headers
    problem_of(client.post(f"{MVU}/update/", json={}), 404, "MVU_NOT_FOUND")
    wrong = client.get(f"{MVU}/update")
    problem_of(wrong, 405, "MVU_OPERATION")
    assert wrong.headers["allow"] == "POST"
    problem_of(client.delete(f"{MVU}/resource"), 405, "MVU_OPERATION")


def test_the_openapi_document_is_published_with_examples(client: httpx.Client) -> None:
    document = client.get(f"{API}/openapi.json").json()
    paths = document["paths"]
    assert set(paths) == {f"{MVU}/{name}" for name in (
        "resources", "resource", "history", "facts", "changes", "diff", "update", "cards", "sessions",
        "sessions/{sessionId}",
        "sessions/{sessionId}/events", "sessions/{sessionId}/selection", "seeds", "seeds/install",
        "inspector/sessions", "inspector/sessions/{sessionId}/turns",
        "inspector/sessions/{sessionId}/turns/{turn}/reply", "prompt", "prompt/current", "request-observed",
        "snapshot", "card-binding", "card-write", "card-binding/revoke", "playthroughs/{playthroughId}",
        "card-grants/{grantId}", "chats/import", "chats/{sessionId}/export")}
    for removal in ("playthroughs/{playthroughId}", "card-grants/{grantId}"):  # a path id over its bound
        assert "400" in paths[f"{MVU}/{removal}"]["delete"]["responses"]
    events = paths[f"{MVU}/sessions/{{sessionId}}/events"]["post"]
    assert events["requestBody"]["content"]["application/json"]["example"]["events"][0]["type"]
    assert {"409", "413"} <= set(events["responses"])
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    update = paths[f"{MVU}/update"]["post"]
    assert update["requestBody"]["content"]["application/json"]["examples"]["edit"]["value"]["operationId"]
    assert {"409", "412", "413", "422"} <= set(update["responses"])
    assert paths[f"{MVU}/resource"]["get"]["parameters"][1]["examples"]["historical"]
    assert update["responses"]["200"]["content"]["application/json"]["example"]["revision"] == 2
    assert update["responses"]["409"]["content"]["application/problem+json"]["example"]["currentRevision"] == 2
    # The reads that explain a state answer with examples too.
    for route, field in (("changes", "changes"), ("diff", "changes"),
                         ("inspector/sessions/{sessionId}/turns/{turn}/reply", "commands")):
        assert paths[f"{MVU}/{route}"]["get"]["responses"]["200"]["content"]["application/json"]["example"][field]


# -- malformed scopes and bodies -------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "code"), [
    ("not json", "MVU_SCOPE"), ("[1]", "MVU_SCOPE"), ('"local"', "MVU_SCOPE"), ("[" * 3000, "MVU_SCOPE"),
    ('{"authority":"remote","sessionId":"s1"}', "MVU_AUTHORITY"),
    ('{"authority":"local","sessionId":""}', "MVU_SCOPE"), ('{"authority":"local"}', "MVU_SCOPE"),
    ('{"authority":"local","sessionId":"s1","bogus":1}', "MVU_SCOPE"),
    ('{"authority":"local","sessionId":"' + "x" * 4000 + '"}', "MVU_LIMIT"),
    ('{"authority":"local","sessionId":"s1","messageId":"s1-m1"}', "MVU_SCOPE"),
])
def test_malformed_scopes_are_400(client: httpx.Client, raw: str, code: str) -> None:
    problem_of(client.get(f"{MVU}/resources", params={"scope": raw}), 400, code)


def test_missing_or_malformed_parameters_are_400(client: httpx.Client, seeded: Seeded) -> None:
    body = problem_of(client.get(f"{MVU}/resources"), 400, "MVU_SCOPE")
    assert body["errors"][0]["pointer"] == "/query/scope"
    problem_of(client.get(f"{MVU}/history", params={"scope": q(scope("s1"))}), 400, "MVU_OPERATION")
    problem_of(client.get(f"{MVU}/history", params={"id": seeded.instances["s1"], "scope": q(scope("s1")),
                                                    "includeBefore": "maybe"}), 400, "MVU_OPERATION")


def test_another_sessions_resource_is_refused(client: httpx.Client, seeded: Seeded) -> None:
    response = client.get(f"{MVU}/resource", params={"id": seeded.instances["s1"], "scope": q(scope("s2"))})
    problem_of(response, 400, "SCOPE_MISMATCH")


@pytest.mark.parametrize(("body", "code"), [
    (b"not json", "MVU_JSON"), (b"[]", "MVU_JSON"), (b"[" * 100_000, "MVU_JSON"),
    (b'{"id": 1, "scope": S1, "content": {"stat_data": {}}, "expectedRevision": 0, "operationId": "a"}',
     "MVU_OPERATION"),
    (b'{"id": "mvu:world-0", "scope": S1, "content": {"stat_data": {}}, "expectedRevision": 0, "operationId": "a",'
     b' "extra": 1}', "MVU_OPERATION"),
    (b'{"id": "mvu:world-0", "scope": S1, "content": {"stat_data": {}}, "operationId": "a"}', "MVU_OPERATION"),
    (b'{"id": "mvu:world-0", "scope": S1, "content": {"stat_data": {}}, "expectedRevision": 0}', "MVU_OPERATION"),
    (b'{"id": "mvu:world-0", "scope": S1, "content": [], "expectedRevision": 0, "operationId": "a"}', "MVU_JSON"),
    (b'{"id": "mvu:world-0", "content": {"stat_data": {}}, "expectedRevision": 0, "operationId": "a"}',
     "MVU_SCOPE"),
    (b'{"id": "mvu:world-0", "scope": S1, "content": {"stat_data": {}}, "expectedRevision": -1, "operationId": "a"}',
     "MVU_OPERATION"),
    (b'{"id": "mvu:world-0", "scope": {"authority": "local", "sessionId": "s1", "endEventId": 3},'
     b' "content": {"stat_data": {}}, "expectedRevision": 0, "operationId": "a"}', "MVU_SCOPE"),
    (b'{"id": "mvu:world-0", "scope": S1, "content": {"stat_data": {"x": "\\ud800"}}, "expectedRevision": 0,'
     b' "operationId": "a"}', "MVU_JSON"),
])
def test_malformed_update_bodies_are_400(client: httpx.Client, body: bytes, code: str) -> None:
    body = body.replace(b"S1", b'{"authority": "local", "sessionId": "s1"}')
    problem_of(client.post(f"{MVU}/update", content=body, headers={"content-type": "application/json"}), 400, code)


# -- edits, conflicts, replays ------------------------------------------------------------------------


def test_an_edit_goes_through_the_declaration_and_replays(client: httpx.Client, seeded: Seeded) -> None:
    instance = seeded.instances["s2"]
    record = client.get(f"{MVU}/resource", params={"id": instance, "scope": q(scope("s2"))}).json()
    first = edit(client, instance, "s2", {"hp": "7", "gold": 3}, expected=record["revision"], operation="s2-e1")
    assert first.status_code == 200, first.text
    receipt = first.json()
    assert receipt["content"]["stat_data"] == {"hp": 7, "gold": 3, "level": 1, "mood": "calm"}
    assert receipt["revision"] == record["revision"] + 1 and receipt["replayed"] is False
    assert first.headers["etag"] == f'"r{receipt["revision"]}"' and "idempotent-replayed" not in first.headers
    again = edit(client, instance, "s2", {"hp": "7", "gold": 3}, expected=record["revision"], operation="s2-e1")
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert again.headers["idempotent-replayed"] == "true" and again.json()["revision"] == receipt["revision"]
    refused = edit(client, instance, "s2", {"hp": 1, "gold": 1}, expected=record["revision"], operation="s2-e1")
    problem_of(refused, 409, "MVU_IDEMPOTENCY_CONFLICT")
    stale = edit(client, instance, "s2", {"hp": 1, "gold": 1}, expected=record["revision"], operation="s2-e2")
    body = problem_of(stale, 409, "REVISION_CONFLICT")
    assert (body["expectedRevision"], body["currentRevision"]) == (record["revision"], receipt["revision"])
    invalid = edit(client, instance, "s2", {"hp": 1, "gold": -5}, expected=receipt["revision"], operation="s2-e3")
    problem_of(invalid, 400, "MVU_SCHEMA")


def test_if_match_and_idempotency_key_headers(client: httpx.Client) -> None:
    resource = SHARED[1]
    read = client.get(f"{MVU}/resource", params={"id": resource, "scope": q(scope("s1"))})
    etag = read.headers["etag"]
    headers = {"If-Match": etag, "Idempotency-Key": "hdr-1"}
    done = edit(client, resource, "s1", {"n": 1}, headers=headers)
    assert done.status_code == 200, done.text
    replay = edit(client, resource, "s1", {"n": 1}, headers=headers)
    assert replay.headers["idempotent-replayed"] == "true"
    problem_of(edit(client, resource, "s1", {"n": 2}, headers=headers), 422, "MVU_IDEMPOTENCY_CONFLICT")
    stale = edit(client, resource, "s1", {"n": 2}, headers={"If-Match": etag, "Idempotency-Key": "hdr-2"})
    body = problem_of(stale, 412, "REVISION_CONFLICT")
    assert body["currentRevision"] == done.json()["revision"]
    # The body's expectedRevision stays the 409 path, even with an Idempotency-Key.
    problem_of(edit(client, resource, "s1", {"n": 2}, expected=0, headers={"Idempotency-Key": "hdr-3"}), 409,
               "REVISION_CONFLICT")
    problem_of(edit(client, resource, "s1", {"n": 2}, expected=0, operation="a", headers={"If-Match": '"r1"'}), 400,
               "MVU_OPERATION")
    problem_of(edit(client, resource, "s1", {"n": 2}, operation="b", headers={"If-Match": "*"}), 400,
               "MVU_OPERATION")


@pytest.mark.parametrize("weak", ['W/"r{n}"', 'w/"r{n}"'])
def test_a_weak_etag_never_matches(client: httpx.Client, weak: str) -> None:
    """RFC 9110: If-Match uses the strong comparison; a weak ETag is refused (400), not matched."""
    resource = SHARED[4]
    revision = client.get(f"{MVU}/resource", params={"id": resource, "scope": q(scope("s1"))}).json()["revision"]
    refused = edit(client, resource, "s1", {"n": 5}, operation=f"weak-{weak}",
                   headers={"If-Match": weak.format(n=revision)})
    assert "weak" in problem_of(refused, 400, "MVU_OPERATION")["detail"]
    after = client.get(f"{MVU}/resource", params={"id": resource, "scope": q(scope("s1"))}).json()["revision"]
    assert after == revision
    problem_of(edit(client, resource, "s1", {"n": 2}, expected=1, operation="c", headers={"Idempotency-Key": "d"}),
               400, "MVU_OPERATION")


def test_legacy_and_errored_sources_refuse_edits(client: httpx.Client, seeded: Seeded) -> None:
    legacy = client.get(f"{MVU}/resource", params={"id": "mvu:shared-old", "scope": q(scope("s1"))}).json()
    assert legacy["legacy"] is True and legacy["capabilities"] == {"edit": False, "copy": False, "management": False}
    body = problem_of(edit(client, "mvu:shared-old", "s1", {"hp": 1}, expected=3, operation="l1"), 403,
                      "MVU_MIGRATION_REQUIRED")
    assert body["capabilities"]["edit"] is False
    broken = seeded.instances["s3"]
    record = client.get(f"{MVU}/resource", params={"id": broken, "scope": q(scope("s3"))}).json()
    assert record["sourceError"] == "MVU_INITIALIZATION_INVALID"
    problem_of(edit(client, broken, "s3", {"a": 1}, expected=record["revision"], operation="b1"), 403,
               "MVU_READ_ONLY")


# -- budgets -------------------------------------------------------------------------------------


def test_budgets(client: httpx.Client) -> None:
    resource = SHARED[2]
    oversize = b'{"id": "mvu:world-2", "pad": "' + b"x" * (2 * 1024 * 1024 + 70_000) + b'"}'
    problem_of(client.post(f"{MVU}/update", content=oversize), 413, "MVU_LIMIT")

    def chunks() -> Any:
        for _ in range(40):
            yield b" " * 65_536

    problem_of(client.post(f"{MVU}/update", content=chunks()), 413, "MVU_LIMIT")
    revision = client.get(f"{MVU}/resource", params={"id": resource, "scope": q(scope("s1"))}).json()["revision"]
    big = edit(client, resource, "s1", {"pad": "y" * 1_000_000}, expected=revision, operation="big")
    body = problem_of(big, 400, "PLAY_STORAGE_LIMIT")
    assert body["limit"] > body["used"] > 0
    too_deep: Any = 1
    for _ in range(70):
        too_deep = [too_deep]
    problem_of(edit(client, resource, "s1", {"deep": too_deep}, expected=revision, operation="deep"), 400, "MVU_LIMIT")
    fine = edit(client, resource, "s1", {"n": 1}, expected=revision, operation="fine")
    assert fine.status_code == 200, fine.text


def test_resources_of_a_session_the_store_does_not_keep_say_what_to_do(client: httpx.Client, seeded: Seeded) -> None:
    body = problem_of(client.get(f"{MVU}/resources", params={"scope": q(scope("nobody"))}), 404, "MVU_MISSING")
    assert "'nobody'" in body["detail"] and "POST" in body["detail"] and "/sessions" in body["detail"]
