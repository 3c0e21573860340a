"""MemoryHost passes the host contract, keeping its sessions in memory and in JSONL log files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mvu_store.memory_host import MemoryHost
from tests.hosts.contract import Event, HostContract, StorageContract


class MemoryDriver:
    """The chat program on a :class:`MemoryHost`: its own calls, one event at a time."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.host = MemoryHost(path)
        self.utf8_only = path is not None  # a log line is UTF-8

    async def create(self, session_id: Any, **header: Any) -> None:
        self.host.create_session(session_id, **header)

    async def append(self, session_id: Any, events: Sequence[Event]) -> None:
        for kind, data in events:
            self.host.append(session_id, kind, data)

    async def reopen(self) -> MemoryHost | None:
        return None if self.path is None else MemoryHost(self.path)


class TestMemoryHostInMemory(HostContract):
    @pytest.fixture
    def driver(self) -> MemoryDriver:
        return MemoryDriver(None)


class TestMemoryHostOnLogFiles(HostContract, StorageContract):
    @pytest.fixture
    def driver(self, tmp_path: Path) -> MemoryDriver:
        return MemoryDriver(tmp_path / "sessions")
