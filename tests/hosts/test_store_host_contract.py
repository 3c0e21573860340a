"""StoreHost passes the host contract, on SQLite and on PostgreSQL (the ``ledger`` fixture)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from typing import Any

import pytest

from mvu_store.ledger import Ledger, open_ledger
from mvu_store.store_host import StoreHost
from tests.hosts.contract import Event, HostContract, StorageContract


class StoreDriver:
    """The chat program on a :class:`StoreHost`: batches of ``{seq, type, data}`` as over HTTP."""

    def __init__(self, ledger: Ledger, url: str, ledger_id: str, opened: AsyncExitStack) -> None:
        self.host = StoreHost(ledger)
        self.utf8_only = True
        self._url, self._ledger_id, self._opened = url, ledger_id, opened

    async def create(self, session_id: Any, **header: Any) -> None:
        await self.host.create_session(session_id, **header)

    async def append(self, session_id: Any, events: Sequence[Event]) -> None:
        stored = await self.host.session(session_id)
        first = 0 if stored is None else stored.last_seq + 1
        await self.host.append(session_id, [{"seq": first + offset, "type": kind, "data": data}
                                            for offset, (kind, data) in enumerate(events)])

    async def reopen(self) -> StoreHost:
        other = await open_ledger(self._url, ledger_id=self._ledger_id)
        self._opened.push_async_callback(other.close)
        return StoreHost(other)


class TestStoreHostContract(HostContract, StorageContract):
    @pytest.fixture
    async def driver(self, ledger: Ledger, ledger_url: str, ledger_id: str) -> AsyncIterator[StoreDriver]:
        async with AsyncExitStack() as opened:
            yield StoreDriver(ledger, ledger_url, ledger_id, opened)
