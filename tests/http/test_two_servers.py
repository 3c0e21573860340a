"""Two real ``mvu serve`` processes on one PostgreSQL database behave as one (the scale-out path).

A host feeds one chat through both servers alternately (a turn starts on one and ends on the
other), edits through both, sends one turn's end to both at once, and selects another character
on one server while the other ingests. Each reply is applied once, to the character selected
when it was written; no edit is lost; the SQL audits stay clean. Where requests race, the test
asserts what holds whatever their order, never how long anything took.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from mvu_store.ledger import open_ledger
from mvu_store.service.identity import character_template_id
from mvu_store.store_host import StoreHost
from tests.conftest import POSTGRES_SERVER_URL, postgres_url_in_schema, require_postgres
from tests.http.support import MVU, Server
from tests.http.test_hosting import CARD, CREATED, turn

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
SCOPE = json.dumps({"authority": "local", "sessionId": "s1"})
GOLD = "The guard pays up. _.add('gold', 1);"


@pytest.fixture
def database() -> Iterator[str]:
    """A schema of its own, so the servers' ledger ``default`` is this test's alone."""
    require_postgres()
    schema = f"mvu_two_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_SERVER_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield postgres_url_in_schema(schema)
    finally:
        with psycopg.connect(POSTGRES_SERVER_URL, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def committed(answer: dict[str, Any]) -> list[tuple[str, int]]:
    outcomes = (answer["ingest"] or {}).get("outcomes", [])
    assert answer["error"] is None and all(o["status"] == "committed" for o in outcomes), answer
    return [(o["resourceId"], o["turn"]) for o in outcomes]


def test_two_servers_on_one_database_apply_each_reply_once_and_lose_no_edit(database: str) -> None:
    first = Server.start(database)
    second = Server.start(database)
    try:
        instances = asyncio.run(_play(first, second, database))
    finally:
        stopped = [first.stop(), second.stop()]
    assert [code for code, _, _ in stopped] == [0, 0], stopped
    asyncio.run(_audit(database, instances))


async def _play(first: Server, second: Server, database: str) -> dict[str, str]:
    async with httpx.AsyncClient(base_url=first.base, headers=first.auth, timeout=60) as a, \
            httpx.AsyncClient(base_url=second.base, headers=second.auth, timeout=60) as b:

        async def events(server: httpx.AsyncClient, batch: list[dict[str, Any]]) -> dict[str, Any]:
            return ok(await server.post(f"{MVU}/sessions/s1/events", json={"events": batch}))

        async def read(server: httpx.AsyncClient, instance: str) -> dict[str, Any]:
            return ok(await server.get(f"{MVU}/resource", params={"id": instance, "scope": SCOPE}))

        async def card(server: httpx.AsyncClient, character: str, session: str | None = None) -> dict[str, Any]:
            query = f"characterId={character}" + (f"&sessionId={session}" if session else "")
            return ok(await server.post(f"{MVU}/cards?{query}", content=json.dumps(CARD),
                                        headers={"Content-Type": "application/json"}))

        # A card registered on both servers at once, for a session each; another one on one.
        await asyncio.gather(card(a, "hero", "s1"), card(b, "hero", "s2"))
        await card(b, "rival")
        ok(await a.post(f"{MVU}/sessions", json={"sessionId": "s1", "createdAt": CREATED}), 201)
        assert ok(await b.get(f"{MVU}/sessions/s1"))["lastSeq"] == -1  # created on one, seen on the other
        hero = ok(await b.put(f"{MVU}/sessions/s1/selection", json={"characterId": "hero"}))["instanceId"]

        # Turns alternate: each starts on one server and ends on the other.
        for number, (starts, ends) in zip((1, 2), ((a, b), (b, a)), strict=True):
            start, finish = turn((number - 1) * 4, number, GOLD, f"m{number}")
            assert ok(await starts.post(f"{MVU}/sessions/s1/events", json={"events": start}))["error"] is None
            assert committed(await events(ends, finish)) == [(hero, number)]

        # Two edits of one revision through both servers: one wins, the other is refused and
        # retried on top of it; both are kept.
        current = await read(a, hero)
        stat = current["content"]["stat_data"]
        edits = {a: ("edit-a", 500), b: ("edit-b", 600)}

        async def edit(server: httpx.AsyncClient, revision: int) -> httpx.Response:
            operation, gold = edits[server]
            return await server.post(f"{MVU}/update", json={
                "id": hero, "scope": {"authority": "local", "sessionId": "s1"},
                "content": {"stat_data": {**stat, "gold": gold}}, "expectedRevision": revision,
                "operationId": operation})

        answers = await asyncio.gather(edit(a, current["revision"]), edit(b, current["revision"]))
        assert sorted(answer.status_code for answer in answers) == [200, 409]
        loser = a if answers[0].status_code == 409 else b
        assert answers[[a, b].index(loser)].json()["code"] == "REVISION_CONFLICT"
        ok(await edit(loser, (await read(loser, hero))["revision"]))
        last_gold = edits[loser][1]

        # One turn's end sent to both servers at once: stored once, applied once.
        start, finish = turn(8, 3, GOLD, "m3")
        assert (await events(a, start))["error"] is None
        both = await asyncio.gather(events(a, finish), events(b, finish))
        assert sorted(answer["appended"] for answer in both) == [0, 2]
        assert [pair for answer in both for pair in committed(answer)] == [(hero, 3)]

        # Turn 4's end is stored by a third process on the database, unapplied; then one server
        # selects the rival while the other ingests (the same batch again). Whichever takes the
        # session first, the hero's reply is applied once and the rival starts after it.
        start, finish = turn(12, 4, GOLD, "m4")
        assert (await events(b, start))["error"] is None
        ledger = await open_ledger(database)
        try:
            await StoreHost(ledger).append("s1", finish)
        finally:
            await ledger.close()
        replayed, selected = await asyncio.gather(
            events(a, finish), b.put(f"{MVU}/sessions/s1/selection", json={"characterId": "rival"}))
        assert replayed["replayed"] == 2 and committed(replayed) in ([(hero, 4)], [])
        selection = ok(selected)
        rival = selection["instanceId"]
        assert selection["boundary"] == 16  # after turn 4's end (seq 15)

        # The rival's turns, alternating again; the hero takes none of them.
        for number, (starts, ends) in zip((5, 6), ((a, b), (b, a)), strict=True):
            start, finish = turn((number - 1) * 4, number, GOLD, f"m{number}")
            assert ok(await starts.post(f"{MVU}/sessions/s1/events", json={"events": start}))["error"] is None
            assert committed(await events(ends, finish)) == [(rival, number)]

        # Both servers answer the same state.
        for instance, gold in ((hero, last_gold + 2), (rival, 10 + 2)):
            seen = [await read(server, instance) for server in (a, b)]
            assert seen[0] == seen[1] and seen[0]["content"]["stat_data"]["gold"] == gold
        return {"hero": hero, "rival": rival}


async def _audit(database: str, instances: dict[str, str]) -> None:
    ledger = await open_ledger(database)
    try:
        for name, replies, manual in (("hero", [1, 2, 3, 4], 2), ("rival", [5, 6], 0)):
            versions = await ledger.versions(instances[name])
            turns = [v.source.get("turn") for v in versions if v.kind == "reply"]
            assert sorted(turns) == replies, (name, turns)  # each reply once, to its own character
            assert [v.kind for v in versions].count("manual") == manual
            assert [v.revision for v in versions] == list(range(1, len(versions) + 1))
        template = await ledger.template(character_template_id("hero"))
        assert isinstance(template, dict) and sorted(template["sessionIds"]) == ["s1", "s2"]
        assert await ledger.audit() == []
    finally:
        await ledger.close()
