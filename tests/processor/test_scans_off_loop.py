"""A reply's second looks at its text run in the service's worker threads, as its first parse
does (docs/reliability.md, "Work per request"): a reply that did not parse is scanned again for
an update attempt, and a reply a card's script may repair is parsed again; each is up to a
megabyte of text (a repaired patch of 20,000 operations took seconds), so on the event loop
either would stop every other session meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from mvu_store.lang import contains_update
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.processor.repair import repairs
from mvu_store.service import processing, turn_stages
from tests.processor.support import SESSION, helper, hp, make_service

PUSHING = helper("if (text.includes('\"path\":\"/hp\":')) commands.push({type: 'set', args: ['hp', '{\"n\":1}'],"
                 " full_match: '{\"op\":\"replace\",\"path\":\"/hp\",\"value\":{\"n\":1}}'});")


def recording(where: list[str], work: Callable[..., Any]) -> Callable[..., Any]:
    """``work`` that notes the name of each thread it runs in."""

    def noted(*args: Any) -> Any:
        where.append(threading.current_thread().name)
        return work(*args)

    return noted


async def test_a_repairable_reply_is_parsed_again_in_a_worker_thread(ledger: Ledger,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    where: list[str] = []
    monkeypatch.setattr(turn_stages, "repairs", recording(where, repairs))
    monkeypatch.setattr(processing, "repairs", recording(where, repairs))
    host = MemoryHost()
    service = make_service(ledger, host, PUSHING)
    await host.turn(SESSION, turn=1, user="go", reply='<JSONPatch>[{"op":"replace","path":"/hp":{"n":1}}]</JSONPatch>')
    assert await hp(service) == {"n": 1}
    assert len(where) == 2 and all(name.startswith("mvu-cpu") for name in where), where
    await service.close()


async def test_a_reply_that_did_not_parse_is_scanned_again_in_a_worker_thread(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    where: list[str] = []
    monkeypatch.setattr(turn_stages, "contains_update", recording(where, contains_update))
    host = MemoryHost()
    service = make_service(ledger, host)
    await host.turn(SESSION, turn=1, user="go", reply="_.set('__proto__.hp', 1);")
    assert await hp(service) == 10  # refused: the path is unsafe
    assert where and all(name.startswith("mvu-cpu") for name in where), where
    await service.close()
