"""What a manual edit may change: ``stat_data``, nothing the source owns (DIGEST A: update, L-3).

An edit sends a variables envelope; only its ``stat_data`` is taken. The source owns the rest: a
declaration (``mvu_schema``) or native schema sent back unchanged is fine, a different one is
``MVU_SCHEMA_CODE`` (so an old envelope can never be restored over a new playthrough's schema),
and the derived parts (``display_data``, ``delta_data``, ``update_diagnostics``) are recomputed:
``delta_data.changes`` lists what the edit changed, path by path.
The new ``stat_data`` must be data every later reply can run on: no prototype keys, numbers
JavaScript holds exactly; a declaration validates (and may transform) it exactly once, a native
schema is reconciled with it as after any update.
"""

from __future__ import annotations

from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import MAX_SAFE_INTEGER
from mvu_store.json_diff import json_diff
from mvu_store.jsonvalue import (
    UNSAFE_KEYS,
    JsonValue,
    copy_json,
    dumps,
    find_unsafe_key,
    json_equal,
    json_pointer,
    normalize,
)
from mvu_store.lang.meta import clean_metadata, reconcile
from mvu_store.schema.allowance import Allowance
from mvu_store.service.initial import DeclaredSchema

OWNED = ("mvu_schema", "schema")
DERIVED = ("display_data", "delta_data", "update_diagnostics")
KNOWN = frozenset({"stat_data", "initialized_lorebooks", *OWNED, *DERIVED})


def edit_content(content: Any) -> dict[str, Any]:
    """The edit as sent, normalised and checked (the request's fingerprint covers this)."""
    if not isinstance(content, dict) or not isinstance(content.get("stat_data"), dict):
        raise MvuError(Code.JSON, "content is a variables envelope with a stat_data object")
    unknown = sorted(str(key) for key in content if key not in KNOWN)
    if unknown:
        raise MvuError(Code.JSON, f"content has fields a variables envelope does not: {', '.join(unknown[:5])}",
                       fields=unknown[:20])
    sent, _, _ = normalize(content)
    assert isinstance(sent, dict)
    _check_data(sent["stat_data"])
    return sent


def _check_data(stat_data: JsonValue) -> None:
    """In one walk, what JSON allows but no later reply could run on: a prototype key (named by
    its path) and integers beyond ±(2**53 - 1), which would silently change in every JavaScript
    reader. A prototype key is the error reported when there are both."""
    too_large = False
    stack = [stat_data]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if not UNSAFE_KEYS.isdisjoint(item):
                unsafe = find_unsafe_key(stat_data)  # the path, only once one is known to exist
                raise MvuError(Code.PATH, "stat_data carries a prototype key", path=json_pointer(unsafe or []))
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is int and abs(item) > MAX_SAFE_INTEGER:
            too_large = True
    if too_large:
        raise MvuError(Code.JSON, "an integer is beyond what JavaScript holds exactly (2**53 - 1)")


def edited_envelope(sent: dict[str, Any], current: JsonValue, *, now_ms: int) -> dict[str, Any]:
    """The new envelope: the current one with the sent ``stat_data``, validated by the source
    (one validation, within the edit's allowance).

    Takes ``sent`` over (its ``stat_data`` becomes the new state's); ``current`` is only read:
    the new envelope is a shallow copy that replaces, never changes, what it shares with it."""
    envelope: dict[str, Any] = dict(current) if isinstance(current, dict) else {}
    for key in OWNED:
        if key in sent and not json_equal(sent[key], envelope.get(key)):
            raise MvuError(Code.SCHEMA_CODE, f"the source owns {key}: an edit cannot remove or replace it", field=key)
    stat_data = sent["stat_data"]
    declared = DeclaredSchema.of(envelope, now_ms, allowance=Allowance("the edit's declaration work"))
    if declared is not None:
        try:
            checked = declared.check(stat_data)
        except MvuError as error:
            raise _whole_state_refusal(error, envelope.get("stat_data"), stat_data) from None
        if not isinstance(checked, dict):
            raise MvuError(Code.SCHEMA, "the declaration turned stat_data into something other than an object")
        stat_data = checked
    elif isinstance(envelope.get("schema"), dict):
        envelope["schema"] = reconcile(stat_data, envelope["schema"])
        clean_metadata(stat_data)  # a $meta in the edit shaped the schema, as at initialisation
    envelope.update(stat_data=stat_data, display_data=copy_json(stat_data),
                    delta_data=edit_changes(envelope.get("stat_data"), stat_data), update_diagnostics=[])
    return envelope


EDIT_VALUE_BYTES = 256
"""A value an edit's ``delta_data`` shows beside its path at most (as JSON); a larger one is left
out (``omitted``): the envelope holds the state twice already (``stat_data``, ``display_data``),
and a third copy would push an edit that fits over the state budget."""
EDIT_VALUES_BYTES = 64 * 1024
"""The values one edit's ``delta_data`` shows in all (the later ones are ``omitted``)."""


def edit_changes(before: JsonValue, after: JsonValue) -> dict[str, JsonValue]:
    """An edit's ``delta_data``: each path it changed, as a reply's changes are listed (``op``
    ``add`` / ``remove`` / ``replace``, ``previous`` and ``value`` when there was one, small
    ones only: ``omitted`` says one was left out), and ``truncated`` when more than the diff's
    bound changed."""
    diff = json_diff(before, after)
    changes: list[JsonValue] = []
    room = EDIT_VALUES_BYTES
    for item in diff.differences:
        change: dict[str, JsonValue] = {"op": item.op, "path": item.path}
        for name, value in (("previous", item.before), ("value", item.after)):
            if not value:
                continue
            size = len(dumps(value[0]))
            if size <= min(EDIT_VALUE_BYTES, room):
                change[name] = value[0]
                room -= size
            else:
                change["omitted"] = True
        changes.append(change)
    return {"changes": changes, "truncated": True} if diff.truncated else {"changes": changes}


_MISSING_SHOWN = 5
_MISSING_VISITS = 10_000  # containers compared at most: the states may be large


def missing_keys(current: JsonValue, sent: JsonValue) -> list[str]:
    """JSON pointers of keys ``current`` has and ``sent`` lacks (a few, breadth first, bounded)."""
    missing: list[str] = []
    level: list[tuple[list[str], JsonValue, JsonValue]] = [([], current, sent)]
    visits = 0
    while level and len(missing) < _MISSING_SHOWN and visits < _MISSING_VISITS:
        deeper: list[tuple[list[str], JsonValue, JsonValue]] = []
        for path, have, got in level:
            visits += 1
            if not isinstance(have, dict) or not isinstance(got, dict):
                continue
            for key, value in have.items():
                if key not in got:
                    missing.append(json_pointer([*path, key]))
                elif isinstance(value, dict):
                    deeper.append(([*path, key], value, got[key]))
        level = deeper
    return missing[:_MISSING_SHOWN]


def _whole_state_refusal(error: MvuError, current: JsonValue, sent: JsonValue) -> MvuError:
    """The declaration's refusal of an edit, saying that an edit replaces the whole ``stat_data``
    (a partial one reads as keys removed, which the schema may refuse in words that do not say so)."""
    missing = missing_keys(current, sent)
    if not missing:
        return error
    shown = ", ".join(missing)
    return MvuError(error.code, f"an edit replaces the whole stat_data, and this one leaves out {shown} "
                                f"(send every key, changed or not): {error.message}",
                    **{**error.details, "missing": missing})
