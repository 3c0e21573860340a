"""``GET /mvu/changes`` and ``GET /mvu/diff`` on a real ``mvu serve``: their answers, their paging and
their refusals, as the guides describe them."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from mvu_store.ledger import open_ledger
from mvu_store.ledger.records import ChangeRow
from tests.http.support import API, MVU, Seeded, Server, scope, seed
from tests.ledger.change_rows import write_changes

S1 = json.dumps(scope("s1"))


async def _record_changes(seeded: Seeded) -> None:
    """The rows the seeded turns of s1 write (hp 50 -> 70 -> 50, and a refused command)."""
    ledger = await open_ledger(seeded.db)
    try:
        instance = seeded.instances["s1"]
        await write_changes(ledger, instance, 1, [ChangeRow(
            path="/hp", status="applied", actor="reply", op="set", before=(50,), after=(70,),
            command="_.set('hp', 50, 70);//healed", turn=1)])
        await write_changes(ledger, instance, 2, [
            ChangeRow(path="/hp", status="applied", actor="reply", op="add", before=(70,), after=(50,),
                      command="_.add('hp', -20);//hit", turn=2),
            ChangeRow(path="/mood", status="refused", actor="reply", op="set", before=("calm",),
                      command="_.set('mood', 'sad');", code="MVU_SCHEMA", message="mood: invalid option",
                      turn=2)])
    finally:
        await ledger.close()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    seeded = seed(tmp_path_factory.mktemp("changes"))
    asyncio.run(_record_changes(seeded))
    return seeded


def get(server: Server, route: str, token: str | None = None, headers: dict[str, str] | None = None,
        **params: Any) -> httpx.Response:
    sent = {"Authorization": f"Bearer {token or server.token}", **(headers or {})}
    return httpx.get(f"{server.base}{MVU}/{route}", params=params, headers=sent, timeout=30)


def test_a_path_story_pages_back(server: Server, seeded: Seeded) -> None:
    instance = seeded.instances["s1"]
    whole = get(server, "changes", id=instance, scope=S1, path="/hp")
    newest = get(server, "changes", id=instance, scope=S1, path="/hp", limit="1")
    older = get(server, "changes", id=instance, scope=S1, path="/hp", limit="1",
                before=str(newest.json()["nextBefore"]))

    assert whole.status_code == newest.status_code == older.status_code == 200, whole.text
    body = whole.json()
    assert [(c["revision"], c["before"], c["after"]) for c in body["changes"]] == [(1, 50, 70), (2, 70, 50)]
    assert body["changes"][1] == {
        "resourceId": instance, "inherited": False, "position": 1, "revision": 2, "seq": 0, "sessionId": "s1",
        "turn": 2, "messageSeq": body["changes"][1]["messageSeq"], "path": "/hp", "op": "add",
        "status": "applied", "actor": "reply", "before": 70, "after": 50, "omitted": False,
        "command": "_.add('hp', -20);//hit", "derived": False}
    assert (body["nextBefore"], body["truncated"]) == (None, False)
    assert [c["after"] for c in newest.json()["changes"]] == [50] and newest.json()["nextBefore"] == 1
    assert [c["after"] for c in older.json()["changes"]] == [70] and older.json()["nextBefore"] is None
    history = get(server, "history", id=instance, scope=S1).json()
    assert [entry["position"] for entry in history] == [c["position"] for c in body["changes"]]


def test_a_version_and_a_turn(server: Server, seeded: Seeded) -> None:
    instance = seeded.instances["s1"]
    version = get(server, "changes", id=instance, scope=S1, revision="2").json()
    turn = get(server, "changes", id=instance, scope=S1, turn="1", sessionId="s1").json()

    refused = version["changes"][1]
    assert (refused["status"], refused["code"], refused["message"], "after" in refused) == (
        "refused", "MVU_SCHEMA", "mood: invalid option", False)
    assert [c["after"] for c in turn["changes"]] == [70]


def test_a_diff_of_two_revisions(server: Server, seeded: Seeded) -> None:
    instance = seeded.instances["s1"]
    answer = get(server, "diff", id=instance, scope=S1, **{"from": "0"})
    back = get(server, "diff", id=instance, scope=S1, **{"from": "1", "to": "2"})

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["from"], body["to"]["revision"], body["truncated"]) == (
        {"id": instance, "revision": 0, "versionKey": None}, 2, False)
    # hp 50 -> 70 -> 50: the same at both ends.
    assert body["changes"] == []
    assert back.json()["changes"] == [{"path": "/hp", "op": "replace", "before": 70, "after": 50}]


@pytest.mark.parametrize(("route", "params", "status", "code"), [
    ("changes", {}, 400, "MVU_OPERATION"),
    ("changes", {"path": "/hp", "revision": "1"}, 400, "MVU_OPERATION"),
    ("changes", {"revision": "1", "limit": "5"}, 400, "MVU_OPERATION"),
    ("changes", {"path": "/hp", "sessionId": "s1"}, 400, "MVU_OPERATION"),
    ("changes", {"path": "/hp", "limit": "1001"}, 400, "MVU_OPERATION"),
    ("changes", {"revision": "1.0"}, 400, "MVU_OPERATION"),
    ("changes", {"path": "hp"}, 400, "MVU_PATH"),
    ("changes", {"path": "/~x"}, 400, "MVU_PATH"),
    ("changes", {"revision": "9"}, 404, "MVU_MISSING"),
    ("changes", {"id": "mvu:nobody", "path": "/hp"}, 404, "MVU_MISSING"),
    ("changes", {"path": "/hp", "scope": json.dumps(scope("s2"))}, 400, "SCOPE_MISMATCH"),
    ("changes", {"path": "/hp", "scope": json.dumps(scope())}, 400, "MVU_SCOPE"),
    ("diff", {}, 400, "MVU_OPERATION"),
    ("diff", {"from": "-1"}, 400, "MVU_OPERATION"),
    ("diff", {"from": "9"}, 404, "MVU_MISSING"),
    ("diff", {"from": "0", "toId": "mvu:nobody"}, 404, "MVU_MISSING"),
    ("diff", {"from": "0", "scope": json.dumps(scope("s2"))}, 400, "SCOPE_MISMATCH"),
])
def test_refusals_are_typed_problems(server: Server, seeded: Seeded, route: str, params: dict[str, str],
                                     status: int, code: str) -> None:
    response = get(server, route, **{"id": seeded.instances["s1"], "scope": S1, **params})
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == code


def test_another_sessions_instance_is_not_of_this_lineage(server: Server, seeded: Seeded) -> None:
    response = get(server, "diff", id=seeded.instances["s1"], scope=S1, toId=seeded.instances["s2"],
                   **{"from": "0"})
    assert response.status_code == 400 and response.json()["code"] == "SCOPE_MISMATCH"


def test_a_token_is_needed(server: Server, seeded: Seeded) -> None:
    for route in ("changes", "diff"):
        response = get(server, route, token="wrong", id=seeded.instances["s1"], scope=S1, path="/hp",
                       **{"from": "0"})
        assert response.status_code == 401


def test_both_routes_are_in_the_openapi_document(server: Server) -> None:
    document = httpx.get(f"{server.base}{API}/openapi.json", headers={"Authorization": f"Bearer {server.token}"},
                         timeout=30).json()
    changes = document["paths"][f"{MVU}/changes"]["get"]
    diff = document["paths"][f"{MVU}/diff"]["get"]
    assert {p["name"] for p in changes["parameters"]} == {"id", "scope", "path", "revision", "turn", "sessionId",
                                                         "limit", "before", "If-None-Match"}
    assert {p["name"] for p in diff["parameters"]} == {"id", "scope", "from", "to", "toId", "If-None-Match"}
    for operation in (changes, diff):
        assert {"200", "304", "400", "401", "404"} <= set(operation["responses"])
        assert operation["responses"]["200"]["content"]["application/json"]["example"]["changes"]


def test_the_guides_examples_have_the_answers_shape(server: Server, seeded: Seeded) -> None:
    """The JSON answers docs/http-api.md shows have the keys the server answers with."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "http-api.md").read_text(encoding="utf-8")
    section = text.split("### Changes and diffs", 1)[1].split("## The host routes", 1)[0]
    shown = [json.loads(block.split("```", 1)[0]) for block in section.split("```json\n")[1:]]
    instance = seeded.instances["s1"]
    served = [get(server, "changes", id=instance, scope=S1, revision="2").json(),
              get(server, "diff", id=instance, scope=S1, **{"from": "1", "to": "2"}).json()]
    for example, answer in zip(shown, served, strict=True):
        assert set(example) == set(answer)
        assert set(example["changes"][0]) <= set(answer["changes"][0]) | {"before", "after", "code", "message"}


def test_each_answer_has_an_etag_and_if_none_match_answers_304(server: Server, seeded: Seeded) -> None:
    instance = seeded.instances["s1"]
    for route, params in (("changes", {"path": "/hp"}), ("changes", {"turn": "2"}),
                          ("diff", {"from": "0"}), ("diff", {"from": "0", "to": "1"})):
        first = get(server, route, id=instance, scope=S1, **params)
        tag = first.headers["etag"]
        assert first.status_code == 200 and re.fullmatch(r'"r2-[0-9a-f]{16}"' if "to" not in params
                                                         else r'"r1-[0-9a-f]{16}"', tag), (route, params, tag)
        assert tag[4:-1] == hashlib.sha256(first.content).hexdigest()[:16]
        again = get(server, route, id=instance, scope=S1, headers={"If-None-Match": f'"r0-0000000000000000", {tag}'},
                    **params)
        assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", tag)
        other = get(server, route, id=instance, scope=S1, headers={"If-None-Match": '"r2-0000000000000000"'},
                    **params)
        assert (other.status_code, other.content) == (200, first.content)
    # A condition never skips the scope's refusal.
    tag = get(server, "changes", id=instance, scope=S1, path="/hp").headers["etag"]
    refused = get(server, "changes", id=instance, scope=json.dumps(scope("s2")), path="/hp",
                  headers={"If-None-Match": tag})
    assert refused.status_code == 400 and refused.json()["code"] == "SCOPE_MISMATCH"


def test_an_edit_after_a_kept_story_shows_its_change(server: Server, seeded: Seeded) -> None:
    instance, s4 = seeded.instances["s4"], json.dumps(scope("s4"))
    before = get(server, "changes", id=instance, scope=s4, path="/hp")
    diff = get(server, "diff", id=instance, scope=s4, **{"from": "0"})
    assert json.loads(before.content)["changes"] == [] and json.loads(diff.content)["changes"] == []
    record = get(server, "resource", id=instance, scope=s4)
    edited = httpx.post(f"{server.base}{MVU}/update", timeout=30, headers={
        "Authorization": f"Bearer {server.token}", "If-Match": record.headers["etag"], "Idempotency-Key": "kept-1"},
        json={"id": instance, "scope": scope("s4"), "content": {"stat_data": {"hp": 3, "items": []}}})
    assert edited.status_code == 200, edited.text

    after = get(server, "changes", id=instance, scope=s4, path="/hp", headers={"If-None-Match": before.headers["etag"]})
    moved = get(server, "diff", id=instance, scope=s4, headers={"If-None-Match": diff.headers["etag"]}, **{"from": "0"})
    assert after.status_code == moved.status_code == 200
    assert [(c["actor"], c["after"]) for c in after.json()["changes"]] == [("manual", 3)]
    assert [(c["path"], c["after"]) for c in moved.json()["changes"]] == [("/hp", 3)]
    assert after.headers["etag"].startswith('"r1-') and after.headers["etag"] != before.headers["etag"]
