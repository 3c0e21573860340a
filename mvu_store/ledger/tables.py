"""The relational schema: the one place the ledger's tables are written down.

Every table carries ``ledger_id`` as the first column of its primary key, and every query
filters on it: one database can hold many independent ledgers (each its own budget domain),
and a distributed PostgreSQL can shard on it. A SQLite file holds one ledger (``default``).

JSON is stored as canonical UTF-8 text (``mvu_store.jsonvalue.dumps``) so auditors can read it
with ``json_extract`` (SQLite) or ``::jsonb ->>`` (PostgreSQL). Large JSON payloads (variables
envelopes, definitions, seeds, receipt results) live once in the content-addressed ``blobs``
table; rows reference them by hash, so equal states cost their bytes once.

Accounting: ``ledger.used_bytes`` is the sum of ``blobs.size``, ``legacy_files.size`` and the
``bytes`` column of every other row: the UTF-8 length of its text columns (ids, keys, inline
JSON; see ``audit.charged_columns``). Facts have their own bound (DIGEST A-5) and are not
counted. The audit views recompute all of it.

On SQLite, small-row tables are clustered on their primary key (``sqlite_with_rowid=False``):
one b-tree per table instead of two, so fewer pages to write and fsync per commit. Blobs keep
their rowid (large rows are what rowid tables are for).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    text,
)

# Constraint names are part of the contract: migrations and error translation refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

FORMAT_VERSION = 1
"""The ledger's data format version; a database at another version is refused, not guessed."""

HASH = 64  # sha256 hex
ID = 200  # resource ids are `mvu:` + up to 160 characters in the original; keep headroom

# Version kinds that move the resource's head (``head_key``/``head_hash``); ``import`` is a state
# recorded by another host (a SillyTavern chat's, ``mvu_store.chats``), kept as that host showed it.
COMMITTED_KINDS = ("reply", "manual", "card", "initial", "import")
# Version kinds that claim a revision (one per revision per resource): the head-moving ones and
# failed replies, whose "poison" receipt moves the CAS counter but not the head, as the
# original's does (``revision: record.revision + 1``, ``currentKey`` unchanged).
REVISION_KINDS = (*COMMITTED_KINDS, "failed")
VERSION_KINDS = (*REVISION_KINDS, "inherited")


def kinds_sql(kinds: tuple[str, ...]) -> str:
    """``('a', 'b')``: a SQL list of kinds, for index predicates and audit views."""
    return "(" + ", ".join(f"'{kind}'" for kind in kinds) + ")"


REVISION_PREDICATE = f"kind IN {kinds_sql(REVISION_KINDS)}"
RESOURCE_KINDS = ("instance", "shared", "configured", "copy")


# Columns a row's UPDATEs change: not charged, so a row's bytes never go stale (each is small
# and bounded, so leaving it out cannot let a ledger grow unnoticed).
MUTABLE = {"mutable": True}
# ``Text`` columns hold JSON, but for these: unbounded plain text (a JSON pointer, a command as
# the reply wrote it, a message), which the damage check must not read as JSON.
PLAIN_TEXT = {"plain_text": True}


def _blob_fk(column: str) -> ForeignKeyConstraint:
    return ForeignKeyConstraint(["ledger_id", column], ["blobs.ledger_id", "blobs.hash"])


ledger = Table(
    "ledger",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("format_version", Integer, nullable=False),
    Column("used_bytes", BigInteger, nullable=False),
    Column("limit_bytes", BigInteger, nullable=False),
    Column("state_limit_bytes", BigInteger, nullable=False),
    # Facts have their own bound (DIGEST A-5) and are not part of the state budget; keeping
    # their running totals here makes eviction O(1) per fact.
    Column("facts_count", Integer, nullable=False, server_default=text("0")),
    Column("facts_bytes", BigInteger, nullable=False, server_default=text("0")),
    Column("facts_next_seq", BigInteger, nullable=False, server_default=text("1")),
    Column("created_at", BigInteger, nullable=False),
    sqlite_with_rowid=False,
)

blobs = Table(
    "blobs",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("hash", String(HASH), primary_key=True),
    Column("size", Integer, nullable=False),
    Column("body", Text, nullable=False),
)

templates = Table(
    "templates",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("id", String(ID), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("definition_hash", String(HASH), nullable=False, info=MUTABLE),
    Column("bytes", Integer, nullable=False),
    _blob_fk("definition_hash"),
    Index("ix_templates_position", "ledger_id", "position"),
    sqlite_with_rowid=False,
)

resources = Table(
    "resources",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("id", String(ID), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("template_id", String(ID)),
    # Instance identity (DIGEST I-2): the durable session's id and createdAt (JSON text, since
    # hosts use numbers or strings).
    Column("session_id", String(ID)),
    Column("session_created_at", Text),
    # The CAS row version. Only a conditional UPDATE ... WHERE revision = :expected moves it.
    Column("revision", BigInteger, nullable=False),
    # The current version (NULL before the first commit) and the current variables: the
    # version's, or the initial envelope's while there is no version yet.
    Column("head_key", String(HASH), info=MUTABLE),
    Column("head_hash", String(HASH), nullable=False, info=MUTABLE),
    # The definition without its `initial` envelope, which is stored on its own so that every
    # instance of a template shares one copy of it.
    Column("definition_hash", String(HASH), nullable=False),
    Column("initial_hash", String(HASH), nullable=False),
    Column("management_mode", String(16), info=MUTABLE),
    # Lineage: a fork child reads its parent's history up to (and including) this position
    # instead of copying it, so a fork costs the same whatever the parent's history length.
    Column("parent_id", String(ID)),
    Column("parent_position", Integer),
    Column("meta", Text, nullable=False),
    Column("bytes", Integer, nullable=False),
    _blob_fk("definition_hash"),
    _blob_fk("initial_hash"),
    _blob_fk("head_hash"),
    ForeignKeyConstraint(["ledger_id", "parent_id"], ["resources.ledger_id", "resources.id"]),
    Index("ix_resources_session", "ledger_id", "session_id"),
    # Append order: "next position" is an index seek, not a scan of the ledger's resources.
    Index("ix_resources_position", "ledger_id", "position"),
    sqlite_with_rowid=False,
)

versions = Table(
    "versions",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("resource_id", String(ID), primary_key=True),
    # Append order within the resource (the order of the original `versions` array). Being the
    # clustering key, every insert lands on the rightmost leaf: few pages dirtied per commit.
    Column("position", Integer, primary_key=True),
    Column("key", String(HASH), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("parent_key", String(HASH)),
    Column("variables_hash", String(HASH), nullable=False),
    Column("session_id", String(ID)),
    Column("message_seq", BigInteger),
    Column("operation_id", String(ID)),
    Column("fingerprint", String(HASH)),
    Column("error", String(64)),
    # The full original `source` object, and every remaining field of the version record.
    Column("source", Text, nullable=False),
    Column("meta", Text, nullable=False),
    Column("bytes", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    _blob_fk("variables_hash"),
    ForeignKeyConstraint(["ledger_id", "resource_id"], ["resources.ledger_id", "resources.id"]),
    # One version per key and resource; key first so audits can find a version by key alone.
    Index("uq_versions_key", "ledger_id", "key", "resource_id", unique=True),
    # Two versions can never claim the same revision of one resource (committed and failed
    # alike): the database itself refuses a lost update, whatever the code above it does.
    Index(
        "uq_versions_revision",
        "ledger_id",
        "resource_id",
        "revision",
        unique=True,
        sqlite_where=text(REVISION_PREDICATE),
        postgresql_where=text(REVISION_PREDICATE),
    ),
    sqlite_with_rowid=False,
)

# What each version did, path by path (docs/storage.md, "Each variable's story"): written in the
# version's own transaction, one row per command a reply's update ran or dropped, per key an edit
# or an import changed, per value the opening set. ``position`` is the version's; ``seq`` orders a
# version's rows (text order of its commands). ``before``/``after`` are canonical JSON, SQL NULL
# where there was no value (a key created or removed); a value too large to keep inline is NULL
# with ``omitted`` set (the version's state holds it). ``derived`` marks rows a migration
# back-filled from stored versions (no command text, no refusals: only what two states show).
changes = Table(
    "changes",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("resource_id", String(ID), primary_key=True),
    # The version's position; -1 (``change_rows.CREATION_POSITION``, revision 0) for the rows of
    # the resource's creation: what an instance's opening changed. ``audit_references`` checks
    # that every other position names a version (the foreign key names the resource only).
    Column("position", Integer, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("revision", BigInteger, nullable=False),
    Column("session_id", String(ID)),
    Column("turn", BigInteger),
    Column("message_seq", BigInteger),
    # A JSON pointer ('' for the whole stat_data).
    Column("path", Text, nullable=False, info=PLAIN_TEXT),
    Column("op", String(32)),
    # 'applied', 'refused' or 'ignored'.
    Column("status", String(16), nullable=False),
    # Who wrote it: 'reply', 'opening', 'script', 'manual', 'import' or 'initial'.
    Column("actor", String(16), nullable=False),
    Column("before", Text),
    Column("after", Text),
    Column("omitted", Boolean, nullable=False, server_default=text("false")),
    Column("command", Text, info=PLAIN_TEXT),
    Column("code", String(64)),
    Column("reason", String(32)),
    Column("message", Text, info=PLAIN_TEXT),
    Column("derived", Boolean, nullable=False, server_default=text("false")),
    Column("bytes", Integer, nullable=False),
    ForeignKeyConstraint(["ledger_id", "resource_id"], ["resources.ledger_id", "resources.id"]),
    # "This path over time": a seek on the path, in version order.
    Index("ix_changes_path", "ledger_id", "resource_id", "path", "position"),
    # "This turn's changes" by the host's session and turn.
    Index("ix_changes_session_turn", "ledger_id", "session_id", "turn"),
    sqlite_with_rowid=False,
)

checkpoints = Table(
    "checkpoints",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("resource_id", String(ID), primary_key=True),
    Column("position", Integer, primary_key=True),
    # '' when the original checkpoint had no session id: NULLs would make the unique index
    # below accept duplicates.
    Column("session_id", String(ID), nullable=False),
    Column("turn", BigInteger, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("version_key", String(HASH)),
    Column("variables_hash", String(HASH), nullable=False),
    Column("meta", Text, nullable=False),
    Column("bytes", Integer, nullable=False),
    _blob_fk("variables_hash"),
    ForeignKeyConstraint(["ledger_id", "resource_id"], ["resources.ledger_id", "resources.id"]),
    # One pre-turn baseline per turn, never overwritten (DIGEST F-6).
    Index("uq_checkpoints_turn", "ledger_id", "resource_id", "session_id", "turn", unique=True),
    sqlite_with_rowid=False,
)

seeds = Table(
    "seeds",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("ticket", String(64), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("source_session_id", String(ID), nullable=False),
    Column("target_session_id", String(ID), info=MUTABLE),
    Column("installed", Boolean, nullable=False),
    Column("body_hash", String(HASH), nullable=False),
    Column("bytes", Integer, nullable=False),
    _blob_fk("body_hash"),
    Index("ix_seeds_target", "ledger_id", "target_session_id"),
    Index("ix_seeds_position", "ledger_id", "position"),
    sqlite_with_rowid=False,
)

receipts = Table(
    "receipts",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("resource_id", String(ID), primary_key=True),
    Column("operation_id", String(ID), primary_key=True),
    Column("position", Integer, nullable=False),
    # 'commit' (a state write; its version is `version_key`) or 'management' (a stored
    # management-mode preference, DIGEST I-8).
    Column("kind", String(16), nullable=False),
    Column("fingerprint", String(HASH), nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("version_key", String(HASH)),
    Column("result", Text, nullable=False),
    Column("bytes", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    ForeignKeyConstraint(["ledger_id", "resource_id"], ["resources.ledger_id", "resources.id"]),
    # No index on position: a commit's receipt takes its version's position, and only a
    # management receipt (rare) looks the next one up, over its resource's receipts.
    sqlite_with_rowid=False,
)

activations = Table(
    "activations",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    # A template or resource id: replies in this session below `seq` are never applied to it.
    Column("owner_id", String(ID), primary_key=True),
    Column("session_id", String(ID), primary_key=True),
    Column("seq", BigInteger, nullable=False),
    Column("bytes", Integer, nullable=False),
    sqlite_with_rowid=False,
)

selections = Table(
    "selections",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("session_id", String(ID), primary_key=True),
    # The discovered template a session selected; NULL records an explicit unselect.
    Column("template_id", String(ID), info=MUTABLE),
    Column("bytes", Integer, nullable=False),
    sqlite_with_rowid=False,
)

facts = Table(
    "facts",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("phase", String(16), nullable=False),
    Column("session_id", String(ID)),
    Column("recorded_at", BigInteger, nullable=False),
    Column("body", Text, nullable=False),
    Column("bytes", Integer, nullable=False),
    sqlite_with_rowid=False,
)

legacy_files = Table(
    "legacy_files",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("name", String(64), primary_key=True),
    Column("sha256", String(HASH), nullable=False),
    Column("size", Integer, nullable=False),
    Column("body", LargeBinary, nullable=False),
)

# -- the store-backed host's sessions (``mvu_store.store_host``) ----------------------------------
# The host's own data, not MVU state: no ``bytes`` column and outside the ledger's budget (a chat
# log grows with the chat; each event and each batch is bounded on its way in instead). Only
# what the service consumes is kept (DIGEST P-5, docs/host-events.md).

TURN_MARKS = "type IN ('turn/start', 'turn/end')"

host_sessions = Table(
    "host_sessions",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("id", String(ID), primary_key=True),
    Column("format_version", Integer, nullable=False),
    # JSON text: hosts use numbers or strings; NULL when the host gave none.
    Column("created_at", Text),
    Column("parent_session", String(ID)),
    Column("origin", String(64)),
    Column("inherited_event_count", BigInteger),
    # The newest event's seq (-1 while there is none) and the fingerprint chain's link after it.
    Column("last_seq", BigInteger, nullable=False),
    Column("fingerprint", String(HASH), nullable=False),
    # The turn started and not yet ended (NULL: none), and where the copied prefix of a branch
    # ends (its session/end-seed): what the next event must fit (docs/host-protocol.md).
    Column("open_turn", BigInteger),
    Column("end_seed", BigInteger),
    Column("recorded_at", BigInteger, nullable=False),
    sqlite_with_rowid=False,
)

host_events = Table(
    "host_events",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("session_id", String(ID), primary_key=True),
    # Dense from 0 within the session: the event id hosts and the service use.
    Column("seq", BigInteger, primary_key=True),
    Column("type", String(64), nullable=False),
    # The event's ``data.turn`` where it has one (a copy, so a turn's start and end are indexable).
    Column("turn", BigInteger),
    # Canonical JSON of the kept fields.
    Column("data", Text, nullable=False),
    # The chain link after this event (mvu_store.host.chain_fingerprint).
    Column("fingerprint", String(HASH), nullable=False),
    ForeignKeyConstraint(["ledger_id", "session_id"], ["host_sessions.ledger_id", "host_sessions.id"]),
    # A turn starts once and ends once: a second turn/end would make its reply look new (its
    # version key names the end event) and apply it again.
    Index("uq_host_events_turn", "ledger_id", "session_id", "type", "turn", unique=True,
          sqlite_where=text(TURN_MARKS), postgresql_where=text(TURN_MARKS)),
    sqlite_with_rowid=False,
)


# -- SillyTavern chats imported (``mvu_store.chats``) ----------------------------------------------
# What a chat file holds beyond the session's events and the instance's versions, so that an
# export gives the file back: each line as it was read (its recorded states left out: they are
# versions, named in ``states``), and per imported session the file's digest and the summary.
# Charged to the budget like the states.

chat_imports = Table(
    "chat_imports",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("session_id", String(ID), primary_key=True),
    Column("sha256", String(HASH), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("summary", Text, nullable=False),
    Column("bytes", Integer, nullable=False),
    ForeignKeyConstraint(["ledger_id", "session_id"], ["host_sessions.ledger_id", "host_sessions.id"]),
    sqlite_with_rowid=False,
)

chat_lines = Table(
    "chat_lines",
    metadata,
    Column("ledger_id", String(64), primary_key=True),
    Column("session_id", String(ID), primary_key=True),
    # 0 for the header, then one per message in file order.
    Column("position", Integer, primary_key=True),
    # The line as JSON text in its own key order, each recorded state replaced by null.
    Column("body", Text, nullable=False),
    # JSON: [[swipe, resource id, version key], ...] of the states taken out; NULL without any.
    Column("states", Text),
    Column("bytes", Integer, nullable=False),
    ForeignKeyConstraint(["ledger_id", "session_id"], ["host_sessions.ledger_id", "host_sessions.id"]),
    sqlite_with_rowid=False,
)
