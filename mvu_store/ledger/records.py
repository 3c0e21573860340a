"""What the ledger reads and writes: plain frozen records, no behaviour (a change entry, of which a
read builds a thousand, is not frozen and decodes the values it holds as text when asked)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from mvu_store.jsonvalue import JsonValue

VersionKind = Literal["reply", "manual", "card", "initial", "import", "failed", "inherited"]
ResourceKind = Literal["instance", "shared", "configured", "copy"]

STORED_AS_JSON = {"stored_as": "json"}
"""Field metadata: the row holds this field as canonical JSON text (``rows.record`` decodes it)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Stored bytes against the budget (DIGEST P-4), and the facts store's own bound (A-5)."""

    used_bytes: int
    limit_bytes: int
    state_limit_bytes: int
    facts_count: int
    facts_bytes: int


@dataclass(frozen=True, slots=True)
class NewResource:
    """A resource to create. ``definition`` holds everything but the initial envelope."""

    id: str
    kind: ResourceKind
    initial: JsonValue
    definition: JsonValue
    template_id: str | None = None
    session_id: str | None = None
    session_created_at: JsonValue = None
    management_mode: str | None = None
    meta: dict[str, JsonValue] = field(default_factory=dict)
    encoded_initial: bytes | None = None
    """``initial`` as stored (JSON bytes), when the caller has them: it is not encoded again (an
    import creates many instances of one large initial state)."""
    changes: tuple[ChangeRow, ...] = ()
    """What the resource's creation changed in the data it was made from: an instance's opening
    (its greeting applied to the template's initial data). Written with the resource, at
    ``changes`` position :data:`~mvu_store.ledger.change_rows.CREATION_POSITION` and revision 0;
    a fork child has none (its story before its own versions is its parent's)."""


@dataclass(frozen=True, slots=True)
class ResourceRecord:
    id: str
    position: int
    kind: str
    template_id: str | None
    session_id: str | None
    session_created_at: JsonValue = field(metadata=STORED_AS_JSON)
    revision: int
    head_key: str | None
    head_hash: str
    definition_hash: str
    initial_hash: str
    management_mode: str | None
    parent_id: str | None
    parent_position: int | None
    meta: dict[str, JsonValue] = field(metadata=STORED_AS_JSON)


@dataclass(frozen=True, slots=True)
class VersionRecord:
    resource_id: str
    key: str
    position: int
    kind: str
    revision: int
    parent_key: str | None
    variables_hash: str
    source: dict[str, JsonValue] = field(metadata=STORED_AS_JSON)
    meta: dict[str, JsonValue] = field(metadata=STORED_AS_JSON)
    operation_id: str | None
    fingerprint: str | None
    error: str | None
    created_at: int
    inherited: bool = False
    """True when the row belongs to an ancestor and is visible here through lineage."""


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    resource_id: str
    position: int
    session_id: str
    turn: int
    seq: int
    revision: int
    version_key: str | None
    variables_hash: str
    meta: dict[str, JsonValue] = field(metadata=STORED_AS_JSON)


@dataclass(frozen=True, slots=True)
class Head:
    """A resource's current state: what a read returns and what a CAS write expects."""

    resource_id: str
    revision: int
    version_key: str | None
    variables: JsonValue = field(metadata=STORED_AS_JSON)
    failure: JsonValue = field(default=None, metadata=STORED_AS_JSON)
    """The ``meta`` of a failed receipt written since the head moved (the resource's last version
    is one), None otherwise: a current read shows that failure as the record's own diagnostics,
    while the head (key, state) stays where it was."""


@dataclass(frozen=True, slots=True)
class StoredTemplate:
    """A template's definition as stored: its content hash and canonical JSON text."""

    definition_hash: str
    body: str


@dataclass(frozen=True, slots=True)
class SessionRowsQuery:
    """What a session's read asks the ledger for (:meth:`Views.session_rows`): the session's rows,
    the templates ``template_ids`` besides the selected one, the digest of the legacy file
    ``legacy_name``, the head state of the resources ``heads`` among those read (None: of all of
    them) and, with ``turn``, what a turn needs besides: the session's activation boundaries and
    its instances' heads."""

    session_id: str
    legacy_name: str
    template_ids: frozenset[str] = frozenset()
    heads: tuple[str, ...] | None = ()
    turn: bool = False


@dataclass(frozen=True, slots=True)
class SessionRows:
    """What the ledger holds for a session's read, from one round trip (:meth:`Views.session_rows`)."""

    session_id: str
    seed_pending: bool
    """Whether an uninstalled seed targets the session."""
    selected: bool
    """Whether the session ever selected (or unselected) a card."""
    template_id: str | None
    """The template it selected."""
    templates: dict[str, StoredTemplate | None]
    """The selected template and every other one asked for, by id (None: no such template)."""
    instances: tuple[ResourceRecord, ...]
    """The session's instances, in creation order."""
    shared: tuple[ResourceRecord, ...]
    """Every shared, configured and copy resource, in creation order."""
    legacy_digest: str | None
    """The sha256 of the legacy file asked for, None without one."""
    heads: dict[str, str]
    """The current state of each resource above that was asked for, by id: its stored canonical
    JSON text (decoded by whoever needs it: a read whose answer is known needs no state)."""
    activations: dict[str, int] | None = None
    """The session's activation boundaries by owner (template or resource id), when asked for."""
    failures: dict[str, str] = field(default_factory=dict)
    """For each head above whose resource's last version is a failed receipt: that receipt's
    stored ``meta`` text (:attr:`Head.failure`)."""


ChangeStatus = Literal["applied", "refused", "ignored"]
ChangeActor = Literal["reply", "opening", "script", "manual", "import", "initial"]


class ChangeRow(NamedTuple):
    """One path a version changed, or one command it refused or ignored (a ``changes`` row).

    The ledger fills in where it belongs (resource, the version's position and revision, its
    session and message) when it writes the version. ``before``/``after`` hold the value at
    ``path`` (a JSON pointer) before and after: an empty tuple means there was no value.

    A named tuple rather than a frozen dataclass: a reply builds one for each of its commands,
    on every turn, and a tuple's construction costs a fraction of a frozen dataclass's
    field-by-field ``__init__`` (docs/performance.md).
    """

    path: str
    status: ChangeStatus
    actor: ChangeActor
    op: str | None = None
    before: tuple[JsonValue, ...] = ()
    after: tuple[JsonValue, ...] = ()
    command: str | None = None
    code: str | None = None
    reason: str | None = None
    message: str | None = None
    turn: int | None = None


@dataclass(frozen=True, slots=True)
class CommitRequest:
    """One state write (or a failure receipt, ``kind='failed'``, that claims the next revision
    as every commit does but leaves the head and its variables alone, as the original does).

    Idempotency: with an ``operation_id`` the receipt ``(resource_id, operation_id)`` decides;
    without one the version ``key`` does (a reply's key is derived from its source message, so
    a processed message is never applied twice). Either way the same ``fingerprint`` replays
    the stored result and a different one is ``MVU_IDEMPOTENCY_CONFLICT``.
    """

    resource_id: str
    expected_revision: int
    kind: VersionKind
    variables: JsonValue
    fingerprint: str
    source: dict[str, JsonValue]
    key: str | None = None
    operation_id: str | None = None
    error: str | None = None
    meta: dict[str, JsonValue] = field(default_factory=dict)
    result: JsonValue = None
    facts: tuple[dict[str, JsonValue], ...] = ()
    """Trigger facts of this write (DIGEST A-4), stored in its transaction when it writes a new
    version (never on a replay), so they are durable exactly when the write is. They are written
    in a savepoint of their own: facts the store refuses are rolled back alone and reported as
    :attr:`CommitOutcome.fact_error`, and the write stands."""
    changes: tuple[ChangeRow, ...] = ()
    """What this version did path by path (the ``changes`` table), written in its transaction
    when it writes a new version (never on a replay)."""
    encoded: bytes | None = None
    """The canonical JSON (UTF-8) of ``variables``, when the caller holds it from
    :func:`~mvu_store.jsonvalue.measure_state` of this very value (an update's
    :attr:`~mvu_store.lang.UpdateResult.encoded`): the ledger stores these bytes instead of
    encoding the state again, after checking them against its state budget. Bytes of any other
    value would store that value: pass them only as they came."""


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    resource_id: str
    revision: int
    version_key: str | None
    result: JsonValue
    replayed: bool
    fact_error: str | None = None
    """The refusal of the request's facts (an error code), None when they were stored."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One audit finding: which check, which ledger and row, and what is wrong."""

    check: str
    ledger_id: str
    subject: str
    detail: str


@dataclass(frozen=True, slots=True)
class SeedRecord:
    """A fork / swipe / retry ticket (DIGEST F-7): its body is the original's seed JSON."""

    ticket: str
    kind: str
    source_session_id: str
    target_session_id: str | None
    installed: bool
    body: dict[str, JsonValue] = field(metadata=STORED_AS_JSON)


@dataclass(frozen=True, slots=True)
class SeedChild:
    """One instance a seed installs: ``new`` forked from ``source_id`` at ``at_key`` (None: no
    lineage, ``new.initial`` is its whole state), with copies of inherited checkpoints."""

    new: NewResource
    source_id: str
    at_key: str | None
    activation_seq: int
    checkpoints: tuple[CheckpointRecord, ...] = ()


@dataclass(slots=True)
class ChangeEntry:
    """A ``changes`` row as a read of one resource's history shows it.

    ``resource_id`` is the row's owner: the resource read, or an ancestor whose version it
    inherits (``inherited``). ``position`` is the version's index in the read resource's whole
    history (oldest 0), the same number its history entries carry. ``before_text``/``after_text``
    are the values at ``path`` as stored, canonical JSON (None: no value there), and
    :attr:`before`/:attr:`after` the same decoded; with ``omitted`` there are none because the
    values were too large to keep, not because there were none.

    Not frozen: a page holds up to a thousand, and a frozen dataclass's ``__init__`` costs ten
    times a plain one's. The values stay text until asked for, so an answer written as JSON
    carries them as stored, never decoded and encoded again.
    """

    resource_id: str
    position: int
    seq: int
    revision: int
    session_id: str | None
    turn: int | None
    message_seq: int | None
    path: str
    op: str | None
    status: ChangeStatus
    actor: ChangeActor
    before_text: str | None
    after_text: str | None
    omitted: bool
    command: str | None
    code: str | None
    reason: str | None
    message: str | None
    derived: bool
    inherited: bool

    @property
    def before(self) -> tuple[JsonValue, ...]:
        """The value before, decoded (an empty tuple: none)."""
        return () if self.before_text is None else (json.loads(self.before_text),)

    @property
    def after(self) -> tuple[JsonValue, ...]:
        """The value after, decoded (an empty tuple: none)."""
        return () if self.after_text is None else (json.loads(self.after_text),)


@dataclass(frozen=True, slots=True)
class ChangePage:
    """Changes in history order (oldest first). ``next_before``: the ``before_position`` of the
    next older page of a path's story (None: this page reaches its oldest change). ``truncated``:
    rows were left out that no page shows (one version with more changes than a page holds)."""

    entries: tuple[ChangeEntry, ...]
    next_before: int | None = None
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class StatePoint:
    """A resource's variables at one revision, as stored: the text of its state (canonical JSON)
    and the version that wrote it (None: no version, the state the resource started from).
    ``root`` is the first resource of its lineage (itself when it was not forked)."""

    resource_id: str
    revision: int
    version_key: str | None
    text: str
    root: str
