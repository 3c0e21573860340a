"""Facts (bounded, content-free trigger observations, DIGEST A-4 / A-5) and the usage counters.

The facts store keeps its running count, size and next sequence number on the ledger row, so
appending a fact and evicting the oldest are O(1) whatever the store holds.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, select, update

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, dumps
from mvu_store.ledger import rows
from mvu_store.ledger import tables as t
from mvu_store.ledger.query import LEDGER, Query
from mvu_store.ledger.records import Usage
from mvu_store.ledger.rules import fact_fields, indexable
from mvu_store.ledger.store import USAGE, Store, now_ms
from mvu_store.ledger.writer import WriteTx

FACTS_MAX_RECORDS = 2_048
FACTS_MAX_BYTES = 1024 * 1024

_l, _f = t.ledger.c, t.facts.c

_COUNTERS = Query(
    "facts-counters",
    lambda: select(_l.facts_count, _l.facts_bytes, _l.facts_next_seq).where(_l.ledger_id == LEDGER),
)
_SET_COUNTERS = Query(
    "facts-update",
    lambda: update(t.ledger)
    .where(_l.ledger_id == LEDGER)
    .values(facts_count=bindparam("count"), facts_bytes=bindparam("total"), facts_next_seq=bindparam("next_seq")),
)
_OLDEST = Query(
    "facts-oldest", lambda: select(_f.seq, _f.bytes).where(_f.ledger_id == LEDGER).order_by(_f.seq).limit(1)
)
PreparedFact = tuple[str, dict[str, Any]]
"""A fact as the store keeps it: its canonical text and its whitelisted fields."""


def prepare_facts(records: Iterable[dict[str, JsonValue]]) -> list[PreparedFact]:
    """The facts ``records`` as the store keeps them (done before the writer's thread is asked).
    :func:`fact_fields` leaves flat, normalised scalars (and the short strings of ``outcomes``)."""
    return [(dumps(fields), fields) for fields in map(fact_fields, records)]


_EVICT = Query("facts-evict", lambda: t.facts.delete().where(_f.ledger_id == LEDGER, _f.seq == bindparam("seq")))


class FactLog:
    """Appending and reading facts; the ledger's usage."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def append_fact(self, record: dict[str, JsonValue]) -> int:
        """Append a fact; evict the oldest beyond 2,048 records or 1 MiB (DIGEST A-5).

        A fact is content-free by construction: only the fields of the original facts format
        are kept, each a scalar, strings cut to 300 characters, so no variables or chat text
        can end up here whatever a caller passes.
        """
        return (await self.append_facts([record]))[0]

    async def append_facts(self, records: list[dict[str, JsonValue]]) -> list[int]:
        """Append several facts in one unit (see :meth:`append_fact`)."""
        prepared = prepare_facts(records)
        return await self._store.write(lambda tx: self.insert_facts(tx, prepared))

    def insert_facts(self, tx: WriteTx, facts: list[PreparedFact]) -> list[int]:
        """Insert facts ``(canonical text, fields)`` in order, evicting the oldest beyond the bound;
        the store's counters are read and written once for all of them."""
        if not facts:
            return []
        counters = tx.one(_COUNTERS)
        assert counters is not None, "open_ledger creates the ledger row"
        count, total, next_seq = counters["facts_count"], counters["facts_bytes"], counters["facts_next_seq"]
        seqs = []
        for body, fields in facts:
            size = self._store.insert_row(tx, t.facts, {
                "seq": next_seq,
                "phase": str(fields.get("phase", ""))[:16],
                "session_id": indexable(fields.get("sessionId")),
                "recorded_at": int(fields["recordedAt"]) if isinstance(fields.get("recordedAt"), int) else now_ms(),
                "body": body,
            })
            if size > FACTS_MAX_BYTES:
                raise MvuError(Code.LIMIT, "a fact record is larger than the facts store", limit=FACTS_MAX_BYTES)
            seqs.append(next_seq)
            count, total, next_seq = count + 1, total + size, next_seq + 1
            while count > FACTS_MAX_RECORDS or total > FACTS_MAX_BYTES:
                oldest = tx.one(_OLDEST)
                assert oldest is not None
                tx.execute(_EVICT, seq=oldest["seq"])
                count, total = count - 1, total - oldest["bytes"]
        tx.execute(_SET_COUNTERS, count=count, total=total, next_seq=next_seq)
        return seqs

    async def facts(self, *, session_id: str | None = None) -> list[JsonValue]:
        found = await self._store.read_all(_facts_query(session_id is not None), session_id=session_id)
        return [json.loads(row["body"]) for row in found]

    async def usage(self) -> Usage:
        row = await self._store.read_one(USAGE)
        assert row is not None, "open_ledger creates the ledger row"
        return rows.record(Usage, row)


@functools.cache
def _facts_query(by_session: bool) -> Query:
    def build() -> Any:
        query = select(_f.body).where(_f.ledger_id == LEDGER).order_by(_f.seq)
        return query.where(_f.session_id == bindparam("session_id")) if by_session else query

    return Query(f"facts:{by_session}", build)
