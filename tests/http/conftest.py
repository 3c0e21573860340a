"""One seeded ledger served by a real ``mvu serve`` process for the whole HTTP module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.http.support import Seeded, Server, seed

# Room for the module's edits, not for a 1 MiB state: that one is PLAY_STORAGE_LIMIT.
LEDGER_ROOM = 512 * 1024


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return seed(tmp_path_factory.mktemp("http"), ledger_limit_bytes=LEDGER_ROOM)


@pytest.fixture(scope="module")
def server(seeded: Seeded) -> Iterator[Server]:
    running = Server.start(seeded.db)
    try:
        yield running
    finally:
        code, _, err = running.stop()
        assert code == 0, err[-2000:]
