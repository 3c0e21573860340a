"""Session locks (placeholder until the cross-process lock lands): one asyncio lock per session."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator

from mvu_store.ledger.store import Store


class SessionLocks(Store):
    _session_locks: weakref.WeakValueDictionary[str, asyncio.Lock] | None = None

    @contextlib.asynccontextmanager
    async def session_lock(self, session_id: str) -> AsyncIterator[None]:
        if self._session_locks is None:
            self._session_locks = weakref.WeakValueDictionary()
        lock = self._session_locks.get(session_id)
        if lock is None:
            lock = self._session_locks[session_id] = asyncio.Lock()
        async with lock:
            yield
