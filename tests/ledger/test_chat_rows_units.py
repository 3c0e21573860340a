"""A chat import's or export's steps run only inside their unit of work (issue 30: no
transaction outlives the ledger's method): a step object kept and called later is refused."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import ChatExportRows, ChatImportRows, Ledger


async def test_import_steps_kept_past_their_unit_are_refused(ledger: Ledger) -> None:
    kept: list[ChatImportRows] = []

    def write(steps: ChatImportRows) -> int:
        kept.append(steps)
        return steps.charged  # inside the unit: answers

    assert await ledger.import_chat_rows("s1", "0" * 64, any_session=False, write=write, again=lambda _: -1) == 0
    with pytest.raises(MvuError) as caught:
        kept[0].write_queued()
    assert caught.value.code == Code.DISPOSED
    with pytest.raises(MvuError):
        _ = kept[0].charged


async def test_export_steps_kept_past_their_snapshot_are_refused(ledger: Ledger) -> None:
    kept: list[ChatExportRows] = []

    def read(steps: ChatExportRows) -> Any:
        kept.append(steps)
        return steps.imported()  # inside the snapshot: answers (nothing imported)

    assert await ledger.export_chat_rows("s1", read) is None
    with pytest.raises(MvuError) as caught:
        kept[0].tail()
    assert caught.value.code == Code.DISPOSED
