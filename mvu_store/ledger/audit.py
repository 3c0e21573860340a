"""The SQL audits, as views an auditor can query with ``sqlite3`` or ``psql`` alone.

Every view returns one row per finding, ``(ledger_id, subject, detail)``; an empty view is a
clean bill, and ``audit_findings`` unions them all with the check's name. The views are built
from the table metadata (``tables.py``), so the accounting they check is the accounting the
writer does. They are (re)created by the migration environment whenever migrations run, so a
change here ships with a new (possibly empty) migration.

On SQLite the blob and legacy hash checks call ``sha256()``, which mvu registers on its own
connections; the stock ``sqlite3`` shell lacks it, so ``audit_blobs``, ``audit_legacy`` and
``audit_findings`` need mvu there, and every other view runs as is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeGuard, cast

from sqlalchemy import Connection, String, Table, Text

from mvu_store.ledger import tables as t
from mvu_store.ledger.dialect import Dialect, dialect_of

_COMMITTED = t.kinds_sql(t.COMMITTED_KINDS)  # versions that move the head
_CLAIMS = t.kinds_sql(t.REVISION_KINDS)  # versions that claim a revision (failed ones too)


@functools.cache
def charged_columns(table: Table) -> tuple[str, ...]:
    """The text columns whose UTF-8 bytes a row is charged: all but ``ledger_id`` and the
    columns updates change (``tables.MUTABLE``)."""
    return tuple(
        column.name
        for column in table.columns
        if isinstance(column.type, (String, Text)) and column.name != "ledger_id" and not column.info.get("mutable")
    )


_is_text = cast("Callable[[object], TypeGuard[str]]", str.__instancecheck__)
"""``isinstance(value, str)`` as a C function (a filter calls it without a Python frame)."""


def row_bytes(table: Table, values: dict[str, object]) -> int:
    """What a row costs: the UTF-8 bytes of its charged columns (the audit recomputes this)."""
    # UTF-8 is a concatenation code: the bytes of the texts joined are the sum of theirs. The
    # pipeline runs in C (filter, map, join), not one Python step per column, for every row written.
    joined = "".join(filter(_is_text, map(values.get, charged_columns(table))))
    return len(joined) if joined.isascii() else len(joined.encode())


CHARGED_TABLES = (t.templates, t.resources, t.versions, t.checkpoints, t.seeds, t.receipts, t.activations,
                  t.selections, t.chat_imports, t.chat_lines, t.changes)


def _views(dialect: Dialect, charged: tuple[Table, ...]) -> dict[str, str]:
    octets, text_hash, bytes_hash = dialect.octets.format, dialect.text_sha256.format, dialect.bytes_sha256.format

    def recomputed(table: Table) -> str:
        return " + ".join(octets(name) for name in charged_columns(table))

    row_checks = "\n            UNION ALL\n".join(
        f"""            SELECT ledger_id, '{table.name}' AS subject,
                   '{table.name} row bytes do not match its text' AS detail
            FROM {table.name} WHERE bytes <> {recomputed(table)}"""
        for table in (*charged, t.facts)
    )
    # The changes' foreign key names their resource only (a creation's rows have no version):
    # each row but a creation's (position -1, revision 0) names a version of its resource.
    change_references = """
            UNION ALL
            SELECT c.ledger_id, c.resource_id, 'changes at position ' || CAST(c.position AS TEXT)
                   || ' name no version'
            FROM (SELECT DISTINCT ledger_id, resource_id, position, revision FROM changes) c
            WHERE NOT (c.position = -1 AND c.revision = 0) AND NOT EXISTS (
                SELECT 1 FROM versions v WHERE v.ledger_id = c.ledger_id AND v.resource_id = c.resource_id
                                           AND v.position = c.position)""" if t.changes in charged else ""
    charged_sum = "\n                  + ".join(
        f"COALESCE((SELECT SUM(bytes) FROM {table.name} x WHERE x.ledger_id = l2.ledger_id), 0)"
        for table in charged
    )
    return {
        # Committed and failed versions and management receipts of a resource claim its
        # revisions: no two claim one, there is no hole between them, the newest is the
        # resource's revision, and each committed version was written on top of the committed
        # one before it (no lost update; a failed version moves the revision, not the head).
        "audit_revisions": f"""
            SELECT c.ledger_id, c.resource_id AS subject,
                   c.what || ' at revision ' || CAST(c.revision AS TEXT) || ' breaks the chain (previous '
                   || COALESCE(CAST(c.previous_revision AS TEXT), '-') || ', head ' || CAST(r.revision AS TEXT) || ')'
                   AS detail
            FROM (SELECT ledger_id, resource_id, what, revision,
                         LAG(revision) OVER claims_in_order AS previous_revision,
                         LEAD(revision) OVER claims_in_order AS next_revision
                  FROM (SELECT ledger_id, resource_id, 'version ' || key AS what, revision FROM versions
                        WHERE kind IN {_CLAIMS}
                        UNION ALL
                        SELECT ledger_id, resource_id, 'receipt ' || operation_id, revision FROM receipts
                        WHERE kind = 'management') claims
                  WINDOW claims_in_order AS (PARTITION BY ledger_id, resource_id ORDER BY revision)) c
            JOIN resources r ON r.ledger_id = c.ledger_id AND r.id = c.resource_id
            WHERE c.revision < 1
               OR (c.previous_revision IS NOT NULL AND c.revision <> c.previous_revision + 1)
               OR (c.next_revision IS NULL AND c.revision <> r.revision)
            UNION ALL
            SELECT v.ledger_id, v.resource_id, 'version ' || v.key || ' was not written on ' || v.previous_key
            FROM (SELECT ledger_id, resource_id, key, parent_key,
                         LAG(key) OVER (PARTITION BY ledger_id, resource_id ORDER BY revision) AS previous_key
                  FROM versions WHERE kind IN {_COMMITTED}) v
            WHERE v.previous_key IS NOT NULL AND (v.parent_key IS NULL OR v.parent_key <> v.previous_key)""",
        # The head is the newest committed version (failed ones never move it); with none, an
        # inherited version or the initial envelope.
        "audit_heads": f"""
            SELECT r.ledger_id, r.id AS subject,
                   'head ' || COALESCE(r.head_key, 'null') || ' at revision ' || CAST(r.revision AS TEXT)
                   || ' is not the newest committed version ' || COALESCE(n.key, 'null') AS detail
            FROM resources r
            LEFT JOIN (SELECT ledger_id, resource_id, key, revision, variables_hash,
                              ROW_NUMBER() OVER (PARTITION BY ledger_id, resource_id ORDER BY revision DESC) AS rank
                       FROM versions WHERE kind IN {_COMMITTED}) n
              ON n.ledger_id = r.ledger_id AND n.resource_id = r.id AND n.rank = 1
            WHERE (r.head_key IS NULL AND (n.key IS NOT NULL OR r.head_hash <> r.initial_hash))
               OR (n.key IS NOT NULL AND (r.head_key <> n.key OR r.head_hash <> n.variables_hash
                   OR r.revision < n.revision))
               OR (n.key IS NULL AND r.head_key IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM versions a {dialect.versions_by_key}
                   WHERE a.ledger_id = r.ledger_id AND a.key = r.head_key
                     AND a.variables_hash = r.head_hash))""",
        # Every reference points at a row that exists.
        "audit_references": """
            SELECT x.ledger_id, x.resource_id AS subject, 'receipt ' || x.operation_id
                   || ' names missing version ' || x.version_key AS detail
            FROM receipts x WHERE x.version_key IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM versions v WHERE v.ledger_id = x.ledger_id AND v.key = x.version_key)
            UNION ALL
            SELECT c.ledger_id, c.resource_id, 'checkpoint of turn ' || CAST(c.turn AS TEXT)
                   || ' names missing version ' || c.version_key
            FROM checkpoints c WHERE c.version_key IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM versions v WHERE v.ledger_id = c.ledger_id AND v.key = c.version_key)
            UNION ALL
            SELECT v.ledger_id, v.resource_id, 'version ' || v.key || ' names missing parent ' || v.parent_key
            FROM versions v WHERE v.parent_key IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM versions p WHERE p.ledger_id = v.ledger_id AND p.key = v.parent_key)
            UNION ALL
            SELECT r.ledger_id, r.id, 'resource names missing lineage parent ' || r.parent_id
            FROM resources r WHERE r.parent_id IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM resources p WHERE p.ledger_id = r.ledger_id AND p.id = r.parent_id)
            UNION ALL
            SELECT h.ledger_id, h.owner, 'missing blob ' || h.hash
            FROM (SELECT ledger_id, resource_id AS owner, variables_hash AS hash FROM versions
                  UNION ALL SELECT ledger_id, resource_id, variables_hash FROM checkpoints
                  UNION ALL SELECT ledger_id, id, definition_hash FROM resources
                  UNION ALL SELECT ledger_id, id, head_hash FROM resources
                  UNION ALL SELECT ledger_id, id, initial_hash FROM resources
                  UNION ALL SELECT ledger_id, id, definition_hash FROM templates
                  UNION ALL SELECT ledger_id, ticket, body_hash FROM seeds) h
            WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.ledger_id = h.ledger_id AND b.hash = h.hash)"""
        + change_references,
        # Content addressing holds: each blob's hash and size are those of its bytes.
        "audit_blobs": f"""
            SELECT ledger_id, hash AS subject, 'stored hash or size does not match the bytes' AS detail
            FROM blobs WHERE size <> {octets("body")} OR hash <> {text_hash("body")}""",
        # Row accounting: each row's bytes are those of its charged text columns.
        "audit_row_bytes": "\n" + row_checks,
        # The stored usage equals the recomputed total and stays within budget; facts within theirs.
        "audit_usage": f"""
            SELECT l.ledger_id, l.ledger_id AS subject,
                   'used_bytes ' || CAST(l.used_bytes AS TEXT) || ' of limit ' || CAST(l.limit_bytes AS TEXT)
                   || ', recomputed ' || CAST(u.total AS TEXT)
                   || '; facts ' || CAST(l.facts_count AS TEXT) || ' rows, ' || CAST(l.facts_bytes AS TEXT)
                   || ' bytes, recomputed ' || CAST(f.count AS TEXT) || ' rows, ' || CAST(f.total AS TEXT)
                   || ' bytes' AS detail
            FROM ledger l
            JOIN (SELECT l2.ledger_id,
                    COALESCE((SELECT SUM(size) FROM blobs b WHERE b.ledger_id = l2.ledger_id), 0)
                  + COALESCE((SELECT SUM(size) FROM legacy_files g WHERE g.ledger_id = l2.ledger_id), 0)
                  + {charged_sum} AS total
                  FROM ledger l2) u ON u.ledger_id = l.ledger_id
            JOIN (SELECT l3.ledger_id,
                    (SELECT COUNT(*) FROM facts f3 WHERE f3.ledger_id = l3.ledger_id) AS count,
                    COALESCE((SELECT SUM(bytes) FROM facts f4 WHERE f4.ledger_id = l3.ledger_id), 0) AS total
                  FROM ledger l3) f ON f.ledger_id = l.ledger_id
            WHERE l.used_bytes <> u.total OR l.used_bytes > l.limit_bytes
               OR l.facts_count <> f.count OR l.facts_bytes <> f.total
               OR f.count > 2048 OR f.total > 1048576""",
        # The store-backed host's sessions are dense from event 0, and each header's end and
        # fingerprint are those of its last event (the chain itself is checked by the service).
        "audit_host_sessions": """
            SELECT s.ledger_id, s.id AS subject,
                   'session ends at event ' || CAST(s.last_seq AS TEXT) || ' but holds '
                   || CAST(COALESCE(e.count, 0) AS TEXT) || ' events from ' || COALESCE(CAST(e.first AS TEXT), '-')
                   || ' to ' || COALESCE(CAST(e.last AS TEXT), '-') || ', or its fingerprint is not its last event''s'
                   AS detail
            FROM host_sessions s
            LEFT JOIN (SELECT ledger_id, session_id, COUNT(*) AS count, MIN(seq) AS first, MAX(seq) AS last
                       FROM host_events GROUP BY ledger_id, session_id) e
              ON e.ledger_id = s.ledger_id AND e.session_id = s.id
            LEFT JOIN host_events l ON l.ledger_id = s.ledger_id AND l.session_id = s.id AND l.seq = s.last_seq
            WHERE COALESCE(e.count, 0) <> s.last_seq + 1 OR COALESCE(e.first, 0) <> 0
               OR COALESCE(e.last, -1) <> s.last_seq
               OR (s.last_seq >= 0 AND (l.fingerprint IS NULL OR l.fingerprint <> s.fingerprint))""",
        # The legacy file is kept byte for byte.
        "audit_legacy": f"""
            SELECT ledger_id, name AS subject, 'legacy bytes do not match their hash or size' AS detail
            FROM legacy_files WHERE size <> {octets("body")} OR sha256 <> {bytes_hash("body")}""",
    }


AUDIT_VIEWS = ("audit_revisions", "audit_heads", "audit_references", "audit_blobs", "audit_row_bytes",
               "audit_usage", "audit_legacy", "audit_host_sessions")


def create_views(connection: Connection, *, without: tuple[Table, ...] = ()) -> None:
    """Create the views. ``without``: charged tables the schema does not have (a migration's
    downgrade recreates the views of the schema it leaves)."""
    views = _views(dialect_of(connection), tuple(table for table in CHARGED_TABLES if table not in without))
    for name in AUDIT_VIEWS:
        connection.exec_driver_sql(f"CREATE VIEW {name} AS {views[name]}")
    union = "\nUNION ALL ".join(
        f"SELECT '{name.removeprefix('audit_')}' AS check_name, ledger_id, subject, detail FROM {name}"
        for name in AUDIT_VIEWS
    )
    connection.exec_driver_sql(f"CREATE VIEW audit_findings AS {union}")


def drop_views(connection: Connection) -> None:
    """Drop the views (SQLite's batch migrations rebuild tables, which views would block)."""
    for name in ("audit_findings", *reversed(AUDIT_VIEWS)):
        connection.exec_driver_sql(f"DROP VIEW IF EXISTS {name}")
