"""Initial variables from a card's ``[initvar]`` entries (DIGEST U-2).

Each entry is YAML or JSON5 text (optionally wrapped in an ``<initvar>`` line and a code fence)
or an already-parsed object. Entries merge in order (objects deep-merge, arrays replace), the
``existing`` state's top-level keys win, and ``$meta`` is turned into the native schema and
removed from ``stat_data``. Text goes through strict JSON, JSON5, then the restricted YAML loader
(no anchors, aliases, tags, merge keys, directives or non-finite numbers). MagVarUpdate also
runs jsonrepair, so garbage often "parses" there; here a bad entry is
``MVU_INITIALIZATION_INVALID`` and nothing is produced.
"""

from __future__ import annotations

import copy
import json
import textwrap
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, find_unsafe_key, json_pointer, measure_state, normalize, utf8
from mvu_store.lang.meta import Schema, clean_metadata, initial_schema
from mvu_store.lang.restricted_yaml import load_yaml
from mvu_store.lang.slowparse import Unreadable, read_json5

MAX_ENTRY_BYTES = 1024 * 1024
MAX_SLOW_PARSE_CHARS = 256 * 1024
"""Characters of all the entries of one card or template together that are not strict JSON (one
YAML document's limit): what the slow readers may be asked to read for them."""

_OPEN, _CLOSE = "<initvar>", "</initvar>"


def _unwrap(text: str) -> str:
    """The entry without an ``<initvar>`` wrapper and without its code fence.

    Like MagVarUpdate, a fence may follow a line of prose: the body runs from the line after the
    first fence to the last fence. String searches, not a pattern, so a huge entry costs linear
    time.
    """
    body = text
    stripped = text.strip()  # only to look at the ends: the caller dedents the indentation
    if stripped[: len(_OPEN)].lower() == _OPEN and stripped[-len(_CLOSE) :].lower() == _CLOSE:
        body = stripped[len(_OPEN) : -len(_CLOSE)]
    fence = body.find("```")
    line_end = body.find("\n", fence) if fence != -1 else -1
    close = body.rfind("\n```")
    if line_end != -1 and close > line_end:
        return body[line_end + 1 : close]
    return body


def _body(text: str) -> str:
    return textwrap.dedent(_unwrap(text)).strip()  # an indented entry is still one YAML document


def _is_json(body: str) -> bool:
    if body[:1] not in ("{", "["):
        return False
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True


def check_parse_budget(entries: Sequence[str | dict[str, Any]]) -> None:
    """Refuse entries whose texts together would feed the slow readers (JSON5, YAML) more than
    :data:`MAX_SLOW_PARSE_CHARS` (``MVU_LIMIT``): each entry alone is bounded, but a card of many
    entries near that bound cost seconds each, and every reader of the card parses them again."""
    slow = 0
    for entry in entries:
        if isinstance(entry, str) and len(entry) <= MAX_ENTRY_BYTES:
            body = _body(entry)
            slow += 0 if _is_json(body) else len(body)
    if slow > MAX_SLOW_PARSE_CHARS:
        raise MvuError(Code.LIMIT, f"the [initvar] entries hold {slow} characters of YAML or JSON5 together; "
                       f"at most {MAX_SLOW_PARSE_CHARS} are read (strict JSON is not counted)",
                       limit=MAX_SLOW_PARSE_CHARS, kind="chars")


def _parse_text(text: str) -> JsonValue:
    if len(utf8(text)) > MAX_ENTRY_BYTES:
        raise MvuError(Code.LIMIT, "an [initvar] entry is over 1 MiB", limit=MAX_ENTRY_BYTES, kind="bytes")
    body = _body(text)
    if body[:1] in ("{", "["):
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            pass
        with suppress(Unreadable):
            return read_json5(body, None)
    return load_yaml(body)


def _entry(entry: str | dict[str, Any], index: int, label: str) -> dict[str, Any]:
    name = f"{label} {index}"
    try:
        value = _parse_text(entry) if isinstance(entry, str) else entry
        normalized, _, _ = normalize(value)
    except MvuError as error:
        if error.code == Code.LIMIT:
            raise
        raise MvuError(Code.INITIALIZATION_INVALID, f"{name}: {error.message}", entry=index) from None
    if normalized is None:
        return {}  # an empty entry contributes nothing
    if not isinstance(normalized, dict):
        raise MvuError(Code.INITIALIZATION_INVALID, f"{name} is not an object", entry=index)
    unsafe = find_unsafe_key(normalized)
    if unsafe is not None:
        raise MvuError(Code.PATH, f"{name} carries a prototype key", path=json_pointer(unsafe))
    merged: dict[str, Any] = normalized
    return merged


def _merge_entries(target: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge objects, let arrays and scalars replace (MagVarUpdate's ``correctlyMerge``)."""
    for key, value in source.items():
        current = target.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge_entries(current, value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def merge_entries(entries: Sequence[str | dict[str, Any]], *, label: str = "[initvar] entry") -> dict[str, Any]:
    """Parse the entries and merge them in order; ``label`` names a bad one in the error."""
    check_parse_budget(entries)
    merged: dict[str, Any] = {}
    for index, entry in enumerate(entries):
        _merge_entries(merged, _entry(entry, index, label))
    return merged


def with_stat_data(envelope: dict[str, Any], stat_data: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """``envelope`` holding freshly initialised data: ``$meta`` removed, display reset, budget checked.

    ``schema`` must already have been derived from ``stat_data`` (it reads the ``$meta``).
    """
    clean_metadata(stat_data)
    # display_data shares stat_data: measure_state returns a fresh copy of the whole envelope.
    envelope.update(stat_data=stat_data, schema=schema, display_data=stat_data, delta_data={})
    checked, _, _ = measure_state(envelope)
    result: dict[str, Any] = checked
    return result


def initialize_variables(
    entries: Sequence[str | dict[str, Any]], *, existing: JsonValue = None
) -> dict[str, Any]:
    """A new variables envelope from ``[initvar]`` entries, merged under ``existing``'s keys.

    ``existing`` is a variables envelope (or ``None``); its top-level ``stat_data`` keys win and
    its other fields are kept. Returns ``{stat_data, schema, display_data, delta_data, ...}``.
    """
    if isinstance(entries, str | dict):
        entries = [entries]
    if not isinstance(entries, list | tuple):
        raise MvuError(Code.INITIALIZATION_INVALID, "[initvar] entries must be a list of texts or objects")
    merged = merge_entries(entries)
    envelope: dict[str, Any] = {}
    old_schema: Schema | None = None
    if existing is not None:
        if not isinstance(existing, dict):
            raise MvuError(Code.JSON, "existing variables must be an object")
        envelope, _, _ = normalize(existing)
        previous = envelope.get("stat_data") or {}
        if not isinstance(previous, dict):
            raise MvuError(Code.JSON, "existing stat_data must be an object")
        merged.update(previous)
        old_schema = envelope.get("schema") if isinstance(envelope.get("schema"), dict) else None
    return with_stat_data(envelope, merged, initial_schema(merged, old_schema))
