"""Counting a ledger's reader round trips, for tests that pin what a use case costs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mvu_store.ledger import Ledger


def count_round_trips(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``[n]``: how many reader round trips the ledger makes from now on."""
    trips = [0]
    read_rows = ledger._store.read_rows

    async def counted(work: Callable[[Any], Any], **options: Any) -> Any:
        trips[0] += 1
        return await read_rows(work, **options)

    monkeypatch.setattr(ledger._store, "read_rows", counted)
    return trips
