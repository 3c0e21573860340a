"""Shared fixtures: ledgers on SQLite and PostgreSQL behind one parameter.

The storage contract runs on both engines. A test run works in its own PostgreSQL schema of the
``test`` database (created here, dropped at the end), so runs never see each other's tables or a
schema an older checkout left behind; inside it each test gets its own ``ledger_id``. Without a
reachable server the PostgreSQL cases are skipped locally and fail under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from mvu_store.ledger import Ledger, open_ledger

POSTGRES_SERVER_URL = os.environ.get("MVU_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
_RUN_SCHEMA = f"mvu_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def postgres_url_in_schema(schema: str) -> str:
    """The test server's URL with ``search_path`` set to ``schema``."""
    separator = "&" if "?" in POSTGRES_SERVER_URL else "?"
    return f"{POSTGRES_SERVER_URL}{separator}options=-csearch_path%3D{schema}"


POSTGRES_URL = postgres_url_in_schema(_RUN_SCHEMA)


def _create_run_schema() -> bool:
    try:
        with psycopg.connect(POSTGRES_SERVER_URL, connect_timeout=3, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {_RUN_SCHEMA}")
        return True
    except psycopg.OperationalError:
        return False


_POSTGRES = _create_run_schema()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _POSTGRES:
        return
    with psycopg.connect(POSTGRES_SERVER_URL, connect_timeout=3, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {_RUN_SCHEMA} CASCADE")


def require_postgres() -> None:
    if _POSTGRES:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"PostgreSQL is required under CI=true and is not reachable at {POSTGRES_URL}")
    pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL}")


def require_tool(name: str, why: str) -> str:
    """The path of the program ``name``: skipped without it, a failure under ``CI=true``."""
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is required under CI=true ({why})")
        pytest.skip(f"{name} is not installed")
    return found


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
