"""Prompt read benchmark: what the request-preparation lease costs a read, and a check of it.

Two services over one SQLite ledger each serve a session of ``--turns`` played turns through
``MemoryHost``: one host offers ``capture_appends`` (a prompt read then takes the request lease,
which reads the log the read already has and keeps a view of it), the other is the same host
without it (the strict session lease). In interleaved rounds (the order rotates every round),
each reads the world-book dependency of its running turn ``--reads`` times, then checks the
lease after a logged ``system/message`` (the tolerant one stays current, the strict one not):

- ``read_ratio``: the median over the rounds of request-lease read time / strict read time;
- ``check_us``: the request lease's check after one tolerated append, in microseconds.

Human lines first; the LAST line is one JSON object with the figures and the load average.

    python benchmarks/prompt_lease.py [--rounds N] [--turns N] [--reads N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mvu_store.host import Lease
from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService

CARD = {"character_id": "bench", "name": "Bench", "initvar": ["hp: 50\ngold: 10\n"]}
EVENT: dict[str, Any] = {"preview": False, "turn": None, "step": 1, "usage": "world-book-variable",
                         "consumer": {"adapterId": "tavern.world-books", "id": "world-book:bench"}}


class StrictHost(MemoryHost):
    """The same host without ``capture_appends`` (a protocol member set to None is absent, as
    ``isinstance`` sees it): prompt reads keep the strict lease."""

    capture_appends = None  # type: ignore[assignment]


async def _session(ledger: Any, host: MemoryHost, turns: int) -> MvuService:
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    await service.discover(definition=CARD)
    host.create_session("s1", created_at=1000)
    await service.select_character(session_id="s1", character_id="bench")
    for turn in range(1, turns + 1):
        await host.turn("s1", turn=turn, user="go", reply="_.add('gold', 1);")
    host.append("s1", "turn/start", {"turn": turns + 1})
    await host.drain()
    return service


async def _reads(service: MvuService, turn: int, count: int) -> tuple[float, Lease]:
    event = {**EVENT, "turn": turn}
    started = time.perf_counter()
    found = None
    for _ in range(count):
        found = await service.resolve_prompt_dependency(scope={"authority": "local", "sessionId": "s1"}, event=event)
    elapsed = time.perf_counter() - started
    assert found is not None
    return elapsed, found.check_current


async def main(rounds: int, turns: int, reads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        tolerant_ledger = await open_ledger(f"sqlite:///{Path(directory) / 'a.sqlite3'}")
        strict_ledger = await open_ledger(f"sqlite:///{Path(directory) / 'b.sqlite3'}")
        try:
            hosts = {"request": MemoryHost(), "strict": StrictHost()}
            services = {"request": await _session(tolerant_ledger, hosts["request"], turns),
                        "strict": await _session(strict_ledger, hosts["strict"], turns)}
            ratios: list[float] = []
            checks: list[float] = []
            for index in range(rounds):
                times: dict[str, float] = {}
                for name in (["request", "strict"] if index % 2 == 0 else ["strict", "request"]):
                    times[name], lease = await _reads(services[name], turns + 1, reads)
                    hosts[name].append("s1", "system/message", {"turn": turns + 1})
                    started = time.perf_counter()
                    current = lease()
                    if name == "request":
                        checks.append((time.perf_counter() - started) * 1e6)
                    assert current is (name == "request"), (name, current)
                ratios.append(times["request"] / times["strict"])
            for service in services.values():
                await service.close()
        finally:
            await tolerant_ledger.close()
            await strict_ledger.close()
    return {"read_ratio": round(statistics.median(ratios), 3), "check_us": round(statistics.median(checks), 1),
            "turns": turns, "reads": reads, "rounds": rounds, "load": round(os.getloadavg()[0], 2)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--reads", type=int, default=50)
    arguments = parser.parse_args()
    figures = asyncio.run(main(arguments.rounds, arguments.turns, arguments.reads))
    print(f"request-lease read / strict read (median of {figures['rounds']} rounds): {figures['read_ratio']}")
    print(f"request-lease check after a tolerated append: {figures['check_us']} µs")
    print(json.dumps(figures))
