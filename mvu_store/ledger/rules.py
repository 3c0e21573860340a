"""What the ledger refuses before it writes: texts its columns cannot hold, commits whose kind and
source disagree, facts that would carry content; and the original format's version keys."""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, js_json, json_scalar, sha256_hex, utf8
from mvu_store.ledger import tables as t
from mvu_store.ledger.records import ChangeActor, ChangeRow, ChangeStatus, CommitRequest

FACT_FIELDS = ("phase", "recordedAt", "id", "sessionId", "eventId", "on", "cause", "requestId", "reason", "detail",
               "turn", "turnKind", "revision", "configRevision", "commandsApplied", "commandsRefused",
               "commandsIgnored", "commandsPossible")
_KNOWN_FIELDS = frozenset(FACT_FIELDS)
FACT_TEXT_LIMIT = 300
_STATUSES, _ACTORS = frozenset(get_args(ChangeStatus)), frozenset(get_args(ChangeActor))
FACT_OUTCOMES = 8
"""Items a fact's ``outcomes`` keeps (a reply's first commands that did not apply)."""
_OUTCOME_FIELDS = ("kind", "path", "code", "reason")


def fact_fields(record: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The content-free part of a fact: known fields, scalar values, strings cut to 300 chars."""
    if not isinstance(record, dict) or not isinstance(record.get("phase"), str):
        raise MvuError(Code.JSON, "a fact is an object with a string phase")
    fields: dict[str, JsonValue] = {}
    # The record's own fields, looked up among the known ones (a fact has about half of them).
    for name, value in record.items():
        if name not in _KNOWN_FIELDS:
            continue
        if isinstance(value, str):
            fields[name] = value[:FACT_TEXT_LIMIT]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            fields[name] = json_scalar(value)  # as normalised JSON: the fact's text is encoded as it is
        elif value is None:
            fields[name] = None
    outcomes = record.get("outcomes")
    if isinstance(outcomes, list):
        # The one structured field: each item by kind, path and code or reason, strings only.
        fields["outcomes"] = [{key: text[:FACT_TEXT_LIMIT] for key in _OUTCOME_FIELDS
                               if isinstance(text := item.get(key), str)}
                              for item in outcomes[:FACT_OUTCOMES] if isinstance(item, dict)]
    return fields


def indexable(value: JsonValue) -> str | None:
    """A session id to index a fact by, when it fits the column (else the fact is unindexed)."""
    return value if isinstance(value, str) and len(value) <= t.ID and "\x00" not in value else None


def check_text(name: str, value: str | None, width: int) -> None:
    """Refuse text a column cannot hold alike on SQLite and PostgreSQL (width, NUL)."""
    if value is None:
        return
    if not isinstance(value, str) or not value:
        raise MvuError(Code.OPERATION, f"{name} must be a non-empty string", field=name)
    if len(value) > width:
        raise MvuError(Code.LIMIT, f"{name} is longer than {width} characters", field=name, limit=width)
    if "\x00" in value:
        raise MvuError(Code.JSON, f"{name} contains a NUL character", field=name)
    utf8(value)


def default_key(request: CommitRequest) -> str:
    """The original's version keys: a manual write is identified by its operation, a reply by
    its source message, each as ``sha256(JSON.stringify(...))`` (insertion order, no spaces), so
    a reply imported from the original ledger and delivered again is recognised as a replay."""
    if request.operation_id is not None:
        return operation_key(request.resource_id, request.operation_id)
    return sha256_hex(js_json(request.source))


def operation_key(resource_id: str, operation_id: str) -> str:
    """The version key a write with ``operation_id`` gets on ``resource_id`` (no explicit key)."""
    return sha256_hex(js_json({"id": resource_id, "operationId": operation_id}))



# What a version's source says about its kind, as the original format records it (and as the
# importer reads it back): a kind that disagrees would not survive an export and re-import.
_SOURCE_FLAGS: dict[str, tuple[bool, bool, bool]] = {  # kind: (manual, card, initial)
    "reply": (False, False, False),
    "failed": (False, False, False),
    "manual": (True, False, False),
    "initial": (False, False, True),
}


def check_request(request: CommitRequest) -> None:
    """Refuse a commit whose fields the ledger could not store or export faithfully."""
    check_text("resource id", request.resource_id, t.ID)
    check_text("operation id", request.operation_id, t.ID)
    check_text("version key", request.key, t.HASH)
    check_text("fingerprint", request.fingerprint, t.HASH)
    check_text("error", request.error, 64)
    if (request.kind == "failed") != (request.error is not None):
        raise MvuError(Code.OPERATION, "a failed version, and only a failed version, carries an error code")
    flags = (bool(request.source.get("manual")), bool(request.source.get("card")), bool(request.source.get("initial")))
    if request.kind == "card":
        if not flags[1]:
            raise MvuError(Code.OPERATION, "a card write's source says card: true", kind=request.kind)
    elif request.kind not in _SOURCE_FLAGS:
        raise MvuError(Code.OPERATION, f"a commit cannot be of kind {request.kind!r}", kind=request.kind)
    elif flags != _SOURCE_FLAGS[request.kind]:
        raise MvuError(Code.OPERATION, f"a {request.kind} version's source flags say otherwise", kind=request.kind)
    check_changes(request.changes)


def check_changes(changes: Iterable[ChangeRow]) -> None:
    """Refuse a ``changes`` row whose status or actor the table does not know (a commit's, or a
    resource's creation's)."""
    for change in changes:
        # The other columns are bounded where the rows are made (change_rows.table_rows).
        if change.status not in _STATUSES or change.actor not in _ACTORS or not isinstance(change.path, str):
            raise MvuError(Code.OPERATION, f"a change row needs a path, a status of {sorted(_STATUSES)} and an "
                                           f"actor of {sorted(_ACTORS)}", path=change.path, status=change.status,
                           actor=change.actor)
