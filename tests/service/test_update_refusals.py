"""Edits with text no UTF-8 JSON can carry are refusals, not crashes."""

from __future__ import annotations

import json

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService


async def test_a_lone_surrogate_in_an_edit_is_mvu_json(ledger: Ledger) -> None:
    service = MvuService(ledger=ledger, host=MemoryHost(), resources=[
        {"id": "mvu:w", "session_ids": ["*"], "sharing": "shared", "initial": {"stat_data": {}}}])
    content = json.loads('{"stat_data": {"x": "\\ud800"}}')
    with pytest.raises(MvuError) as refused:
        await service.update(id="mvu:w", content=content, expected_revision=0, operation_id="a",
                             scope={"authority": "local"})
    assert refused.value.code == "MVU_JSON"
    assert await ledger.audit() == []
