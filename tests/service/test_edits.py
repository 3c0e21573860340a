"""Manual edits against the source's declaration (DIGEST A: update): the schema stays owned by
the source, whatever the key order a client sends it back in."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import playing, scope


async def test_an_edit_may_send_the_same_declaration_back_in_any_key_order(service: MvuService, host: MemoryHost,
                                                                           ledger: Ledger) -> None:
    instance = await playing(service, host)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    content: Any = record.content
    reordered = dict(reversed(list(content["mvu_schema"].items())))
    receipt = await service.update(id=instance, content={"stat_data": {"hp": 5, "gold": 1}, "mvu_schema": reordered},
                                   expected_revision=0, operation_id="e1", scope=scope("s1"))
    assert receipt.revision == 1
    assert receipt.content["mvu_schema"] == content["mvu_schema"]  # type: ignore[index,call-overload]
    assert await ledger.audit() == []


async def test_an_edit_cannot_replace_the_declaration(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    content: Any = record.content
    other = {**content["mvu_schema"], "source": content["mvu_schema"]["source"].replace("min(0)", "min(5)")}
    with pytest.raises(MvuError) as caught:
        await service.update(id=instance, content={"stat_data": {"hp": 5, "gold": 1}, "mvu_schema": other},
                             expected_revision=0, operation_id="e1", scope=scope("s1"))
    assert caught.value.code == "MVU_SCHEMA_CODE"
    assert (await ledger.head(instance)).revision == 0
