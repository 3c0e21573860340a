"""Races between OS processes on one database, on SQLite and PostgreSQL, forced rather than hoped for.

Each child (``race_child.py``) opens the ledger, says READY and acts when told. Where a race needs
one process to be inside its work while another starts, the first stops at a point the parent
controls (a command processor that waits, a session lock held, the ledger row locked) and the
parent waits until the database or the kernel reports the second one waiting
(``tests/lock_waits.py``). Only outcomes are asserted, never timings.
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from mvu_store.service.identity import character_template_id
from tests.conftest import POSTGRES_SERVER_URL, POSTGRES_URL, require_postgres
from tests.lock_waits import DEADLINE_SECONDS, until, until_waiting, waiters
from tests.service.support import HERO, finish_turn, frozen_turns, scope

CHILD = Path(__file__).with_name("race_child.py")
RIVAL = {**HERO, "character_id": "rival", "name": "Rival"}
BROKEN = {**HERO, "initvar": ["hp: [1\n"]}  # the same card with an [initvar] entry that does not parse


class Child:
    """One ``race_child.py`` process; its output lines are read on a thread, so a silent child
    fails the test at the deadline instead of hanging it."""

    def __init__(self, *args: str) -> None:
        self._process = subprocess.Popen([sys.executable, str(CHILD), *args], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put("")  # end of output

    def expect(self, word: str) -> str:
        """The rest of the next output line, which must start with ``word``."""
        try:
            line = self._lines.get(timeout=DEADLINE_SECONDS)
        except queue.Empty:
            line = "(nothing)"
        if not line.startswith(word):
            self.kill()
            stderr = self._process.stderr.read() if self._process.stderr else ""
            raise AssertionError(f"expected {word}, the child said {line!r}\n{stderr}")
        return line[len(word):].strip()

    def send(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write("go\n")
        self._process.stdin.flush()

    def done(self) -> Any:
        payload = json.loads(self.expect("DONE"))
        assert self._process.wait(timeout=DEADLINE_SECONDS) == 0
        return payload

    def exited(self) -> bool:
        return self._process.poll() is not None

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


def children(*commands: list[str]) -> list[Child]:
    started = [Child(*command) for command in commands]
    for child in started:
        child.expect("READY")
    return started


def test_a_selection_and_an_ingest_in_two_processes_take_the_session_in_turn(
        ledger_url: str, ledger_id: str, tmp_path: Path) -> None:
    """The selection stops inside its work (applying the outgoing character's last reply) while
    the host appends the next turn and another process ingests. Without a database lock the ingest
    would apply the new reply to the outgoing character, and the selection, whose boundary comes
    before that reply, would give it to the incoming one too. The ingest waits instead, then
    gives it to the incoming character only."""
    logs = str(tmp_path / "sessions")
    gold, bonus = "The guard pays up. _.add('gold', 1);", "A chest! _.add('gold', 100);"

    async def prepare() -> dict[str, str]:
        ledger = await open_ledger(ledger_url, ledger_id=ledger_id)
        try:
            host = MemoryHost(path=logs)
            service = MvuService(ledger=ledger, host=host)
            await service.discover(definition=HERO)
            await service.discover(definition=RIVAL)
            host.create_session("s1", created_at=1000)
            instances = {}
            for character in ("rival", "hero"):  # both instances exist; the hero is selected
                selection = await service.select_character(session_id="s1", character_id=character)
                assert selection.instance_id is not None
                instances[character] = selection.instance_id
            await frozen_turns(ledger, host, instances["hero"], "s1", range(1, 2), gold)  # pending
            return instances
        finally:
            await ledger.close()

    async def second_turn() -> int:
        """The host appends turn 2 (its checkpoints stored for both characters)."""
        ledger = await open_ledger(ledger_url, ledger_id=ledger_id)
        try:
            host = MemoryHost(path=logs)
            start = host.append("s1", "turn/start", {"turn": 2})
            for instance in instances.values():
                await ledger.put_checkpoint(instance, session_id="s1", turn=2, seq=start)
            finish_turn(host, "s1", 2, bonus)
            return start
        finally:
            await ledger.close()

    instances = asyncio.run(prepare())
    selecting, ingesting = children(["select", ledger_url, ledger_id, logs, "s1", "rival"],
                                    ["ingest", ledger_url, ledger_id, logs, "s1"])
    try:
        selecting.send()
        selecting.expect("PAUSED")  # holding s1, the hero's reply of turn 1 in hand
        start = asyncio.run(second_turn())
        ingesting.send()
        # It waits for the selection's hold (it could only finish now if nothing held it back).
        until(lambda: ingesting.exited() or waiters(ledger_url, ledger_id, "s1") == 1, "the ingest waiting")
        selecting.send()
        assert selecting.done() == {"instanceId": instances["rival"], "boundary": start}
        assert ingesting.done() == [[instances["rival"], 2, "committed"]]
    finally:
        selecting.kill()
        ingesting.kill()

    async def check() -> None:
        ledger = await open_ledger(ledger_url, ledger_id=ledger_id)
        try:
            service = MvuService(ledger=ledger, host=MemoryHost(path=logs))
            assert (await service.ingest(session_id="s1")).outcomes == []
            for character, turns, stat in (("hero", [1], 11), ("rival", [2], 110)):
                history = await service.history(id=instances[character], scope=scope("s1"))
                assert [entry.source.get("turn") for entry in history if entry.kind == "reply"] == turns
                record = await service.read(id=instances[character], scope=scope("s1"))
                assert record.content["stat_data"]["gold"] == stat
            assert await ledger.audit() == []
        finally:
            await ledger.close()

    asyncio.run(check())


def test_two_processes_discovering_one_card_keep_every_session(ledger_url: str, ledger_id: str) -> None:
    """Whatever the interleaving: each process registers the card for its own sessions at once."""
    ours, theirs = [f"a{n}" for n in range(12)], [f"b{n}" for n in range(12)]
    asyncio.run(_created(ledger_url, ledger_id))
    racing = children(["discover", ledger_url, ledger_id, json.dumps(HERO), ",".join(ours)],
                      ["discover", ledger_url, ledger_id, json.dumps(HERO), ",".join(theirs)])
    try:
        for child in racing:
            child.send()
        assert [child.done() for child in racing] == [[None] * 12, [None] * 12]
    finally:
        for child in racing:
            child.kill()
    template = asyncio.run(_template(ledger_url, ledger_id))
    assert sorted(template["sessionIds"]) == sorted(ours + theirs)
    assert "sourceError" not in template


@pytest.mark.postgres
def test_two_processes_discovering_behind_a_busy_ledger_keep_both_sessions_and_the_healthy_card() -> None:
    """PostgreSQL: both discoveries queue on the ledger row (held here) before either writes, so
    both would have read the template before the other's write were the read outside the unit:
    one session would be lost, and the failing card could replace the healthy one."""
    require_postgres()
    ledger_id = f"t-{uuid.uuid4().hex[:20]}"
    asyncio.run(_created(POSTGRES_URL, ledger_id))
    healthy, failing = children(["discover", POSTGRES_URL, ledger_id, json.dumps(HERO), "s1"],
                                ["discover", POSTGRES_URL, ledger_id, json.dumps(BROKEN), "s2"])
    try:
        with psycopg.connect(POSTGRES_URL) as blocker:
            blocker.execute("SELECT 1 FROM ledger WHERE ledger_id = %s FOR UPDATE", (ledger_id,))
            healthy.send()
            failing.send()
            until(lambda: _writers_waiting(ledger_id) == 2, "both discoveries waiting for the ledger row")
        assert healthy.done() == [None]
        assert failing.done() in ([None], ["MVU_INITIALIZATION_INVALID"])  # refused if it came second
    finally:
        healthy.kill()
        failing.kill()
    template = asyncio.run(_template(POSTGRES_URL, ledger_id))
    assert sorted(template["sessionIds"]) == ["s1", "s2"]
    assert "sourceError" not in template


def test_a_process_that_dies_holding_a_session_releases_it(ledger_url: str, ledger_id: str) -> None:
    asyncio.run(_created(ledger_url, ledger_id))
    first, second = children(["hold", ledger_url, ledger_id, "s1"], ["hold", ledger_url, ledger_id, "s1"])
    try:
        first.send()
        first.expect("HELD")
        second.send()
        until_waiting(ledger_url, ledger_id, "s1")
        first.kill()  # SIGKILL: nothing of the process runs any more
        second.expect("HELD")
        second.send()
        assert second.done() is None
    finally:
        first.kill()
        second.kill()


async def _created(url: str, ledger_id: str) -> None:
    ledger = await open_ledger(url, ledger_id=ledger_id)
    await ledger.close()


async def _template(url: str, ledger_id: str) -> dict[str, Any]:
    ledger = await open_ledger(url, ledger_id=ledger_id)
    try:
        template = await ledger.template(character_template_id("hero"))
        assert isinstance(template, dict)
        assert await ledger.audit() == []
        return template
    finally:
        await ledger.close()


def _writers_waiting(ledger_id: str) -> int:
    with psycopg.connect(POSTGRES_SERVER_URL, autocommit=True) as admin:
        row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
                            " AND wait_event_type = 'Lock'", (f"mvu-store {ledger_id} writer",)).fetchone()
    assert row is not None
    return int(row[0])
