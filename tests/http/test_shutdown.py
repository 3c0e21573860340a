"""SIGTERM while edits are in flight: in-flight requests finish, the process exits 0 with its
engine disposed, and every acknowledged edit is in the ledger, which audits clean."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from mvu_store.ledger import open_ledger
from tests.http.support import MVU, SHARED, Server, scope, seed

WRITERS = 8


def test_sigterm_lets_in_flight_writes_finish(tmp_path: Path) -> None:
    seeded = seed(tmp_path)
    server = Server.start(seeded.db)
    acknowledged: dict[str, tuple[str, int, float]] = {}
    refused: list[str] = []
    started = threading.Event()

    def writer(resource: str) -> None:
        with server.client() as client:
            read = client.get(f"{MVU}/resource", params={"id": resource, "scope": json.dumps(scope("s1"))})
            revision = read.json()["revision"]
            for n in range(10_000):  # bounded; the signal ends it long before
                operation = f"{resource}/{n}"
                body: dict[str, Any] = {"id": resource, "scope": scope("s1"), "content": {"stat_data": {"n": n}},
                                        "expectedRevision": revision, "operationId": operation}
                try:
                    response = client.post(f"{MVU}/update", json=body)
                except httpx.TransportError:
                    return  # the server stopped accepting: this one was never acknowledged
                if response.status_code != 200:
                    refused.append(response.text)
                    return
                revision = response.json()["revision"]
                acknowledged[operation] = (resource, revision, time.monotonic())
                if len(acknowledged) >= 2 * WRITERS:
                    started.set()

    threads = [threading.Thread(target=writer, args=(resource,)) for resource in SHARED[:WRITERS]]
    for thread in threads:
        thread.start()
    assert started.wait(timeout=30), refused
    signalled = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(timeout=30)
    code, out, err = server.stop(timeout=30)
    assert code == 0, err[-3000:]
    assert out.rstrip().endswith("mvu serve: stopped")
    assert not refused, refused
    # Requests already sent when the signal came were answered, not dropped.
    assert any(at > signalled for _, _, at in acknowledged.values())

    async def check() -> None:
        ledger = await open_ledger(seeded.db)
        try:
            for resource in SHARED[:WRITERS]:
                stored = {version.operation_id: version.revision for version in await ledger.versions(resource)}
                for operation, (owner, revision, _) in acknowledged.items():
                    if owner == resource:
                        assert stored.get(operation) == revision, operation
            assert await ledger.audit() == []
        finally:
            await ledger.close()

    asyncio.run(check())
