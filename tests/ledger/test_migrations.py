"""Alembic owns the schema: migrations and models never drift; upgrades are repeatable."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, text

from mvu_store.errors import MvuError
from mvu_store.ledger import migrate, open_ledger
from mvu_store.ledger.engine import EngineOptions, create_sync_engine
from tests.conftest import POSTGRES_SERVER_URL, postgres_url_in_schema, require_postgres


def test_models_and_migrations_do_not_drift_on_sqlite(tmp_path: Path) -> None:
    engine = create_sync_engine(f"sqlite:///{tmp_path / 'drift.sqlite3'}", EngineOptions())
    try:
        migrate.upgrade(engine)
        migrate.upgrade(engine)  # a second upgrade is a no-op
        migrate.check(engine)
        assert migrate.current_revision(engine) == migrate.head_revision()
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_models_and_migrations_do_not_drift_on_postgresql() -> None:
    require_postgres()
    schema = f"drift_{uuid.uuid4().hex[:12]}"
    admin = create_sync_engine(POSTGRES_SERVER_URL, EngineOptions())
    with admin.begin() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    engine = create_sync_engine(postgres_url_in_schema(schema), EngineOptions())
    try:
        migrate.upgrade(engine)
        migrate.check(engine)
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def test_check_refuses_a_database_behind_head(tmp_path: Path) -> None:
    engine = create_sync_engine(f"sqlite:///{tmp_path / 'empty.sqlite3'}", EngineOptions())
    try:
        with pytest.raises(MvuError) as refused:
            migrate.check(engine)
        assert refused.value.code == "MVU_VERSION"
    finally:
        engine.dispose()


def test_check_refuses_a_schema_changed_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "changed.sqlite3"
    engine = create_sync_engine(f"sqlite:///{path}", EngineOptions())
    try:
        migrate.upgrade(engine)
        with sqlite3.connect(path) as raw:
            raw.execute("CREATE TABLE stray (x INTEGER)")
        with pytest.raises(MvuError) as refused:
            migrate.check(engine)
        assert refused.value.code == "MVU_VERSION"
    finally:
        engine.dispose()


async def test_sqlite_pragmas_are_durable(tmp_path: Path) -> None:
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'l.sqlite3'}")
    try:
        def pragmas(connection: object) -> tuple[object, ...]:
            run = connection.exec_driver_sql  # type: ignore[attr-defined]
            return (
                run("PRAGMA journal_mode").scalar(),
                run("PRAGMA foreign_keys").scalar(),
                run("PRAGMA synchronous").scalar(),
            )

        journal, foreign_keys, _ = await ledger._store.read(pragmas)
        assert (journal, foreign_keys) == ("wal", 1)
    finally:
        await ledger.close()


@pytest.mark.parametrize(
    ("url", "code"),
    [("mysql://x/y", "MVU_CONFIG"), ("not a url", "MVU_CONFIG"), ("sqlite://", "MVU_CONFIG"),
     ("sqlite:///:memory:", "MVU_CONFIG")],
)
async def test_bad_urls_are_refused(url: str, code: str) -> None:
    with pytest.raises(MvuError) as refused:
        await open_ledger(url)
    assert refused.value.code == code


async def test_bad_ledger_ids_and_limits_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    for kwargs in ({"ledger_id": "has space"}, {"ledger_id": ""}, {"ledger_limit_bytes": 0}):
        with pytest.raises(MvuError) as refused:
            await open_ledger(url, **kwargs)  # type: ignore[arg-type]
        assert refused.value.code == "MVU_CONFIG"


async def test_reopening_applies_new_limits(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    first = await open_ledger(url)
    await first.close()
    second = await open_ledger(url, ledger_limit_bytes=1_000_000)
    try:
        assert (await second.usage()).limit_bytes == 1_000_000
    finally:
        await second.close()


def _upgrade_to(engine: Engine, revision: str) -> None:
    config = migrate._config(engine)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def test_0002_upgrades_a_ledger_without_failed_versions(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    engine = create_sync_engine(f"sqlite:///{path}", EngineOptions())
    try:
        _upgrade_to(engine, "0001")
        assert migrate.current_revision(engine) == "0001"
        _upgrade_to(engine, "0002")
        with sqlite3.connect(path) as raw:
            indexes = {row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            assert {"uq_versions_revision", "ix_versions_session"} <= indexes
        migrate.upgrade(engine)
        migrate.check(engine)
        with sqlite3.connect(path) as raw:
            # The views were recreated with the new rule: failed versions are revision claims.
            [view] = raw.execute("SELECT sql FROM sqlite_master WHERE name = 'audit_revisions'").fetchone()
            assert "'failed'" in view
    finally:
        engine.dispose()


def test_0004_drops_the_indexes_no_query_needs_and_keeps_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    engine = create_sync_engine(f"sqlite:///{path}", EngineOptions())
    try:
        _upgrade_to(engine, "0003")
        with sqlite3.connect(path) as raw:
            raw.execute("INSERT INTO receipts (ledger_id, resource_id, operation_id, position, kind, fingerprint,"
                        " revision, result, bytes, created_at) VALUES ('default', 'mvu:a', 'op', 0, 'management',"
                        " 'f', 1, '{}', 0, 0)")
        migrate.upgrade(engine)
        migrate.check(engine)
        with sqlite3.connect(path) as raw:
            indexes = {row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            assert not {"ix_versions_session", "ix_receipts_position"} & indexes
            assert "uq_versions_revision" in indexes
            assert raw.execute("SELECT operation_id FROM receipts").fetchall() == [("op",)]
    finally:
        engine.dispose()


def test_0002_refuses_failed_versions_written_before_they_claimed_a_revision(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    engine = create_sync_engine(f"sqlite:///{path}", EngineOptions())
    try:
        _upgrade_to(engine, "0001")
        with sqlite3.connect(path) as raw:  # foreign keys off: one bare row is enough here
            raw.execute("INSERT INTO versions (ledger_id, resource_id, position, key, kind, revision, variables_hash,"
                        " source, meta, bytes, created_at) VALUES ('default', 'mvu:a', 0, 'k', 'failed', 0, 'h',"
                        " '{}', '{}', 0, 0)")
        with pytest.raises(MvuError) as refused:
            migrate.upgrade(engine)
        assert refused.value.code == "MVU_VERSION"
        assert refused.value.details["failed_versions"] == 1
        assert migrate.current_revision(engine) == "0001"  # nothing half-done
    finally:
        engine.dispose()


def _head_plan(path: Path) -> list[str]:
    """SQLite's plan for the audit's head check (``engine.py``'s sha256 stands in for itself)."""
    with sqlite3.connect(path) as raw:
        raw.create_function("sha256", 1, lambda value: value, deterministic=True)
        return [str(row[3]) for row in raw.execute("EXPLAIN QUERY PLAN SELECT * FROM audit_heads")]


def test_0005_makes_the_head_check_find_an_inherited_head_by_its_key(tmp_path: Path) -> None:
    """A version found by its key alone goes through the key index, never through the primary
    key searched by the ledger alone (a scan of the whole history for each forked resource)."""
    path = tmp_path / "old.sqlite3"
    engine = create_sync_engine(f"sqlite:///{path}", EngineOptions())
    try:
        _upgrade_to(engine, "0004")
        migrate.upgrade(engine)
        migrate.check(engine)
        plan = _head_plan(path)
        assert any(line.startswith("SEARCH a USING") and "uq_versions_key (ledger_id=? AND key=?)" in line
                   for line in plan), plan
        assert not any(line.endswith("USING PRIMARY KEY (ledger_id=?)") for line in plan), plan
    finally:
        engine.dispose()
