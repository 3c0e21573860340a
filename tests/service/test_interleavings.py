"""Injected interleavings around commits (DIGEST A-1, A-3, F-6, I-2), on both engines.

Each control point is an ``asyncio.Event`` the test sets: a host whose ``inspect`` is held
(:class:`GatedHost`) or a usage handler that waits. Nothing sleeps; the assertions are on what
was (not) committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.service import MvuService
from tests.lock_waits import until_waiting
from tests.service.support import GatedHost, Hold, playing, scope, seed_rows

MANAGER = "dsh-memory-manager"


@pytest.fixture
def host() -> GatedHost:
    return GatedHost()


class Pending:
    """A usage handler whose decision waits for the test: ``asked`` is set when it is pending."""

    def __init__(self, answer: dict[str, JsonValue] | None) -> None:
        self.asked = asyncio.Event()
        self.decide = asyncio.Event()
        self.answer = answer

    async def __call__(self, event: dict[str, Any]) -> dict[str, JsonValue] | None:
        self.asked.set()
        await self.decide.wait()
        return self.answer


async def gold(service: MvuService, resource_id: str, session_id: str = "s1") -> tuple[Any, int]:
    record = await service.read(id=resource_id, scope=scope(session_id))
    assert record is not None
    return record.content["stat_data"]["gold"], record.revision


async def held(hold: Hold, call: Awaitable[Any]) -> asyncio.Task[Any]:
    """Start ``call`` and return once it is parked at ``hold``."""
    task = asyncio.ensure_future(call)
    await hold.reached.wait()
    return task


# -- usage decisions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["dispose", "register"])
async def test_a_registration_change_during_a_pending_decision_cancels_the_commit(
        service: MvuService, host: GatedHost, ledger: Ledger, change: str) -> None:
    instance = await playing(service, host)
    manager = Pending({"enabled": True})
    dispose = service.register_usage(manager, provider_id=MANAGER)
    host.append("s1", "turn/start", {"turn": 1})
    await host.drain()
    host.append("s1", "assistant/message", {"turn": 1, "message": {
        "id": "m1", "content": [{"type": "text", "text": "_.add('gold', 5);"}]}})
    host.append("s1", "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    await manager.asked.wait()
    if change == "dispose":
        dispose()  # the manager goes away while its decision is pending
    else:
        service.register_usage(lambda event: None)
    manager.decide.set()
    with pytest.raises(MvuError) as cancelled:
        await host.drain()
    assert cancelled.value.code == "MVU_USAGE_CANCELLED"
    # Nothing committed, not even a failed receipt: the reply stays unprocessed.
    assert await ledger.versions(instance) == []
    facts = await service.facts(id=instance, scope=scope("s1"))
    assert [(fact["phase"], fact.get("detail")) for fact in facts] == [("started", None),
                                                                       ("failed", "MVU_USAGE_CANCELLED")]
    if change == "dispose":
        # Without the manager the source is native again: the next ingest applies the reply.
        report = await service.ingest(session_id="s1")
        assert [outcome.status for outcome in report.outcomes] == ["committed"]
        assert await gold(service, instance) == (15, 1)
    assert await ledger.audit() == []


@pytest.mark.parametrize("host_work", [False, True])
async def test_a_checkpoint_never_overtakes_a_pending_commit(service: MvuService, host: GatedHost,
                                                            ledger: Ledger, host_work: bool) -> None:
    instance = await playing(service, host)
    manager = Pending({"enabled": True})
    service.register_usage(manager, provider_id=MANAGER)
    host.append("s1", "turn/start", {"turn": 1})
    await host.drain()
    host.append("s1", "assistant/message", {"turn": 1, "message": {
        "id": "m1", "content": [{"type": "text", "text": "_.add('gold', 5);"}]}})
    host.append("s1", "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    if host_work:
        # The next turn starts while turn 1's commit waits on its decision: host work on the
        # session invalidates that commit's lease, so the checkpoint applies the reply itself.
        await manager.asked.wait()
        start = host.append("s1", "turn/start", {"turn": 2})
    else:
        # The next turn is requested before the ingest looked at the session: its checkpoint
        # waits behind the pending commit.
        start = host.append("s1", "turn/start", {"turn": 2})
        await manager.asked.wait()
    assert await ledger.checkpoint(instance, session_id="s1", turn=2) is None
    manager.decide.set()
    if host_work:
        with pytest.raises(MvuError) as refused:
            await host.drain()
        assert refused.value.code == "MVU_SESSION_LEASE"
    else:
        await host.drain()
    point = await ledger.checkpoint(instance, session_id="s1", turn=2)
    assert point is not None and point.seq == start
    head = await ledger.head(instance)
    assert (point.revision, point.version_key, head.revision) == (1, head.version_key, 1)
    assert (await ledger.blob(point.variables_hash))["stat_data"]["gold"] == 15  # type: ignore[index,call-overload]
    assert [version.kind for version in await ledger.versions(instance)] == ["reply"]
    phases = [(fact["phase"], fact.get("detail")) for fact in await service.facts(id=instance, scope=scope("s1"))]
    assert phases.count(("applied", "state-committed")) == 1
    assert (("failed", "MVU_SESSION_LEASE") in phases) is host_work
    # Asked again after the head moved, the checkpoint stays the first one (F-6).
    host.append("s1", "turn/end", {"turn": 2, "reason": {"kind": "aborted"}})
    await host.drain()
    await service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 99}}, expected_revision=1,
                         operation_id="edit", scope=scope("s1"))
    [again] = await service.checkpoint(session_id="s1", turn_start_seq=start)
    assert (again.revision, again.version_key) == (1, point.version_key)
    assert await ledger.audit() == []


@pytest.mark.parametrize("abort", ["signal", "identity", "close"])
async def test_an_ingest_aborted_during_its_decision_commits_nothing(service: MvuService, host: GatedHost,
                                                                    ledger: Ledger, abort: str) -> None:
    instance = await playing(service, host)
    manager = Pending({"enabled": True})
    service.register_usage(manager, provider_id=MANAGER)
    host.append("s1", "turn/start", {"turn": 1})
    await host.drain()
    host.attach(None)  # the test calls ingest itself, with its own signal
    host.append("s1", "assistant/message", {"turn": 1, "message": {
        "id": "m1", "content": [{"type": "text", "text": "_.add('gold', 5);"}]}})
    host.append("s1", "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    signal = asyncio.Event()
    task = asyncio.ensure_future(service.ingest(session_id="s1", signal=signal))
    await manager.asked.wait()
    if abort == "signal":
        signal.set()
    elif abort == "identity":
        host.set_created_at("s1", 999)
    else:
        await service.close()
    manager.decide.set()
    if abort == "signal":
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        with pytest.raises(MvuError) as refused:
            await task
        assert refused.value.code == ("MVU_DISPOSED" if abort == "close" else "MVU_SESSION_LEASE")
    assert await ledger.versions(instance) == []
    assert (await ledger.head(instance)).revision == 0
    assert await ledger.audit() == []


async def test_a_checkpoint_applies_the_completed_turn_first(service: MvuService, host: GatedHost,
                                                            ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    host.attach(None)  # from here the test is the host's store chain, and skips turn 2's ingest
    start2 = host.append("s1", "turn/start", {"turn": 2})
    await service.checkpoint(session_id="s1", turn_start_seq=start2)
    host.append("s1", "assistant/message", {"turn": 2, "message": {
        "id": "m2", "content": [{"type": "text", "text": "_.add('gold', 10);"}]}})
    host.append("s1", "turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    start3 = host.append("s1", "turn/start", {"turn": 3})
    assert (await ledger.head(instance)).revision == 1
    [point] = await service.checkpoint(session_id="s1", turn_start_seq=start3)
    # The baseline of turn 3 is taken after turn 2's commit, never before it.
    assert point.revision == 2
    assert await gold(service, instance) == (21, 2)
    assert [version.kind for version in await ledger.versions(instance)] == ["reply", "reply"]
    assert await ledger.audit() == []


# -- seed capture and install -----------------------------------------------------------------------


Abort = Callable[[GatedHost, asyncio.Event], None]
ABORTS: dict[str, Abort] = {
    "signal": lambda host, signal: signal.set(),
    "lease": lambda host, signal: host.invalidate_leases("s1"),
    "host-work": lambda host, signal: host.append("s1", "session/title", {"title": "renamed", "messageSeqs": []}),
    "identity": lambda host, signal: host.set_created_at("s1", 999),
}


@pytest.mark.parametrize("abort", [*ABORTS, "close"])
async def test_a_capture_aborted_after_its_inspection_leaves_no_seed(service: MvuService, host: GatedHost,
                                                                    ledger: Ledger, abort: str) -> None:
    await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    signal = asyncio.Event()
    hold = host.hold("s1")
    task = await held(hold, service.capture_session_seed(session_id="s1", kind="reply-swipe", at_event_id=r1,
                                                         target_session_id="w0", signal=signal))
    if abort == "close":
        await service.close()
    else:
        ABORTS[abort](host, signal)
    hold.release.set()
    if abort == "signal":
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        with pytest.raises(MvuError) as refused:
            await task
        assert refused.value.code == ("MVU_DISPOSED" if abort == "close" else "MVU_SESSION_LEASE")
    assert await seed_rows(ledger) == 0
    assert not await ledger.seed_pending("w0")
    assert await ledger.audit() == []


@pytest.mark.parametrize("abort", ["signal", "source-work", "child-lease", "close"])
async def test_an_install_aborted_after_its_inspection_installs_nothing(service: MvuService, host: GatedHost,
                                                                       ledger: Ledger, abort: str) -> None:
    parent = await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r1)
    assert ticket is not None
    host.fork("s1", at_event_id=r1, new_session_id="f1", created_at=2000)
    signal = asyncio.Event()
    hold = host.hold("f1")
    task = await held(hold, service.install_session_seed(ticket=ticket, session_id="f1", signal=signal))
    if abort == "signal":
        signal.set()
    elif abort == "source-work":
        await host.turn("s1", turn=2, user="b", reply="_.add('gold', 10);")  # the parent moves on
    elif abort == "child-lease":
        host.invalidate_leases("f1")
    else:
        await service.close()
    hold.release.set()
    if abort == "signal":
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        with pytest.raises(MvuError) as refused:
            await task
        assert refused.value.code == ("MVU_DISPOSED" if abort == "close" else "MVU_SESSION_LEASE")
    seed = await ledger.seed(ticket)
    assert seed is not None and not seed.installed
    assert await ledger.resources(session_id="f1", kinds=("instance",)) == []
    if abort == "close":
        service = MvuService(ledger=ledger, host=host)  # a new service over the same ledger
        host.attach(service)
    # The ticket is still good, and still frozen at r1.
    [child] = await service.install_session_seed(ticket=ticket, session_id="f1")
    assert await gold(service, child, "f1") == (11, 0)
    assert (await gold(service, parent))[0] == (21 if abort == "source-work" else 11)
    assert await ledger.audit() == []


# -- edits ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("abort", ["signal", "lease", "host-work", "identity", "close"])
async def test_an_edit_aborted_after_its_inspection_commits_nothing(service: MvuService, host: GatedHost,
                                                                   ledger: Ledger, abort: str) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    signal = asyncio.Event()
    hold = host.hold("s1")
    task = await held(hold, service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 99}},
                                           expected_revision=1, operation_id="edit", scope=scope("s1"),
                                           signal=signal))
    if abort == "close":
        await service.close()
    else:
        ABORTS[abort](host, signal)
    hold.release.set()
    if abort == "signal":
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        with pytest.raises(MvuError) as refused:
            await task
        # A changed identity is refused by whichever check sees it first: the identity check
        # after the inspection, or the lease re-check before the commit.
        expected = {"close": {"MVU_DISPOSED"}, "identity": {"MVU_SESSION_IDENTITY", "MVU_SESSION_LEASE"}}
        assert refused.value.code in expected.get(abort, {"MVU_SESSION_LEASE"})
    assert [version.kind for version in await ledger.versions(instance)] == ["reply"]
    assert (await ledger.head(instance)).revision == 1
    assert await ledger.audit() == []


async def test_a_set_signal_cancels_every_public_coroutine(service: MvuService, host: GatedHost,
                                                           ledger: Ledger) -> None:
    instance = await playing(service, host)
    r1 = await host.turn("s1", turn=1, user="a", reply="_.add('gold', 1);")
    signal = asyncio.Event()
    signal.set()
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: service.read(id=instance, scope=scope("s1"), signal=signal),
        lambda: service.list(scope=scope("s1"), signal=signal),
        lambda: service.history(id=instance, scope=scope("s1"), signal=signal),
        lambda: service.facts(id=instance, scope=scope("s1"), signal=signal),
        lambda: service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 2}}, expected_revision=1,
                               operation_id="x", scope=scope("s1"), signal=signal),
        lambda: service.set_management_mode(id=instance, mode="managed", expected_revision=1, operation_id="y",
                                            scope=scope("s1"), signal=signal),
        lambda: service.copy(id=instance, new_id="mvu:copy", scope=scope("s1"), signal=signal),
        lambda: service.capture_session_seed(session_id="s1", kind="fork", at_event_id=r1, signal=signal),
        lambda: service.install_session_seed(ticket="t", session_id="s1", signal=signal),
        lambda: service.checkpoint(session_id="s1", turn_start_seq=0, signal=signal),
        lambda: service.ingest(session_id="s1", signal=signal),
        lambda: service.select_character(session_id="s1", character_id=None, signal=signal),
        lambda: service.discover(definition={"character_id": "other", "name": "O", "initvar": ["a: 1\n"]},
                                 signal=signal),
    ]
    for call in calls:
        with pytest.raises(asyncio.CancelledError):
            await call()
    assert (await ledger.head(instance)).revision == 1
    assert await ledger.resource("mvu:copy") is None
    assert await seed_rows(ledger) == 0
    assert (await service.read(id=instance, scope=scope("s1"))) is not None
    assert await ledger.audit() == []


# -- allocation ------------------------------------------------------------------------------------


async def test_concurrent_ingests_allocate_one_instance(ledger: Ledger, ledger_url: str, host: GatedHost) -> None:
    """Two service processes over one ledger ingest a new session at the same moment (reads
    allocate nothing: the first ingest or checkpoint of a configured session does): the second
    waits for the session's lock until the first allocated, then finds the instance."""
    config = [{"id": "mvu:party", "session_ids": ["*"], "initial": {"stat_data": {"gold": 3}}}]
    other_ledger = await open_ledger(ledger_url, ledger_id=ledger.ledger_id)
    try:
        first = MvuService(ledger=ledger, host=host, resources=config)
        second = MvuService(ledger=other_ledger, host=host, resources=config)
        host.create_session("s1", created_at=1000)
        hold = host.hold("s1")
        task = await held(hold, first.ingest(session_id="s1"))  # inside the first ingest, holding s1
        waiting = asyncio.ensure_future(second.ingest(session_id="s1"))
        await asyncio.to_thread(until_waiting, ledger_url, ledger.ledger_id, "s1")
        assert await ledger.resources(session_id="s1", kinds=("instance",)) == []
        hold.release.set()
        await asyncio.gather(task, waiting)
        one, two = [await service.list(scope=scope("s1")) for service in (first, second)]
        assert [record.id for record in one] == [record.id for record in two]
        [record] = one
        assert record.content["stat_data"] == {"gold": 3} and record.revision == 0
        rows = await ledger.resources(session_id="s1", kinds=("instance",))
        assert [row.id for row in rows] == [record.id]
        assert await ledger.audit() == []
    finally:
        await other_ledger.close()
