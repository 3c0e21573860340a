"""A short played story with its ``changes`` rows: the ledger the change-log tests and the SQL
examples of docs/storage.md ("Each variable's story") run against.

``mvu:hero`` is session ``chat-1``'s instance: its opening names it Aria (the rows of its creation,
position -1); an initial write sets hp 10 and mood calm; turn 1 takes hp to 5 and has a mood
refused by the schema; turn 2 takes hp to -3; turn 3 fails; a manual edit sets hp to 7.
``mvu:hero-swipe`` is a fork of the hero at turn 1 whose own turn 2 takes hp to -1.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import select, text

from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import CommitRequest, Ledger, NewResource
from mvu_store.ledger import tables as t
from mvu_store.ledger.engine import EngineOptions, create_sync_engine
from mvu_store.ledger.records import ChangeRow
from tests.conftest import POSTGRES_SERVER_URL, postgres_url_in_schema, require_postgres

HERO, SWIPE, SESSION = "mvu:hero", "mvu:hero-swipe", "chat-1"
MOOD_REFUSAL = 'mood: Invalid option: expected one of "calm"|"wary"|"angry"'
OPENING = ChangeRow("/name", "applied", "opening", op="replace", before=("stranger",), after=("Aria",))
"""What the hero's opening changed: its greeting named the stranger of the template's data."""


def state(hp: int, mood: str = "calm") -> dict[str, JsonValue]:
    return {"stat_data": {"hp": hp, "mood": mood, "name": "Aria"}, "display_data": {}, "delta_data": {}}


def reply(session: str, seq: int, turn: int) -> dict[str, JsonValue]:
    return {"sessionId": session, "messageSeq": seq, "messageId": f"m{seq}", "turn": turn}


def hp(before: int | None, after: int, turn: int | None, actor: Any = "reply", command: str | None = None
       ) -> ChangeRow:
    return ChangeRow("/hp", "applied", actor, op="add" if before is None else "replace",
                     before=() if before is None else (before,), after=(after,), command=command, turn=turn)


async def play_story(ledger: Ledger) -> None:
    await ledger.create_instance(NewResource(
        id=HERO, kind="instance", initial={"stat_data": {"name": "Aria"}},
        definition={"instance": {"sessionId": SESSION, "createdAt": 1000}}, session_id=SESSION,
        session_created_at=1000, changes=(OPENING,)), boundary=0)
    await ledger.commit(CommitRequest(
        HERO, 0, "initial", state(10), "f0", {"sessionId": SESSION, "initial": True}, operation_id="initial",
        changes=(hp(None, 10, 0, "initial"),
                 ChangeRow("/mood", "applied", "initial", op="add", after=("calm",), turn=0))))
    turn_one = await ledger.commit(CommitRequest(
        HERO, 1, "reply", state(5), "f1", reply(SESSION, 3, 1),
        changes=(hp(10, 5, 1, command="_.set('hp', 10, 5);"),
                 ChangeRow("/mood", "refused", "reply", op="set", command="_.set('mood', 'sad');",
                           code="MVU_SCHEMA", message=MOOD_REFUSAL, turn=1))))
    await ledger.commit(CommitRequest(
        HERO, 2, "reply", state(-3), "f2", reply(SESSION, 6, 2),
        changes=(hp(5, -3, 2, command="_.add('hp', -8);"),)))
    await ledger.commit(CommitRequest(
        HERO, 3, "failed", state(-3), "f3", reply(SESSION, 9, 3), error="MVU_SCHEMA",
        changes=(ChangeRow("/hp", "refused", "reply", op="set", command="_.set('hp', 'lots');", code="MVU_SCHEMA",
                           message="hp: expected number, received string", turn=3),)))
    await ledger.commit(CommitRequest(
        HERO, 4, "manual", state(7), "f4", {"sessionId": SESSION, "manual": True}, operation_id="edit",
        changes=(hp(-3, 7, None, "manual"),)))
    assert turn_one.version_key is not None
    await ledger.fork(HERO, NewResource(id=SWIPE, kind="shared", initial={"stat_data": {}}, definition={}),
                      at_key=turn_one.version_key)
    await ledger.commit(CommitRequest(
        SWIPE, 0, "reply", state(-1, "wary"), "f5", reply("chat-1.swipe", 6, 2),
        changes=(hp(5, -1, 2, command="_.add('hp', -6);"),
                 ChangeRow("/mood", "applied", "reply", op="replace", before=("calm",), after=("wary",), turn=2))))


COLUMNS = ("resource_id", "position", "seq", "revision", "session_id", "turn", "message_seq", "path", "op",
           "status", "actor", "before", "after", "omitted", "command", "code", "reason", "message", "derived",
           "bytes")


async def change_rows(ledger: Ledger) -> list[dict[str, Any]]:
    """The ledger's ``changes`` rows, in order, as dicts of :data:`COLUMNS`."""
    c = t.changes.c
    query = select(*(c[name] for name in COLUMNS)).where(c.ledger_id == ledger.ledger_id).order_by(
        c.resource_id, c.position, c.seq)

    def read(connection: Any) -> list[dict[str, Any]]:
        return [dict(row._mapping) for row in connection.execute(query)]

    return await ledger._store.read(read)


@contextlib.contextmanager
def fresh_database(engine_name: str, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database of its own (a SQLite file, or a PostgreSQL schema dropped
    afterwards): what a migration test may downgrade, and unfiltered SQL may read alone."""
    if engine_name == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
        return
    require_postgres()
    schema = f"changes_{uuid.uuid4().hex[:12]}"
    admin = create_sync_engine(POSTGRES_SERVER_URL, EngineOptions())
    with admin.begin() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield postgres_url_in_schema(schema)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()
