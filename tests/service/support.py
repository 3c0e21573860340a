"""A small card and helpers shared by the service tests."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select

from mvu_store.host import SessionSnapshot, SessionTail
from mvu_store.ledger import Ledger, tables
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService

# A declaration that clamps hp, refuses negative gold and coerces level: the usual card shape.
SCHEMA = """
import { registerMvuSchema } from 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';
export const Schema = z.object({
  hp: z.coerce.number().transform(v => _.clamp(v, 0, 100)),
  gold: z.number().min(0),
  level: z.coerce.number().int().prefault(1),
  mood: z.enum(['calm', 'angry']).prefault('calm'),
});
$(() => { registerMvuSchema(Schema); });
"""

INITVAR = "hp: 50\ngold: 10\n"

HERO: dict[str, Any] = {"character_id": "hero", "name": "Hero", "initvar": [INITVAR], "schema_source": SCHEMA}
PLAIN: dict[str, Any] = {"character_id": "plain", "name": "Plain", "initvar": ["hp: 10\nitems: []\n"]}


def scope(session_id: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"authority": "local", **({"session_id": session_id} if session_id else {}), **extra}


async def playing(service: MvuService, host: MemoryHost, session_id: str = "s1", *, card: dict[str, Any] = HERO,
                  created_at: int = 1000) -> str:
    """A session that selected ``card``; returns its instance id."""
    await service.discover(definition=card)
    host.create_session(session_id, created_at=created_at)
    selection = await service.select_character(session_id=session_id, character_id=card["character_id"])
    assert selection.instance_id is not None
    return selection.instance_id


# -- hand-built session events (docs/host-events.md), for turns MemoryHost.turn cannot play ----------


def text_message(turn: int, message_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """An ``assistant/message`` payload with one text block (``extra``: step, interrupted ...)."""
    return {"turn": turn, "message": {"id": message_id, "content": [{"type": "text", "text": text}]}, **extra}


def user_message(turn: int, text: str = "go") -> dict[str, Any]:
    return {"turn": turn, "message": {"source": {"kind": "user"}, "content": [{"type": "text", "text": text}]}}


def turn_end(turn: int, reason: str = "completed") -> dict[str, Any]:
    return {"turn": turn, "reason": {"kind": reason}}


async def stat_data(service: MvuService, instance: str, session_id: str = "s1") -> Any:
    record = await service.read(id=instance, scope=scope(session_id))
    assert record is not None
    return record.content["stat_data"]  # type: ignore[index,call-overload]


async def revision(service: MvuService, instance: str, session_id: str = "s1") -> int:
    record = await service.read(id=instance, scope=scope(session_id))
    assert record is not None
    return record.revision


async def stopped_turn(host: MemoryHost, session_id: str, *, turn: int, user: str) -> int:
    """A human request the user stopped before any assistant text (turn/end ``aborted``);
    returns the user event's seq, the retry coordinate (F-3)."""
    host.append(session_id, "turn/start", {"turn": turn})
    await host.drain()
    said = {"source": {"kind": "user"}, "content": [{"type": "text", "text": user}]}
    seq = host.append(session_id, "user/message", {"turn": turn, "message": said})
    host.append(session_id, "turn/end", {"turn": turn, "reason": {"kind": "aborted"}})
    await host.drain()
    return seq


class Hold:
    """One injected pause: ``reached`` is set when the held call arrives, which then waits for ``release``."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.release = asyncio.Event()


class GatedHost(MemoryHost):
    """A MemoryHost whose ``inspect`` can be held at a point the test controls (no sleeps)."""

    def __init__(self) -> None:
        super().__init__()
        self._holds: dict[str, list[Hold]] = {}

    def hold(self, session_id: str) -> Hold:
        """Hold the next ``inspect(session_id)`` until the test releases it."""
        hold = Hold()
        self._holds.setdefault(session_id, []).append(hold)
        return hold

    async def inspect(self, session_id: str) -> SessionSnapshot | None:
        snapshot = await super().inspect(session_id)
        await self._gate(session_id)
        return snapshot

    async def inspect_since(self, session_id: str, after_seq: int) -> SessionTail | None:
        tail = await super().inspect_since(session_id, after_seq)
        await self._gate(session_id)
        return tail

    async def _gate(self, session_id: str) -> None:
        holds = self._holds.get(session_id)
        if holds:
            hold = holds.pop(0)
            hold.reached.set()
            await hold.release.wait()


async def seed_rows(ledger: Ledger) -> int:
    """How many seed tickets this ledger holds (installed or not)."""
    seeds = tables.seeds.c
    rows = await ledger._store.read(lambda connection: connection.execute(
        select(func.count()).select_from(tables.seeds).where(seeds.ledger_id == ledger.ledger_id)).scalar_one())
    return int(rows)


def finish_turn(host: MemoryHost, session_id: str, turn: int, reply: str) -> int:
    """Append the rest of a started turn (user message, reply, completed end); returns the reply's seq."""
    host.append(session_id, "user/message", {"turn": turn, "message": {"source": {"kind": "user"},
                                                                      "content": [{"type": "text", "text": "go"}]}})
    seq = host.append(session_id, "assistant/message", {
        "turn": turn, "message": {"id": f"{session_id}-m{turn}", "content": [{"type": "text", "text": reply}]}})
    host.append(session_id, "turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return seq


async def checkpointed_turns(service: MvuService, host: MemoryHost, session_id: str, turns: range, reply: str) -> None:
    """Play ``turns`` with the host detached: each turn/start is checkpointed explicitly, the
    reply is not ingested. A checkpoint applies the turns that ended before it, so afterwards
    exactly the last turn's reply is pending."""
    for turn in turns:
        start = host.append(session_id, "turn/start", {"turn": turn})
        await service.checkpoint(session_id=session_id, turn_start_seq=start)
        finish_turn(host, session_id, turn, reply)


async def frozen_turns(ledger: Ledger, host: MemoryHost, instance: str, session_id: str, turns: range,
                       reply: str) -> None:
    """Play ``turns`` with the host detached and every turn's checkpoint stored directly in the
    ledger at the current head, so every reply of ``turns`` is pending at once (the service's own
    checkpoint would apply the earlier turns first)."""
    for turn in turns:
        start = host.append(session_id, "turn/start", {"turn": turn})
        await ledger.put_checkpoint(instance, session_id=session_id, turn=turn, seq=start)
        finish_turn(host, session_id, turn, reply)


async def assert_applied_once(service: MvuService, ledger: Ledger, instance: str, session_id: str,
                              turns: int, *, manual: int = 0) -> dict[str, Any]:
    """Every turn's reply is one version (turns 1..turns, once each), revisions run 1..head
    without holes, the head is after all of them and the SQL audits are clean. Returns stat_data."""
    history = await service.history(id=instance, scope=scope(session_id))
    applied = [entry.source.get("turn") for entry in history if entry.kind == "reply"]
    assert sorted(applied) == list(range(1, turns + 1)), applied
    assert [entry.kind for entry in history].count("manual") == manual
    assert [entry.revision for entry in history] == list(range(1, turns + manual + 1))
    assert len({entry.key for entry in history}) == len(history)
    record = await service.read(id=instance, scope=scope(session_id))
    assert record is not None
    assert record.revision == turns + manual
    assert await ledger.audit() == []
    stat_data = record.content["stat_data"]
    assert isinstance(stat_data, dict)
    return stat_data
