"""A card write whose client disconnects while it waits commits nothing: the route passes the
disconnect to the service as its cancellation signal and answers 499 (driven here as raw ASGI,
the write held in its first look at the scope until the client has gone)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mvu_api.http import create_app
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.cards.card_support import CARD, IDENTITY, SCOPE, Held, grant, played


async def test_a_card_write_whose_client_left_commits_nothing(ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, resources=[CARD])
    host.attach(service)
    await played(service, host)
    grant(host)
    capability = (await service.create_card_binding(scope=SCOPE, grant_id="grant",
                                                    source_identity=IDENTITY))["capability"]
    app = create_app(service, token="t")
    body = json.dumps({"capability": capability, "operation": "patch",
                       "value": [{"op": "delta", "path": "/hp", "value": -1}], "expectedRevision": 1,
                       "operationId": "gone", "cause": "user-interaction"}).encode()
    held = Held(host, 1)
    left = asyncio.Event()
    told = asyncio.Event()
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await left.wait()
        # Set in the route's watcher task, which goes on to raise its signal before it yields.
        told.set()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/pmp-dsh-tavern/api/v1/mvu/card-write", "raw_path": b"/pmp-dsh-tavern/api/v1/mvu/card-write",
             "query_string": b"", "root_path": "", "server": ("test", 80), "client": ("127.0.0.1", 1),
             "headers": [(b"host", b"test"), (b"authorization", b"Bearer t"),
                         (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
    call = asyncio.ensure_future(app(scope, receive, send))
    await held.reached.wait()
    left.set()
    await asyncio.wait_for(told.wait(), timeout=120)
    held.release.set()
    await asyncio.wait_for(call, timeout=120)
    start = next(message for message in sent if message["type"] == "http.response.start")
    assert start["status"] == 499
    snapshot = await service.snapshot(scope=SCOPE)
    assert snapshot["revision"] == 1 and snapshot["variables"]["stat_data"] == {"hp": 9}  # type: ignore[index]
