"""Shared fixtures: ledgers on SQLite and PostgreSQL behind one parameter.

The storage contract runs on both engines. Each PostgreSQL test gets its own ``ledger_id`` in
the shared ``test`` database (every table is keyed by it), so tests never see each other's rows.
Without a reachable server the PostgreSQL cases are skipped locally and fail under ``CI=true``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mvu_store.ledger import Ledger, open_ledger

POSTGRES_URL = os.environ.get("MVU_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_available() -> bool:
    import psycopg

    try:
        with psycopg.connect(POSTGRES_URL.replace("postgresql://", "postgresql://", 1), connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


_POSTGRES = postgres_available()


def require_postgres() -> None:
    if _POSTGRES:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required under CI=true and is not reachable at {POSTGRES_URL}")
    pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL}")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database URL per engine (a fresh SQLite file, or the PostgreSQL test database)."""
    if request.param == "postgresql":
        require_postgres()
        return POSTGRES_URL
    return f"sqlite:///{tmp_path / 'ledger.sqlite3'}"


@pytest.fixture
def ledger_id(ledger_url: str) -> str:
    return "default" if ledger_url.startswith("sqlite") else f"t-{uuid.uuid4().hex[:20]}"


@pytest.fixture
async def ledger(ledger_url: str, ledger_id: str) -> AsyncIterator[Ledger]:
    opened = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        yield opened
    finally:
        await opened.close()
