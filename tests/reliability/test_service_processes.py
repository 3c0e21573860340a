"""Two OS processes driving ``MvuService`` on one SQLite file and one set of durable session logs.

The parent writes the sessions (``MemoryHost(path=DIR)``) and their checkpoints, then starts two
children (``service_child.py``) that each open the ledger file and load the logs, and releases
them together. Whatever the interleaving, every reply ends up applied exactly once and a
session's instance is allocated exactly once; the SQL audits stay clean. Only outcomes are
asserted, never timings.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from mvu_store.service.identity import character_template_id, instance_id
from tests.service.support import HERO, assert_applied_once, checkpointed_turns, frozen_turns

CHILD = Path(__file__).with_name("service_child.py")
GOLD = "The guard pays up. _.add('gold', 1);"


def race(*commands: list[str]) -> list[Any]:
    """Start one child per command, release them together once all are READY; their DONE payloads."""
    children = [subprocess.Popen([sys.executable, str(CHILD), *command], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for command in commands]
    try:
        for child in children:
            assert child.stdout is not None
            ready = child.stdout.readline()
            assert ready.strip() == "READY", ready + (child.stderr.read() if child.stderr else "")
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        payloads = []
        for child in children:
            out, err = child.communicate(timeout=60)
            assert child.returncode == 0, err
            done = out.strip().splitlines()[-1]
            assert done.startswith("DONE "), out + err
            payloads.append(json.loads(done[5:]))
        return payloads
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_two_processes_ingesting_the_same_sessions_apply_each_reply_once(tmp_path: Path) -> None:
    db, logs = tmp_path / "ledger.sqlite3", tmp_path / "sessions"
    shallow = [f"s{index}" for index in range(6)]  # turns 1-2 applied by checkpoints, turn 3 pending
    deep = "deep"  # turns 1-8 all pending (checkpoints stored directly)

    async def prepare() -> dict[str, str]:
        ledger = await open_ledger(f"sqlite:///{db}")
        try:
            host = MemoryHost(path=logs)
            service = MvuService(ledger=ledger, host=host)
            await service.discover(definition=HERO)
            instances = {}
            for created_at, session_id in enumerate([*shallow, deep], start=1000):
                host.create_session(session_id, created_at=created_at)
                selection = await service.select_character(session_id=session_id, character_id="hero")
                assert selection.instance_id is not None
                instances[session_id] = selection.instance_id
            for session_id in shallow:
                await checkpointed_turns(service, host, session_id, range(1, 4), GOLD)
            await frozen_turns(ledger, host, instances[deep], deep, range(1, 9), GOLD)
            return instances
        finally:
            await ledger.close()

    instances = asyncio.run(prepare())
    everyone = [*shallow, deep]
    first, second = race(["ingest", str(db), str(logs), ",".join(everyone)],
                         ["ingest", str(db), str(logs), ",".join(reversed(everyone))])
    pending = sorted([[instances[s], 3] for s in shallow] + [[instances[deep], turn] for turn in range(1, 9)])
    outcomes = first + second
    committed = sorted([resource, turn] for resource, turn, status in outcomes if status == "committed")
    assert committed == pending, "each pending reply committed by exactly one process"
    assert {status for _, _, status in outcomes} <= {"committed", "replayed"}
    print(f"{len(committed)} replies committed, {len(outcomes) - len(committed)} found committed by the other process")

    async def check() -> None:
        ledger = await open_ledger(f"sqlite:///{db}")
        try:
            service = MvuService(ledger=ledger, host=MemoryHost(path=logs))
            for session_id in shallow:
                stat = await assert_applied_once(service, ledger, instances[session_id], session_id, 3)
                assert stat["gold"] == 10 + 3
            stat = await assert_applied_once(service, ledger, instances[deep], deep, 8)
            assert stat["gold"] == 10 + 8
            for session_id in everyone:
                assert (await service.ingest(session_id=session_id)).outcomes == []
        finally:
            await ledger.close()

    asyncio.run(check())


def test_two_processes_selecting_one_character_allocate_one_instance(tmp_path: Path) -> None:
    db, logs = tmp_path / "ledger.sqlite3", tmp_path / "sessions"
    sessions = [f"p{index}" for index in range(6)]

    async def prepare() -> None:
        ledger = await open_ledger(f"sqlite:///{db}")
        try:
            host = MemoryHost(path=logs)
            await MvuService(ledger=ledger, host=host).discover(definition=HERO)
            for created_at, session_id in enumerate(sessions, start=1000):
                host.create_session(session_id, created_at=created_at)
        finally:
            await ledger.close()

    asyncio.run(prepare())
    first, second = race(["select", str(db), str(logs), ",".join(sessions), "hero"],
                         ["select", str(db), str(logs), ",".join(reversed(sessions)), "hero"])
    template = character_template_id("hero")
    expected = {s: instance_id(template, {"sessionId": s, "createdAt": 1000 + n}) for n, s in enumerate(sessions)}
    assert first == second == expected

    async def check() -> None:
        ledger = await open_ledger(f"sqlite:///{db}")
        try:
            for session_id in sessions:
                rows = await ledger.resources(session_id=session_id, kinds=("instance",))
                found = [(row.id, row.template_id, row.revision) for row in rows]
                assert found == [(expected[session_id], template, 0)]
                assert await ledger.selection(session_id) == (True, template)
                assert (await ledger.activations(session_id))[expected[session_id]] == 0
            assert await ledger.audit() == []
        finally:
            await ledger.close()

    asyncio.run(check())
