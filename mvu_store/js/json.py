"""``JSON.stringify`` and ``JSON.parse`` as ECMAScript defines them, on the interpreter's values.

Texts are JavaScript's byte for byte: keys in JavaScript's order, integral doubles without a
fraction, lone surrogates escaped (``\\ud800``), ``undefined``/functions left out of objects and
``null`` in arrays, a replacer function or key list, an indent of up to ten spaces or characters.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from mvu_store.js.members import own_keys
from mvu_store.js.numbers import number_to_string
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    JsCallable,
    PrimitiveObject,
    ScriptError,
    fail,
    is_number,
    to_string,
)

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SPECIAL = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def quote(text: str) -> str:
    """QuoteJSONString: control characters and lone surrogates as ``\\uXXXX``."""
    def escape(found: re.Match[str]) -> str:
        char = found.group()
        return _ESCAPES.get(char) or f"\\u{ord(char):04x}"

    return '"' + _SPECIAL.sub(escape, text) + '"'


def _gap(space: Any) -> str:
    if is_number(space):
        return " " * max(0, min(10, int(space) if math.isfinite(space) else (10 if space > 0 else 0)))
    return space[:10] if type(space) is str else ""


def stringify(budget: Budget, value: Any, replacer: Any = UNDEFINED, space: Any = UNDEFINED,
              to_json: Callable[[Any], Any] | None = None) -> Any:
    """``JSON.stringify(value, replacer, space)``: a text, or ``undefined``. ``to_json`` gives
    an object's own ``toJSON`` result (a Date's ISO text) or returns the object unchanged."""
    function = replacer if isinstance(replacer, JsCallable) else None
    allowed: list[str] | None = None
    if type(replacer) is list:
        allowed = []
        for item in replacer:
            if type(item) is str or is_number(item):
                name = to_string(item)
                if name not in allowed:
                    allowed.append(name)
    gap = _gap(space)
    seen: list[int] = []

    def serialize(holder: Any, key: str, item: Any, indent: str) -> str | None:
        budget.charge(1)
        if to_json is not None:
            item = to_json(item)
        if function is not None:
            item = function.call(budget, [key, item])
        kind = type(item)
        if item is None:
            return "null"
        if kind is bool:
            return "true" if item else "false"
        if kind is str:
            return quote(item)
        if kind is int or kind is float:
            return number_to_string(item) if math.isfinite(item) else "null"
        if kind is list or kind is dict:
            if id(item) in seen:
                raise fail("Converting circular structure to JSON")
            seen.append(id(item))
            inner = indent + gap
            if kind is list:
                parts = [serialize(item, str(index), child, inner) or "null" for index, child in enumerate(item)]
                opening, closing = "[", "]"
            else:
                parts = []
                for name in allowed if allowed is not None else own_keys(item):
                    if name not in item:
                        continue
                    text = serialize(item, name, item[name], inner)
                    if text is not None:
                        parts.append(quote(name) + (": " if gap else ":") + text)
                opening, closing = "{", "}"
            seen.pop()
            if not parts:
                return opening + closing
            if not gap:
                return opening + ",".join(parts) + closing
            return f"{opening}\n{inner}" + f",\n{inner}".join(parts) + f"\n{indent}{closing}"
        if isinstance(item, PrimitiveObject):
            return quote(item.text())
        return None  # undefined, functions and other capabilities are left out

    text = serialize({"": value}, "", value, "")
    return UNDEFINED if text is None else text


def _number(text: str) -> float | int:
    if text == "-0":
        return -0.0
    number = int(text)
    return number if abs(number) < 2**53 else float(number)


def parse(text: str) -> Any:
    """``JSON.parse(text)`` without a reviver; a malformed text is JavaScript's SyntaxError."""
    def last_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        return dict(pairs)

    def refuse_constant(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_int=_number, parse_constant=refuse_constant, object_pairs_hook=last_wins)
    except (ValueError, RecursionError) as error:
        message = f"Unexpected token in JSON: {error}"
        raise ScriptError(message, {"name": "SyntaxError", "message": message}) from None


def revive(budget: Budget, holder: Any, key: str, reviver: JsCallable) -> Any:
    """InternalizeJSONProperty: children first, a reviver's ``undefined`` deletes the key."""
    value = holder[int(key)] if type(holder) is list else holder[key]
    budget.charge(1)
    if type(value) is list:
        for index in range(len(value)):
            revived = revive(budget, value, str(index), reviver)
            value[index] = revived
    elif type(value) is dict:
        for name in own_keys(value):
            revived = revive(budget, value, name, reviver)
            if revived is UNDEFINED:
                del value[name]
            else:
                value[name] = revived
    return reviver.call(budget, [key, value])
