"""A prompt read's lease through request preparation: the original's world-book request-lease and
log-only title scenarios, for the dependency read, the world-book macro and the state source.

What a host logs while it prepares the request it made the read for (the turn's claimed input,
system messages, request context, assembly and headers, a step, a title) keeps the read current;
each case that must end it is one that a dropped rule would let through. Write leases stay strict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import PLAIN, playing

USER = {"source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]}
TITLE_SOURCES: list[dict[str, Any]] = [{"kind": "fallback"}, {"kind": "user"},
                 {"kind": "provider", "provider": "p", "model": {"provider": "p", "model": "m"}}]
Event = tuple[str, dict[str, Any]]
MACRO = "{{format_message_variable::stat_data}}"


def _local() -> dict[str, Any]:
    return {"authority": "local", "sessionId": "s1"}


def _world_book(turn: int | None) -> dict[str, Any]:
    return {"preview": turn is None, "turn": turn, "step": 1, "usage": "world-book-variable",
            "consumer": {"adapterId": "tavern.world-books", "id": "world-book:character:plain:embedded"}}


async def _reads(service: MvuService, turn: int | None) -> list[Callable[[], bool]]:
    """The three prompt reads' leases: a dependency, a rendered world-book entry, the state source."""
    found = await service.resolve_prompt_dependency(scope=_local(), event=_world_book(turn))
    rendered = await service.render_world_book(scope=_local(), entries=[{"text": MACRO}], turn=turn,
                                               preview=turn is None)
    assembled = await service.resolve_request(session_id="s1", selection={"role": "system", "lifetime": "request"},
                                              turn=turn)
    assert found is not None and assembled.blocks
    leases = [found.check_current, rendered.check_current, assembled.check_current]
    assert all(lease() for lease in leases)
    return leases


async def _in_turn(service: MvuService, host: MemoryHost) -> int:
    """A session in its first turn's preparation; the seq of a user message logged before."""
    await playing(service, host, card=PLAIN)
    earlier = host.append("s1", "user/message", {"turn": 0, "message": USER})
    host.append("s1", "turn/start", {"turn": 1})
    await host.drain()
    return earlier


TOLERATED: dict[str, list[Event]] = {
    "claimed input": [("user/message", {"turn": 1, "message": USER})],
    "system message": [("system/message", {"turn": 1, "message": {"content": "be brief"}})],
    "step": [("step/start", {"turn": 1, "step": 1})],
    "request context": [("request/context", {"turn": 1})],
    "request assembly": [("request/assembly", {"turn": 1, "messages": [{"role": "user", "content": "hi"}]})],
    "header": [("request/header", {"header": {}, "reason": "preset"})],
    "series header": [("request/header", {"header": {"startsSeries": True}, "reason": "preset"})],
    **{f"title from {source['kind']}": [("session/title", {"title": "T", "messageSeqs": [], "source": source})]
       for source in TITLE_SOURCES},
}


async def _current_after(service: MvuService, host: MemoryHost, events: list[Event]) -> list[bool]:
    """Whether each prompt read made in the first turn is current after ``events`` were logged."""
    await _in_turn(service, host)
    leases = await _reads(service, turn=1)
    for kind, data in events:
        host.append("s1", kind, data)
    return [lease() for lease in leases]


@pytest.mark.parametrize("events", TOLERATED.values(), ids=TOLERATED.keys())
async def test_request_preparation_keeps_every_prompt_read_current(service: MvuService, host: MemoryHost,
                                                                   events: list[Event]) -> None:
    assert await _current_after(service, host, events) == [True, True, True]


@pytest.mark.parametrize("source", TITLE_SOURCES, ids=[source["kind"] for source in TITLE_SOURCES])
async def test_a_title_may_name_logged_and_claimed_input(service: MvuService, host: MemoryHost,
                                                         source: dict[str, Any]) -> None:
    earlier = await _in_turn(service, host)
    leases = await _reads(service, turn=1)
    claimed = host.append("s1", "user/message", {"turn": 1, "message": USER})
    host.append("s1", "session/title", {"title": "T", "messageSeqs": [earlier, claimed], "source": source})
    assert all(lease() for lease in leases)


def _title(**changes: Any) -> dict[str, Any]:
    return {"title": "T", "messageSeqs": [], "source": {"kind": "fallback"}, **changes}


ENDING: dict[str, list[Event]] = {
    "startsSeries as a string": [("request/header", {"header": {"startsSeries": "true"}})],
    "unknown header key": [("request/header", {"header": {"cache": True}})],
    "unknown header event field": [("request/header", {"header": {}, "extra": 1})],
    "unclaimed input": [("user/message", {"turn": 2, "message": USER})],
    "input without a turn": [("user/message", {"message": USER})],
    "another turn's system message": [("system/message", {"turn": 2})],
    "another turn's step": [("step/start", {"turn": 0, "step": 1})],
    "another turn's context": [("request/context", {"turn": 3})],
    "another turn's assembly": [("request/assembly", {"turn": 2, "messages": []})],
    "another turn's header": [("request/header", {"header": {}, "turn": 2})],
    "a header whose reason is no text": [("request/header", {"header": {}, "reason": 1})],
    "a future reply": [("assistant/message", {"turn": 1, "message": {"id": "r", "content": "x"}})],
    "a new turn": [("turn/start", {"turn": 2})],
    "a title naming a future seq": [("session/title", _title(messageSeqs=[99]))],
    "a title naming a system message": [("system/message", {"turn": 1}), ("session/title", _title(messageSeqs=[2]))],
    "a title of an unknown source": [("session/title", _title(source={"kind": "auto"}))],
    "a title with an extra field": [("session/title", _title(pinned=True))],
    "a blank title": [("session/title", _title(title=" "))],
    "a provider title without its model": [("session/title", _title(source={"kind": "provider", "provider": "p"}))],
    "a setting": [("model/selection", {"provider": "p", "model": "m"})],
    "an unknown event": [("permission/other", {})],
    "tolerated, then unknown": [("step/start", {"turn": 1, "step": 1}), ("approval/request", {})],
}


@pytest.mark.parametrize("events", ENDING.values(), ids=ENDING.keys())
async def test_anything_else_ends_every_prompt_read(service: MvuService, host: MemoryHost,
                                                    events: list[Event]) -> None:
    assert await _current_after(service, host, events) == [False, False, False]


async def test_a_change_to_earlier_history_ends_every_prompt_read(service: MvuService, host: MemoryHost) -> None:
    earlier = await _in_turn(service, host)
    leases = await _reads(service, turn=1)
    host.replace_event("s1", earlier, "user/message", {"turn": 0, "message": {**USER, "content": "edited"}})
    assert [lease() for lease in leases] == [False, False, False]


async def test_before_any_turn_turn_bound_preparation_ends_a_preview_read(service: MvuService,
                                                                         host: MemoryHost) -> None:
    await playing(service, host, card=PLAIN)
    leases = await _reads(service, turn=None)
    host.append("s1", "request/header", {"header": {}})
    assert all(lease() for lease in leases)
    host.append("s1", "system/message", {"turn": 1})  # no turn runs: nothing claims it
    assert not any(lease() for lease in leases)
