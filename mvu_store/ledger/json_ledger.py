"""The original JSON ledger files, mapped to rows and back (pure code: no I/O, no database).

``parse_*`` validate a file completely and refuse the first problem with its JSON pointer
(``details["path"]``) before anything is written; they return *plans*: the rows an import
inserts. ``rebuild_*`` are their inverses, used by export. The mapping is lossless by one rule:
a record field moves to a dedicated column only when its value fits that column exactly (type,
width); everything else (nulls, odd values, unknown fields) stays in the row's ``meta`` JSON,
and export puts column values back only where the column is set.

Shapes are those of the original's JSON ledger files (docs/json-ledger.md). What goes where:

- template: the definition, one blob, without ``activationSeqs`` when they become
  ``activations`` rows (``owner_id`` the template id), as for a resource record.
- resource record: ``definition`` without ``initial`` (and without ``activationSeqs`` when they
  become ``activations`` rows) -> definition blob; ``initial`` -> initial blob; ``revision``;
  ``currentKey`` -> ``head_key``, with ``head_hash`` the variables of that version (or the
  initial blob); ``managementMode``; every other field (``seed``, ``copiedFrom``,
  ``recoveryError``, unknown ones, an empty ``checkpoints``) -> ``meta``.
- version: ``key``, ``revision``, ``source`` and ``variables`` (blob) always; ``parentKey``,
  ``operationId``, ``fingerprint``, ``error`` when they fit; the rest -> ``meta``. A manual, card
  or initial version with an operation id, fingerprint and ``result`` also becomes a ``commit``
  receipt, which then holds the ``result`` (stored once: a replay returns it).
- a version's ``changes`` (mvu-store's own field) -> ``changes`` rows when every entry fits
  them as it is, else it stays in ``meta``; a version without such rows gets the rows its state
  shows against the one before (``derived``), which export leaves out (import derives them again).
  A resource record's ``openingChanges`` (mvu-store's too) are the rows of its creation (what an
  instance's opening changed, position -1), by the same rule; without it there are none (nothing
  derives them: the file holds no state from before the opening).
- checkpoint: array order -> ``position``; ``sessionId`` ('' when absent), ``turn``, ``seq``,
  ``revision``, ``versionKey``, ``variables`` (blob); the rest (``inheritedFrom``) -> ``meta``.
- ``managementOperations`` -> ``management`` receipts in order; seeds -> one blob each, plus
  the columns they are looked up by; ``discoverySelections`` -> ``selections`` rows.

Besides shapes, a record's history is checked as the audit checks it (``_InstancesParser.history``):
an import never leaves a finding behind. ``currentKey`` is required (export always writes it, so
an absent one could not come back). ``inherited_version`` is the other direction: a fork made by
``Ledger.fork`` exported as the original's fork child.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, get_args

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import (
    UNSAFE_KEYS,
    JsonValue,
    dumps,
    js_json,
    json_pointer,
    measure_state,
    normalize,
    sha256_hex,
    unique_keys,
)
from mvu_store.ledger import tables as t
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.change_rows import (
    CREATION_POSITION,
    MAX_CHANGES_PER_VERSION,
    MAX_TEXT_CHARS,
    MAX_VALUE_BYTES,
    derived_changes,
    table_rows,
)
from mvu_store.ledger.fact_log import FACTS_MAX_BYTES, FACTS_MAX_RECORDS
from mvu_store.ledger.records import ChangeActor, ChangeRow, ChangeStatus, NewResource, ResourceKind, VersionKind
from mvu_store.ledger.results import STATE_FIELDS, holds_marker, restored_result

INSTANCES_FILE = "mvu-instances.json"
LEGACY_FILE = "mvu-state.json"
FACTS_FILE = "mvu-facts.json"
FORMAT = 1

Path = tuple[str | int, ...]
Fits = Callable[[Any], bool]

_BIGINT = 2**63
_TOP_KEYS = frozenset({"version", "resources", "templates", "seeds", "discoverySelections"})
_FACTS_KEYS = frozenset({"version", "records"})
# Kinds whose operation id is an idempotency receipt (a reply is identified by its message).
_RECEIPT_KINDS = frozenset({"manual", "card", "initial"})


def _width(limit: int) -> Fits:
    # PostgreSQL refuses NUL in text columns and longer strings than varchar(n); SQLite would
    # take both, so the check lives here to keep the two engines' behaviour the same.
    return lambda value: type(value) is str and len(value) <= limit and "\x00" not in value


def _is_int(value: Any) -> bool:
    return type(value) is int and -_BIGINT <= value < _BIGINT


_hash = _width(t.HASH)
_id = _width(t.ID)
_code = _width(64)
_short = _width(16)
_ticket = _width(64)

# (record field, column, fits): the fields each row lifts into dedicated columns when they fit.
_VERSION_COLUMNS: tuple[tuple[str, str, Fits], ...] = (
    ("parentKey", "parent_key", _hash),
    ("operationId", "operation_id", _id),
    ("fingerprint", "fingerprint", _hash),
    ("error", "error", _code),
)
_CHECKPOINT_COLUMNS: tuple[tuple[str, str, Fits], ...] = (("versionKey", "version_key", _hash),)
_RESOURCE_COLUMNS: tuple[tuple[str, str, Fits], ...] = (("managementMode", "management_mode", _short),)
# A version's ``changes`` (mvu-store's field: the original writes none) are its ``changes`` rows a
# reply, an edit or an import recorded; rows back-filled from states (``derived``) are not
# written, since an import derives them again from the same states. An entry's texts fit their
# columns as they are (never cut), and its values stay inline, so export gives the field back.
_CHANGE_TEXTS: dict[str, Fits] = {"op": _width(32), "code": _code, "reason": _width(32),
                                  "command": _width(MAX_TEXT_CHARS), "message": _width(MAX_TEXT_CHARS)}
_CHANGE_FIELDS = frozenset({"path", "status", "actor", "before", "after", "omitted", "turn", *_CHANGE_TEXTS})
_CHANGE_STATUSES = frozenset(get_args(ChangeStatus))
_CHANGE_ACTORS = frozenset(get_args(ChangeActor))


def refuse(code: Code | str, message: str, path: Path, file: str, **details: Any) -> MvuError:
    pointer = json_pointer(list(path))
    return MvuError(code, f"{file} {pointer or '/'}: {message}", **details, path=pointer, file=file)


class _Reader:
    """Typed accessors that refuse with the JSON pointer of the value they were given."""

    def __init__(self, file: str, state_limit: int) -> None:
        self.file = file
        self.state_limit = state_limit

    def fail(self, message: str, path: Path, code: Code = Code.JSON) -> MvuError:
        return refuse(code, message, path, self.file)

    def versioned(self, document: Any, fields: frozenset[str] | None) -> dict[str, Any]:
        """The root object of a file: format version 1 and, when given, no unknown fields."""
        root = self.obj(document, ())
        version = root.get("version")
        if version != FORMAT or not _is_int(version):
            raise self.fail(f"unsupported format version {version!r} (expected {FORMAT})", ("version",), Code.VERSION)
        for key in root:
            if fields is not None and key not in fields:
                raise self.fail(f"unknown top-level field {key!r}", (key,))
        return root

    def obj(self, value: Any, path: Path) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail("expected an object", path)
        return value

    def array(self, value: Any, path: Path) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail("expected an array", path)
        return value

    def integer(self, value: Any, path: Path) -> int:
        if not _is_int(value):
            raise self.fail("expected a 64-bit integer", path)
        return int(value)

    def text(self, value: Any, path: Path, fits: Fits = _id) -> str:
        if not fits(value):
            raise self.fail("expected a string of the right length without NUL characters", path)
        return str(value)

    def required(self, record: dict[str, Any], key: str, path: Path) -> Any:
        if key not in record:
            raise self.fail(f"missing required field {key!r}", (*path, key))
        return record[key]

    def state(self, value: Any, path: Path) -> Blob:
        """A variables envelope within the state budget (2 MiB, 100,000 nodes, depth 64)."""
        self.obj(value, path)
        try:
            _, data, _ = measure_state(value, max_bytes=self.state_limit)
        except MvuError as error:
            raise refuse(error.code, error.message, path, self.file, **error.details) from None
        return Blob(data.decode())


def _walk(value: Any) -> Iterator[tuple[Path, Any, str | None]]:
    """Every node in document order as ``(path, value, key)`` (iterative: files nest deeply)."""
    stack: list[tuple[Path, Any, str | None]] = [((), value, None)]
    while stack:
        path, item, key = stack.pop()
        yield path, item, key
        if isinstance(item, dict):
            stack.extend(((*path, k), v, k) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*path, i), v, None) for i, v in reversed(list(enumerate(item))))


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate from a "\ud800" escape: not storable UTF-8
        return False
    return True


def parse_json(data: bytes, file: str) -> Any:
    """Strict JSON, refusing what the store cannot keep, then normalised (``5.0`` -> ``5``)."""

    def refuse_constant(name: str) -> None:
        raise refuse(Code.JSON, f"{name} is not JSON", (), file)

    try:
        parsed = json.loads(data.decode("utf-8"), parse_constant=refuse_constant, object_pairs_hook=unique_keys)
    except MvuError as error:  # a key named twice (a resource id twice would drop one of them)
        raise refuse(Code.JSON, error.message, (), file) from None
    except UnicodeDecodeError as error:
        raise refuse(Code.JSON, f"not UTF-8 ({error.reason} at byte {error.start})", (), file) from None
    except (ValueError, RecursionError) as error:
        raise refuse(Code.JSON, f"invalid JSON: {error}", (), file) from None
    for path, item, key in _walk(parsed):
        if key is not None and key in UNSAFE_KEYS:
            raise refuse(Code.JSON, f"unsafe key {key!r}", path, file)
        if key is not None and not _encodable(key):
            raise refuse(Code.JSON, "key is not valid Unicode", path, file)
        if isinstance(item, str) and not _encodable(item):
            raise refuse(Code.JSON, "string is not valid Unicode", path, file)
        if isinstance(item, float) and not math.isfinite(item):
            raise refuse(Code.JSON, "number out of range", path, file)
    # Limits apply per state (checked where states are), not to the whole file.
    normalized, _, _ = normalize(parsed, max_nodes=sys.maxsize, max_depth=sys.maxsize)
    return normalized


# -- plans: what an import writes ----------------------------------------------------------------


@dataclass(slots=True)
class TemplatePlan:
    id: str
    definition: JsonValue
    """The definition as the file has it (``activationSeqs`` included): what export gives back."""
    blob: Blob
    """The definition as stored: without ``activationSeqs`` when they became ``activations``."""
    activations: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Rows:
    """The rows that hang off one resource (``resource_id`` filled in), and their state blobs."""

    blobs: dict[str, Blob] = field(default_factory=dict)
    versions: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    receipts: list[dict[str, Any]] = field(default_factory=list)
    activations: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    recorded: set[int] = field(default_factory=set)
    """The positions of the versions whose ``changes`` the file holds (the others' are derived)."""
    # What the unique keys of these tables have seen so far: a duplicate is refused with its path
    # here rather than by the database, without a path, in the middle of the write.
    seen: set[tuple[Any, ...]] = field(default_factory=set)

    def claim(self, *unique: Any) -> bool:
        """Record a unique key; False when it was already taken."""
        if unique in self.seen:
            return False
        self.seen.add(unique)
        return True


@dataclass(slots=True)
class ResourcePlan:
    record: JsonValue
    """The normalised original record: what export must give back."""
    new: NewResource
    revision: int
    head_key: str | None
    head_hash: str
    rows: Rows


@dataclass(slots=True)
class SeedPlan:
    ticket: str
    seed: JsonValue
    blob: Blob
    row: dict[str, Any]


@dataclass(slots=True)
class InstancesPlan:
    templates: list[TemplatePlan]
    resources: list[ResourcePlan]
    seeds: list[SeedPlan]
    selections: dict[str, str | None]


@dataclass(slots=True)
class FactPlan:
    text: str
    record: dict[str, Any]


def _version_kind(version: dict[str, Any]) -> VersionKind:
    """The kind of an original version record (docs/json-ledger.md, "version").

    ``inheritedFrom`` wins: inherited copies carry the parent's source flags but never move
    this resource's head (and all sit at revision 0). A failed reply carries ``error``. Card
    writes are manual edits flagged ``card``; opening card writes also carry ``initial``, which
    alone (an initial write outside a card) is the ``initial`` kind. A recorded state imported
    from another host's chat names its format in ``import`` (``mvu_store.chats``).
    """
    source = version.get("source")
    flags = source if isinstance(source, dict) else {}
    if "inheritedFrom" in version:
        return "inherited"
    if "error" in version:
        return "failed"
    if flags.get("card") is True:
        return "card"
    if flags.get("manual") is True:
        return "manual"
    if flags.get("initial") is True:
        return "initial"
    if isinstance(flags.get("import"), str):
        return "import"
    return "reply"


def _lift(fields: dict[str, Any], columns: tuple[tuple[str, str, Fits], ...]) -> dict[str, Any]:
    """Move each field that fits its column out of ``fields``; the rest stays (as meta)."""
    row: dict[str, Any] = {}
    for name, column, fits in columns:
        if name in fields and fits(fields[name]):
            row[column] = fields.pop(name)
        else:
            row[column] = None
    return row


def _changes_fit(value: Any) -> bool:
    """Whether a version's ``changes`` field can become its rows as it is (else it stays in meta)."""
    return isinstance(value, list) and len(value) <= MAX_CHANGES_PER_VERSION and all(map(_change_fits, value))


def _change_fits(entry: Any) -> bool:
    return (isinstance(entry, dict) and entry.keys() <= _CHANGE_FIELDS
            and type(entry.get("path")) is str and "\x00" not in entry["path"]
            and entry.get("status") in _CHANGE_STATUSES and entry.get("actor") in _CHANGE_ACTORS
            and all(fits(entry[name]) for name, fits in _CHANGE_TEXTS.items() if name in entry)
            and ("turn" not in entry or _is_int(entry["turn"])) and entry.get("omitted", True) is True
            and all(len(dumps(entry[name]).encode()) <= MAX_VALUE_BYTES for name in ("before", "after")
                    if name in entry))


def _recorded_rows(entries: list[dict[str, Any]], **where: Any) -> list[dict[str, Any]]:
    """The rows of a version's ``changes`` field (each entry checked by :func:`_change_fits`)."""
    changes = [ChangeRow(entry["path"], entry["status"], entry["actor"], op=entry.get("op"),
                         before=(entry["before"],) if "before" in entry else (),
                         after=(entry["after"],) if "after" in entry else (), command=entry.get("command"),
                         code=entry.get("code"), reason=entry.get("reason"), message=entry.get("message"),
                         turn=entry.get("turn")) for entry in entries]
    rows = table_rows(changes, **where)
    for row, entry in zip(rows, entries, strict=True):
        row["omitted"] = "omitted" in entry
    return rows


def _derive_changes(rows: Rows, initial: JsonValue, states: list[JsonValue]) -> None:
    """The rows of the versions whose ``changes`` the file does not hold: what each state shows
    against the one before it (the initial one first), as the migration back-fills them."""
    previous = initial
    for row, state in zip(rows.versions, states, strict=True):
        if row["position"] not in rows.recorded:
            rows.changes += table_rows(
                derived_changes(previous, state, kind=row["kind"], error=row["error"], source=row["source"]),
                resource_id=row["resource_id"], position=row["position"], revision=row["revision"],
                session_id=row["session_id"], message_seq=row["message_seq"], derived=True)
        if row["kind"] != "failed":
            previous = state


def rebuild_changes(rows: list[Any]) -> list[dict[str, Any]]:
    """A version's ``changes`` field from its recorded rows (in ``seq`` order)."""
    entries: list[dict[str, Any]] = []
    for row in rows:
        entry: dict[str, Any] = {"path": row.path, "status": row.status, "actor": row.actor}
        for name in ("op", "command", "code", "reason", "message", "turn"):
            if getattr(row, name) is not None:
                entry[name] = getattr(row, name)
        for name in ("before", "after"):
            if getattr(row, name) is not None:
                entry[name] = json.loads(getattr(row, name))
        if row.omitted:
            entry["omitted"] = True
        entries.append(entry)
    return entries


def _lower(record: dict[str, Any], row: Any, columns: tuple[tuple[str, str, Fits], ...]) -> None:
    """The inverse of :func:`_lift`: put back each field whose column is set."""
    for name, column, _ in columns:
        value = getattr(row, column)
        if value is not None:
            record[name] = value


def _entries(value: Any) -> list[Any]:
    """The items of what should be an array inside an opaque body (stored whole, as it is)."""
    return value if isinstance(value, list) else []


def _resource_kind(record: dict[str, Any], definition: dict[str, Any]) -> ResourceKind:
    if "copiedFrom" in record:
        return "copy"
    if isinstance(definition.get("instance"), dict) or "templateId" in definition:
        return "instance"
    if definition.get("sharing") == "shared":
        return "shared"
    return "configured"


def _activation_rows(owner_id: str, definition: dict[str, Any]) -> list[dict[str, Any]]:
    """A definition's ``activationSeqs`` as ``activations`` rows, taken out of ``definition``.

    Only a non-empty map of session ids to 64-bit integers becomes rows; anything else (an empty
    map, odd values) stays in the definition as it is, so export gives back what was imported.
    """
    seqs = definition.get("activationSeqs")
    if not (isinstance(seqs, dict) and seqs and all(_id(s) and _is_int(n) for s, n in seqs.items())):
        return []
    del definition["activationSeqs"]
    return [{"owner_id": owner_id, "session_id": s, "seq": n} for s, n in seqs.items()]


def fold_activations(definition: Any, activations: dict[str, int]) -> Any:
    """A template's stored definition with its ``activations`` rows folded back in as
    ``activationSeqs``: merged with a map the stored definition already has, the rows winning."""
    if not activations or not isinstance(definition, dict):
        return definition
    stored = definition.get("activationSeqs")
    merged = {**stored, **activations} if isinstance(stored, dict) else dict(activations)
    return {**{k: v for k, v in definition.items() if k != "activationSeqs"}, "activationSeqs": merged}


class _InstancesParser(_Reader):
    def __init__(self, state_limit: int, now_ms: int) -> None:
        super().__init__(INSTANCES_FILE, state_limit)
        self.now_ms = now_ms

    def parse(self, document: Any) -> InstancesPlan:
        # Unknown top-level fields are refused rather than dropped: there is no row to keep them.
        root = self.versioned(document, _TOP_KEYS)
        templates = [
            self.template(template_id, definition)
            for template_id, definition in self.obj(root.get("templates", {}), ("templates",)).items()
        ]
        resources = [
            self.resource(resource_id, record)
            for resource_id, record in self.obj(self.required(root, "resources", ()), ("resources",)).items()
        ]
        self.shared_owners(templates, resources)
        seeds = [self.seed(ticket, seed) for ticket, seed in self.obj(root.get("seeds", {}), ("seeds",)).items()]
        selections: dict[str, str | None] = {}
        for session_id, template_id in self.obj(root.get("discoverySelections", {}), ("discoverySelections",)).items():
            path = ("discoverySelections", session_id)
            self.text(session_id, path)
            selections[session_id] = None if template_id is None else self.text(template_id, path)
        return InstancesPlan(templates, resources, seeds, selections)

    def shared_owners(self, templates: list[TemplatePlan], resources: list[ResourcePlan]) -> None:
        """Refuse a template and a resource of one id when either has activation rows: the rows
        are keyed by owner id alone, so export could not tell whose they are."""
        with_rows = {plan.id for plan in templates if plan.activations}
        template_ids = {plan.id for plan in templates}
        for plan in resources:
            if plan.new.id in with_rows:
                raise self.fail("a resource has this template's id, so the activation boundaries would be shared",
                                ("templates", plan.new.id, "activationSeqs"))
            if plan.new.id in template_ids and plan.rows.activations:
                raise self.fail("a template has this resource's id, so the activation boundaries would be shared",
                                ("resources", plan.new.id, "definition", "activationSeqs"))

    def template(self, template_id: str, definition: Any) -> TemplatePlan:
        path: Path = ("templates", template_id)
        self.text(template_id, path)
        body = self.obj(definition, path)
        if "initial" in body:
            self.state(body["initial"], (*path, "initial"))
        stored = dict(body)
        activations = _activation_rows(template_id, stored)
        return TemplatePlan(template_id, body, Blob(dumps(stored)), activations)

    def resource(self, resource_id: str, value: Any) -> ResourcePlan:
        path: Path = ("resources", resource_id)
        self.text(resource_id, path)
        fields = dict(self.obj(value, path))
        revision = self.integer(self.required(fields, "revision", path), (*path, "revision"))
        current_key = self.required(fields, "currentKey", path)
        definition = dict(self.obj(self.required(fields, "definition", path), (*path, "definition")))
        initial = self.required(definition, "initial", (*path, "definition"))
        head_hash = self.state(initial, (*path, "definition", "initial")).hash
        rows = Rows()
        versions = self.array(self.required(fields, "versions", path), (*path, "versions"))
        hashes = [self.version(rows, resource_id, index, item, (*path, "versions", index))
                  for index, item in enumerate(versions)]
        if current_key is not None:
            keys = [row["key"] for row in rows.versions]
            if current_key not in keys:
                raise self.fail("currentKey names no version of this resource", (*path, "currentKey"))
            head_hash = hashes[keys.index(current_key)]
        _derive_changes(rows, initial, [item["variables"] for item in versions])
        for index, item in enumerate(self.row_list(fields, "checkpoints", path)):
            self.checkpoint(rows, resource_id, index, item, (*path, "checkpoints", index))
        for index, item in enumerate(self.row_list(fields, "managementOperations", path)):
            self.management(rows, resource_id, item, (*path, "managementOperations", index))
        self.history(path, revision, current_key, rows)
        rows.activations = _activation_rows(resource_id, definition)
        del fields["revision"], fields["currentKey"], fields["definition"], fields["versions"], definition["initial"]
        mode = _lift(fields, _RESOURCE_COLUMNS)["management_mode"]
        instance = definition.get("instance")
        identity = instance if isinstance(instance, dict) else {}
        if _changes_fit(fields.get("openingChanges")):
            rows.changes += _recorded_rows(fields.pop("openingChanges"), resource_id=resource_id,
                                           position=CREATION_POSITION, revision=0,
                                           session_id=identity.get("sessionId") if _id(identity.get("sessionId"))
                                           else None, message_seq=None)
        new = NewResource(
            id=resource_id,
            kind=_resource_kind(value, definition),
            initial=initial,
            definition=definition,
            template_id=definition.get("templateId") if _id(definition.get("templateId")) else None,
            session_id=identity.get("sessionId") if _id(identity.get("sessionId")) else None,
            session_created_at=identity.get("createdAt"),
            management_mode=mode,
            meta=fields,
        )
        return ResourcePlan(value, new, revision, current_key, head_hash, rows)

    def row_list(self, fields: dict[str, Any], name: str, path: Path) -> list[Any]:
        """An optional array stored as rows: taken out of ``fields`` when it has items.

        An empty array stays in the meta, so export can tell ``[]`` from an absent field.
        """
        if name not in fields:
            return []
        items = self.array(fields[name], (*path, name))
        if items:
            del fields[name]
        return items

    def version(self, rows: Rows, resource_id: str, index: int, value: Any, path: Path) -> str:
        fields = dict(self.obj(value, path))
        kind = _version_kind(fields)
        key = self.text(self.required(fields, "key", path), (*path, "key"), _hash)
        revision = self.integer(self.required(fields, "revision", path), (*path, "revision"))
        blob = self.state(self.required(fields, "variables", path), (*path, "variables"))
        source = self.obj(self.required(fields, "source", path), (*path, "source"))
        if not rows.claim("key", key):
            raise self.fail("duplicate version key in this resource", (*path, "key"))
        for name in ("key", "revision", "variables", "source"):
            del fields[name]
        columns = _lift(fields, _VERSION_COLUMNS)
        if _changes_fit(fields.get("changes")):
            rows.recorded.add(index)
            source_ids = source.get("sessionId"), source.get("messageSeq")
            rows.changes += _recorded_rows(fields.pop("changes"), resource_id=resource_id, position=index,
                                           revision=revision,
                                           session_id=source_ids[0] if _id(source_ids[0]) else None,
                                           message_seq=source_ids[1] if _is_int(source_ids[1]) else None)
        operation_id, fingerprint = columns["operation_id"], columns["fingerprint"]
        if kind in _RECEIPT_KINDS and operation_id is not None and fingerprint is not None and "result" in fields:
            if holds_marker(fields["result"]):
                raise self.fail(f"a result cannot carry the field {STATE_FIELDS!r}", (*path, "result", STATE_FIELDS))
            # The result lives in the receipt only: a replay returns it, export puts it back.
            self.receipt(rows, resource_id, operation_id, (*path, "operationId"), kind="commit",
                         fingerprint=fingerprint, revision=revision, version_key=key,
                         result=dumps(fields.pop("result")))
        session_id, message_seq = source.get("sessionId"), source.get("messageSeq")
        rows.blobs[blob.hash] = blob
        rows.versions.append({
            "resource_id": resource_id, "key": key, "position": index, "kind": kind, "revision": revision,
            "variables_hash": blob.hash, **columns,
            # Copies of source fields, for lookups by session and message; `source` keeps them.
            "session_id": session_id if _id(session_id) else None,
            "message_seq": message_seq if _is_int(message_seq) else None,
            "source": dumps(source), "meta": dumps(fields), "created_at": self.now_ms,
        })
        return blob.hash

    def receipt(self, rows: Rows, resource_id: str, operation_id: str, path: Path, **values: Any) -> None:
        if not rows.claim("operation", operation_id):
            raise self.fail("operation id used twice in this resource", path)
        rows.receipts.append({
            "resource_id": resource_id, "operation_id": operation_id, "position": len(rows.receipts), **values,
            "created_at": self.now_ms,
        })

    def checkpoint(self, rows: Rows, resource_id: str, index: int, value: Any, path: Path) -> None:
        fields = dict(self.obj(value, path))
        turn = self.integer(self.required(fields, "turn", path), (*path, "turn"))
        seq = self.integer(self.required(fields, "seq", path), (*path, "seq"))
        revision = self.integer(self.required(fields, "revision", path), (*path, "revision"))
        blob = self.state(self.required(fields, "variables", path), (*path, "variables"))
        for name in ("turn", "seq", "revision", "variables"):
            del fields[name]
        # '' stands for "no session id" (the unique index would accept duplicate NULLs), so
        # only a non-empty id is lifted; an absent or empty one stays as it was, in meta.
        session_id = fields.pop("sessionId") if _id(fields.get("sessionId")) and fields["sessionId"] else ""
        if not rows.claim("turn", session_id, turn):
            raise self.fail("a second checkpoint for this session and turn", (*path, "turn"))
        columns = _lift(fields, _CHECKPOINT_COLUMNS)
        rows.blobs[blob.hash] = blob
        rows.checkpoints.append({
            "resource_id": resource_id, "position": index, "session_id": session_id, "turn": turn, "seq": seq,
            "revision": revision, "variables_hash": blob.hash, **columns, "meta": dumps(fields),
        })

    def management(self, rows: Rows, resource_id: str, value: Any, path: Path) -> None:
        entry = self.obj(value, path)
        extra = set(entry) - {"id", "fingerprint", "result"}
        if extra:
            raise self.fail(f"unexpected field {sorted(extra)[0]!r}", (*path, sorted(extra)[0]))
        operation_id = self.text(self.required(entry, "id", path), (*path, "id"))
        fingerprint = self.text(self.required(entry, "fingerprint", path), (*path, "fingerprint"), _hash)
        result = self.obj(self.required(entry, "result", path), (*path, "result"))
        # The revision this operation moved the record to: one of the record's revisions (see history).
        revision = self.integer(self.required(result, "revision", (*path, "result")), (*path, "result", "revision"))
        self.receipt(rows, resource_id, operation_id, (*path, "id"), kind="management", fingerprint=fingerprint,
                     revision=revision, version_key=None, result=dumps(result))

    def history(self, path: Path, revision: int, current_key: Any, rows: Rows) -> None:
        """Refuse a record whose history the audit (``audit.py``) would flag once imported.

        The original moves ``revision`` by one per committed version (reply, manual, card,
        initial), per failed reply (its poison receipt: ``revision + 1``, ``currentKey``
        unchanged) and per management operation, from 0 at creation (instances, copies, fork
        children alike), so those claims are exactly 1..revision: no duplicate, no hole, and no
        leading gap either (the original has no path that moves a revision without claiming it,
        so a gap means a damaged file). Each committed version is written on the current one
        (``parentKey``), so after the first they chain by revision, failed ones left out (they
        never move the head and name no parent), and ``currentKey`` is the newest committed
        version; with none it is null or an inherited version (a fork child's inherited head).
        Any other key a version or checkpoint names must be a version of this record. Keys are
        checked as the columns hold them: a value that fits no key column (``parentKey: 7``) is
        kept in ``meta``, where no audit follows it.
        """
        kinds = {row["key"]: row["kind"] for row in rows.versions}
        committed = sorted((row for row in rows.versions if row["kind"] in t.COMMITTED_KINDS),
                           key=lambda row: row["revision"])
        claiming = [row for row in rows.versions if row["kind"] in t.REVISION_KINDS]
        # Management receipts are appended in managementOperations order: index is the array's.
        management = [receipt for receipt in rows.receipts if receipt["kind"] == "management"]
        claims = sorted(
            [(row["revision"], (*path, "versions", row["position"], "revision")) for row in claiming]
            + [(receipt["revision"], (*path, "managementOperations", index, "result", "revision"))
               for index, receipt in enumerate(management)],
            key=lambda claim: claim[0],
        )
        for expected, (claimed, where) in enumerate(claims, start=1):
            if claimed == expected - 1 and expected > 1:
                raise self.fail(f"a second version or management operation claims revision {claimed}", where)
            if claimed != expected:
                raise self.fail(f"revision {claimed} breaks the sequence of committed and failed versions and "
                                f"management operations (expected {expected}: revisions start at 1, without holes)",
                                where)
        if revision != len(claims):
            raise self.fail(f"the record is at revision {revision}, but its committed and failed versions and "
                            f"management operations end at revision {len(claims)}", (*path, "revision"))
        previous: str | None = None
        for row in committed:
            parent = row["parent_key"]
            if previous is not None and parent != previous:
                raise self.fail(f"a committed version must be written on the previous one ({previous})",
                                (*path, "versions", row["position"], "parentKey"))
            if previous is None and parent is not None and kinds.get(parent) != "inherited":
                raise self.fail("the first committed version must be written on nothing (null) or an inherited version",
                                (*path, "versions", row["position"], "parentKey"))
            previous = row["key"]
        if current_key != previous and (previous is not None or kinds[current_key] != "inherited"):
            raise self.fail("currentKey must be the newest committed version (or, with none, null or an inherited "
                            "version)", (*path, "currentKey"))
        for row in rows.versions:
            if row["parent_key"] is not None and row["parent_key"] not in kinds:
                raise self.fail("parentKey names no version of this resource",
                                (*path, "versions", row["position"], "parentKey"))
        for index, row in enumerate(rows.checkpoints):
            if row["version_key"] is not None and row["version_key"] not in kinds:
                raise self.fail("versionKey names no version of this resource",
                                (*path, "checkpoints", index, "versionKey"))

    def seed(self, ticket: str, value: Any) -> SeedPlan:
        path: Path = ("seeds", ticket)
        self.text(ticket, path, _ticket)
        body = self.obj(value, path)
        kind = self.text(self.required(body, "kind", path), (*path, "kind"), _short)
        source_session = self.text(self.required(body, "sourceSessionId", path), (*path, "sourceSessionId"))
        installed = self.required(body, "installed", path)
        if type(installed) is not bool:
            raise self.fail("expected true or false", (*path, "installed"))
        for index, item in enumerate(_entries(body.get("items"))):
            self._seed_states(item, (*path, "items", index))
        target = body.get("targetSessionId")
        return SeedPlan(ticket, body, Blob(dumps(body)), {
            "ticket": ticket, "kind": kind, "source_session_id": source_session,
            "target_session_id": target if _id(target) else None, "installed": installed,
        })

    def _seed_states(self, item: Any, path: Path) -> None:
        """The states a seed carries (its variables and its history's) keep the state budget."""
        if not isinstance(item, dict):
            return
        if "variables" in item:
            self.state(item["variables"], (*path, "variables"))
        for name in ("history", "checkpoints"):
            for index, entry in enumerate(_entries(item.get(name))):
                if isinstance(entry, dict) and "variables" in entry:
                    self.state(entry["variables"], (*path, name, index, "variables"))


def parse_instances(data: bytes, *, state_limit: int, now_ms: int) -> InstancesPlan:
    """Validate ``mvu-instances.json`` completely and map it to rows (nothing is written)."""
    return _InstancesParser(state_limit, now_ms).parse(parse_json(data, INSTANCES_FILE))


def parse_facts(data: bytes) -> list[FactPlan]:
    """Validate ``mvu-facts.json``: at most 2,048 records and 1 MiB, as the facts store keeps."""
    reader = _Reader(FACTS_FILE, 0)
    root = reader.versioned(parse_json(data, FACTS_FILE), _FACTS_KEYS)
    records = reader.array(reader.required(root, "records", ()), ("records",))
    if len(records) > FACTS_MAX_RECORDS:
        raise reader.fail(f"more than {FACTS_MAX_RECORDS} fact records", ("records", FACTS_MAX_RECORDS), Code.LIMIT)
    facts: list[FactPlan] = []
    total = 0
    for index, value in enumerate(records):
        path: Path = ("records", index)
        record = reader.obj(value, path)
        # The fields the facts table lifts into columns must fit them.
        if "phase" in record:
            reader.text(record["phase"], (*path, "phase"), _short)
        if isinstance(record.get("sessionId"), str):
            reader.text(record["sessionId"], (*path, "sessionId"))
        if isinstance(record.get("recordedAt"), int) and not _is_int(int(record["recordedAt"])):
            raise reader.fail("expected a 64-bit integer", (*path, "recordedAt"))
        text = dumps(record)
        size = len(text.encode())
        total += size
        if total > FACTS_MAX_BYTES:
            raise reader.fail(f"fact records exceed {FACTS_MAX_BYTES} bytes", path, Code.LIMIT)
        facts.append(FactPlan(text, record))
    return facts


def check_legacy(data: bytes) -> None:
    """Validate the legacy ``mvu-state.json`` (kept byte for byte, never exploded into rows)."""
    reader = _Reader(LEGACY_FILE, 0)
    root = reader.versioned(parse_json(data, LEGACY_FILE), None)
    reader.obj(reader.required(root, "resources", ()), ("resources",))


# -- rebuilding: rows back to the original records (export) ------------------------------------


def rebuild_version(row: Any, variables: JsonValue, receipt_result: str | None,
                    changes: list[Any] | None = None) -> dict[str, Any]:
    """A version record from its row, its state, its receipt's result and its recorded (not
    derived) ``changes`` rows."""
    record: dict[str, Any] = json.loads(row.meta)
    record.update(key=row.key, revision=row.revision, variables=variables, source=json.loads(row.source))
    _lower(record, row, _VERSION_COLUMNS)
    if changes:
        record["changes"] = rebuild_changes(changes)
    if receipt_result is not None:
        record["result"] = restored_result(receipt_result, lambda: variables)
    return record


def instance_identity(session_id: str | None, created_at: JsonValue) -> dict[str, JsonValue] | None:
    """An instance's identity as the original spells it, ``{sessionId, createdAt}``; None if not one."""
    if session_id is None or created_at is None:
        return None
    return {"sessionId": session_id, "createdAt": created_at}


def inherited_version(version: dict[str, Any], resource_id: str, identity: dict[str, JsonValue] | None
                      ) -> dict[str, Any]:
    """The copy of ``version`` in the history of a fork child, as the original's ``inheritedVersion``.

    The key is the original's, ``sha256(JSON.stringify(['inherited', identity, key]))`` with the
    child's instance identity. A child without one (a fork of a shared or configured resource,
    which the original cannot make) puts its resource id in the identity's place: still
    deterministic and distinct per child. The original also stamps the child session's
    ``sessionFormatVersion`` on the source; the ledger does not know the child's session header,
    so the version's own value stays.
    """
    source = dict(version["source"])
    if identity is not None:
        source.update(sessionId=identity["sessionId"], sessionCreatedAt=identity["createdAt"])
    source.update(inherited=True, manual=False, card=False)
    copy: dict[str, Any] = {
        "key": sha256_hex(js_json(["inherited", identity or resource_id, version["key"]])),
        "variables": version["variables"], "revision": 0, "source": source,
    }
    # `a ?? b` in the original: a manual edit names the reply it was made on; absent stays absent.
    fingerprint = version.get("sourceFingerprint")
    if fingerprint is None:
        fingerprint = version.get("fingerprint")
    if fingerprint is not None:
        copy["fingerprint"] = fingerprint
    revision = version.get("revision")
    copy["inheritedFrom"] = {"versionKey": version["key"], "revision": 0 if revision is None else revision}
    if "sessionId" in version["source"]:
        copy["inheritedFrom"]["sessionId"] = version["source"]["sessionId"]
    return copy


def rebuild_checkpoint(row: Any, variables: JsonValue) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(row.meta)
    record.update(turn=row.turn, seq=row.seq, revision=row.revision, variables=variables)
    if row.session_id:
        record["sessionId"] = row.session_id
    _lower(record, row, _CHECKPOINT_COLUMNS)
    return record


def rebuild_management(row: Any) -> dict[str, Any]:
    return {"id": row.operation_id, "fingerprint": row.fingerprint, "result": json.loads(row.result)}


def rebuild_resource(
    row: Any,
    definition: dict[str, Any],
    initial: JsonValue,
    *,
    current_key: str | None,
    versions: list[dict[str, Any]],
    checkpoints: list[dict[str, Any]],
    management: list[dict[str, Any]],
    activations: dict[str, int],
    opening_changes: list[Any] | None = None,
) -> dict[str, Any]:
    """A resource record from its row, its blobs, its history and the recorded ``changes`` rows
    of its creation (``openingChanges``)."""
    record: dict[str, Any] = json.loads(row.meta)
    full = {**definition, "initial": initial}
    if activations:
        full["activationSeqs"] = activations
    record.update(revision=row.revision, currentKey=current_key, definition=full, versions=versions)
    if checkpoints:
        record["checkpoints"] = checkpoints
    if management:
        record["managementOperations"] = management
    if opening_changes:
        record["openingChanges"] = rebuild_changes(opening_changes)
    _lower(record, row, _RESOURCE_COLUMNS)
    return record


def instances_document(
    resources: dict[str, Any], templates: dict[str, Any], seeds: dict[str, Any], selections: dict[str, str | None]
) -> dict[str, Any]:
    """``mvu-instances.json``. The original adds ``templates``, ``seeds`` and
    ``discoverySelections`` when it first stores an entry and never removes entries, so a map is
    present exactly when it is non-empty: omitting empty ones gives back the original file."""
    document: dict[str, Any] = {"version": FORMAT, "resources": resources}
    optional = {"templates": templates, "seeds": seeds, "discoverySelections": selections}
    document.update({name: entries for name, entries in optional.items() if entries})
    return document


def facts_document(records: list[Any]) -> dict[str, Any]:
    return {"version": FORMAT, "records": records}

