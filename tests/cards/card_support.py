"""The card-script fixtures of the card tests: a shared resource ``mvu:card`` (hp 10, a declaration
refusing a negative hp) read by session ``s``, whose one completed turn (``_.add('hp', -1);``,
message ``reply`` at event 2) leaves hp 9 at revision 1; a playthrough ``p`` whose timeline head
is that message; and the host's grant for one card script."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mvu_store.host import Playthrough, TimelineNode, Variant
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService

HP_SCHEMA = """import { registerMvuSchema } from 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';
export const Schema = z.object({ hp: z.number().min(0) });
$(() => { registerMvuSchema(Schema); });
"""
HP_CARD_JSON = json.dumps({"spec": "chara_card_v3", "spec_version": "3.0", "data": {
    "name": "Hp", "first_mes": "Hello.", "character_book": {"entries": [
        {"comment": "[initvar]", "content": "hp: 10\n", "enabled": True},
        {"comment": "schema", "content": HP_SCHEMA, "enabled": True}]}}}).encode()
"""A character card with ``hp: 10`` and the HP declaration, as a host registers it over HTTP."""
CARD = {"id": "mvu:card", "session_ids": ["s"], "sharing": "shared", "initial": {"stat_data": {"hp": 10}},
        "schema_source": HP_SCHEMA}
SCOPE: dict[str, Any] = {"playthroughId": "p", "sessionId": "s", "nodeId": "n", "variantId": "v", "endEventId": 2,
                         "sessionFormatVersion": 4}
IDENTITY: dict[str, Any] = {"version": 1, "sha256": "a" * 64, "scope": SCOPE}


def timeline(head: bool = True) -> Playthrough:
    return Playthrough("p", "c", "s", nodes=(TimelineNode("n", (Variant("v", "s", 2, 4),)),),
                       head=("n", "v") if head else None)


async def played(service: MvuService, host: MemoryHost) -> None:
    host.create_session("s", created_at=1000)
    await host.turn("s", turn=1, user="go", reply="_.add('hp',-1);", message_id="reply")
    host.facts.report_playthrough(timeline())


async def selecting(ledger: Ledger, host: MemoryHost, *cards: dict[str, Any]) -> tuple[MvuService, str | None]:
    """A service over ``ledger`` that discovered ``cards`` and a session ``s`` that selected the
    first; the service and the session's instance id."""
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    for card in cards:
        await service.discover(definition=card)
    host.create_session("s", created_at=1000)
    selected = await service.select_character(session_id="s", character_id=cards[0]["character_id"])
    return service, selected.instance_id


def grant(host: MemoryHost, identity: dict[str, Any] = IDENTITY) -> None:
    host.facts.grant("grant", source_identity=identity, scope=identity["scope"])


def patch(delta: int, expected: int, operation_id: str) -> dict[str, Any]:
    return {"operation": "patch", "value": [{"op": "delta", "path": "/hp", "value": delta}],
            "expected_revision": expected, "operation_id": operation_id, "cause": "user-interaction"}


class Held:
    """Holds the ``n``-th scope resolution (a host membership read) until released."""

    def __init__(self, host: MemoryHost, n: int) -> None:
        self.reached = asyncio.Event()
        self.release = asyncio.Event()
        self._calls = 0
        self._n = n
        self.inner = host.facts.membership
        host.facts.membership = self  # type: ignore[method-assign,assignment]

    async def __call__(self, playthrough_id: str) -> Any:
        self._calls += 1
        if self._calls == self._n:
            self.reached.set()
            await self.release.wait()
        return await self.inner(playthrough_id)
