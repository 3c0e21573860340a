"""What the service takes and returns: pydantic models that serialise to the original's camelCase.

Inputs are validated here, once, and every refusal is an :class:`MvuError` with a stable code
(``parse_input``), never a pydantic error. Results are frozen models; ``to_json()`` gives the
original service's JSON shape (camelCase keys, absent optional fields left out).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import MAX_SAFE_INTEGER
from mvu_store.jsonvalue import JsonValue

RESOURCE_ID = re.compile(r"^mvu:[A-Za-z0-9_.-]{1,160}$")
"""Configured, shared and copied resource ids (the original's pattern)."""

MAX_OPERATION_ID = 200
MAX_SESSION_ID = 200
MAX_REVISION = MAX_SAFE_INTEGER  # what every JavaScript client holds exactly

Model = TypeVar("Model", bound=BaseModel)


class _Input(BaseModel):
    """Accepts snake_case and camelCase keys; refuses unknown ones."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class _Output(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The original's JSON shape: camelCase, optional fields that are unset left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def parse_input(model: type[Model], value: Any, code: Code) -> Model:
    """``value`` (a mapping or a model) as ``model``, or ``MvuError(code)`` naming the first problem."""
    if isinstance(value, model):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True)
    try:
        return model.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "input"
        raise MvuError(code, f"{where}: {first['msg']}", field=where) from None


def check_operation_id(operation_id: Any) -> str:
    if not isinstance(operation_id, str) or not operation_id or len(operation_id) > MAX_OPERATION_ID:
        raise MvuError(Code.OPERATION, f"operation_id must be a string of 1 to {MAX_OPERATION_ID} characters")
    return operation_id


def storable(text: str) -> bool:
    """Whether an id can be stored at all: no NUL, no lone surrogate (no UTF-8 for it)."""
    if "\x00" in text:
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def check_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id or len(session_id) > MAX_SESSION_ID or not storable(
            session_id):
        raise MvuError(Code.SCOPE, f"session_id must be a string of 1 to {MAX_SESSION_ID} characters")
    return session_id


def check_revision(revision: Any) -> int:
    # Bounded like every number on the JSON wire: an unbounded int (10**5000) cannot even be
    # written into the request's fingerprint, and no stored revision is beyond this one.
    if isinstance(revision, bool) or not isinstance(revision, int) or not 0 <= revision <= MAX_REVISION:
        raise MvuError(Code.OPERATION, f"expected_revision must be an integer from 0 to {MAX_REVISION}")
    return revision


def shown(value: Any, limit: int = 200) -> str:
    """``value`` as text for a refusal, cut to ``limit`` characters. A value ``str`` refuses (an
    int past Python's 4300-digit conversion limit, an object whose ``__str__`` fails) is shown
    by its type, so describing bad input can never fail the refusal itself."""
    try:
        text = str(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text[:limit]


# -- inputs ---------------------------------------------------------------------------------------


class Scope(_Input):
    """``{authority: 'local', sessionId?, messageId?, endEventId?}`` (DIGEST A-2).

    Without ``session_id`` it is a local management scope (every resource); with one it is that
    session's view; ``message_id`` / ``end_event_id`` make it a historical (read-only) scope.
    """

    authority: Literal["local"] = "local"
    session_id: str | None = Field(default=None, min_length=1, max_length=MAX_SESSION_ID)
    message_id: str | None = Field(default=None, min_length=1, max_length=MAX_OPERATION_ID)
    end_event_id: int | None = Field(default=None, ge=0, strict=True)

    @field_validator("session_id", "message_id")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        if value is not None and not storable(value):
            raise ValueError("must not hold NUL or a lone surrogate")
        return value

    @model_validator(mode="after")
    def _historical_needs_a_session(self) -> Scope:
        if (self.message_id is not None or self.end_event_id is not None) and self.session_id is None:
            raise ValueError("a historical scope names the session whose coordinates it uses (sessionId)")
        return self

    @property
    def historical(self) -> bool:
        return self.message_id is not None or self.end_event_id is not None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def parse_scope(value: Any) -> Scope:
    """A scope, refusing other authorities with ``MVU_AUTHORITY`` and bad shapes with ``MVU_SCOPE``."""
    if isinstance(value, Scope):
        return value
    if value is None:
        raise MvuError(Code.SCOPE, "a scope is required ({'authority': 'local', ...})")
    if isinstance(value, dict) and value.get("authority", "local") != "local":
        raise MvuError(Code.AUTHORITY, "only the local authority is served here; a remote one needs its own service",
                       authority=shown(value.get("authority"), 64))
    if isinstance(value, dict) and ("historical" in value or "mode" in value):
        raise MvuError(Code.SCOPE, "unsupported scope fields")
    if isinstance(value, dict) and isinstance(value.get("endEventId", value.get("end_event_id")), bool):
        raise MvuError(Code.SCOPE, "end_event_id must be an integer")
    return parse_input(Scope, value, Code.SCOPE)


class CharacterDefinition(_Input):
    """A card as the host discovered it (``mvu_store.cards.read_card`` gives these fields)."""

    character_id: str = Field(min_length=1, max_length=MAX_SESSION_ID)
    name: str | None = Field(default=None, max_length=300)
    initvar: list[str | dict[str, JsonValue]] = Field(default_factory=list, max_length=1000)
    schema_source: str | list[str] | None = None
    greetings: list[str] = Field(default_factory=list, max_length=1000)
    at: int | None = Field(default=None, ge=0, le=2**53 - 1)
    """The registration's time (ms since the epoch): the clock a declaration reads while the
    initial data is parsed (``Date.now()`` in a default); without it such a declaration is refused."""
    command_source: str | None = None
    """The card's command processor script (``mvu_store.processor.card_declaration`` finds it),
    run before each commit of the card's instances."""
    command_source_error: Literal["MVU_COMMAND_HOOK_CONFLICT", "MVU_COMMAND_HOOK_DECLARATION",
                                  "MVU_COMMAND_HOOK_LIMIT"] | None = None
    """The code the card's declarations were refused with (``read_card`` finds it): its replies
    that update fail with it, never run unfiltered."""

    @field_validator("schema_source")
    @classmethod
    def _sources(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and not value:
            return None
        return value


class ResourceConfig(_Input):
    """One explicit resource of ``mvu.resources`` (DIGEST I-10)."""

    id: str
    session_ids: list[str] = Field(max_length=10_000)
    initial: str | dict[str, JsonValue] | list[str | dict[str, JsonValue]] | None = None
    management_mode: Literal["native", "managed"] = "native"
    character_id: str | None = Field(default=None, min_length=1, max_length=MAX_SESSION_ID)
    sharing: Literal["shared"] | None = None
    schema_source: str | None = None
    name: str | None = Field(default=None, max_length=300)
    command_source: str | None = None
    """A command processor script for the resource (as a card's, run before each commit)."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not RESOURCE_ID.match(value):
            raise ValueError("a resource id is 'mvu:' and 1 to 160 of [A-Za-z0-9_.-]")
        if value.startswith(("mvu:instance-", "mvu:character-")):
            raise ValueError("instance and character ids are allocated by the service, not configured")
        return value

    @field_validator("session_ids")
    @classmethod
    def _sessions(cls, value: list[str]) -> list[str]:
        if any(not isinstance(item, str) or not item or len(item) > MAX_SESSION_ID for item in value):
            raise ValueError("session ids are non-empty strings ('*' for every session)")
        return value

    @field_validator("initial")
    @classmethod
    def _initial(cls, value: Any) -> Any:
        # Refused here, not turned into a template's sourceError: a shared resource would be
        # stored broken, and a later configuration change is not a reset (I-10).
        if isinstance(value, dict) and not isinstance(value.get("stat_data"), dict):
            raise ValueError("an initial object is a variables envelope with a stat_data object "
                             "(or give a YAML string)")
        return value


# -- outputs --------------------------------------------------------------------------------------


class TemplateRecord(_Output):
    """A registered template (a discovered card or a configured resource): never a state."""

    id: str
    name: str | None = None
    character_id: str | None = None
    discovered: bool = False
    session_ids: list[str] = Field(default_factory=list)
    management_mode: str = "native"
    source_error: str | None = None
    interpreter_version: int | None = None
    changed: bool = False
    rejected_error: str | None = None
    """Why a re-discovered card was not taken: it failed, and the healthy stored template stays."""


class SelectionResult(_Output):
    session_id: str
    template_id: str | None
    instance_id: str | None = None
    boundary: int | None = None
    """Replies in this session below this event id are never applied to the instance."""
    greeting_index: int | None = None
    """The greeting the session opens with (0: the card's first message)."""


class StateRecord(_Output):
    """What ``read`` / ``list`` return (DIGEST A: the record shape)."""

    id: str
    name: str
    type: Literal["mvu-state"] = "mvu-state"
    authority: Literal["local"] = "local"
    scope: dict[str, JsonValue]
    content: JsonValue
    revision: int
    current_revision: int
    historical: bool
    version_key: str | None
    management_mode: str
    stored_management_mode: str
    template_id: str | None = None
    instance: dict[str, JsonValue] | None = None
    inherited_from: dict[str, JsonValue] | None = None
    source: dict[str, JsonValue] | None = None
    source_error: str | None = None
    legacy: bool | None = None
    capabilities: dict[str, bool] | None = None
    command_processor: dict[str, JsonValue] | None = None
    """The receipt of the resource's command processor registration, while it has one."""

    def to_json(self) -> dict[str, Any]:
        # `versionKey: null` is part of the shape (a state at its initial content).
        data = super().to_json()
        data["versionKey"] = self.version_key
        return data


@dataclass(frozen=True, slots=True)
class RecordJson:
    """A read's answer as the wire carries it (``MvuService.read_json``, ``changes_json``,
    ``diff_json``): compact UTF-8 JSON, with the revision it names and the sha256 of those bytes
    (what its ETag is made of)."""

    revision: int
    body: bytes
    digest: str

    @classmethod
    def of(cls, record: StateRecord) -> RecordJson:
        return cls.of_body(record.revision,
                           json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":")).encode())

    @classmethod
    def of_body(cls, revision: int, body: bytes) -> RecordJson:
        return cls(revision, body, hashlib.sha256(body).hexdigest())


class UpdateReceipt(_Output):
    """A manual edit's result, as the original returns it (and replays it)."""

    id: str
    type: Literal["mvu-state"] = "mvu-state"
    content: JsonValue
    revision: int
    scope: dict[str, JsonValue]
    authority: Literal["local"] = "local"
    replayed: bool = False


class ManagementReceipt(_Output):
    id: str
    management_mode: str
    """The actual manager now (DIGEST I-8: registration decides, not the stored preference)."""
    stored_management_mode: str
    revision: int
    replayed: bool = False


class HistoryEntry(_Output):
    """One version of a session's history: success and failure evidence (DIGEST A-6)."""

    key: str
    kind: str
    revision: int
    position: int
    """The entry's index in the resource's whole history (oldest 0), the cursor of history pages:
    unlike revisions, positions never repeat (a fork child's own revisions restart at 1)."""
    source: dict[str, JsonValue]
    variables: JsonValue
    fingerprint: str | None = None
    parent_key: str | None = None
    operation_id: str | None = None
    error: str | None = None
    inherited: bool = False
    created_at: int
    before_available: bool | None = None
    before: JsonValue = None
    commands: list[JsonValue] | None = None
    """A reply version's commands, each with its result, in text order (docs/python-api.md)."""


class CheckpointState(_Output):
    """An instance's state at a turn's pre-request checkpoint (what the turn started from)."""

    id: str
    session_id: str
    turn: int
    seq: int
    """The event id of the turn's ``turn/start``."""
    revision: int
    version_key: str | None
    content: JsonValue


class CheckpointInfo(_Output):
    resource_id: str
    session_id: str
    turn: int
    seq: int
    revision: int
    version_key: str | None


class TurnOutcome(_Output):
    """What ingest did with one completed turn for one resource."""

    resource_id: str
    turn: int
    message_seq: int
    version_key: str
    status: Literal["committed", "failed", "skipped", "replayed"]
    revision: int
    changed: bool = False
    error: str | None = None
    message: str | None = None
    """A failed turn's error message (``error`` is its code)."""
    reason: str | None = None
    """Why a skipped turn applied nothing."""
    diagnostics: list[dict[str, JsonValue]] = Field(default_factory=list)
    """The version's ``update_diagnostics``: each command that did not apply, then near-misses."""
    commands: list[dict[str, JsonValue]] = Field(default_factory=list)
    """Every command found in the reply, in text order, with its outcome (docs/python-api.md)."""
    ignored_total: int = 0
    """Ignored commands in the reply (``commands`` names at most 64 of those reading dropped)."""
    possible_total: int = 0
    """Possible commands (near-misses) in the reply (``diagnostics`` names at most 32 of them)."""


class IngestReport(_Output):
    session_id: str
    outcomes: list[TurnOutcome] = Field(default_factory=list)
    fact_errors: list[str] = Field(default_factory=list)
    """Optional fact writes that failed (DIGEST A-5: they never fail a commit)."""


# -- changes and diffs (docs/python-api.md#changes-and-diffs) -------------------------------------


class _WithValues(_Output):
    """An answer with ``before``/``after`` values where "no value" and JSON ``null`` differ: a
    field set (``has_before``) is written even when null, an unset one is left out."""

    before: JsonValue = None
    after: JsonValue = None

    @property
    def has_before(self) -> bool:
        return "before" in self.model_fields_set

    @property
    def has_after(self) -> bool:
        return "after" in self.model_fields_set

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data.pop("before", None)
        data.pop("after", None)
        data.update({name: getattr(self, name) for name in ("before", "after") if name in self.model_fields_set})
        return data


class Change(_WithValues):
    """One ``changes`` row of a resource's history: a path a version changed, or a command it
    refused or ignored (docs/storage.md)."""

    resource_id: str
    """The row's owner: the resource read, or an ancestor whose version it inherits."""
    inherited: bool
    position: int
    """The version's index in the resource's whole history: the ``position`` of its history entry."""
    revision: int
    """The owner's revision of the version."""
    seq: int
    """The change's order within its version."""
    session_id: str | None = None
    turn: int | None = None
    message_seq: int | None = None
    path: str
    """A JSON pointer into ``stat_data`` (``''``: the whole of it)."""
    op: str | None = None
    status: Literal["applied", "refused", "ignored"]
    actor: Literal["reply", "opening", "script", "manual", "import", "initial"]
    omitted: bool = False
    """The values were too large to keep: neither ``before`` nor ``after`` is given."""
    command: str | None = None
    code: str | None = None
    reason: str | None = None
    message: str | None = None
    derived: bool = False
    """Back-filled by a migration from stored states, not recorded when the version was written."""

    def to_json(self) -> dict[str, Any]:
        # Written field by field: a page holds up to a thousand, and a model dump costs far more.
        data: dict[str, Any] = {"resourceId": self.resource_id, "inherited": self.inherited,
                                "position": self.position, "revision": self.revision, "seq": self.seq}
        for key, value in (("sessionId", self.session_id), ("turn", self.turn), ("messageSeq", self.message_seq),
                           ("path", self.path), ("op", self.op), ("status", self.status), ("actor", self.actor)):
            if value is not None:
                data[key] = value
        data.update({name: getattr(self, name) for name in ("before", "after") if name in self.model_fields_set})
        data["omitted"] = self.omitted
        for key, value in (("command", self.command), ("code", self.code), ("reason", self.reason),
                           ("message", self.message)):
            if value is not None:
                data[key] = value
        data["derived"] = self.derived
        return data


class Changes(_Output):
    """A page of changes, oldest first (``MvuService.changes``)."""

    id: str
    changes: list[Change]
    next_before: int | None = None
    """A path's story: ``before`` for the next older page; None when this page reaches the oldest."""
    truncated: bool = False
    """Changes were left out that no page lists (one version with more than a page holds)."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "changes": [change.to_json() for change in self.changes],
                "nextBefore": self.next_before, "truncated": self.truncated}


class DiffPoint(_Output):
    """One end of a diff: a resource at a revision (``version_key`` None: no version wrote it)."""

    id: str
    revision: int
    version_key: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, "versionKey": self.version_key}


class DiffChange(_WithValues):
    """One path of ``stat_data`` whose value differs between the two ends."""

    path: str
    op: Literal["add", "remove", "replace"]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "op": self.op}
        data.update({name: getattr(self, name) for name in ("before", "after") if name in self.model_fields_set})
        return data


class StateDiff(_Output):
    """What changed in ``stat_data`` from one point to another (``MvuService.diff``)."""

    from_: DiffPoint = Field(alias="from")
    to: DiffPoint
    changes: list[DiffChange]
    truncated: bool = False
    """More differences than the answer lists (the first ones in document order are listed)."""

    def to_json(self) -> dict[str, Any]:
        return {"from": self.from_.to_json(), "to": self.to.to_json(),
                "changes": [change.to_json() for change in self.changes], "truncated": self.truncated}
