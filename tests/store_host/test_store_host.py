"""StoreHost on SQLite and PostgreSQL: sessions, append-only events, the fingerprint chain, leases,
and the service fed through it (docs/host-protocol.md)."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.host import IncrementalHost, fingerprint_chain, tail_of
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.ledger.writer import WriteTx
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost, feed, play_turn
from tests.service.support import HERO

CREATED = 1_700_000_000_000


def start(seq: int, turn: int) -> dict[str, Any]:
    return {"seq": seq, "type": "turn/start", "data": {"turn": turn}}


def reply(seq: int, turn: int, text: str, message_id: str | None = None) -> dict[str, Any]:
    return {"seq": seq, "type": "assistant/message",
            "data": {"turn": turn,
                     "message": {"id": message_id or f"m{turn}", "content": [{"type": "text", "text": text}]}}}


def end(seq: int, turn: int, kind: str = "completed") -> dict[str, Any]:
    return {"seq": seq, "type": "turn/end", "data": {"turn": turn, "reason": {"kind": kind}}}


@pytest.fixture
def host(ledger: Ledger) -> StoreHost:
    return StoreHost(ledger)


async def test_a_session_is_created_once_and_its_header_never_changes(host: StoreHost) -> None:
    stored, created = await host.create_session("s1", created_at=CREATED)
    assert created and stored.last_seq == -1 and stored.header.version == 4
    again, created = await host.create_session("s1", created_at=CREATED)
    assert not created and again == stored
    with pytest.raises(MvuError) as refused:
        await host.create_session("s1", created_at=CREATED + 1)
    assert refused.value.code == Code.ID_CONFLICT
    for bad in ("", "a/b", "-x", "x" * 161):
        with pytest.raises(MvuError) as refused:
            await host.create_session(bad, created_at=CREATED)
        assert refused.value.code == Code.SCOPE
    for created_at in (None, "", True, [1]):
        with pytest.raises(MvuError) as refused:
            await host.create_session("s2", created_at=created_at)
        assert refused.value.details["field"] == "createdAt"
    assert await host.session("s2") is None


async def test_the_store_answers_as_the_incremental_host_protocol_says(host: StoreHost) -> None:
    assert isinstance(host, IncrementalHost)
    await host.create_session("s1", created_at="2026-12-02T00:00:00Z", parent_session="s0", inherited_event_count=2)
    appended = await host.append("s1", [start(0, 1), reply(1, 1, "hi"), end(2, 1)])
    assert (appended.appended, appended.replayed, appended.session.last_seq) == (3, 0, 2)
    snapshot = await host.inspect("s1")
    assert snapshot is not None and [e.seq for e in snapshot.events] == [0, 1, 2]
    chain = fingerprint_chain(snapshot.header, snapshot.events)
    assert appended.session.fingerprint == chain[-1]
    # inspect_since agrees with the whole-snapshot reference at every position, beyond the end too.
    for after in (-1, 0, 1, 2, 3, 7):
        tail = await host.inspect_since("s1", after)
        assert tail == tail_of(snapshot, after)
    assert await host.inspect("nope") is None and await host.inspect_since("nope", 0) is None


async def test_a_resent_event_is_a_replay_another_is_a_conflict_and_a_gap_is_refused(host: StoreHost) -> None:
    await host.create_session("s1", created_at=CREATED)
    first = await host.append("s1", [start(0, 1), reply(1, 1, "hi")])
    again = await host.append("s1", [reply(1, 1, "hi"), end(2, 1)])
    assert (again.appended, again.replayed, again.session.last_seq) == (1, 1, 2)
    assert (await host.append("s1", [start(0, 1)])).session == again.session  # wholly a replay
    before = await host.inspect("s1")
    with pytest.raises(MvuError) as refused:
        # The conflicting event comes first; the new one after it must not be stored either.
        await host.append("s1", [reply(1, 1, "changed"), end(2, 1), start(3, 2)])
    assert refused.value.code == Code.EVENT_CONFLICT and refused.value.details["seq"] == 1
    with pytest.raises(MvuError) as refused:
        await host.append("s1", [start(5, 2)])
    assert refused.value.code == Code.EVENT_GAP and refused.value.details["last_seq"] == 2
    with pytest.raises(MvuError) as refused:
        await host.append("s1", [{"seq": 3, "type": "turn/start", "data": {"turn": "two"}}])
    assert refused.value.code == Code.OPERATION
    assert await host.inspect("s1") == before and first.session.last_seq == 1
    with pytest.raises(MvuError) as refused:
        await host.append("nope", [start(0, 1)])
    assert refused.value.code == Code.MISSING


async def test_an_append_ends_the_leases_taken_before_it_and_a_replay_does_not(host: StoreHost) -> None:
    await host.create_session("s1", created_at=CREATED)
    lease = await host.capture_session_lease("s1")
    await host.append("s1", [start(0, 1)])
    assert lease() is False
    lease = await host.capture_session_lease("s1")
    await host.append("s1", [start(0, 1)])
    assert lease() is True
    with pytest.raises(MvuError) as refused:
        await host.capture_session_lease("nope")
    assert refused.value.code == Code.MISSING


async def test_the_service_plays_a_chat_through_the_store_and_another_process_sees_it(
        ledger: Ledger, host: StoreHost, ledger_url: str, ledger_id: str) -> None:
    service = MvuService(ledger=ledger, host=host)
    await service.discover(definition=HERO)
    await host.create_session("s1", created_at=CREATED)
    chosen = await service.select_character(session_id="s1", character_id="hero")
    assert chosen.instance_id is not None
    played = await play_turn(service, host, "s1", turn=1, user="rest", reply="_.set('hp', 50, 70);")
    assert played.error is None and played.ingest is not None
    assert [o.status for o in played.ingest.outcomes] == ["committed"]
    scope = {"authority": "local", "session_id": "s1"}
    # A second ledger object, host and service on the same database: what another process sees.
    other = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        elsewhere = MvuService(ledger=other, host=StoreHost(other))
        record = await elsewhere.read(id=chosen.instance_id, scope=scope)
        assert record is not None and record.content["stat_data"]["hp"] == 70
        # A turn fed here is seen there at its next read: nothing is read only at start.
        await play_turn(service, host, "s1", turn=2, user="fight", reply="_.add('hp', -20);")
        record = await elsewhere.read(id=chosen.instance_id, scope=scope)
        assert record is not None and record.content["stat_data"]["hp"] == 50 and record.revision == 2
    finally:
        await other.close()


async def test_feeding_reports_what_happened_and_a_replay_finishes_the_work(ledger: Ledger, host: StoreHost) -> None:
    service = MvuService(ledger=ledger, host=host)
    await service.discover(definition=HERO)
    await host.create_session("s1", created_at=CREATED)
    chosen = await service.select_character(session_id="s1", character_id="hero")
    opened = await feed(service, host, "s1", [start(0, 1)])
    assert [c.turn for c in opened.checkpoints] == [1] and opened.ingest is None
    # The turn is still running at the end: resending its start checkpoints again (the same one).
    resent = await feed(service, host, "s1", [start(0, 1)])
    assert resent.appended.replayed == 1 and resent.checkpoints == opened.checkpoints
    closed = await feed(service, host, "s1", [reply(1, 1, "_.set('gold', 10, 'lots');"), end(2, 1)])
    outcome = closed.ingest.outcomes[0] if closed.ingest else None
    assert outcome is not None and outcome.status == "committed" and outcome.diagnostics
    replayed = await feed(service, host, "s1", [start(0, 1), reply(1, 1, "_.set('gold', 10, 'lots');"), end(2, 1)])
    # Nothing new: the start is not re-frozen (its turn went on) and the reply is not applied again.
    assert replayed.appended.appended == 0 and replayed.checkpoints == []
    assert replayed.ingest is not None and [o.status for o in replayed.ingest.outcomes] in ([], ["replayed"])
    record = await service.read(id=str(chosen.instance_id), scope={"authority": "local", "session_id": "s1"})
    assert record is not None and record.revision == 1


async def test_a_refused_checkpoint_comes_back_as_an_error_and_the_events_stay(ledger: Ledger, host: StoreHost) -> None:
    # A configured state for every session: a branch's instance must come from a seed (F-5).
    service = MvuService(ledger=ledger, host=host,
                         resources=[{"id": "mvu:world", "session_ids": ["*"], "initial": {"stat_data": {"n": 0}}}])
    await host.create_session("parent", created_at=CREATED)
    await host.create_session("child", created_at=CREATED + 1, parent_session="parent")
    await host.append("child", [start(0, 1), reply(1, 1, "hi"), end(2, 1), {"seq": 3, "type": "session/end-seed",
                                                                            "data": {}}])
    fed = await feed(service, host, "child", [start(4, 2)])
    assert fed.error is not None and fed.error.code == Code.SEED_REQUIRED
    assert fed.appended.appended == 1
    stored = await host.session("child")
    assert stored is not None and stored.last_seq == 4


async def test_the_sql_audit_finds_a_session_whose_events_were_tampered_with(ledger: Ledger, host: StoreHost) -> None:
    await host.create_session("s1", created_at=CREATED)
    await host.create_session("s2", created_at=CREATED)
    await host.append("s1", [start(0, 1), reply(1, 1, "hi"), end(2, 1)])
    assert await ledger.audit() == []

    def tamper(tx: WriteTx) -> None:
        tx.cursor.execute("DELETE FROM host_events WHERE ledger_id = %s AND session_id = 's1' AND seq = 1"
                          if ledger.dialect == "postgresql" else
                          "DELETE FROM host_events WHERE ledger_id = ? AND session_id = 's1' AND seq = 1",
                          (ledger.ledger_id,))

    await ledger.write(tamper)
    findings = await ledger.audit()
    assert [(f.check, f.subject) for f in findings] == [("host_sessions", "s1")]
    assert "holds 2 events" in findings[0].detail


async def test_a_turn_starts_once_and_ends_once_so_a_reply_is_never_applied_twice(ledger: Ledger,
                                                                                  host: StoreHost) -> None:
    service = MvuService(ledger=ledger, host=host)
    await service.discover(definition=HERO)
    await host.create_session("s1", created_at=CREATED)
    chosen = await service.select_character(session_id="s1", character_id="hero")
    await feed(service, host, "s1", [start(0, 1)])
    await feed(service, host, "s1", [reply(1, 1, "_.add('gold', 10);"), end(2, 1)])
    for again in ([end(3, 1)], [start(3, 1)], [start(3, 2), end(4, 2), end(5, 2)]):
        with pytest.raises(MvuError) as refused:
            await feed(service, host, "s1", again)
        assert refused.value.code == Code.EVENT_CONFLICT
        assert refused.value.details["turn"] in (1, 2)
    record = await service.read(id=str(chosen.instance_id), scope={"authority": "local", "session_id": "s1"})
    assert record is not None and record.revision == 1 and record.content["stat_data"]["gold"] == 20
    stored = await host.session("s1")
    assert stored is not None and stored.last_seq == 2
