"""One allowance per request (docs/reliability.md, "Work per request"): a reply or a greeting whose
declaration work goes past it is refused whole with ``MVU_LIMIT``, although each of its
validations stays under a validation's own fuel; the work runs off the event loop, so another
session is answered while it goes on; a session's replies still apply in order."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.js.values import FUEL
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.schema import allowance as allowance_module
from mvu_store.schema.allowance import REQUEST_FUEL, Allowance
from mvu_store.service import MvuService
from mvu_store.service.editing import Editing
from tests.service.support import PLAIN, finish_turn, playing, scope, stat_data

# Each check of hp spends 990,930 fuel (just under a validation's 1,000,000): nine of them spend
# more than a request's allowance (8,000,000), while every single one passes.
BURNING = """
export const Schema = z.object({ hp: z.number().transform(v => {
  let i = 0; while (i < 900) { let j = 0; while (j < 120) { j += 1; } i += 1; } return v; }) });
$(() => { registerMvuSchema(Schema); });
"""
PER_CHECK = 990_930
BURNER: dict[str, Any] = {"character_id": "burner", "name": "Burner", "initvar": ["hp: 1\n"],
                          "schema_source": BURNING}


@pytest.fixture(autouse=True)
def fuel_alone_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall-clock backstop far away: on a loaded machine these tests' checks may take longer
    than it, and what they check is the fuel (the deadline has a test of its own)."""
    monkeypatch.setattr(allowance_module, "REQUEST_SECONDS", 600.0)


def sets(count: int) -> str:
    return "".join(f"_.set('hp', {value});" for value in range(2, count + 2))


def test_the_fixture_spends_what_it_says() -> None:
    """The figures the tests below rest on: one check is under a validation's fuel, a whole
    allowance pays for eight, and the ninth is refused as the request's, not the validation's."""
    from mvu_store.schema import compile_schema, validate

    descriptor = compile_schema(BURNING)
    allowance = Allowance("the test's declaration work")
    for value in range(REQUEST_FUEL // PER_CHECK):
        assert validate(descriptor, {"hp": value}, allowance=allowance).ok
    assert allowance.fuel == REQUEST_FUEL - 8 * PER_CHECK and PER_CHECK < FUEL
    with pytest.raises(MvuError) as caught:
        validate(descriptor, {"hp": 99}, allowance=allowance)
    assert (caught.value.code, caught.value.details["kind"]) == ("MVU_LIMIT", "request_fuel")
    with pytest.raises(MvuError) as again:
        validate(descriptor, {"hp": 100}, allowance=allowance)
    assert again.value.details["kind"] == "request_fuel"
    # Without an allowance each validation has its own fuel, as before.
    assert validate(descriptor, {"hp": 99}).ok


def test_a_passed_deadline_refuses_the_next_validation() -> None:
    from mvu_store.schema import compile_schema, validate

    descriptor = compile_schema("export const Schema = z.object({ hp: z.number() });\n"
                                "$(() => { registerMvuSchema(Schema); });")
    passed = Allowance("the test's declaration work", seconds=-1)
    assert validate(descriptor, {"hp": 2}, allowance=passed).ok  # the deadline starts with it
    with pytest.raises(MvuError) as caught:
        validate(descriptor, {"hp": 2}, allowance=passed)
    assert (caught.value.code, caught.value.details["kind"]) == ("MVU_LIMIT", "request_time")
    assert validate(descriptor, {"hp": 2}, allowance=Allowance("the test's declaration work")).ok


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def test_the_deadline_runs_from_the_first_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request that waited for a worker thread (behind other requests' work) before its first
    validation still has its whole time: the wait is not its work, and a reply refused for it
    would keep a failed receipt."""
    clock = Clock()
    monkeypatch.setattr(allowance_module, "time", clock)
    allowance = Allowance("the test's declaration work", seconds=3)
    clock.now = 10.0  # queued for ten seconds
    assert allowance.grant() > 0
    clock.now = 12.5
    assert allowance.grant() > 0
    clock.now = 13.5
    with pytest.raises(MvuError) as caught:
        allowance.grant()
    assert (caught.value.details["kind"], caught.value.details["limit"]) == ("request_time", 3)


async def test_a_reply_past_its_allowance_gets_a_failed_receipt(service: MvuService, host: MemoryHost,
                                                                ledger: Ledger) -> None:
    instance = await playing(service, host, card=BURNER)
    await host.turn("s1", turn=1, user="go", reply=sets(3))
    assert await stat_data(service, instance) == {"hp": 4}
    await host.turn("s1", turn=2, user="go", reply=sets(12))
    history = await service.history(id=instance, scope=scope("s1"))
    assert [(entry.kind, entry.error) for entry in history] == [("reply", None), ("failed", "MVU_LIMIT")]
    assert await stat_data(service, instance) == {"hp": 4}  # nothing of the twelve commands is kept
    # The next reply has an allowance of its own.
    await host.turn("s1", turn=3, user="go", reply=sets(2))
    assert await stat_data(service, instance) == {"hp": 3}
    assert await ledger.audit() == []


async def test_a_greeting_past_its_allowance_refuses_the_selection(service: MvuService, host: MemoryHost,
                                                                   ledger: Ledger) -> None:
    await service.discover(definition={**BURNER, "greetings": [f"<UpdateVariable>{sets(12)}</UpdateVariable>",
                                                              f"<UpdateVariable>{sets(2)}</UpdateVariable>"]})
    host.create_session("s1", created_at=1000)
    with pytest.raises(MvuError) as caught:
        await service.select_character(session_id="s1", character_id="burner")
    assert caught.value.code == "MVU_LIMIT"
    assert await ledger.resources(session_id="s1", kinds=("instance",)) == []
    chosen = await service.select_character(session_id="s1", character_id="burner", greeting_index=1)
    assert chosen.instance_id is not None
    assert await stat_data(service, chosen.instance_id) == {"hp": 3}


async def test_another_session_is_answered_while_a_reply_burns(service: MvuService, host: MemoryHost,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The reply's checks run in a worker thread: held there (after its first check) until the
    other session's read has been answered, which the event loop does meanwhile. Were the
    checks on the loop, the read could never be answered and the hold would never end."""
    burning = await playing(service, host, "s1", card=BURNER)
    other = await playing(service, host, "s2", card=PLAIN)
    inside, answered = threading.Event(), threading.Event()
    grant = Allowance.grant

    def held(self: Allowance) -> int:
        if self.fuel < REQUEST_FUEL and not inside.is_set():  # the reply's second check
            inside.set()
            assert answered.wait(60), "the event loop did not answer the other session"
        return grant(self)

    monkeypatch.setattr(Allowance, "grant", held)
    hostile = asyncio.ensure_future(host.turn("s1", turn=1, user="go", reply=sets(12)))
    await asyncio.to_thread(inside.wait, 60)
    assert inside.is_set() and not hostile.done()
    assert await stat_data(service, other, "s2") == {"hp": 10, "items": []}
    answered.set()
    await hostile
    history = await service.history(id=burning, scope=scope("s1"))
    assert [(entry.kind, entry.error) for entry in history] == [("failed", "MVU_LIMIT")]


async def test_a_sessions_replies_apply_in_order_off_the_loop(service: MvuService, host: MemoryHost,
                                                              ledger: Ledger) -> None:
    """Replies pending together are applied one after another, each on the state the previous left."""
    instance = await playing(service, host, card=BURNER)
    host.attach(None)
    for turn in range(1, 4):
        start = host.append("s1", "turn/start", {"turn": turn})
        await ledger.put_checkpoint(instance, session_id="s1", turn=turn, seq=start)
        finish_turn(host, "s1", turn, f"_.set('hp', {turn * 10}); _.set('hp', {turn * 10 + 1});")
    await service.ingest(session_id="s1")
    history = await service.history(id=instance, scope=scope("s1"))
    assert [(entry.kind, entry.variables["stat_data"]) for entry in history] == [
        ("reply", {"hp": 11}), ("reply", {"hp": 21}), ("reply", {"hp": 31})]


async def test_an_edit_waits_for_the_reply_whose_checks_run_off_the_loop(service: MvuService, host: MemoryHost,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's lock is held while the reply's checks run in their worker thread: an edit of
    the same instance sent meanwhile runs after the reply commits, so its expected revision is
    stale (``REVISION_CONFLICT``) and the history is the reply's alone. Were the lock let go
    across the worker thread, the edit would commit in the middle of the reply."""
    instance = await playing(service, host, card=BURNER)
    inside, editing = threading.Event(), threading.Event()
    grant, edit = Allowance.grant, Editing._edit

    def held(self: Allowance) -> int:
        if self.fuel < REQUEST_FUEL and not inside.is_set():  # the reply's second check
            inside.set()
            assert editing.wait(60), "the edit was never sent"
        return grant(self)

    async def noted(self: Editing, entry: Any, work: Any) -> Any:
        editing.set()  # the edit asks for the session's lock now
        return await edit(self, entry, work)

    monkeypatch.setattr(Allowance, "grant", held)
    monkeypatch.setattr(Editing, "_edit", noted)
    replying = asyncio.ensure_future(host.turn("s1", turn=1, user="go", reply=sets(3)))
    await asyncio.to_thread(inside.wait, 60)
    assert inside.is_set()
    with pytest.raises(MvuError) as caught:
        await service.update(id=instance, content={"stat_data": {"hp": 99}}, expected_revision=0,
                             operation_id="edit-1", scope=scope("s1"))
    await replying
    assert caught.value.code == "REVISION_CONFLICT"
    history = await service.history(id=instance, scope=scope("s1"))
    assert [(entry.kind, entry.revision) for entry in history] == [("reply", 1)]
    assert await stat_data(service, instance) == {"hp": 4}
