"""A restart: a durable MemoryHost and a SQLite file, everything closed and opened again. The
ledger is the only memory, so nothing is applied twice and play simply continues (P-3)."""

from __future__ import annotations

from pathlib import Path

from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import HERO, scope, stat_data, text_message, turn_end, user_message


async def test_play_continues_after_a_restart_without_replaying(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    sessions = tmp_path / "sessions"

    ledger = await open_ledger(url)
    host = MemoryHost(path=sessions)
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    await service.discover(definition=HERO)
    host.create_session("s1", created_at=1000)
    instance = (await service.select_character(session_id="s1", character_id="hero")).instance_id
    assert instance is not None
    await host.turn("s1", turn=1, user="go", reply="_.add('gold', 5);")
    await host.turn("s1", turn=2, user="go", reply="_.add('gold', 5);")
    # Turn 3 completes while the process is going down: checkpointed, never ingested.
    host.attach(None)
    start = host.append("s1", "turn/start", {"turn": 3})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "user/message", user_message(3))
    host.append("s1", "assistant/message", text_message(3, "s1-m3", "_.add('gold', 100);"))
    host.append("s1", "turn/end", turn_end(3))
    await service.close()
    await ledger.close()

    ledger = await open_ledger(url)
    try:
        host = MemoryHost(path=sessions)
        assert host.session_ids() == ["s1"]
        service = MvuService(ledger=ledger, host=host)
        host.attach(service)
        report = await service.ingest(session_id="s1")
        assert [(o.turn, o.status, o.revision) for o in report.outcomes] == [(3, "committed", 3)]
        assert (await service.ingest(session_id="s1")).outcomes == []
        # Selecting again after the restart is a no-op: same instance, boundary unchanged
        # (0: the card was selected in an empty session).
        again = await service.select_character(session_id="s1", character_id="hero")
        assert again.instance_id == instance and again.boundary == 0
        await host.turn("s1", turn=4, user="go", reply="_.add('gold', 1);")
        assert (await stat_data(service, instance))["gold"] == 121
        history = await service.history(id=instance, scope=scope("s1"))
        assert [(e.kind, e.revision, e.source["turn"]) for e in history] == [
            ("reply", 1, 1), ("reply", 2, 2), ("reply", 3, 3), ("reply", 4, 4)]
        assert await ledger.audit() == []
    finally:
        await ledger.close()
