"""Rows whose content is damaged: what SQLite's integrity check cannot see.

``PRAGMA integrity_check`` reads a file's structure (pages, indexes), not what the rows hold, so
bytes flipped inside a TEXT value (bit rot) pass it, and the row then fails when it is read.
:func:`damaged_rows` reads every row of one ledger as bytes and checks what the schema promises
of it: every text column is UTF-8, every ``Text`` column holds JSON (``tables.py`` keeps JSON in
``Text``, but for the few marked ``PLAIN_TEXT``, and identifiers in ``String``), and every stored
state (a blob) is the text its hash names. Each damaged row is one finding naming its table, its
key and the column.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Column, Connection, LargeBinary, String, Table, Text, cast, select

from mvu_store.ledger import tables as t
from mvu_store.ledger.records import Finding

CHECK = "damaged_row"
MAX_FINDINGS = 1_000
"""Findings reported at most (a file damaged that widely needs its backup, not a longer list)."""
_BATCH = 500


def damaged_rows(connection: Connection, ledger_id: str, *, embedded: bool) -> list[Finding]:
    """The damaged rows of ``ledger_id``, at most :data:`MAX_FINDINGS`. ``embedded`` (SQLite):
    text is read as bytes, since the driver cannot hand out text that is not UTF-8; PostgreSQL
    never stores such text, so its rows are only checked for JSON and hashes."""
    findings: list[Finding] = []
    for table in t.metadata.sorted_tables:
        for subject, detail in _table_damage(connection, table, ledger_id, embedded=embedded):
            findings.append(Finding(CHECK, ledger_id, subject, detail))
            if len(findings) == MAX_FINDINGS:
                return findings
    return findings


def _table_damage(connection: Connection, table: Table, ledger_id: str, *, embedded: bool) -> Iterator[tuple[str, str]]:
    texts = [column for column in table.columns if isinstance(column.type, String)]
    if not texts:
        return
    keys = [column for column in table.primary_key.columns if column.name != "ledger_id"]
    read = [_as_read(column, embedded) for column in (*keys, *texts)]
    query = select(*read).where(table.c.ledger_id == ledger_id)
    for row in connection.execution_options(yield_per=_BATCH).execute(query):
        values = dict(zip([column.name for column in (*keys, *texts)], row, strict=True))
        problem = _row_problem(table, texts, values)
        if problem is not None:
            key = ", ".join(f"{column.name}={_shown(values[column.name])}" for column in keys)
            yield f"{table.name} {key}".rstrip(), problem


def _as_read(column: Column[Any], embedded: bool) -> Any:
    return cast(column, LargeBinary).label(column.name) if embedded and isinstance(column.type, String) else column


def _row_problem(table: Table, texts: list[Column[Any]], values: dict[str, Any]) -> str | None:
    for column in texts:
        value = values[column.name]
        if value is None:
            continue
        raw = value if isinstance(value, bytes) else str(value).encode()
        try:
            decoded = raw.decode()
        except UnicodeDecodeError as error:
            return f"{column.name} is not UTF-8 text (byte {error.start})"
        if isinstance(column.type, Text) and not column.info.get("plain_text"):
            try:
                json.loads(decoded)
            except (ValueError, RecursionError):
                return f"{column.name} is not JSON"
        if table is t.blobs and column.name == "body" and hashlib.sha256(raw).hexdigest() != _text(values["hash"]):
            return "body does not match its hash"
    return None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _shown(value: Any) -> str:
    shown = _text(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."
