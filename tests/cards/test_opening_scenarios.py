"""The original's greeting-initialisation scenarios, each a selection of ours: the chosen
greeting's update blocks apply once on the card's initial state (display scripts never run), and
a failing one refuses the opening with ``MVU_INITIALIZATION_INVALID``."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import scope

STRICT = """import { registerMvuSchema } from 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';
export const Schema = z.object({
  hp: z.number(), records: z.record(z.string(), z.number()), flags: z.object({ seen: z.boolean() }).strict(),
});
$(() => { registerMvuSchema(Schema); });
"""

FLAGS = {"flags": {"seen": False}}
SCRIPTED = """<script>const hp = _.get('hp'); document.title = String(hp);</script>
<UpdateVariable><JSONPatch>[{"op": "replace", "path": "/hp", "value": 80},
{"op": "add", "path": "/records/start", "value": 1}]</JSONPatch></UpdateVariable>"""
FENCED = """<UpdateVariable>
```json
[{"op": "replace", "path": "/hp", "value": 70}]
```
</UpdateVariable>"""
INVALID = ['<UpdateVariable>_.set("hp",80);_.set("flags.unknown",1);</UpdateVariable>',
           '<UpdateVariable><JSONPatch>[{"op": "replace", "path": "/hp", "value": "bad"}]</JSONPatch></UpdateVariable>',
           '<UpdateVariable>_.set("hp",80);',
           '_.set("hp",80);</JSONPatch>']


async def _opened(service: MvuService, host: MemoryHost, greeting: str, session_id: str) -> Any:
    await service.discover(definition={"character_id": "c", "initvar": ["hp: 100\nrecords: {}\nflags: {seen: false}\n"],
                                       "schema_source": STRICT, "greetings": ["Hello.", greeting]})
    host.create_session(session_id, created_at=1000)
    chosen = await service.select_character(session_id=session_id, character_id="c", greeting_index=1)
    assert chosen.instance_id is not None
    record = await service.read(id=chosen.instance_id, scope=scope(session_id))
    assert record is not None
    return record.content["stat_data"]  # type: ignore[index,call-overload]


@pytest.mark.parametrize(("greeting", "expected"), [
    (SCRIPTED, {"hp": 80, "records": {"start": 1}, **FLAGS}),
    ("No variable updates", {"hp": 100, "records": {}, **FLAGS}),
    (FENCED, {"hp": 70, "records": {}, **FLAGS}),
])
async def test_opening_envelopes_apply_once_without_reading_display_scripts(
        service: MvuService, host: MemoryHost, greeting: str, expected: Any) -> None:
    assert await _opened(service, host, greeting, "s1") == expected


@pytest.mark.parametrize("greeting", INVALID)
async def test_invalid_opening_updates_fail_atomically(service: MvuService, host: MemoryHost, greeting: str) -> None:
    with pytest.raises(MvuError) as refused:
        await _opened(service, host, greeting, "s1")
    assert refused.value.code == "MVU_INITIALIZATION_INVALID"
    assert await service.list(scope=scope("s1")) == []
    # The card's template is untouched: the first message still opens at hp 100.
    chosen = await service.select_character(session_id="s1", character_id="c", greeting_index=0)
    assert chosen.instance_id is not None
    record = await service.read(id=chosen.instance_id, scope=scope("s1"))
    assert record is not None and record.content["stat_data"] == {"hp": 100, "records": {}, **FLAGS}  # type: ignore[index]
