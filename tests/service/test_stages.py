"""The service in stages: pure reads, the processor slot, history checked once, history pages,
checkpoint states. On SQLite and PostgreSQL (the ``ledger`` fixture)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import select

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionSnapshot, SessionTail
from mvu_store.lang import Command, parse_commands
from mvu_store.ledger import Ledger, tables
from mvu_store.memory_host import MemoryHost
from mvu_store.processor.port import ProcessorTurn
from mvu_store.service import MvuService
from mvu_store.service.session_cache import SessionCache
from tests.service.support import PLAIN, playing, scope, stat_data, text_message

# -- helpers ---------------------------------------------------------------------------------------


async def every_row(ledger: Ledger) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every ledger table, for this ledger, in a stable order."""

    def read(connection: Any) -> dict[str, list[tuple[Any, ...]]]:
        rows: dict[str, list[tuple[Any, ...]]] = {}
        for table in tables.metadata.sorted_tables:
            query = select(table)
            if "ledger_id" in table.c:
                query = query.where(table.c.ledger_id == ledger.ledger_id)
            rows[table.name] = sorted((tuple(row) for row in connection.execute(query)), key=repr)
        return rows

    return await ledger._store.read(read)


class CountingHost(MemoryHost):
    """Counts the events the service is handed, per call (incremental reads hand over only new ones)."""

    def __init__(self) -> None:
        super().__init__()
        self.delivered: list[int] = []
        self.whole: int = 0

    async def inspect(self, session_id: str) -> SessionSnapshot | None:
        self.whole += 1
        return await super().inspect(session_id)

    async def inspect_since(self, session_id: str, after_seq: int) -> SessionTail | None:
        tail = await super().inspect_since(session_id, after_seq)
        self.delivered.append(len(tail.events) if tail is not None else 0)
        return tail


class InspectOnlyHost:
    """A host that can only hand over whole sessions (the protocol's minimum)."""

    def __init__(self, inner: MemoryHost) -> None:
        self.inner = inner
        self.calls = 0

    async def inspect(self, session_id: str) -> SessionSnapshot | None:
        self.calls += 1
        return await self.inner.inspect(session_id)

    async def capture_session_lease(self, session_id: str) -> Any:
        return await self.inner.capture_session_lease(session_id)


async def play(host: MemoryHost, turns: range, session_id: str = "s1") -> None:
    for turn in turns:
        await host.turn(session_id, turn=turn, user="go", reply=f"_.add('gold', 1);//t{turn}")


# -- pure reads ------------------------------------------------------------------------------------


async def test_reads_write_nothing(ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:party", "session_ids": ["*"], "initial": {"stat_data": {"gold": 3}}},
        {"id": "mvu:world", "session_ids": ["*"], "sharing": "shared", "initial": {"stat_data": {"day": 1}}},
    ])
    host.attach(service)
    fresh = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:town", "session_ids": ["*"], "sharing": "shared", "initial": {"stat_data": {"mayor": "Ann"}}}])
    instance = await playing(service, host)
    await play(host, range(1, 4))
    host.create_session("s2", created_at=2000)  # a configured session nothing allocated yet
    before = await every_row(ledger)

    records = await service.list(scope=scope("s1"))
    assert {record.id for record in records} >= {instance, "mvu:world"}
    assert (await service.read(id=instance, scope=scope("s1"))) is not None
    assert (await service.read(id=instance, scope=scope("s1", end_event_id=3))) is not None
    assert len(await service.history(id=instance, scope=scope("s1"), include_before=True)) == 3
    assert await service.facts(id=instance, scope=scope("s1"))
    assert (await service.checkpoint_state(id=instance, scope=scope("s1"), turn=2)) is not None
    await service.list(scope=scope())
    planned = await service.list(scope=scope("s2"))
    party = next(record for record in planned if record.template_id == "mvu:party")
    assert party.revision == 0 and party.content["stat_data"] == {"gold": 3}  # type: ignore[index]
    assert (await service.read(id=party.id, scope=scope("s2"))) == party

    [town] = [record for record in await fresh.list(scope=scope("s1")) if record.id == "mvu:town"]
    assert town.revision == 0 and town.content["stat_data"] == {"mayor": "Ann"}  # type: ignore[index]
    assert await fresh.read(id="mvu:town", scope=scope()) == town.model_copy(update={"scope": {"authority": "local"}})
    assert await fresh.history(id="mvu:town", scope=scope("s1")) == []

    assert await every_row(ledger) == before
    assert await ledger.resources(session_id="s2") == []


async def test_an_edit_allocates_the_instance_a_read_showed(ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:party", "session_ids": ["*"], "initial": {"stat_data": {"gold": 3}}}])
    host.create_session("s1", created_at=1000)
    [shown] = await service.list(scope=scope("s1"))
    receipt = await service.update(id=shown.id, content={"stat_data": {"gold": 9}}, expected_revision=0,
                                   operation_id="op-1", scope=scope("s1"))
    assert receipt.revision == 1
    [row] = await ledger.resources(session_id="s1")
    assert row.id == shown.id
    record = await service.read(id=shown.id, scope=scope("s1"))
    assert record is not None and record.content["stat_data"] == {"gold": 9}  # type: ignore[index]


# -- the processor slot ------------------------------------------------------------------------------


class Recording:
    def __init__(self, keep: Any = None, fail: BaseException | None = None, result: Any = None) -> None:
        self.seen: list[tuple[tuple[Command, ...], ProcessorTurn]] = []
        self.keep = keep
        self.fail = fail
        self.result = result

    async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
        self.seen.append((commands, turn))
        if self.fail is not None:
            raise self.fail
        if self.result is not None:
            return self.result  # type: ignore[no-any-return]
        return [command for command in commands if self.keep is None or self.keep(command)]


REPLY = "Loot! _.add('gold', 5);//found\n_.set('hp', 50, 20);//hurt\n_.add('gold', 1);//tip"


async def test_the_processor_receives_the_parsed_commands_in_order(ledger: Ledger, host: MemoryHost) -> None:
    processor = Recording()
    service = MvuService(ledger=ledger, host=host, processor=processor)
    host.attach(service)
    instance = await playing(service, host)
    seq = await host.turn("s1", turn=1, user="go", reply=REPLY)
    [(commands, turn)] = processor.seen
    assert list(commands) == parse_commands(REPLY)
    assert [command.full_match for command in commands] == [
        "_.add('gold', 5);//found", "_.set('hp', 50, 20);//hurt", "_.add('gold', 1);//tip"]
    assert (turn.resource_id, turn.session_id, turn.turn, turn.message_seq) == (instance, "s1", 1, seq)
    assert turn.text == REPLY and turn.variables["stat_data"] == {"hp": 50, "gold": 10, "level": 1, "mood": "calm"}
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.content["stat_data"]["gold"] == 16  # type: ignore[index]


async def test_a_filtering_processor_decides_what_commits(ledger: Ledger, host: MemoryHost) -> None:
    processor = Recording(keep=lambda command: "gold" in command.full_match and "5" in command.full_match)
    service = MvuService(ledger=ledger, host=host, processor=processor)
    host.attach(service)
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="go", reply=REPLY)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    assert record.content["stat_data"] == {"hp": 50, "gold": 15, "level": 1, "mood": "calm"}  # type: ignore[index]
    [entry] = await service.history(id=instance, scope=scope("s1"))
    assert entry.kind == "reply" and entry.error is None


@pytest.mark.parametrize(("processor", "code"), [
    (Recording(fail=RuntimeError("boom")), Code.COMMAND_HOOK_EXECUTION),
    (Recording(fail=MvuError(Code.COMMAND_HOOK_LIMIT, "too slow")), Code.COMMAND_HOOK_LIMIT),
    (Recording(result="not commands"), Code.COMMAND_HOOK_OUTPUT),
    (Recording(result=parse_commands("_.set('gold', 999);")), Code.COMMAND_HOOK_OUTPUT),
    (Recording(result=list(reversed(parse_commands(REPLY)))), Code.COMMAND_HOOK_OUTPUT),
], ids=["raises", "raises-typed", "not-a-sequence", "foreign-command", "reordered"])
async def test_a_failing_processor_leaves_a_failed_receipt(ledger: Ledger, host: MemoryHost, processor: Recording,
                                                            code: Code) -> None:
    service = MvuService(ledger=ledger, host=host, processor=processor)
    host.attach(service)
    instance = await playing(service, host)
    before = await service.read(id=instance, scope=scope("s1"))
    await host.turn("s1", turn=1, user="go", reply=REPLY)
    after = await service.read(id=instance, scope=scope("s1"))
    assert before is not None and after is not None
    assert after.content["stat_data"] == before.content["stat_data"]  # type: ignore[index]
    [entry] = await service.history(id=instance, scope=scope("s1"))
    assert (entry.kind, entry.error) == ("failed", code.value)
    # The reply is consumed: ingesting again neither runs the processor nor changes anything.
    calls = len(processor.seen)
    report = await service.ingest(session_id="s1")
    assert report.outcomes == [] and len(processor.seen) == calls


async def test_the_processor_is_not_asked_about_replies_without_commands(ledger: Ledger, host: MemoryHost) -> None:
    processor = Recording()
    service = MvuService(ledger=ledger, host=host, processor=processor)
    host.attach(service)
    await playing(service, host)
    await host.turn("s1", turn=1, user="go", reply="Nothing happens.")
    assert processor.seen == []


async def test_a_processor_cannot_write_through_its_variables(ledger: Ledger, host: MemoryHost) -> None:
    class Writing(Recording):
        async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
            turn.variables["stat_data"]["gold"] = 999_999  # type: ignore[index]
            return []

    service = MvuService(ledger=ledger, host=host, processor=Writing())
    host.attach(service)
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="go", reply=REPLY)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.content["stat_data"]["gold"] == 10  # type: ignore[index]


def test_a_processor_without_process_is_refused(ledger: Ledger, host: MemoryHost) -> None:
    with pytest.raises(MvuError) as error:
        MvuService(ledger=ledger, host=host, processor=object())  # type: ignore[arg-type]
    assert error.value.code == Code.CONFIG


# -- history checked once --------------------------------------------------------------------------


async def test_a_read_after_the_first_asks_the_host_only_for_new_events(ledger: Ledger) -> None:
    host = CountingHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    instance = await playing(service, host)
    await play(host, range(1, 6))
    await service.read(id=instance, scope=scope("s1"))
    host.delivered.clear()
    for _ in range(3):
        await service.read(id=instance, scope=scope("s1"))
    assert host.delivered and set(host.delivered) == {0}
    await play(host, range(6, 7))
    host.delivered.clear()
    await service.read(id=instance, scope=scope("s1"))
    assert host.delivered == [0]  # the turn's own calls already took its 4 events
    assert host.whole == 0


@pytest.mark.parametrize("incremental", [True, False], ids=["incremental-host", "inspect-only-host"])
async def test_drift_of_an_old_reply_is_found_at_the_next_call(ledger: Ledger, incremental: bool) -> None:
    memory = MemoryHost()
    host: Any = memory if incremental else InspectOnlyHost(memory)
    service = MvuService(ledger=ledger, host=host)
    memory.attach(service)
    instance = await playing(service, memory)
    await play(memory, range(1, 8))
    assert (await service.read(id=instance, scope=scope("s1"))) is not None
    snapshot = await memory.inspect("s1")
    assert snapshot is not None
    old = next(event for event in snapshot.events if event.type == "assistant/message" and event.data["turn"] == 3)

    memory.replace_event("s1", old.seq, old.type, text_message(3, old.data["message"]["id"], "_.add('gold', 100);"))
    for call in (service.read(id=instance, scope=scope("s1")), service.ingest(session_id="s1"),
                 service.update(id=instance, content={"stat_data": {"gold": 1}}, expected_revision=7,
                                operation_id="op", scope=scope("s1"))):
        with pytest.raises(MvuError) as error:
            await call
        assert error.value.code == Code.HISTORY_CHANGED

    memory.replace_event("s1", old.seq, old.type, dict(old.data))  # the host repaired its history
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.revision == 7

    memory.truncate("s1", old.seq)
    calls = host.calls if not incremental else 0
    with pytest.raises(MvuError) as error:
        await service.read(id=instance, scope=scope("s1"))
    assert error.value.code == Code.HISTORY_UNAVAILABLE
    if not incremental:  # an inspect-only host is asked for the whole session on every call
        assert host.calls > calls


async def test_a_changed_identity_is_found_after_reads_were_cached(ledger: Ledger, host: MemoryHost,
                                                                  service: MvuService) -> None:
    instance = await playing(service, host)
    await play(host, range(1, 3))
    await service.read(id=instance, scope=scope("s1"))
    host.set_created_at("s1", 5555)
    with pytest.raises(MvuError) as error:
        await service.read(id=instance, scope=scope("s1"))
    assert error.value.code == Code.SESSION_IDENTITY


async def test_versions_written_by_another_service_are_checked_too(ledger: Ledger, host: MemoryHost) -> None:
    """Two services (two processes, one ledger): what the other committed is verified here."""
    first = MvuService(ledger=ledger, host=host)
    second = MvuService(ledger=ledger, host=host)
    host.attach(first)
    instance = await playing(first, host)
    await play(host, range(1, 3))
    assert (await second.read(id=instance, scope=scope("s1"))) is not None
    await play(host, range(3, 5))  # committed by the first service only
    snapshot = await host.inspect("s1")
    assert snapshot is not None
    latest = [event for event in snapshot.events if event.type == "assistant/message"][-1]
    host.replace_event("s1", latest.seq, latest.type, text_message(4, latest.data["message"]["id"], "changed"))
    with pytest.raises(MvuError) as error:
        await second.read(id=instance, scope=scope("s1"))
    assert error.value.code == Code.HISTORY_CHANGED


async def test_a_fork_boundary_appended_later_re_decides_which_replies_are_inherited(
        ledger: Ledger, host: MemoryHost, service: MvuService) -> None:
    """A session log read before a ``session/end-seed`` arrived is rebuilt: replies before the
    boundary are inherited, never applied (as a whole-session read decides)."""
    instance = await playing(service, host, card=PLAIN)
    await host.turn("s1", turn=1, user="go", reply="_.set('hp', 1);")
    host.attach(None)
    start = host.append("s1", "turn/start", {"turn": 2})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "assistant/message", text_message(2, "s1-m2", "_.set('hp', 2);"))
    host.append("s1", "turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    assert (await service.read(id=instance, scope=scope("s1"))) is not None  # the log now holds turn 2
    host.append("s1", "session/end-seed", {})
    report = await service.ingest(session_id="s1")
    assert report.outcomes == []
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.content["stat_data"]["hp"] == 1  # type: ignore[index]


async def test_a_reply_the_head_kept_moving_past_stays_unprocessed(ledger: Ledger, host: MemoryHost,
                                                                   service: MvuService,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Every compare-and-swap attempt lost to another writer: nothing is recorded, the next
    ingest applies the reply (a failed receipt would lose it for good)."""
    instance = await playing(service, host, card=PLAIN)
    real = ledger.commit

    async def always_behind(request: Any) -> Any:
        if request.kind in ("reply", "failed"):
            raise MvuError(Code.REVISION_CONFLICT, "another writer", expected_revision=0, current_revision=1)
        return await real(request)

    monkeypatch.setattr(ledger, "commit", always_behind)
    with pytest.raises(MvuError) as error:
        await host.turn("s1", turn=1, user="go", reply="_.set('hp', 7);")
    assert error.value.code == Code.REVISION_CONFLICT
    assert await service.history(id=instance, scope=scope("s1")) == []
    monkeypatch.setattr(ledger, "commit", real)
    [outcome] = (await service.ingest(session_id="s1")).outcomes
    assert outcome.status == "committed"
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.content["stat_data"]["hp"] == 7  # type: ignore[index]


@pytest.mark.parametrize("code", [Code.STORAGE_FULL, Code.STORAGE_READ_ONLY, Code.STORAGE_IO, Code.STORAGE_GONE])
async def test_a_reply_the_storage_could_not_take_stays_unprocessed(ledger: Ledger, host: MemoryHost,
                                                                   service: MvuService, code: Code,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk, a read-only or failing file, a file gone: nothing is recorded (a failed
    receipt would lose the reply for good), and once the storage is back the reply applies."""
    instance = await playing(service, host, card=PLAIN)
    real = ledger.commit

    async def storage_down(request: Any) -> Any:
        if request.kind == "reply":  # a failed receipt would still be written: it must not be tried
            raise MvuError(code, "the storage cannot take it")
        return await real(request)

    monkeypatch.setattr(ledger, "commit", storage_down)
    with pytest.raises(MvuError) as error:
        await host.turn("s1", turn=1, user="go", reply="_.set('hp', 7);")
    assert error.value.code == code
    assert await service.history(id=instance, scope=scope("s1")) == []
    monkeypatch.setattr(ledger, "commit", real)
    [outcome] = (await service.ingest(session_id="s1")).outcomes
    assert outcome.status == "committed"


async def test_a_refused_read_writes_nothing(ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:party", "session_ids": ["*"], "initial": {"stat_data": {"gold": 3}}}])
    host.attach(service)
    host.create_session("s1", created_at=1000)
    await play(host, range(1, 3))
    host.fork("s1", at_event_id=2, new_session_id="child", created_at=7)  # no seed installed
    before = await every_row(ledger)
    with pytest.raises(MvuError) as error:
        await service.list(scope=scope("child"))
    assert error.value.code == Code.SEED_REQUIRED
    assert await every_row(ledger) == before


async def test_a_historical_scope_on_an_instance_not_allocated_yet_is_checked(ledger: Ledger,
                                                                              host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:party", "session_ids": ["*"], "initial": {"stat_data": {"gold": 3}}}])
    host.create_session("s1", created_at=1000)
    [shown] = await service.list(scope=scope("s1"))
    with pytest.raises(MvuError) as error:
        await service.read(id=shown.id, scope=scope("s1", message_id="no-such-message"))
    assert error.value.code == Code.SCOPE
    at_start = await service.read(id=shown.id, scope=scope("s1", end_event_id=0))
    assert at_start is not None and at_start.historical and at_start.revision == 0


async def test_an_evicted_session_log_is_rebuilt_and_checked_again(host: MemoryHost) -> None:
    sessions = SessionCache(host, capacity=1)
    host.create_session("a", created_at=1)
    host.create_session("b", created_at=2)
    host.append("a", "turn/start", {"turn": 1})
    first = await sessions.log("a")
    assert first is not None and first.last_seq == 0
    assert await sessions.log("a") is first  # kept while in use
    await sessions.log("b")  # evicts a
    again = await sessions.log("a")
    assert again is not None and again is not first and again.generation > first.generation
    host.replace_event("a", 0, "turn/start", {"turn": 9})
    rebuilt = await sessions.log("a")
    assert rebuilt is not None and rebuilt.generation > again.generation
    assert rebuilt.snapshot().events[0].data == {"turn": 9}
    host.truncate("a", 0)
    assert (await sessions.log("a")).last_seq == -1  # type: ignore[union-attr]


async def test_session_copies_are_bounded_by_what_they_hold_and_a_heavier_session_still_plays(
        ledger: Ledger, host: MemoryHost) -> None:
    bound = 1024 * 1024
    service = MvuService(ledger=ledger, host=host, session_memory_bytes=bound)
    host.attach(service)
    instances = {session: await playing(service, host, session, card=PLAIN, created_at=n)
                 for n, session in enumerate(("s1", "s2"))}
    prose = "The rain keeps on. " * 3000  # a 57 KB reply: a session passes the bound in about 18 turns
    held = []
    for turn in range(1, 25):
        for session in ("s1", "s2") if turn <= 12 else ("s1",):
            await host.turn(session, turn=turn, user="go", reply=f"{prose}_.set('hp', {turn});")
            held.append(service._ctx.sessions.held)
    assert all(weight <= bound for _, weight in held)
    assert held[1][0] == ("s1", "s2")  # both kept while they fit
    assert held[21][0] == ("s2",)  # two 11-turn sessions do not: the least recently used went
    assert held[22][0] == ("s1",)
    assert held[-1] == ((), 0)  # s1 alone is now heavier than the bound: read whole at each use
    assert (await stat_data(service, instances["s1"], "s1"))["hp"] == 24
    assert (await stat_data(service, instances["s2"], "s2"))["hp"] == 12
    history = await service.history(id=instances["s1"], scope=scope("s1"))
    assert [entry.source["turn"] for entry in history] == list(range(1, 25))


async def test_a_session_heavier_than_the_bound_is_still_checked_against_its_history(
        ledger: Ledger, host: MemoryHost) -> None:
    service = MvuService(ledger=ledger, host=host, session_memory_bytes=1024 * 1024)
    host.attach(service)
    instance = await playing(service, host)
    prose = "The rain keeps on. " * 3000
    for turn in range(1, 22):
        await host.turn("s1", turn=turn, user="go", reply=f"{prose}_.set('hp', {turn});")
    assert service._ctx.sessions.held == ((), 0)  # read whole at each use
    snapshot = await host.inspect("s1")
    assert snapshot is not None
    old = next(e for e in snapshot.events if e.type == "assistant/message" and e.data["turn"] == 3)
    host.replace_event("s1", old.seq, old.type, text_message(3, old.data["message"]["id"], "_.add('gold', 100);"))
    for call in (service.read(id=instance, scope=scope("s1")), service.ingest(session_id="s1")):
        with pytest.raises(MvuError) as error:
            await call
        assert error.value.code == Code.HISTORY_CHANGED
    host.replace_event("s1", old.seq, old.type, dict(old.data))
    await host.turn("s1", turn=22, user="go", reply=f"{prose}_.set('hp', 22);")
    assert (await stat_data(service, instance))["hp"] == 22
    history = await service.history(id=instance, scope=scope("s1"))
    assert [entry.source["turn"] for entry in history if entry.kind == "reply"] == list(range(1, 23))


@pytest.mark.parametrize("memory", [0, 1024, True, 2.5e6, "64 MiB"])
def test_a_session_memory_bound_is_an_integer_of_at_least_a_mebibyte(
        ledger: Ledger, host: MemoryHost, memory: Any) -> None:
    with pytest.raises(MvuError) as refused:
        MvuService(ledger=ledger, host=host, session_memory_bytes=memory)
    assert refused.value.code == Code.CONFIG


# -- history pages -----------------------------------------------------------------------------------


async def test_history_pages_cover_the_history_once(ledger: Ledger, host: MemoryHost, service: MvuService) -> None:
    instance = await playing(service, host, card=PLAIN)
    for turn in range(1, 11):
        await host.turn("s1", turn=turn, user="go", reply=f"_.set('hp', {turn});")
    whole = await service.history(id=instance, scope=scope("s1"), include_before=True)
    assert [entry.position for entry in whole] == list(range(10))
    pages, before = [], None
    while True:
        page = await service.history(id=instance, scope=scope("s1"), include_before=True, limit=3, before=before)
        if not page:
            break
        assert len(page) <= 3
        pages.insert(0, page)
        before = page[0].position
    assert [entry for page in pages for entry in page] == whole
    newest = await service.history(id=instance, scope=scope("s1"), limit=2)
    assert [entry.revision for entry in newest] == [9, 10]
    assert newest[0].variables["stat_data"] == {"hp": 9, "items": []}  # type: ignore[index]


@pytest.mark.parametrize(("limit", "before"), [(0, None), (1001, None), ("5", None), (True, None), (None, -1),
                                               (None, 2.5)])
async def test_bad_pages_are_refused(ledger: Ledger, host: MemoryHost, service: MvuService, limit: Any,
                                     before: Any) -> None:
    instance = await playing(service, host, card=PLAIN)
    with pytest.raises(MvuError) as error:
        await service.history(id=instance, scope=scope("s1"), limit=limit, before=before)
    assert error.value.code == Code.OPERATION


# -- checkpoint states -------------------------------------------------------------------------------


async def test_the_state_at_a_turns_checkpoint(ledger: Ledger, host: MemoryHost, service: MvuService) -> None:
    instance = await playing(service, host, card=PLAIN)
    for turn in range(1, 4):
        await host.turn("s1", turn=turn, user="go", reply=f"_.set('hp', {turn * 10});")
    await service.update(id=instance, content={"stat_data": {"hp": 99, "items": []}}, expected_revision=3,
                         operation_id="edit", scope=scope("s1"))
    history = await service.history(id=instance, scope=scope("s1"), include_before=True)
    for turn, entry in zip(range(1, 4), history, strict=False):
        point = await service.checkpoint_state(id=instance, scope=scope("s1"), turn=turn)
        assert point is not None and point.turn == turn and point.session_id == "s1"
        assert point.content["stat_data"] == entry.before  # type: ignore[index]
        assert point.revision == turn - 1
    assert await service.checkpoint_state(id=instance, scope=scope("s1"), turn=9) is None
    for bad_scope, code in ((scope(), Code.SCOPE), (scope("s1", message_id="s1-m1"), Code.SCOPE)):
        with pytest.raises(MvuError) as error:
            await service.checkpoint_state(id=instance, scope=bad_scope, turn=1)
        assert error.value.code == code
    with pytest.raises(MvuError) as error:
        await service.checkpoint_state(id=instance, scope=scope("s1"), turn=-1)
    assert error.value.code == Code.OPERATION
    host.create_session("other", created_at=9)
    with pytest.raises(MvuError) as error:
        await service.checkpoint_state(id=instance, scope=scope("other"), turn=1)
    assert error.value.code == Code.SCOPE_MISMATCH

