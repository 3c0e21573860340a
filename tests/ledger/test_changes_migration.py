"""Migration 0007 on SQLite and PostgreSQL: a ledger written before the ``changes`` table gets
its rows back-filled from its stored states (derived, charged, within its budget), and the
downgrade leaves a 0006 ledger whose audit is clean."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, inspect, text

from mvu_store.ledger import migrate, open_ledger
from mvu_store.ledger.engine import EngineOptions, create_sync_engine
from tests.ledger.change_fixtures import HERO, SWIPE, change_rows, fresh_database, play_story

# (resource, position, seq, revision, turn, path, op, status, actor, before, after, code) of every
# row the story's states show.
DERIVED = [
    (HERO, 0, 0, 1, None, "/hp", "add", "applied", "initial", None, "10", None),
    (HERO, 0, 1, 1, None, "/mood", "add", "applied", "initial", None, '"calm"', None),
    (HERO, 1, 0, 2, 1, "/hp", "replace", "applied", "reply", "10", "5", None),
    (HERO, 2, 0, 3, 2, "/hp", "replace", "applied", "reply", "5", "-3", None),
    (HERO, 3, 0, 4, 3, "", None, "refused", "reply", None, None, "MVU_SCHEMA"),
    (HERO, 4, 0, 5, None, "/hp", "replace", "applied", "manual", "-3", "7", None),
    # The fork child's first version, against its parent's version at the fork point (hp 5).
    (SWIPE, 0, 0, 1, 2, "/hp", "replace", "applied", "reply", "5", "-1", None),
    (SWIPE, 0, 1, 1, 2, "/mood", "replace", "applied", "reply", '"calm"', '"wary"', None),
]
FIELDS = ("resource_id", "position", "seq", "revision", "turn", "path", "op", "status", "actor", "before", "after",
          "code")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_database(request.param, tmp_path) as found:
        yield found


def _migrate(engine: Engine, action: Any, revision: str) -> None:
    config = migrate._config(engine)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        action(config, revision)


def _findings(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return list(connection.execute(text("SELECT * FROM audit_findings")))


def _usage(engine: Engine) -> tuple[int, int]:
    with engine.connect() as connection:
        used, limit = connection.execute(text("SELECT used_bytes, limit_bytes FROM ledger")).one()
        return int(used), int(limit)


async def _story_at_0006(url: str) -> Engine:
    """The story written at head, then the schema taken down to 0006 (rows and their bytes go)."""
    ledger = await open_ledger(url)
    try:
        await play_story(ledger)
    finally:
        await ledger.close()
    engine = create_sync_engine(url, EngineOptions())
    _migrate(engine, command.downgrade, "0006")
    assert migrate.current_revision(engine) == "0006"
    assert "changes" not in inspect(engine).get_table_names()
    assert _findings(engine) == []  # the views of 0006 are back, and the bytes agree
    return engine


async def test_0007_back_fills_the_rows_the_stored_states_show(url: str) -> None:
    engine = await _story_at_0006(url)
    try:
        before = _usage(engine)[0]
        migrate.upgrade(engine)
        migrate.check(engine)
        assert _findings(engine) == []
    finally:
        engine.dispose()
    ledger = await open_ledger(url)
    try:
        rows = await change_rows(ledger)
        assert [tuple(row[name] for name in FIELDS) for row in rows] == DERIVED
        assert all(row["derived"] and row["command"] is None for row in rows)
        assert (await ledger.usage()).used_bytes == before + sum(row["bytes"] for row in rows)
        assert await ledger.audit() == []
    finally:
        await ledger.close()


async def test_0007_back_fills_no_more_than_the_budget_holds(url: str) -> None:
    engine = await _story_at_0006(url)
    try:
        used, _ = _usage(engine)
        room = 300  # the rows of the first two versions (about 100 bytes each), not of the third
        with engine.begin() as connection:
            connection.execute(text("UPDATE ledger SET limit_bytes = :limit"), {"limit": used + room})
        migrate.upgrade(engine)
        assert _findings(engine) == []
        used_after, limit = _usage(engine)
        assert used_after <= limit
    finally:
        engine.dispose()
    ledger = await open_ledger(url)
    try:
        rows = await change_rows(ledger)
        written = [tuple(row[name] for name in FIELDS) for row in rows]
        assert written == DERIVED[:len(written)] and 0 < len(written) < len(DERIVED)
        assert sum(row["bytes"] for row in rows) <= room
        assert await ledger.audit() == []
    finally:
        await ledger.close()
