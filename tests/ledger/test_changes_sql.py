"""The auditor's SQL of docs/storage.md ("Each variable's story"), run as written on SQLite and
PostgreSQL against a ledger holding a played story's ``changes`` rows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from mvu_store.ledger import open_ledger
from mvu_store.ledger.engine import EngineOptions, create_sync_engine
from tests.ledger.change_fixtures import MOOD_REFUSAL, fresh_database, play_story

DOC = Path(__file__).parents[2] / "docs" / "storage.md"
ENGINES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def examples() -> list[tuple[str, str | None, str]]:
    """(question, engine or None for both, SQL) of each ```sql block of the section."""
    section = DOC.read_text().split("## Each variable's story", 1)[1].split("\n## ", 1)[0]
    found = []
    for sql in re.findall(r"```sql\n(.*?)```", section, re.S):
        title = re.match(r"-- ([^\n]*)", sql)
        assert title is not None, f"an example starts with its question: {sql}"
        engine = re.search(r" \((SQLite|PostgreSQL)\)$", title.group(1))
        question = title.group(1)[:engine.start()] if engine else title.group(1)
        found.append((question.split(":")[0], engine.group(1) if engine else None, sql))
    return found


EXPECTED: dict[str, list[tuple[Any, ...]]] = {
    "every turn where hp fell below 0": [
        ("mvu:hero", 3, "chat-1", 2, "5", "-3", "_.add('hp', -8);"),
        ("mvu:hero-swipe", 1, "chat-1.swipe", 2, "5", "-1", "_.add('hp', -6);")],
    # The opening's row: no turn ever changed the hero's name.
    "what set this value": [(-1, 0, None, "opening", '"stranger"', '"Aria"', None, False)],
    "this turn's changes": [
        ("mvu:hero", 0, "/hp", "replace", "applied", "reply", "10", "5", "_.set('hp', 10, 5);", None, None),
        ("mvu:hero", 1, "/mood", "set", "refused", "reply", None, None, "_.set('mood', 'sad');", "MVU_SCHEMA",
         MOOD_REFUSAL)],
    "every refused command of a session": [
        (2, 1, "/mood", "_.set('mood', 'sad');", "MVU_SCHEMA", MOOD_REFUSAL),
        (4, 3, "/hp", "_.set('hp', 'lots');", "MVU_SCHEMA", "hp: expected number, received string")],
}


def test_every_question_has_an_answer_for_each_engine() -> None:
    asked: dict[str, set[str]] = {}
    for question, engine, _ in examples():
        asked.setdefault(question, set()).update([engine] if engine else ENGINES.values())
    assert asked == {question: set(ENGINES.values()) for question in EXPECTED}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    with fresh_database(request.param, tmp_path) as url:
        yield request.param, url


async def test_the_documented_queries_answer_on_each_engine(database: tuple[str, str]) -> None:
    engine_name, url = database
    ledger = await open_ledger(url, ledger_id="default")
    try:
        await play_story(ledger)
    finally:
        await ledger.close()
    engine = create_sync_engine(url, EngineOptions())
    try:
        with engine.connect() as connection:
            for question, only, sql in examples():
                if only not in (None, ENGINES[engine_name]):
                    continue
                rows = [tuple(bool(v) if name == "derived" else v for name, v in row._mapping.items())
                        for row in connection.execute(text(sql))]
                assert rows == EXPECTED[question], question
    finally:
        engine.dispose()
