"""Conditional reads: ``GET /mvu/resource`` answers 304 to an ``If-None-Match`` that names its
current answer (RFC 9110 13.1.2), and its ETag changes whenever the answer does, the revision
alone or not."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.http.support import API, MVU, Seeded, Server, scope


@pytest.fixture
def client(server: Server) -> httpx.Client:
    return server.client()


def read(client: httpx.Client, instance: str, session: str = "s1", *, condition: str | None = None,
         **historical: Any) -> httpx.Response:
    params = {"id": instance, "scope": json.dumps(scope(session, **historical), separators=(",", ":"))}
    return client.get(f"{MVU}/resource", params=params,
                      headers={"If-None-Match": condition} if condition is not None else None)


def edit(client: httpx.Client, instance: str, stat: dict[str, Any], *, if_match: str, operation: str,
         session: str = "s1") -> httpx.Response:
    body = {"id": instance, "scope": scope(session), "content": {"stat_data": stat}}
    return client.post(f"{MVU}/update", json=body, headers={"If-Match": if_match, "Idempotency-Key": operation})


def not_modified(response: httpx.Response, tag: str) -> None:
    assert response.status_code == 304, response.text
    assert response.headers["etag"] == tag
    assert response.content == b""


def test_the_current_etag_answers_304_without_a_body(client: httpx.Client, seeded: Seeded) -> None:
    first = read(client, seeded.instances["s1"])
    assert first.status_code == 200
    not_modified(read(client, seeded.instances["s1"], condition=first.headers["etag"]), first.headers["etag"])


@pytest.mark.parametrize("condition", [
    "W/{tag}",                       # the weak comparison: W/ does not matter
    '"r0-0000000000000000", {tag}',  # one of a list
    '"a,b" ,, {tag} ,',              # commas inside a tag, empty list elements, spaces
    "*",                             # any current answer
])
def test_if_none_match_lists_weak_tags_and_star_match(client: httpx.Client, seeded: Seeded, condition: str) -> None:
    tag = read(client, seeded.instances["s1"]).headers["etag"]
    not_modified(read(client, seeded.instances["s1"], condition=condition.format(tag=tag)), tag)


@pytest.mark.parametrize("condition", [
    '"r0-0000000000000000"',  # another answer's tag
    "{bare}",                 # the tag without its quotes
    "{tag} {tag}",            # not a list
    "*, {tag}",               # * stands alone
    "",
])
def test_an_if_none_match_that_names_no_current_answer_gets_the_answer(client: httpx.Client, seeded: Seeded,
                                                                      condition: str) -> None:
    first = read(client, seeded.instances["s1"])
    tag = first.headers["etag"]
    answered = read(client, seeded.instances["s1"], condition=condition.format(tag=tag, bare=tag.strip('"')))
    assert answered.status_code == 200
    assert answered.headers["etag"] == tag and answered.json() == first.json()


def test_a_missing_resource_is_404_whatever_if_none_match_says(client: httpx.Client) -> None:
    missing = read(client, "mvu:instance-" + "0" * 48, condition="*")
    assert missing.status_code == 404


def test_an_edit_makes_the_old_etag_answer_200_and_the_new_one_304(client: httpx.Client, seeded: Seeded) -> None:
    instance = seeded.instances["s2"]
    before = read(client, instance, "s2")
    # If-Match takes the read's ETag as it came: the revision in it guards the edit.
    edited = edit(client, instance, {"hp": 20, "gold": 5}, if_match=before.headers["etag"], operation="cond-1",
                  session="s2")
    assert edited.status_code == 200, edited.text
    after = read(client, instance, "s2", condition=before.headers["etag"])
    assert after.status_code == 200
    assert after.json()["revision"] == before.json()["revision"] + 1
    assert after.json()["content"]["stat_data"]["hp"] == 20
    assert after.headers["etag"] != before.headers["etag"]
    not_modified(read(client, instance, "s2", condition=after.headers["etag"]), after.headers["etag"])
    # The old ETag is stale for an edit too: 412, nothing written.
    stale = edit(client, instance, {"hp": 1, "gold": 1}, if_match=before.headers["etag"], operation="cond-2",
                 session="s2")
    assert stale.status_code == 412


def test_a_historical_answer_has_its_own_etag_and_a_new_one_when_the_current_revision_moves(
        client: httpx.Client, seeded: Seeded) -> None:
    instance = seeded.instances["s1"]
    current = read(client, instance)
    at_reply = read(client, instance, messageId="s1-m2")
    assert at_reply.json()["revision"] == current.json()["revision"]  # the same revision ...
    assert at_reply.headers["etag"] != current.headers["etag"]  # ... another answer (historical)
    at_first = read(client, instance, messageId="s1-m1")
    edited = edit(client, instance, {"hp": 33, "gold": 3}, if_match=current.headers["etag"], operation="cond-3")
    assert edited.status_code == 200, edited.text
    again = read(client, instance, messageId="s1-m1", condition=at_first.headers["etag"])
    # The version read is the same, its revision too; but currentRevision moved, so the answer did.
    assert again.status_code == 200
    assert again.json()["revision"] == at_first.json()["revision"] == 1
    assert again.json()["currentRevision"] == at_first.json()["currentRevision"] + 1
    assert again.headers["etag"] != at_first.headers["etag"]
    not_modified(read(client, instance, messageId="s1-m1", condition=again.headers["etag"]), again.headers["etag"])


@pytest.mark.parametrize("if_match", ['"r0-xyz"', '"r0-"', '"r0-00000000000000000"', "W/{tag}"])
def test_if_match_takes_a_read_etag_only_as_a_read_gave_it(client: httpx.Client, seeded: Seeded,
                                                           if_match: str) -> None:
    instance = seeded.instances["s4"]
    tag = read(client, instance, "s4").headers["etag"]
    refused = edit(client, instance, {"hp": 1, "items": []}, if_match=if_match.format(tag=tag), operation="cond-4",
                   session="s4")
    assert refused.status_code == 400 and refused.json()["code"] == "MVU_OPERATION"


def test_the_openapi_document_names_if_none_match_and_the_304(client: httpx.Client) -> None:
    document = client.get(f"{API}/openapi.json").json()
    operation = document["paths"][f"{MVU}/resource"]["get"]
    assert "If-None-Match" in [parameter["name"] for parameter in operation["parameters"]]
    assert "304" in operation["responses"]
