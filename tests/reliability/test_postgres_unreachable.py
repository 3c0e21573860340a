"""A PostgreSQL server that becomes unreachable, hangs, or drops the ledger's connections: every
read, write and session lock (which has connections of its own) is refused with
``MVU_STORAGE_BUSY`` (an HTTP 503 with ``Retry-After``), never an untyped error or a hang, and
the ledger works again once the server is back, without a restart."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from mvu_store.errors import MvuError
from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger
from tests.conftest import POSTGRES_SERVER_URL, POSTGRES_URL, require_postgres
from tests.http.support import EVENT_DEADLINE, MVU, Server
from tests.reliability.tcp_proxy import Relay, silent_server

pytestmark = pytest.mark.postgres

WAIT = 120.0  # a bound on a refusal that should come at once: only a hang runs into it


def _through(port: int) -> str:
    return make_url(POSTGRES_URL).set(port=port).render_as_string(hide_password=False)


@pytest.fixture
def relay() -> Iterator[Relay]:
    require_postgres()
    target = make_url(POSTGRES_SERVER_URL)
    opened = Relay((target.host or "127.0.0.1", target.port or 5432))
    try:
        yield opened
    finally:
        opened.close()


def _commit(n: int) -> CommitRequest:
    return CommitRequest("r", n, "manual", {"n": n + 1}, f"fp-{n}", {"manual": True}, operation_id=f"op-{n}")


async def _hold(ledger: Ledger) -> None:
    async with ledger.session_lock("s1"):
        pass


OPERATIONS: dict[str, Callable[[Ledger], Awaitable[Any]]] = {
    "read": lambda ledger: ledger.head("r"),
    "write": lambda ledger: ledger.commit(_commit(0)),
    "session lock": _hold,
    "usage": lambda ledger: ledger.usage(),
}


async def test_every_operation_on_an_unreachable_server_is_busy_and_recovers(relay: Relay) -> None:
    ledger = await open_ledger(_through(relay.port), ledger_id=f"t-{uuid.uuid4().hex[:20]}", busy_timeout_ms=2000)
    try:
        await ledger.create_resource(NewResource(id="r", kind="instance", initial={"n": 0}, definition={}))
        await _hold(ledger)  # the lock part keeps an idle connection: the cut drops it too
        relay.cut()
        for name, operation in OPERATIONS.items():
            with pytest.raises(MvuError) as refused:
                await asyncio.wait_for(operation(ledger), WAIT)
            assert refused.value.code == "MVU_STORAGE_BUSY", name
        relay.restore()
        for name, operation in OPERATIONS.items():
            await asyncio.wait_for(operation(ledger), WAIT)  # every part reconnects by itself
            assert name
        assert (await ledger.head("r")).revision == 1 and await ledger.audit() == []
    finally:
        relay.restore()
        await ledger.close()


async def test_a_server_that_accepts_and_never_answers_is_busy_after_the_timeout() -> None:
    """libpq waits for ever by default; the ledger's connections give up after its busy timeout."""
    require_postgres()
    with silent_server() as port, pytest.raises(MvuError) as refused:
        await asyncio.wait_for(open_ledger(_through(port), busy_timeout_ms=2000), WAIT)
    assert refused.value.code == "MVU_STORAGE_BUSY"


def _backends(application: str) -> int:
    """Terminate every backend whose application name starts with ``application``; how many."""
    with psycopg.connect(POSTGRES_SERVER_URL, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE %s"
                             " AND pid <> pg_backend_pid()", (application + "%",)).fetchall()
    return len(rows)


def _until_answered(send: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """Send while the answer is 503 (the database is still away); every answer, the last a 2xx."""
    answers = [send()]
    deadline = time.monotonic() + EVENT_DEADLINE
    while answers[-1].status_code == 503:
        assert answers[-1].json()["code"] == "MVU_STORAGE_BUSY", answers[-1].text
        assert time.monotonic() < deadline, answers[-1].text
        answers.append(send())
    assert answers[-1].status_code < 300, answers[-1].text
    return answers


def test_mvu_serve_answers_503_busy_while_postgresql_is_away_and_recovers(relay: Relay) -> None:
    ledger_id = f"t-{uuid.uuid4().hex[:20]}"
    server = Server.start(_through(relay.port), "--ledger-id", ledger_id)
    try:
        with server.client() as client:
            def create(n: int) -> httpx.Response:
                return client.post(f"{MVU}/sessions", json={"sessionId": f"s{n}", "createdAt": 1000})

            def append(session: str, seq: int) -> httpx.Response:
                """Event ``seq`` of turn 1 (a start, then what the user says); holds the session's lock."""
                said = {"source": {"kind": "user"}, "content": [{"type": "text", "text": f"line {seq}"}]}
                event = ({"seq": 0, "type": "turn/start", "data": {"turn": 1}} if seq == 0 else
                         {"seq": seq, "type": "user/message", "data": {"turn": 1, "message": said}})
                return client.post(f"{MVU}/sessions/{session}/events", json={"events": [event]})

            assert create(0).status_code == 201
            assert append("s0", 0).status_code == 200
            relay.cut()
            for answer in (create(1), client.get(f"{MVU}/sessions/s0"), append("s0", 1)):
                assert answer.status_code == 503, answer.text
                assert answer.json()["code"] == "MVU_STORAGE_BUSY" and "retry-after" in answer.headers
            relay.restore()
            assert _until_answered(lambda: create(1))[-1].status_code == 201
            assert _until_answered(lambda: append("s1", 0))[-1].status_code == 200

            # The server ends the ledger's sessions (a failover, an operator): typed answers, then service.
            assert _backends(f"mvu-store {ledger_id}") >= 1
            _until_answered(lambda: client.get(f"{MVU}/sessions/s1"))
            _until_answered(lambda: append("s1", 1))
            _until_answered(lambda: create(2))
    finally:
        code, _, log = server.stop()
    assert code == 0
    assert "Traceback" not in log, log[-3000:]
