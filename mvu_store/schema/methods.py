"""Methods of arrays, strings and numbers (``list.map``, ``text.padStart``, ``n.toFixed``).

Mutating array methods check that the array is the declaration's to change (never one of its
constants during a validation); every method charges the budget for what it touches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import cmp_to_key
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.members import check_writable
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    arg,
    fail,
    js_length,
    strict_equals,
    text_limit,
    to_string,
    truthy,
    typeof,
)
from mvu_store.schema.builtins import call_fn, js_compare
from mvu_store.schema.numeric import NUMBER_METHODS, to_integer, to_num


def method_of(value: Any, name: str) -> Any:
    """``value.name`` for an array, a string, a number or a boolean: a bound builtin."""
    table = _ARRAY_METHODS if type(value) is list else _STRING_METHODS if type(value) is str else NUMBER_METHODS
    if type(value) is bool:
        table = _BOOLEAN_METHODS
    method = table.get(name)
    if method is None:
        raise MvuError(Code.UNSUPPORTED, f"`{name}` of a {typeof(value)} is not supported")
    size = 1 + len(value) // 4 if type(value) is list or type(value) is str else 1

    def bound(budget: Budget, args: list[Any]) -> Any:
        budget.charge(size)  # every array or string method may touch all of it
        return method(budget, value, args)

    return Builtin(name, bound)


Method = Callable[[Budget, Any, list[Any]], Any]


def _each(budget: Budget, items: list[Any], fn: Any) -> Iterator[tuple[int, Any, Any]]:
    """(index, item, fn(item, index)) for a callback over a snapshot of ``items``."""
    for index, item in enumerate(list(items)):
        yield index, item, call_fn(budget, fn, item, index)


def _slice_bounds(length: int, args: list[Any]) -> tuple[int, int]:
    def position(value: Any, default: int) -> int:
        if value is UNDEFINED:
            return default
        number = to_num(value)
        if math.isnan(number):
            return 0
        index = int(number) if math.isfinite(number) else (length if number > 0 else -length)
        return max(0, length + index) if index < 0 else min(index, length)

    return position(arg(args, 0), 0), position(arg(args, 1), length)


def _each_reversed(budget: Budget, items: list[Any], fn: Any) -> Iterator[tuple[int, Any, Any]]:
    for index in range(len(items) - 1, -1, -1):
        yield index, items[index], call_fn(budget, fn, items[index], index)


def _reduce(budget: Budget, items: list[Any], args: list[Any], reversed_from: int = 0) -> Any:
    fn = arg(args, 0)
    rest = list(items)
    if len(args) > 1:
        accumulator = args[1]
    elif rest:
        accumulator = rest.pop(0)
    else:
        raise fail("reduce of an empty array with no initial value")
    offset = len(items) - len(rest)
    for index, item in enumerate(rest):
        position = index + offset  # reduceRight walks a reversed copy but reports original indexes
        original = reversed_from - 1 - position if reversed_from else position
        accumulator = call_fn(budget, fn, accumulator, item, original)
    return accumulator


def _sort(budget: Budget, items: list[Any], args: list[Any]) -> Any:
    check_writable(budget, items)
    fn = arg(args, 0)
    budget.charge(len(items) * max(1, len(items).bit_length()))
    if fn is UNDEFINED:
        # Array.prototype.sort's default order compares strings ([10, 2] stays [10, 2]);
        # undefined sorts last.
        items.sort(key=lambda item: (item is UNDEFINED, "" if item is UNDEFINED else to_string(item)))
    else:
        def compare(left: Any, right: Any) -> int:
            order = to_num(call_fn(budget, fn, left, right))
            return 0 if math.isnan(order) else (order > 0) - (order < 0)

        items.sort(key=cmp_to_key(compare))
    return items


def _splice(budget: Budget, items: list[Any], args: list[Any]) -> Any:
    check_writable(budget, items)
    start, _ = _slice_bounds(len(items), [arg(args, 0)])
    count = len(items) - start if len(args) < 2 else max(0, min(to_integer(args[1]), len(items) - start))
    removed = items[start:start + count]
    items[start:start + count] = args[2:]
    budget.charge(len(items))
    return removed


def _push(budget: Budget, items: list[Any], args: list[Any]) -> Any:
    check_writable(budget, items)
    items.extend(args)
    return len(items)


def _index_of(budget: Budget, items: Any, args: list[Any]) -> int:
    budget.charge(len(items))
    if type(items) is str:
        return items.find(to_string(arg(args, 0)))
    target = arg(args, 0)
    return next((index for index, item in enumerate(items) if strict_equals(item, target)), -1)


def _last_index_of(budget: Budget, items: list[Any], args: list[Any]) -> int:
    budget.charge(len(items))
    target = arg(args, 0)
    return next((index for index in range(len(items) - 1, -1, -1) if strict_equals(items[index], target)), -1)


def _join(budget: Budget, items: list[Any], args: list[Any]) -> str:
    separator = "," if arg(args, 0) is UNDEFINED else to_string(args[0])
    budget.charge(len(items))
    return text_limit(separator.join("" if item is None or item is UNDEFINED else to_string(item) for item in items))


def _flat(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    budget.charge(len(items))
    result: list[Any] = []
    for item in items:
        if type(item) is list:
            result.extend(item)
        else:
            result.append(item)
    return result


def _at(budget: Budget, items: Any, args: list[Any]) -> Any:
    index = to_integer(arg(args, 0))
    index = index + len(items) if index < 0 else index
    return items[index] if 0 <= index < len(items) else UNDEFINED


def _reverse(budget: Budget, items: list[Any]) -> list[Any]:
    check_writable(budget, items)
    items.reverse()
    return items


def _unshift(budget: Budget, items: list[Any], args: list[Any]) -> int:
    _splice(budget, items, [0, 0, *args])
    return len(items)


def _take_out(budget: Budget, items: list[Any], index: int) -> Any:
    check_writable(budget, items)
    return items.pop(index) if items else UNDEFINED


_ARRAY_METHODS: dict[str, Method] = {
    "map": lambda budget, items, args: [result for _, _, result in _each(budget, items, arg(args, 0))],
    "filter": lambda budget, items, args: [item for _, item, keep in _each(budget, items, arg(args, 0))
                                           if truthy(keep)],
    "find": lambda budget, items, args: next(
        (item for _, item, hit in _each(budget, items, arg(args, 0)) if truthy(hit)), UNDEFINED),
    "findIndex": lambda budget, items, args: next(
        (index for index, _, hit in _each(budget, items, arg(args, 0)) if truthy(hit)), -1),
    "some": lambda budget, items, args: any(truthy(hit) for _, _, hit in _each(budget, items, arg(args, 0))),
    "every": lambda budget, items, args: all(truthy(hit) for _, _, hit in _each(budget, items, arg(args, 0))),
    "forEach": lambda budget, items, args: [None for _ in _each(budget, items, arg(args, 0))] and UNDEFINED,
    "reduce": _reduce,
    "includes": lambda budget, items, args: _index_of(budget, items, args) >= 0,
    "indexOf": _index_of,
    "join": _join,
    "slice": lambda budget, items, args: items[slice(*_slice_bounds(len(items), args))],
    "concat": lambda budget, items, args: items + [x for part in args
                                                   for x in (part if type(part) is list else [part])],
    "flat": _flat,
    "flatMap": lambda budget, items, args: _flat(budget, [out for _, _, out in _each(budget, items, arg(args, 0))], []),
    "at": _at,
    "sort": _sort,
    "toSorted": lambda budget, items, args: _sort(budget, list(items), args),
    "reverse": lambda budget, items, args: _reverse(budget, items),
    "toReversed": lambda budget, items, args: items[::-1],
    "push": _push,
    "pop": lambda budget, items, args: _take_out(budget, items, -1),
    "shift": lambda budget, items, args: _take_out(budget, items, 0),
    "unshift": _unshift,
    "splice": _splice,
    "lastIndexOf": _last_index_of,
    "findLast": lambda budget, items, args: next(
        (item for index, item, hit in _each_reversed(budget, items, arg(args, 0)) if truthy(hit)), UNDEFINED),
    "findLastIndex": lambda budget, items, args: next(
        (index for index, _, hit in _each_reversed(budget, items, arg(args, 0)) if truthy(hit)), -1),
    "reduceRight": lambda budget, items, args: _reduce(budget, items[::-1], args, reversed_from=len(items)),
    "entries": lambda budget, items, args: [[index, item] for index, item in enumerate(items)],
    "keys": lambda budget, items, args: list(range(len(items))),
    "values": lambda budget, items, args: list(items),
}


def _code_at(text: str, args: list[Any], *, utf16: bool) -> Any:
    position = to_num(arg(args, 0)) if arg(args, 0) is not UNDEFINED else 0
    index = 0 if position != position else int(position)
    if not 0 <= index < len(text):
        return math.nan if utf16 else UNDEFINED
    point = ord(text[index])
    return 0xD800 + ((point - 0x10000) >> 10) if utf16 and point > 0xFFFF else point


def _char_at(text: str, args: list[Any]) -> str:
    position = to_num(arg(args, 0)) if arg(args, 0) is not UNDEFINED else 0
    index = 0 if position != position else int(position)  # NaN counts as 0
    return text[index] if 0 <= index < len(text) else ""


def _split(budget: Budget, text: str, args: list[Any]) -> list[str]:
    separator = arg(args, 0)
    budget.charge(len(text))
    if separator is UNDEFINED:
        return [text]
    if type(separator) is not str:
        raise MvuError(Code.UNSUPPORTED, "split needs a string separator")
    return list(text) if separator == "" else text.split(separator)


def _replace(every: bool) -> Method:
    def replace(budget: Budget, text: str, args: list[Any]) -> str:
        pattern, replacement = arg(args, 0), arg(args, 1)
        if type(pattern) is not str or type(replacement) is not str:
            raise MvuError(Code.UNSUPPORTED, "replace needs a string pattern and a string replacement")
        budget.charge(len(text))
        return text_limit(text.replace(pattern, replacement, -1 if every else 1))

    return replace


def _pad(at_start: bool) -> Method:
    def pad(budget: Budget, text: str, args: list[Any]) -> str:
        width = to_integer(arg(args, 0))
        filler = " " if arg(args, 1) is UNDEFINED else to_string(args[1])
        missing = width - js_length(text)
        if missing <= 0 or not filler:
            return text
        budget.charge(missing)  # before building: a huge width runs out of fuel first
        padding = (filler * (missing // len(filler) + 1))[:missing]
        return padding + text if at_start else text + padding

    return pad


def _repeat(budget: Budget, text: str, args: list[Any]) -> str:
    count = to_integer(arg(args, 0))
    if count < 0:
        raise fail("invalid repeat count")
    budget.charge(len(text) * count)
    return text_limit(text * count)


_STRING_METHODS: dict[str, Method] = {
    "trim": lambda budget, text, args: text.strip(),
    "trimStart": lambda budget, text, args: text.lstrip(),
    "trimEnd": lambda budget, text, args: text.rstrip(),
    "toLowerCase": lambda budget, text, args: text.lower(),
    "toUpperCase": lambda budget, text, args: text.upper(),
    "includes": lambda budget, text, args: to_string(arg(args, 0)) in text,
    "startsWith": lambda budget, text, args: text.startswith(to_string(arg(args, 0))),
    "endsWith": lambda budget, text, args: text.endswith(to_string(arg(args, 0))),
    "indexOf": _index_of,
    "slice": lambda budget, text, args: text[slice(*_slice_bounds(len(text), args))],
    "substring": lambda budget, text, args: text[slice(*sorted(_slice_bounds(len(text), [
        max(0, to_num(arg(args, 0))) if arg(args, 0) is not UNDEFINED else 0,
        max(0, to_num(arg(args, 1))) if arg(args, 1) is not UNDEFINED else UNDEFINED])))],
    "split": _split,
    "replace": _replace(False),
    "replaceAll": _replace(True),
    "padStart": _pad(True),
    "padEnd": _pad(False),
    "repeat": _repeat,
    "charAt": lambda budget, text, args: _char_at(text, args),
    "at": _at,
    "concat": lambda budget, text, args: text_limit(text + "".join(to_string(part) for part in args)),
    "toString": lambda budget, text, args: text,
    "localeCompare": lambda budget, text, args: js_compare(text, to_string(arg(args, 0))),
    "lastIndexOf": lambda budget, text, args: text.rfind(to_string(arg(args, 0))),
    "charCodeAt": lambda budget, text, args: _code_at(text, args, utf16=True),
    "codePointAt": lambda budget, text, args: _code_at(text, args, utf16=False),
    "trimLeft": lambda budget, text, args: text.lstrip(),
    "trimRight": lambda budget, text, args: text.rstrip(),
}


_BOOLEAN_METHODS: dict[str, Method] = {
    "toString": lambda budget, value, args: to_string(value),
    "valueOf": lambda budget, value, args: value,
}
