"""Fixtures shared by the ledger tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from mvu_store.ledger import Ledger, open_ledger


@pytest.fixture
async def others(ledger_url: str) -> AsyncIterator[Callable[..., Awaitable[Ledger]]]:
    """Opens more ledgers in the test's database (each its own ledger id), closed after the test."""
    opened: list[Ledger] = []

    async def open_(**options: Any) -> Ledger:
        ledger = await open_ledger(ledger_url, ledger_id=f"x-{uuid.uuid4().hex[:20]}", **options)
        opened.append(ledger)
        return ledger

    yield open_
    for ledger in opened:
        await ledger.close()
