"""Deep equality of JSON values as MagVarUpdate compares them (``_.isEqual`` on JSON).

Conversions, truthiness and key order are the JavaScript core's (``mvu_store.js``)."""

from __future__ import annotations

import json
from typing import Any

from mvu_store.jsonvalue import JsonValue

_PLAIN_KINDS = (dict, list, str, int, float, bool, type(None))


def _string_keys(*objects: dict[Any, JsonValue]) -> bool:
    return all(type(key) is str for item in objects for key in item)


def same(left: JsonValue, right: JsonValue) -> bool:
    """Deep JSON equality (``_.isEqual`` on JSON): ``true`` is not ``1``, key order is ignored.

    Exactly "the sorted-key JSON texts are equal" (so ``5`` is not ``5.0`` either), walked
    side by side: a subtree two states share (persistent states share most) is equal at once.
    """
    scalar = type(left)
    if scalar is type(right) and (scalar is int or scalar is str or scalar is bool):
        return bool(left == right)  # two scalars (most calls): equal JSON texts when equal
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        if a is b:
            continue
        kind = type(a)
        if kind is not type(b) or kind not in _PLAIN_KINDS or (kind is dict and not _string_keys(a, b)):
            # Not plain JSON (a tuple, a non-string key...): let the JSON text decide.
            if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
                return False
        elif kind is dict:
            if a.keys() != b.keys():
                return False
            stack.extend((value, b[key]) for key, value in a.items())
        elif kind is list:
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif kind is float:
            if repr(a) != repr(b):  # what json.dumps writes: 0.0 is not -0.0
                return False
        elif a != b:
            return False
    return True
