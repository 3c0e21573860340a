"""``String.prototype`` (but its regular-expression methods) and ``String``'s statics.

Positions are UTF-16 code units, as in JavaScript (``mvu_store.js.strings``); every method
charges the budget for what it builds before building it, so ``'x'.repeat(1e9)`` or
``padStart(1e9)`` end in ``MVU_LIMIT``, never in a memory blow-up.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from typing import Any, Literal

from mvu_store.js.numbers import WHITESPACE
from mvu_store.js.strings import joined, locale_compare, lone_surrogates, units, well_formed
from mvu_store.js.values import (
    MAX_TEXT,
    UNDEFINED,
    Budget,
    Builtin,
    arg,
    text_limit,
    to_string,
)
from mvu_store.schema.numeric import range_error, to_integer, to_num

Method = Callable[[Budget, str, list[Any]], Any]
_NORMAL_FORMS: dict[str, Literal["NFC", "NFD", "NFKC", "NFKD"]] = {
    "NFC": "NFC", "NFD": "NFD", "NFKC": "NFKC", "NFKD": "NFKD"}


def _check_length(length: float | int) -> None:
    """A result of ``length`` code units: JavaScript's RangeError for an infinite one,
    ``MVU_LIMIT`` beyond the declaration's bound (``'x'.repeat(1e9)`` is a budget error)."""
    if length == math.inf:
        raise range_error("Invalid string length")
    if length > MAX_TEXT:
        text_limit(" " * (MAX_TEXT + 1))


def _position(value: Any, default: int) -> int:
    return default if value is UNDEFINED else to_integer(value)


def _clamped(value: Any, length: int, default: int) -> int:
    return max(0, min(_position(value, default), length))


def _relative(value: Any, length: int, default: int) -> int:
    """A ``slice``-style index: negative counts from the end."""
    index = _position(value, default)
    return max(0, length + index) if index < 0 else min(index, length)


def _slice(budget: Budget, text: str, args: list[Any]) -> str:
    code = units(text)
    start, end = _relative(arg(args, 0), len(code), 0), _relative(arg(args, 1), len(code), len(code))
    return joined(code[start:end]) if start < end else ""


def _substring(budget: Budget, text: str, args: list[Any]) -> str:
    code = units(text)
    start, end = _clamped(arg(args, 0), len(code), 0), _clamped(arg(args, 1), len(code), len(code))
    return joined(code[min(start, end):max(start, end)])


def _substr(budget: Budget, text: str, args: list[Any]) -> str:
    code = units(text)
    start = _relative(arg(args, 0), len(code), 0)
    count = len(code) if arg(args, 1) is UNDEFINED else max(0, to_integer(args[1]))
    return joined(code[start:start + min(count, len(code))])


def _unit_at(text: str, args: list[Any], *, relative: bool) -> str | None:
    code = units(text)
    index = _position(arg(args, 0), 0)
    if relative and index < 0:
        index += len(code)
    return code[index] if 0 <= index < len(code) else None


def _at(budget: Budget, text: str, args: list[Any]) -> Any:
    unit = _unit_at(text, args, relative=True)
    return UNDEFINED if unit is None else unit


def _char_at(budget: Budget, text: str, args: list[Any]) -> str:
    return _unit_at(text, args, relative=False) or ""


def _char_code_at(budget: Budget, text: str, args: list[Any]) -> Any:
    unit = _unit_at(text, args, relative=False)
    return math.nan if unit is None else ord(unit)


def _code_point_at(budget: Budget, text: str, args: list[Any]) -> Any:
    code = units(text)
    index = _position(arg(args, 0), 0)
    if not 0 <= index < len(code):
        return UNDEFINED
    pair = joined(code[index:index + 2])
    return ord(pair[0])


def _index_of(budget: Budget, text: str, args: list[Any]) -> int:
    code, search = units(text), units(to_string(arg(args, 0)))
    start = _clamped(arg(args, 1), len(code), 0)
    return code.find(search, start)


def _last_index_of(budget: Budget, text: str, args: list[Any]) -> int:
    code, search = units(text), units(to_string(arg(args, 0)))
    position = to_num(arg(args, 1)) if arg(args, 1) is not UNDEFINED else math.nan
    start = len(code) if math.isnan(position) else max(0, min(to_integer(position), len(code)))
    return code.rfind(search, 0, start + len(search))


def _includes(budget: Budget, text: str, args: list[Any]) -> bool:
    return _index_of(budget, text, args) >= 0


def _starts_with(budget: Budget, text: str, args: list[Any]) -> bool:
    code, search = units(text), units(to_string(arg(args, 0)))
    return code.startswith(search, _clamped(arg(args, 1), len(code), 0))


def _ends_with(budget: Budget, text: str, args: list[Any]) -> bool:
    code, search = units(text), units(to_string(arg(args, 0)))
    end = _clamped(arg(args, 1), len(code), len(code))
    return code[:end].endswith(search)


def _pad(at_start: bool) -> Method:
    def pad(budget: Budget, text: str, args: list[Any]) -> str:
        code = units(text)
        if arg(args, 0) is not UNDEFINED:
            _check_length(to_num(args[0]))
        width = _position(arg(args, 0), 0)
        filler = " " if arg(args, 1) is UNDEFINED else units(to_string(args[1]))
        missing = width - len(code)
        if missing <= 0 or not filler:
            return text
        budget.charge(missing)  # before building: a huge width runs out of fuel first
        padding = joined((filler * (missing // len(filler) + 1))[:missing])
        return text_limit(padding + text if at_start else text + padding)

    return pad


def _repeat(budget: Budget, text: str, args: list[Any]) -> str:
    count = to_num(arg(args, 0))
    count = 0 if math.isnan(count) else count
    if count < 0 or math.isinf(count):
        raise range_error(f"Invalid count value: {to_string(count)}")
    count = int(count)
    if text:
        _check_length(count * len(text))
    budget.charge(len(text) * count)
    return text * count


def _normalize(budget: Budget, text: str, args: list[Any]) -> str:
    form = _NORMAL_FORMS.get("NFC" if arg(args, 0) is UNDEFINED else to_string(args[0]))
    if form is None:
        raise range_error("The normalization form should be one of NFC, NFD, NFKC, NFKD.")
    return unicodedata.normalize(form, text) if not lone_surrogates(text) else text


def _concat(budget: Budget, text: str, args: list[Any]) -> str:
    parts = [to_string(part) for part in args]
    budget.charge(sum(len(part) for part in parts) // 8)
    return text_limit(text + "".join(parts))


def _from_char_code(budget: Budget, args: list[Any]) -> str:
    budget.charge(len(args))
    return joined("".join(chr(to_integer(code) % 0x10000) for code in args))


def _from_code_point(budget: Budget, args: list[Any]) -> str:
    budget.charge(len(args))
    points = []
    for value in args:
        number = to_num(value)
        if not (math.isfinite(number) and float(number).is_integer() and 0 <= number <= 0x10FFFF):
            raise range_error(f"Invalid code point {to_string(value)}")
        points.append(chr(int(number)))
    return joined("".join(points))


STRING_METHODS: dict[str, Method] = {
    "at": _at,
    "charAt": _char_at,
    "charCodeAt": _char_code_at,
    "codePointAt": _code_point_at,
    "concat": _concat,
    "endsWith": _ends_with,
    "includes": _includes,
    "indexOf": _index_of,
    "isWellFormed": lambda budget, text, args: not lone_surrogates(text),
    "lastIndexOf": _last_index_of,
    "localeCompare": lambda budget, text, args: locale_compare(text, to_string(arg(args, 0))),
    "normalize": _normalize,
    "padEnd": _pad(False),
    "padStart": _pad(True),
    "repeat": _repeat,
    "slice": _slice,
    "startsWith": _starts_with,
    "substr": _substr,
    "substring": _substring,
    "toLocaleLowerCase": lambda budget, text, args: text.lower(),
    "toLocaleUpperCase": lambda budget, text, args: text.upper(),
    "toLowerCase": lambda budget, text, args: text.lower(),
    "toString": lambda budget, text, args: text,
    "toLocaleString": lambda budget, text, args: text,  # Object.prototype's: the string itself
    "toUpperCase": lambda budget, text, args: text.upper(),
    "toWellFormed": lambda budget, text, args: well_formed(text),
    "trim": lambda budget, text, args: text.strip(WHITESPACE),
    "trimEnd": lambda budget, text, args: text.rstrip(WHITESPACE),
    "trimLeft": lambda budget, text, args: text.lstrip(WHITESPACE),
    "trimRight": lambda budget, text, args: text.rstrip(WHITESPACE),
    "trimStart": lambda budget, text, args: text.lstrip(WHITESPACE),
    "valueOf": lambda budget, text, args: text,
}
"""Every method of ``String.prototype`` but ``match``, ``matchAll``, ``search``, ``replace``,
``replaceAll`` and ``split`` (the regular-expression module's)."""

REFUSED_STRING_METHODS = {
    "anchor": "an HTML helper (Annex B)", "big": "an HTML helper (Annex B)", "blink": "an HTML helper (Annex B)",
    "bold": "an HTML helper (Annex B)", "fixed": "an HTML helper (Annex B)", "fontcolor": "an HTML helper (Annex B)",
    "fontsize": "an HTML helper (Annex B)", "italics": "an HTML helper (Annex B)", "link": "an HTML helper (Annex B)",
    "small": "an HTML helper (Annex B)", "strike": "an HTML helper (Annex B)", "sub": "an HTML helper (Annex B)",
    "sup": "an HTML helper (Annex B)",
}
"""Standard names that are refused, with the reason the docs table gives."""

STRING_STATICS = {
    "fromCharCode": Builtin("fromCharCode", _from_char_code),
    "fromCodePoint": Builtin("fromCodePoint", _from_code_point),
}
