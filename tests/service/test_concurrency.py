"""Two writers on one ledger (two services, as two processes would be): a reply is still applied
once and an instance allocated once (P-3, I-2)."""

from __future__ import annotations

import asyncio

from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import HERO, revision, scope, stat_data, text_message, turn_end, user_message


async def test_concurrent_selection_allocates_one_instance(ledger: Ledger, host: MemoryHost) -> None:
    first, second = MvuService(ledger=ledger, host=host), MvuService(ledger=ledger, host=host)
    await first.discover(definition=HERO)
    host.create_session("s1", created_at=1000)
    a, b = await asyncio.gather(first.select_character(session_id="s1", character_id="hero"),
                                second.select_character(session_id="s1", character_id="hero"))
    assert a.instance_id is not None and a.instance_id == b.instance_id
    assert [row.id for row in await ledger.resources(kinds=("instance",))] == [a.instance_id]
    assert await ledger.audit() == []


async def test_concurrent_ingest_applies_a_reply_once(ledger: Ledger, host: MemoryHost) -> None:
    first, second = MvuService(ledger=ledger, host=host), MvuService(ledger=ledger, host=host)
    await first.discover(definition=HERO)
    host.create_session("s1", created_at=1000)
    instance = (await first.select_character(session_id="s1", character_id="hero")).instance_id
    assert instance is not None
    for turn in (1, 2):
        start = host.append("s1", "turn/start", {"turn": turn})
        await first.checkpoint(session_id="s1", turn_start_seq=start)
        host.append("s1", "user/message", user_message(turn))
        host.append("s1", "assistant/message", text_message(turn, f"m{turn}", "_.add('gold', 5);"))
        host.append("s1", "turn/end", turn_end(turn))
    # Turn 2's checkpoint applied turn 1; turn 2 is left for the racing ingests.
    assert await revision(first, instance) == 1
    reports = await asyncio.gather(first.ingest(session_id="s1"), second.ingest(session_id="s1"),
                                   first.ingest(session_id="s1"))
    committed = [o for report in reports for o in report.outcomes if o.status == "committed"]
    assert [o.turn for o in committed] == [2]
    assert await revision(first, instance) == 2
    assert (await stat_data(second, instance))["gold"] == 20
    assert [e.revision for e in await first.history(id=instance, scope=scope("s1"))] == [1, 2]
    # Facts were written once per applied reply, by whichever service committed it.
    facts = await ledger.facts(session_id="s1")
    assert sorted(f["turn"] for f in facts if isinstance(f, dict) and f["phase"] == "completed") == [1, 2]
    assert await ledger.audit() == []
