"""Service fixtures: an MvuService over the SQLite / PostgreSQL ledger fixture and a MemoryHost."""

from __future__ import annotations

import pytest

from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService


@pytest.fixture
def host() -> MemoryHost:
    return MemoryHost()


@pytest.fixture
def service(ledger: Ledger, host: MemoryHost) -> MvuService:
    """A service with the host attached: turn/start checkpoints, turn/end ingests."""
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    return service
