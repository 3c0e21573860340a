"""A card of ours built like StageDog's example card 白娅: its lorebook's ``[initvar]`` starts
依存度 at 35, its declaration clamps it, and its alternate greeting opens with an
``<UpdateVariable><initvar>`` block that starts it at 15 (written for these tests from the card's
shape, not copied from it)."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = """import { registerMvuSchema } from 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';

export const Schema = z.object({
  世界: z.object({ 当前时间: z.string(), 当前地点: z.string() }),
  白娅: z.object({
    依存度: z.coerce.number().transform(value => _.clamp(value, 0, 100)),
    着装: z.record(z.enum(['上装', '下装', '鞋子']), z.string().describe('服装描述')),
  }),
});
$(() => { registerMvuSchema(Schema); });
"""

INITVAR = """世界:
  当前时间: 清晨
  当前地点: 公寓
白娅:
  依存度: 35
  着装:
    上装: 白色连衣裙
    下装: 无
    鞋子: 拖鞋
"""

FIRST = "清晨的阳光洒进公寓，白娅还在熟睡。"

ALTERNATE = """夜里，{{user}}推开门，白娅抬起头。
<UpdateVariable>
<initvar>
世界:
  当前时间: 深夜
  当前地点: 公寓门口
白娅:
  依存度: 15
  着装:
    上装: 旧外套
    下装: 长裤
    鞋子: 运动鞋
</initvar>
</UpdateVariable>"""

PATCHED = """白娅抬头看着{{user}}。
<UpdateVariable>
<JSONPatch>[{"op": "replace", "path": "/白娅/依存度", "value": 150}]</JSONPatch>
</UpdateVariable>"""

BROKEN = """<UpdateVariable>
_.set('白娅.依存度', 20);
_.set('白娅.依存度', '很高');
</UpdateVariable>"""

UNCLOSED = "<UpdateVariable><JSONPatch>[]</JSONPatch>"


def card(*alternates: str) -> dict[str, Any]:
    """The card as a character card V3 JSON object."""
    return {"spec": "chara_card_v3", "spec_version": "3.0", "data": {
        "name": "白娅", "first_mes": FIRST, "alternate_greetings": list(alternates or (ALTERNATE, PATCHED, BROKEN,
                                                                                          UNCLOSED)),
        "character_book": {"entries": [{"comment": "[initvar]变量初始化", "content": INITVAR, "enabled": True},
                                       {"comment": "[mvu_zod]变量结构", "content": SCHEMA, "enabled": True}]}}}


def card_bytes(*alternates: str) -> bytes:
    return json.dumps(card(*alternates), ensure_ascii=False).encode()
