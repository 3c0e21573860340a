"""Card tests: the service tests' fixtures (a service over the ledger fixture and a MemoryHost),
and one real ``mvu serve`` over an empty SQLite ledger for the module's HTTP tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.http.support import Server
from tests.service.conftest import host, service

__all__ = ["host", "served", "service"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server.start(f"sqlite:///{tmp_path_factory.mktemp('cards') / 'ledger.sqlite3'}")
    try:
        yield running
    finally:
        code, _, err = running.stop()
        assert code == 0, err[-2000:]
