"""Prompt dependency reads and their leases, the original's prompt-dependency scenarios as ours.

A dependency is what a prompt template or an activated world-book entry reads: a full copy of
the variables, allowed by every registered usage handler with a synchronous lease of its own,
and a ``check_current`` the host keeps until the request is sent.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService, context, prompting
from tests.service.support import PLAIN, playing, stat_data

MANAGER = "dsh-memory-manager"
RETRIEVE_CHAIN = ["read_content", "render_state_and_update_instructions", "provide_to_model"]
HERO_TWO: dict[str, Any] = {"character_id": "other", "name": "Other", "initvar": ["hp: 3\n"]}


def event(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"preview": False, "turn": 1, "step": 1, "usage": "prompt-template-dependency",
                            "consumer": {"adapterId": "tavern.prompt-templates", "id": "prompt-template:display"}}
    return {**base, **changes}


def world_book(**changes: Any) -> dict[str, Any]:
    return event(usage="world-book-variable",
                 consumer={"adapterId": "tavern.world-books", "id": "world-book:character:plain:embedded"}, **changes)


def local(session_id: str = "s1") -> dict[str, Any]:
    return {"authority": "local", "sessionId": session_id}


class Allow:
    """A manager that allows with a lease it can revoke."""

    def __init__(self) -> None:
        self.valid = True
        self.asked: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(request)
        return {"enabled": True, "configRevision": 4, "strategy": RETRIEVE_CHAIN, "checkCurrent": lambda: self.valid}


async def test_a_managed_dependency_needs_the_managers_leased_allow_and_writes_no_applied_fact(
        service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    seen: list[dict[str, Any]] = []
    service.observe(seen.append)
    abstain = service.register_usage(lambda request: None, provider_id=MANAGER)
    assert await service.resolve_prompt_dependency(id=instance, scope=local(), event=event()) is None
    abstain()
    manager = Allow()
    service.register_usage(manager, provider_id=MANAGER)
    found = await service.resolve_prompt_dependency(id=instance, scope=local(), event=event())
    assert found is not None
    assert (found.id, found.adapter_id, found.content["stat_data"]["hp"], found.revision, found.config_revision) == \
        (instance, "tavern.mvu", 10, 0, 4)
    assert found.check_current() is True
    [asked] = manager.asked
    assert (asked["on"], asked["event"], asked["managementMode"], asked["scope"]) == \
        ("before_model_request", event(), "managed", local())
    found.content["stat_data"]["hp"] = 99  # a full copy: the stored state stays
    assert (await stat_data(service, instance))["hp"] == 10
    assert seen and all(fact["on"] == "before_model_request" for fact in seen)
    assert "applied" not in {fact["phase"] for fact in seen}
    assert {fact["phase"] for fact in seen} >= {"started", "skipped", "triggered"}


async def test_native_default_and_managed_refusals_are_never_confused(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    native = await service.resolve_prompt_dependency(id=instance, scope=local(), event=event())
    assert native is not None and native.check_current() is True and native.config_revision is None

    async def async_lease() -> bool:
        return True

    answers: list[Any] = [{"enabled": False}, {"enabled": True},
                          {"enabled": True, "checkCurrent": async_lease},
                          {"enabled": True, "checkCurrent": lambda: False},
                          {"enabled": True, "checkCurrent": lambda: "yes"}]
    for answer in answers:
        dispose = service.register_usage(lambda request, answer=answer: answer, provider_id=MANAGER)
        assert await service.resolve_prompt_dependency(id=instance, scope=local(), event=event()) is None, answer
        dispose()
    dispose = service.register_usage(lambda request: {"enabled": True, "strategy": ["provide_to_model"],
                                                      "checkCurrent": lambda: True}, provider_id=MANAGER)
    with pytest.raises(MvuError) as refused:
        await service.resolve_prompt_dependency(id=instance, scope=local(), event=event())
    assert refused.value.code == "MVU_CONFIG"
    dispose()


async def test_every_registered_handler_must_lease_even_for_a_native_source(service: MvuService,
                                                                           host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    for answer in (None, {"enabled": False}):
        dispose = service.register_usage(lambda request, answer=answer: answer)
        assert await service.resolve_prompt_dependency(id=instance, scope=local(), event=event()) is None
        dispose()
    service.register_usage(lambda request: {"enabled": True, "checkCurrent": lambda: True})
    assert await service.resolve_prompt_dependency(id=instance, scope=local(), event=event()) is not None


async def test_leases_expire_on_each_change_the_read_relied_on(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    await service.discover(definition=HERO_TWO)
    manager = Allow()
    dispose_manager = service.register_usage(manager, provider_id=MANAGER)

    async def fresh(signal: asyncio.Event | None = None) -> Any:
        found = await service.resolve_prompt_dependency(id=instance, scope=local(), event=event(), signal=signal)
        assert found is not None and found.check_current() is True
        return found

    found = await fresh()
    record = await service.read(id=instance, scope=local())
    assert record is not None
    content = {**record.content, "stat_data": {**record.content["stat_data"], "hp": 11}}
    await service.update(id=instance, content=content, expected_revision=record.revision, operation_id="edit-1",
                         scope=local())
    assert found.check_current() is False  # a revision change

    found = await fresh()
    await service.select_character(session_id="s1", character_id="other")
    await service.select_character(session_id="s1", character_id="plain")
    assert found.check_current() is False  # selection A -> B -> A

    found = await fresh()
    host.append("s1", "user/message", {"turn": 1, "message": {"content": []}})
    await host.drain()
    assert found.check_current() is False  # the session moved on

    found = await fresh()
    manager.valid = False
    assert found.check_current() is False  # the manager's own lease
    manager.valid = True

    found = await fresh()
    reload = service.register_usage(lambda request: {"enabled": True, "checkCurrent": lambda: True})
    assert found.check_current() is False  # a policy reload
    reload()

    found = await fresh()
    dispose_manager()
    assert found.check_current() is False  # the manager unloaded
    service.register_usage(manager, provider_id=MANAGER)

    signal = asyncio.Event()
    found = await fresh(signal)
    signal.set()
    assert found.check_current() is False  # the caller cancelled

    found = await fresh()
    await service.close()
    assert found.check_current() is False  # the source unloaded


async def test_changes_while_the_policy_awaits_give_none_never_a_revived_lease(service: MvuService,
                                                                               host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    await service.discover(definition=HERO_TWO)
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(request: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        await release.wait()
        return {"enabled": True, "strategy": RETRIEVE_CHAIN, "checkCurrent": lambda: True}

    service.register_usage(slow, provider_id=MANAGER)

    async def while_deciding(change: Any, signal: asyncio.Event | None = None) -> Any:
        entered.clear()
        release.clear()
        task = asyncio.ensure_future(service.resolve_prompt_dependency(id=instance, scope=local(), event=event(),
                                                                       signal=signal))
        await asyncio.wait_for(entered.wait(), 30)
        await change()
        release.set()
        return await asyncio.wait_for(task, 30)

    async def select_away_and_back() -> None:
        await service.select_character(session_id="s1", character_id="other")
        await service.select_character(session_id="s1", character_id="plain")

    async def append_event() -> None:
        host.append("s1", "user/message", {"turn": 1, "message": {"content": []}})
        await host.drain()

    async def reload_policy() -> None:
        service.register_usage(lambda request: {"enabled": True, "checkCurrent": lambda: True})

    assert await while_deciding(select_away_and_back) is None
    assert await while_deciding(append_event) is None
    assert await while_deciding(reload_policy) is None
    signal = asyncio.Event()

    async def abort() -> None:
        signal.set()

    with pytest.raises(asyncio.CancelledError):
        await while_deciding(abort, signal)


async def test_only_a_local_session_scope_and_a_known_consumer_are_accepted(service: MvuService,
                                                                            host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    host.create_session("foreign", created_at=5)
    bad_scopes: list[Any] = [{"sessionId": "s1"}, {"authority": "remote", "sessionId": "s1"},
                             {**local(), "messageId": "m"}, {**local(), "mode": "x"}, {"authority": "local"}]
    bad_events = [event(extra=1), event(consumer={"adapterId": "tavern.world-books", "id": "x"}), event(turn=-1),
                  event(turn=True), event(preview="no"), event(usage="other"),
                  {key: value for key, value in event().items() if key != "consumer"}]
    for bad_scope in bad_scopes:
        with pytest.raises(MvuError) as refused:
            await service.resolve_prompt_dependency(id=instance, scope=bad_scope, event=event())
        assert refused.value.code == "MVU_SCOPE", bad_scope
    for bad_event in bad_events:
        with pytest.raises(MvuError) as refused:
            await service.resolve_prompt_dependency(id=instance, scope=local(), event=bad_event)
        assert refused.value.code == "MVU_SCOPE", bad_event
    with pytest.raises(MvuError) as refused:
        await service.resolve_prompt_dependency(id=instance, scope=local("foreign"), event=event())
    assert refused.value.code == "SCOPE_MISMATCH"
    assert await service.resolve_prompt_dependency(id="mvu:unknown", scope=local(), event=event()) is None


async def test_a_world_book_send_reads_its_turns_checkpoint_and_older_turns_cannot_read_later(
        service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 55);")
    host.append("s1", "turn/start", {"turn": 2})
    await host.drain()
    sent = await service.resolve_prompt_dependency(scope=local(), event=world_book(turn=2))
    assert sent is not None and sent.id == instance and sent.content["stat_data"]["hp"] == 55
    host.append("s1", "user/message", {"turn": 2, "message": {"content": [{"type": "text", "text": "b"}]}})
    host.append("s1", "assistant/message", {"turn": 2, "message": {
        "id": "s1-m2", "content": [{"type": "text", "text": "_.set('hp', 7);"}]}})
    host.append("s1", "turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    await host.drain()
    assert (await stat_data(service, instance))["hp"] == 7
    assert sent.check_current() is False
    again = await service.resolve_prompt_dependency(scope=local(), event=world_book(turn=2))
    assert again is not None and again.content["stat_data"]["hp"] == 55  # the pre-turn state, not the reply
    assert await service.resolve_prompt_dependency(scope=local(), event=world_book(turn=1)) is None
    assert await service.resolve_prompt_dependency(scope=local(), event=world_book(turn=99)) is None
    preview = await service.resolve_prompt_dependency(scope=local(), event=world_book(turn=2, preview=True))
    assert preview is not None and preview.content["stat_data"]["hp"] == 7
    host.append("s1", "turn/start", {"turn": 3})
    await host.drain()
    assert again.check_current() is False  # the session entered another turn


async def test_each_session_reads_its_own_state(service: MvuService, host: MemoryHost) -> None:
    await playing(service, host, card=PLAIN)
    await playing(service, host, "s2", card=PLAIN, created_at=2000)
    await host.turn("s2", turn=1, user="a", reply="_.set('hp', 12);")
    first = await service.resolve_prompt_dependency(scope=local(), event=world_book(preview=True))
    second = await service.resolve_prompt_dependency(scope=local("s2"), event=world_book(preview=True))
    assert first is not None and second is not None and first.id != second.id
    assert (first.content["stat_data"]["hp"], second.content["stat_data"]["hp"]) == (10, 12)


async def test_management_defaults_bind_to_a_verified_read(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    assert service.get_management_defaults(id=instance, scope=local()) is None  # nothing verified yet
    found = await service.resolve_prompt_dependency(id=instance, scope=local(), event=event())
    assert found is not None
    defaults = service.get_management_defaults(id=instance, scope=local())
    assert defaults is not None and defaults.check_current() is True
    assert defaults.to_json() == {
        "protocolVersion": 1, "revision": 0, "scopePolicy": "source-bound",
        "configuration": {"type": "mvu-state",
                          "store": {"on": "assistant_message_committed",
                                    "strategy": ["parse_mvu_update", "validate_update", "apply_update"]},
                          "retrieve": {"on": "before_model_request", "strategy": RETRIEVE_CHAIN}}}
    assert MvuService.validate_config(defaults.configuration) is True
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 1);")
    assert defaults.check_current() is False
    assert service.get_management_defaults(id=instance, scope=local()) is None


async def test_world_book_entries_read_the_state_only_when_active_and_naming_it(service: MvuService,
                                                                                host: MemoryHost) -> None:
    await playing(service, host, card=PLAIN)
    seen: list[dict[str, Any]] = []
    service.observe(seen.append)
    macro = "{{format_message_variable::stat_data.hp}}"
    untouched = await service.render_world_book(scope=local(), entries=[{"text": macro, "active": False},
                                                                        {"text": "no state"}])
    assert (untouched.texts, untouched.id, untouched.revision, seen) == ([None, "no state"], None, None, [])
    rendered = await service.render_world_book(scope=local(), entries=[{"text": "hp " + macro}], preview=True)
    assert rendered.texts == ["hp 10"] and rendered.check_current() is True
    assert seen
    service.register_usage(lambda request: {"enabled": False}, provider_id=MANAGER)
    with pytest.raises(MvuError) as refused:
        await service.render_world_book(scope=local(), entries=[{"text": macro}])
    assert refused.value.code == "MVU_USAGE_DENIED"
    with pytest.raises(MvuError) as malformed:
        await service.render_world_book(scope=local(), entries=[{"text": 1}])
    assert malformed.value.code == "MVU_OPERATION"


async def test_a_lease_whose_session_and_resource_counts_were_forgotten_is_no_longer_current(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    # One session and one resource remembered: work on another session forgets the first's counts.
    monkeypatch.setattr(context, "SESSION_CHANGES", 1)
    monkeypatch.setattr(prompting, "_RESOURCE_CHANGES", 1)
    host = MemoryHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    instance = await playing(service, host, card=PLAIN)
    found = await service.resolve_prompt_dependency(id=instance, scope=local(), event=event())
    assert found is not None and found.check_current() is True
    await playing(service, host, "s2", card=PLAIN)  # a selection elsewhere: nothing of s1 changed...
    # ... but s1's count is forgotten, and a forgotten count must never pass for an unchanged one.
    assert found.check_current() is False
    again = await service.resolve_prompt_dependency(id=instance, scope=local(), event=event())
    assert again is not None and again.check_current() is True
    await service.close()
