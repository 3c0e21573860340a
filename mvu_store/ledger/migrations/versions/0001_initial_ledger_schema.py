"""Initial ledger schema: the tables of mvu_store.ledger.tables and the audit_* views.

Revision ID: 0001
Revises: 
Create Date: 2026-11-29 19:36:48.879423
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


COMMITTED = "('reply', 'manual', 'card', 'initial')"


def _audit_views(dialect: str) -> dict[str, str]:
    """The SQL audits, as views an auditor can query with sqlite3 or psql alone.

    Every view returns one row per finding: ``(ledger_id, subject, detail)``; an empty view is a
    clean bill. ``audit_findings`` unions them all with the check's name. On SQLite the blob
    and legacy hash checks call ``sha256()``, which mvu registers on its connections; the
    other views need nothing beyond stock SQLite.
    """
    if dialect == "postgresql":
        octets = "octet_length({})".format
        text_hash = "encode(sha256(convert_to({}, 'UTF8')), 'hex')".format
        bytes_hash = "encode(sha256({}), 'hex')".format
    else:
        octets = "length(CAST({} AS BLOB))".format
        text_hash = "sha256({})".format
        bytes_hash = "sha256({})".format
    return {
        # Committed versions of a resource form one chain: ordered by revision, each was
        # written on top of the one before it (no lost update), within the head's revision.
        "audit_revisions": f"""
            SELECT v.ledger_id, v.resource_id AS subject,
                   'version ' || v.key || ' at revision ' || CAST(v.revision AS TEXT)
                   || ' does not follow ' || COALESCE(v.previous_key, '-') AS detail
            FROM (SELECT ledger_id, resource_id, key, revision, parent_key,
                         LAG(key) OVER (PARTITION BY ledger_id, resource_id ORDER BY revision) AS previous_key
                  FROM versions WHERE kind IN {COMMITTED}) v
            JOIN resources r ON r.ledger_id = v.ledger_id AND r.id = v.resource_id
            WHERE v.revision < 1 OR v.revision > r.revision
               OR (v.previous_key IS NOT NULL AND (v.parent_key IS NULL OR v.parent_key <> v.previous_key))""",
        # The head is the newest committed version; with none, an inherited version or nothing.
        "audit_heads": f"""
            SELECT r.ledger_id, r.id AS subject,
                   'head ' || COALESCE(r.head_key, 'null') || ' at revision ' || CAST(r.revision AS TEXT)
                   || ' is not the newest committed version ' || COALESCE(n.key, 'null') AS detail
            FROM resources r
            LEFT JOIN (SELECT ledger_id, resource_id, key, revision, variables_hash,
                              ROW_NUMBER() OVER (PARTITION BY ledger_id, resource_id ORDER BY revision DESC) AS rank
                       FROM versions WHERE kind IN {COMMITTED}) n
              ON n.ledger_id = r.ledger_id AND n.resource_id = r.id AND n.rank = 1
            WHERE (r.head_key IS NULL AND (n.key IS NOT NULL OR r.head_hash <> r.initial_hash))
               OR (n.key IS NOT NULL AND (r.head_key IS NULL OR r.head_key <> n.key
                   OR r.head_hash <> n.variables_hash OR r.revision < n.revision))
               OR (n.key IS NULL AND r.head_key IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM versions a WHERE a.ledger_id = r.ledger_id AND a.key = r.head_key
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
            WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.ledger_id = h.ledger_id AND b.hash = h.hash)""",
        # Content addressing holds: each blob's hash and size are those of its bytes.
        "audit_blobs": f"""
            SELECT ledger_id, hash AS subject, 'stored hash or size does not match the bytes' AS detail
            FROM blobs WHERE size <> {octets("body")} OR hash <> {text_hash("body")}""",
        # Row accounting: each row's bytes are those of its inline JSON text.
        "audit_row_bytes": f"""
            SELECT ledger_id, id AS subject, 'resource bytes do not match its JSON' AS detail
            FROM resources WHERE bytes <> {octets("meta")}
            UNION ALL
            SELECT ledger_id, resource_id || ' ' || key, 'version bytes do not match its JSON'
            FROM versions WHERE bytes <> {octets("source")} + {octets("meta")}
            UNION ALL
            SELECT ledger_id, resource_id || ' turn ' || CAST(turn AS TEXT), 'checkpoint bytes do not match its JSON'
            FROM checkpoints WHERE bytes <> {octets("meta")}
            UNION ALL
            SELECT ledger_id, resource_id || ' ' || operation_id, 'receipt bytes do not match its JSON'
            FROM receipts WHERE bytes <> {octets("result")}
            UNION ALL
            SELECT ledger_id, CAST(seq AS TEXT), 'fact bytes do not match its JSON'
            FROM facts WHERE bytes <> {octets("body")}""",
        # The stored usage equals the recomputed total and stays within budget; facts within theirs.
        "audit_usage": """
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
                  + COALESCE((SELECT SUM(bytes) FROM resources r WHERE r.ledger_id = l2.ledger_id), 0)
                  + COALESCE((SELECT SUM(bytes) FROM versions v WHERE v.ledger_id = l2.ledger_id), 0)
                  + COALESCE((SELECT SUM(bytes) FROM checkpoints c WHERE c.ledger_id = l2.ledger_id), 0)
                  + COALESCE((SELECT SUM(bytes) FROM receipts x WHERE x.ledger_id = l2.ledger_id), 0) AS total
                  FROM ledger l2) u ON u.ledger_id = l.ledger_id
            JOIN (SELECT l3.ledger_id,
                    (SELECT COUNT(*) FROM facts f3 WHERE f3.ledger_id = l3.ledger_id) AS count,
                    COALESCE((SELECT SUM(bytes) FROM facts f4 WHERE f4.ledger_id = l3.ledger_id), 0) AS total
                  FROM ledger l3) f ON f.ledger_id = l.ledger_id
            WHERE l.used_bytes <> u.total OR l.used_bytes > l.limit_bytes
               OR l.facts_count <> f.count OR l.facts_bytes <> f.total
               OR f.count > 2048 OR f.total > 1048576""",
        # The legacy file is kept byte for byte.
        "audit_legacy": f"""
            SELECT ledger_id, name AS subject, 'legacy bytes do not match their hash or size' AS detail
            FROM legacy_files WHERE size <> {octets("body")} OR sha256 <> {bytes_hash("body")}""",
    }


AUDIT_VIEWS = ("audit_revisions", "audit_heads", "audit_references", "audit_blobs", "audit_row_bytes",
               "audit_usage", "audit_legacy")


def _create_views() -> None:
    dialect = op.get_bind().dialect.name
    views = _audit_views(dialect)
    for name in AUDIT_VIEWS:
        op.execute(f"CREATE VIEW {name} AS {views[name]}")
    union = "\n            UNION ALL ".join(
        f"SELECT '{name[len('audit_'):]}' AS check_name, ledger_id, subject, detail FROM {name}" for name in AUDIT_VIEWS
    )
    op.execute(f"CREATE VIEW audit_findings AS {union}")


def _drop_views() -> None:
    for name in ("audit_findings", *reversed(AUDIT_VIEWS)):
        op.execute(f"DROP VIEW IF EXISTS {name}")


def upgrade() -> None:
    op.create_table('activations',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('owner_id', sa.String(length=200), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'owner_id', 'session_id', name=op.f('pk_activations')),
    sqlite_with_rowid=False
    )
    op.create_table('blobs',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('hash', sa.String(length=64), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'hash', name=op.f('pk_blobs'))
    )
    op.create_table('facts',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('phase', sa.String(length=16), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('recorded_at', sa.BigInteger(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'seq', name=op.f('pk_facts')),
    sqlite_with_rowid=False
    )
    op.create_table('ledger',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('format_version', sa.Integer(), nullable=False),
    sa.Column('used_bytes', sa.BigInteger(), nullable=False),
    sa.Column('limit_bytes', sa.BigInteger(), nullable=False),
    sa.Column('state_limit_bytes', sa.BigInteger(), nullable=False),
    sa.Column('facts_count', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('facts_bytes', sa.BigInteger(), server_default=sa.text('0'), nullable=False),
    sa.Column('facts_next_seq', sa.BigInteger(), server_default=sa.text('1'), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', name=op.f('pk_ledger')),
    sqlite_with_rowid=False
    )
    op.create_table('legacy_files',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('body', sa.LargeBinary(), nullable=False),
    sa.PrimaryKeyConstraint('ledger_id', 'name', name=op.f('pk_legacy_files'))
    )
    op.create_table('selections',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('template_id', sa.String(length=200), nullable=True),
    sa.PrimaryKeyConstraint('ledger_id', 'session_id', name=op.f('pk_selections')),
    sqlite_with_rowid=False
    )
    op.create_table('resources',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('template_id', sa.String(length=200), nullable=True),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('session_created_at', sa.Text(), nullable=True),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('head_key', sa.String(length=64), nullable=True),
    sa.Column('head_hash', sa.String(length=64), nullable=False),
    sa.Column('definition_hash', sa.String(length=64), nullable=False),
    sa.Column('initial_hash', sa.String(length=64), nullable=False),
    sa.Column('management_mode', sa.String(length=16), nullable=True),
    sa.Column('parent_id', sa.String(length=200), nullable=True),
    sa.Column('parent_position', sa.Integer(), nullable=True),
    sa.Column('meta', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'definition_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_resources_ledger_id_definition_hash_blobs')),
    sa.ForeignKeyConstraint(['ledger_id', 'head_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_resources_ledger_id_head_hash_blobs')),
    sa.ForeignKeyConstraint(['ledger_id', 'initial_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_resources_ledger_id_initial_hash_blobs')),
    sa.ForeignKeyConstraint(['ledger_id', 'parent_id'], ['resources.ledger_id', 'resources.id'], name=op.f('fk_resources_ledger_id_parent_id_resources')),
    sa.PrimaryKeyConstraint('ledger_id', 'id', name=op.f('pk_resources')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.create_index('ix_resources_position', ['ledger_id', 'position'], unique=False)
        batch_op.create_index('ix_resources_session', ['ledger_id', 'session_id'], unique=False)

    op.create_table('seeds',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('ticket', sa.String(length=64), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('source_session_id', sa.String(length=200), nullable=False),
    sa.Column('target_session_id', sa.String(length=200), nullable=True),
    sa.Column('installed', sa.Boolean(), nullable=False),
    sa.Column('body_hash', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'body_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_seeds_ledger_id_body_hash_blobs')),
    sa.PrimaryKeyConstraint('ledger_id', 'ticket', name=op.f('pk_seeds')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('seeds', schema=None) as batch_op:
        batch_op.create_index('ix_seeds_position', ['ledger_id', 'position'], unique=False)
        batch_op.create_index('ix_seeds_target', ['ledger_id', 'target_session_id'], unique=False)

    op.create_table('templates',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('definition_hash', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'definition_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_templates_ledger_id_definition_hash_blobs')),
    sa.PrimaryKeyConstraint('ledger_id', 'id', name=op.f('pk_templates')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('templates', schema=None) as batch_op:
        batch_op.create_index('ix_templates_position', ['ledger_id', 'position'], unique=False)

    op.create_table('checkpoints',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('resource_id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('turn', sa.BigInteger(), nullable=False),
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('version_key', sa.String(length=64), nullable=True),
    sa.Column('variables_hash', sa.String(length=64), nullable=False),
    sa.Column('meta', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'resource_id'], ['resources.ledger_id', 'resources.id'], name=op.f('fk_checkpoints_ledger_id_resource_id_resources')),
    sa.ForeignKeyConstraint(['ledger_id', 'variables_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_checkpoints_ledger_id_variables_hash_blobs')),
    sa.PrimaryKeyConstraint('ledger_id', 'resource_id', 'position', name=op.f('pk_checkpoints')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.create_index('uq_checkpoints_turn', ['ledger_id', 'resource_id', 'session_id', 'turn'], unique=True)

    op.create_table('receipts',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('resource_id', sa.String(length=200), nullable=False),
    sa.Column('operation_id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('version_key', sa.String(length=64), nullable=True),
    sa.Column('result', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'resource_id'], ['resources.ledger_id', 'resources.id'], name=op.f('fk_receipts_ledger_id_resource_id_resources')),
    sa.PrimaryKeyConstraint('ledger_id', 'resource_id', 'operation_id', name=op.f('pk_receipts')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('receipts', schema=None) as batch_op:
        batch_op.create_index('ix_receipts_position', ['ledger_id', 'resource_id', 'position'], unique=False)

    op.create_table('versions',
    sa.Column('ledger_id', sa.String(length=64), nullable=False),
    sa.Column('resource_id', sa.String(length=200), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('revision', sa.BigInteger(), nullable=False),
    sa.Column('parent_key', sa.String(length=64), nullable=True),
    sa.Column('variables_hash', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('message_seq', sa.BigInteger(), nullable=True),
    sa.Column('operation_id', sa.String(length=200), nullable=True),
    sa.Column('fingerprint', sa.String(length=64), nullable=True),
    sa.Column('error', sa.String(length=64), nullable=True),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('meta', sa.Text(), nullable=False),
    sa.Column('bytes', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['ledger_id', 'resource_id'], ['resources.ledger_id', 'resources.id'], name=op.f('fk_versions_ledger_id_resource_id_resources')),
    sa.ForeignKeyConstraint(['ledger_id', 'variables_hash'], ['blobs.ledger_id', 'blobs.hash'], name=op.f('fk_versions_ledger_id_variables_hash_blobs')),
    sa.PrimaryKeyConstraint('ledger_id', 'resource_id', 'position', name=op.f('pk_versions')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('versions', schema=None) as batch_op:
        batch_op.create_index('ix_versions_session', ['ledger_id', 'session_id', 'message_seq'], unique=False)
        batch_op.create_index('uq_versions_key', ['ledger_id', 'key', 'resource_id'], unique=True)
        batch_op.create_index('uq_versions_revision', ['ledger_id', 'resource_id', 'revision'], unique=True, sqlite_where=sa.text("kind IN ('reply', 'manual', 'card', 'initial')"), postgresql_where=sa.text("kind IN ('reply', 'manual', 'card', 'initial')"))


    _create_views()

def downgrade() -> None:
    _drop_views()
    with op.batch_alter_table('versions', schema=None) as batch_op:
        batch_op.drop_index('uq_versions_revision', sqlite_where=sa.text("kind IN ('reply', 'manual', 'card', 'initial')"), postgresql_where=sa.text("kind IN ('reply', 'manual', 'card', 'initial')"))
        batch_op.drop_index('uq_versions_key')
        batch_op.drop_index('ix_versions_session')

    op.drop_table('versions')
    with op.batch_alter_table('receipts', schema=None) as batch_op:
        batch_op.drop_index('ix_receipts_position')

    op.drop_table('receipts')
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.drop_index('uq_checkpoints_turn')

    op.drop_table('checkpoints')
    with op.batch_alter_table('templates', schema=None) as batch_op:
        batch_op.drop_index('ix_templates_position')

    op.drop_table('templates')
    with op.batch_alter_table('seeds', schema=None) as batch_op:
        batch_op.drop_index('ix_seeds_target')
        batch_op.drop_index('ix_seeds_position')

    op.drop_table('seeds')
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.drop_index('ix_resources_session')
        batch_op.drop_index('ix_resources_position')

    op.drop_table('resources')
    op.drop_table('selections')
    op.drop_table('legacy_files')
    op.drop_table('ledger')
    op.drop_table('facts')
    op.drop_table('blobs')
    op.drop_table('activations')
