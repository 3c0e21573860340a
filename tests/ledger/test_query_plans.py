"""The lookups on a chat's path use an index whatever the length of the history: a query that
SQLite answers by searching every row of a session or resource makes each turn (or edit) slower
than the last. These read SQLite's plan for the very statements the ledger runs (no statistics,
as on a new ledger)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.dialects import sqlite

from mvu_store.ledger import open_ledger
from mvu_store.ledger.host_sessions import _TURN_MARK
from mvu_store.ledger.query import Query, Statements
from mvu_store.ledger.resources import _last_message_query


def _plan(path: Path, query: Query, **params: object) -> str:
    sql = Statements(sqlite.dialect(paramstyle="named")).sql(query)
    with sqlite3.connect(path) as raw:
        rows = raw.execute(f"EXPLAIN QUERY PLAN {sql.text}", {"ledger_id": "default", **sql.params(params)})
        return " | ".join(str(row[3]) for row in rows)


@pytest.mark.parametrize(("query", "params", "uses"), [
    # A turn's start and end are checked by the partial index on them, not by the session's events.
    (_TURN_MARK, {"session_id": "s1", "type": "turn/start", "turn": 7},
     "USING COVERING INDEX uq_host_events_turn (ledger_id=? AND session_id=? AND type=? AND turn=?)"),
    # A session's last message is found from the end of the resource's versions, with no sort.
    (_last_message_query(True, True), {"resource_id": "mvu:a", "session_id": "s1", "cut": 9},
     "USING PRIMARY KEY (ledger_id=? AND resource_id=? AND position<?)"),
])
async def test_a_chat_s_lookups_search_an_index(tmp_path: Path, query: Query, params: dict[str, object],
                                                uses: str) -> None:
    path = tmp_path / "ledger.sqlite3"
    await (await open_ledger(f"sqlite:///{path}")).close()
    plan = _plan(path, query, **params)
    assert uses in plan and "TEMP B-TREE" not in plan, plan
