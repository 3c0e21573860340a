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
from mvu_store.store_host import host as host_module
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


async def hero_session(ledger: Ledger, host: StoreHost, session_id: str) -> MvuService:
    """A service over the store whose new session ``session_id`` selected Hero."""
    service = MvuService(ledger=ledger, host=host)
    await service.discover(definition=HERO)
    await host.create_session(session_id, created_at=CREATED)
    await service.select_character(session_id=session_id, character_id="hero")
    return service


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
    # A reply applied by an earlier answer is not reported again (docs/host-protocol.md).
    assert replayed.ingest is not None and replayed.ingest.outcomes == []
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

    await ledger._store.write(tamper)
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
        assert refused.value.details["seq"] >= 3
    record = await service.read(id=str(chosen.instance_id), scope={"authority": "local", "session_id": "s1"})
    assert record is not None and record.revision == 1 and record.content["stat_data"]["gold"] == 20
    stored = await host.session("s1")
    assert stored is not None and stored.last_seq == 2


@pytest.mark.parametrize(("batch", "seq", "earlier"), [
    ([start(4, 1)], 4, 0),                                                   # a stored turn's start
    ([start(4, 100), end(5, 100), start(6, 5)], 6, 2),                       # turns far apart: asked per mark
    ([start(4, 9), end(5, 9), start(6, 9)], 6, 4),                           # the batch's own start
    ([start(4, 9), end(5, 9), start(6, 900), end(7, 900), start(8, 9)], 8, 4),
])
async def test_a_turn_mark_again_names_the_event_that_marked_it_first(host: StoreHost, batch: list[Any], seq: int,
                                                                      earlier: int) -> None:
    await host.create_session("s1", created_at=CREATED)
    await host.append("s1", [start(0, 1), end(1, 1), start(2, 5), end(3, 5)])
    with pytest.raises(MvuError) as refused:
        await host.append("s1", batch)
    assert refused.value.code == Code.EVENT_CONFLICT
    assert (refused.value.details["seq"], refused.value.details["earlier_seq"]) == (seq, earlier)
    stored = await host.session("s1")
    assert stored is not None and stored.last_seq == 3


@pytest.mark.parametrize(("events", "why"), [
    ([reply(0, 7, "x"), end(1, 7)], "no turn runs"),                        # an end without its start
    ([start(0, 1), start(1, 2)], "while turn 1 runs"),                      # overlapping turns
    ([start(0, 1), reply(1, 2, "x")], "but turn 1 runs"),                   # another turn's message
    ([start(0, 1), end(1, 2)], "but turn 1 runs"),
    ([{"seq": 0, "type": "session/end-seed", "data": {}}], "no branch"),   # a prefix end in a root session
])
async def test_turns_do_not_overlap_and_only_a_branch_ends_a_copied_prefix(host: StoreHost, events: list[Any],
                                                                           why: str) -> None:
    await host.create_session("s1", created_at=CREATED)
    with pytest.raises(MvuError) as refused:
        await host.append("s1", events)
    assert refused.value.code == Code.EVENT_CONFLICT and why in refused.value.message
    stored = await host.session("s1")
    assert stored is not None and stored.last_seq == -1


async def test_a_branch_ends_its_copied_prefix_once_and_between_turns(host: StoreHost) -> None:
    await host.create_session("c1", created_at=CREATED, parent_session="p")
    seed = {"type": "session/end-seed", "data": {}}
    with pytest.raises(MvuError) as refused:
        await host.append("c1", [start(0, 1), {"seq": 1, **seed}])
    assert "while turn 1 runs" in refused.value.message
    await host.append("c1", [start(0, 1), reply(1, 1, "x"), end(2, 1, "forked"), {"seq": 3, **seed}])
    with pytest.raises(MvuError) as refused:
        await host.append("c1", [{"seq": 4, **seed}])
    assert "again" in refused.value.message
    # The state of the order survives in the store: the next turn may start.
    assert (await host.append("c1", [start(4, 2)])).appended == 1


async def test_a_baseline_missed_at_its_start_is_frozen_when_the_turn_ends_and_the_session_goes_on(
        ledger: Ledger, host: StoreHost, monkeypatch: pytest.MonkeyPatch) -> None:
    service = MvuService(ledger=ledger, host=host)
    await service.discover(definition=HERO)
    await host.create_session("s1", created_at=CREATED)
    chosen = await service.select_character(session_id="s1", character_id="hero")
    real = service.checkpoint
    failures = [MvuError(Code.STORAGE_BUSY, "busy once")]

    async def flaky(**kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return await real(**kwargs)

    monkeypatch.setattr(service, "checkpoint", flaky)
    opened = await feed(service, host, "s1", [start(0, 1)])
    assert opened.error is not None and opened.error.code == Code.STORAGE_BUSY
    # The host went on regardless: the reply still applies, on the state the turn started from.
    closed = await feed(service, host, "s1", [reply(1, 1, "_.add('gold', 5);"), end(2, 1)])
    assert closed.error is None and closed.ingest is not None
    assert [o.status for o in closed.ingest.outcomes] == ["committed"]
    nxt = await feed(service, host, "s1", [start(3, 2), reply(4, 2, "_.add('gold', 5);"), end(5, 2)])
    assert nxt.error is None and [c.turn for c in nxt.checkpoints] == [2]
    record = await service.read(id=str(chosen.instance_id), scope={"authority": "local", "session_id": "s1"})
    assert record is not None and record.content["stat_data"]["gold"] == 20
    baseline = await service.checkpoint_state(id=str(chosen.instance_id), turn=1,
                                              scope={"authority": "local", "session_id": "s1"})
    assert baseline is not None and baseline.content["stat_data"]["gold"] == 10


async def test_a_batch_ending_a_turn_and_starting_the_next_reports_the_reply(ledger: Ledger, host: StoreHost) -> None:
    service = MvuService(ledger=ledger, host=host)
    await service.discover(definition=HERO)
    await host.create_session("s1", created_at=CREATED)
    chosen = await service.select_character(session_id="s1", character_id="hero")
    await feed(service, host, "s1", [start(0, 1)])
    fed = await feed(service, host, "s1", [reply(1, 1, "_.add('gold', 5);"), end(2, 1), start(3, 2)])
    assert fed.ingest is not None and [(o.resource_id, o.turn, o.status) for o in fed.ingest.outcomes] == [
        (chosen.instance_id, 1, "committed")]
    assert [c.turn for c in fed.checkpoints] == [2]


@pytest.mark.parametrize("field", ["createdAt", "origin"])
async def test_a_lone_surrogate_in_a_header_is_refused(host: StoreHost, field: str) -> None:
    values: dict[str, Any] = {"created_at": CREATED, "origin": None}
    values["created_at" if field == "createdAt" else "origin"] = "a\ud800"
    with pytest.raises(MvuError) as refused:
        await host.create_session("s1", **values)
    assert refused.value.code == Code.JSON
    assert await host.session("s1") is None


async def test_a_header_is_consistent(host: StoreHost) -> None:
    for values in ({"parent_session": "s1"}, {"inherited_event_count": 3}):
        with pytest.raises(MvuError) as refused:
            await host.create_session("s1", created_at=CREATED, **values)
        assert refused.value.code == Code.OPERATION


async def test_install_refuses_a_child_whose_own_events_would_start_inside_the_inherited_prefix(
        ledger: Ledger, host: StoreHost) -> None:
    service = await hero_session(ledger, host, "p")
    await play_turn(service, host, "p", turn=1, user="u", reply="_.add('gold', 10);")
    await play_turn(service, host, "p", turn=2, user="u", reply="_.add('gold', 100);")
    snapshot = await host.inspect("p")
    assert snapshot is not None
    ticket = await service.capture_session_seed(session_id="p", kind="fork", at_event_id=6)
    assert ticket is not None
    copied = [{"seq": e.seq, "type": e.type, "data": dict(e.data)} for e in snapshot.events[:7]]
    # Without its session/end-seed (or with inheritedEventCount 0) the copied replies would be the
    # child's own: turn 1's reply would be applied again.
    await host.create_session("c", created_at=CREATED + 1, parent_session="p")
    await host.append("c", [*copied, end(7, 2, "forked")])
    with pytest.raises(MvuError) as refused:
        await service.install_session_seed(ticket=ticket, session_id="c")
    assert refused.value.code == Code.SEED_MISMATCH
    await host.create_session("c0", created_at=CREATED + 2, parent_session="p", inherited_event_count=0)
    await host.append("c0", [*copied, end(7, 2, "forked")])
    with pytest.raises(MvuError) as refused:
        await service.install_session_seed(ticket=ticket, session_id="c0")
    assert refused.value.code == Code.SEED_MISMATCH
    # Ended properly, the same child installs and its replies stay inherited.
    await host.append("c", [{"seq": 8, "type": "session/end-seed", "data": {}}])
    (instance,) = await service.install_session_seed(ticket=ticket, session_id="c")
    await play_turn(service, host, "c", turn=3, user="u", reply="_.add('gold', 1000);")
    record = await service.read(id=instance, scope={"authority": "local", "session_id": "c"})
    assert record is not None and record.content["stat_data"]["gold"] == 1120


async def test_request_preparation_is_logged_and_keeps_a_prompt_read_current_but_not_a_write_lease(
        ledger: Ledger, host: StoreHost) -> None:
    service = await hero_session(ledger, host, "s1")
    await feed(service, host, "s1", [start(0, 1)])
    found = await service.resolve_prompt_dependency(
        scope={"authority": "local", "sessionId": "s1"},
        event={"preview": False, "turn": 1, "usage": "world-book-variable",
               "consumer": {"adapterId": "tavern.world-books", "id": "world-book:hero"}})
    assert found is not None and found.check_current()
    write_lease = await host.capture_session_lease("s1")
    preparation = [
        {"seq": 1, "type": "step/start", "data": {"turn": 1, "step": 1}},
        {"seq": 2, "type": "system/message", "data": {"turn": 1, "message": {"content": "private rules"}}},
        {"seq": 3, "type": "request/header", "data": {"header": {"startsSeries": True}, "reason": "preset"}},
        {"seq": 4, "type": "request/context", "data": {"turn": 1}},
    ]
    appended = await host.append("s1", preparation)
    assert appended.appended == 4
    assert found.check_current() is True and write_lease() is False
    snapshot = await host.inspect("s1")
    assert snapshot is not None
    # A system message's text stays with the host, as the model request does.
    assert [event.data for event in snapshot.events[1:]] == [
        {"turn": 1, "step": 1}, {"turn": 1}, {"header": {"startsSeries": True}, "reason": "preset"}, {"turn": 1}]
    await host.append("s1", [reply(5, 1, "_.set('hp', 1);")])
    assert found.check_current() is False


async def test_the_sessions_a_host_counts_appends_of_are_bounded(ledger: Ledger,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Room for two sessions: a third forgets the first, whose lease then reads as changed (never
    as unchanged); a new lease on it looks the session up again and holds."""
    monkeypatch.setattr(host_module, "KNOWN_SESSIONS", 2)
    host = StoreHost(ledger)
    for session_id in ("s1", "s2", "s3"):
        await host.create_session(session_id, created_at=CREATED)
    first = await host.capture_session_lease("s1")
    second = await host.capture_session_lease("s2")
    assert first() is True and second() is True
    await host.capture_session_lease("s3")
    assert first() is False  # s1 forgotten: changed, though nothing was appended to it
    assert second() is True
    again = await host.capture_session_lease("s1")
    assert again() is True
    await host.append("s1", [start(0, 1)])
    assert again() is False
    with pytest.raises(MvuError) as refused:
        await host.capture_session_lease("s4")
    assert refused.value.code == Code.MISSING
