"""Card tests: the service tests' fixtures (a service over the ledger fixture and a MemoryHost),
and one real ``mvu serve`` over an empty SQLite ledger for the module's HTTP tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.http.support import Server, served
from tests.service.conftest import host, service

__all__ = ["host", "served_fixture", "service"]


@pytest.fixture(scope="module", name="served")
def served_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(f"sqlite:///{tmp_path_factory.mktemp('cards') / 'ledger.sqlite3'}") as running:
        yield running
