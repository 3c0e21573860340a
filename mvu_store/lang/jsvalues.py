"""JavaScript's view of JSON values, where MagVarUpdate's behaviour depends on it."""

from __future__ import annotations

import json

from mvu_store.jsonvalue import JsonValue


def is_number(value: JsonValue) -> bool:
    """``typeof value === 'number'`` (a bool is not a number here, unlike in Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def truthy(value: JsonValue) -> bool:
    """JavaScript truthiness: empty objects and arrays are true, ``0`` and ``""`` are false."""
    if isinstance(value, dict | list):
        return True
    return bool(value)


def js_string(value: JsonValue) -> str:
    """``String(value)``, used where MagVarUpdate turns an argument into an object key."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def same(left: JsonValue, right: JsonValue) -> bool:
    """Deep JSON equality (``_.isEqual`` on JSON): ``true`` is not ``1``, key order is ignored."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def object_keys(value: dict[str, JsonValue]) -> list[str]:
    """``Object.keys`` order: integer-like keys ascending first, then insertion order."""
    integer_like = sorted((key for key in value if key.isascii() and key.isdigit() and str(int(key)) == key), key=int)
    chosen = set(integer_like)
    return integer_like + [key for key in value if key not in chosen]
