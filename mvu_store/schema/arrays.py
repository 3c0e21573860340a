"""``Array.prototype`` and ``Array``'s statics.

Arrays stay dense (S-7): an elision or ``Array(n)`` holds ``undefined`` where JavaScript keeps a
hole, which JSON writes the same way (``null``). Mutating methods check that the array is the
declaration's to change; every method charges the budget for what it touches or builds, so
``Array(1e9)`` or a huge ``join`` end in ``MVU_LIMIT``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import cmp_to_key
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.members import check_writable
from mvu_store.js.strings import units
from mvu_store.js.values import (
    MAX_TEXT,
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    arg,
    fail,
    same_value_key,
    strict_equals,
    text_limit,
    to_string,
    truthy,
)
from mvu_store.schema.numeric import range_error, to_integer, to_num

Method = Callable[[Budget, list[Any], list[Any]], Any]
MAX_ITEMS = 1 << 20
"""Longest array a declaration may build (a state is at most 2 MiB of JSON anyway)."""


def size_limit(budget: Budget, count: int) -> int:
    """``count`` new items, paid for, or ``MVU_LIMIT`` beyond :data:`MAX_ITEMS`."""
    if count > MAX_ITEMS:
        raise MvuError(Code.LIMIT, f"an array grew beyond {MAX_ITEMS} items", limit=MAX_ITEMS, kind="array")
    budget.charge(count)
    return count


def call(budget: Budget, fn: Any, *args: Any) -> Any:
    if not isinstance(fn, JsCallable):
        raise fail("callback is not a function")
    return fn.call(budget, list(args))


def _each(budget: Budget, items: list[Any], fn: Any, backwards: bool = False) -> Iterator[tuple[int, Any, Any]]:
    """(index, item, fn(item, index, array)) over the array as it was when the walk began."""
    if not isinstance(fn, JsCallable):
        raise fail(f"{to_string(fn) if fn is UNDEFINED else 'callback'} is not a function")
    snapshot = list(items)
    order = range(len(snapshot) - 1, -1, -1) if backwards else range(len(snapshot))
    for index in order:
        yield index, snapshot[index], fn.call(budget, [snapshot[index], index, items])


def relative(value: Any, length: int, default: int) -> int:
    """A relative index (``slice``, ``splice``, ``fill``): negative counts from the end."""
    if value is UNDEFINED:
        return default
    index = to_integer(value)
    return max(0, length + index) if index < 0 else min(index, length)


def _from_index(items: list[Any], args: list[Any]) -> int:
    return relative(arg(args, 1), len(items), 0)


def _index_of(budget: Budget, items: list[Any], args: list[Any]) -> int:
    budget.charge(len(items))
    target = arg(args, 0)
    start = _from_index(items, args)
    return next((index for index in range(start, len(items)) if strict_equals(items[index], target)), -1)


def _includes(budget: Budget, items: list[Any], args: list[Any]) -> bool:
    budget.charge(len(items))
    target = same_value_key(arg(args, 0))
    return any(same_value_key(items[index]) == target for index in range(_from_index(items, args), len(items)))


def _last_index_of(budget: Budget, items: list[Any], args: list[Any]) -> int:
    budget.charge(len(items))
    target = arg(args, 0)
    start = len(items) - 1
    if len(args) > 1:
        position = to_integer(args[1])
        start = min(position, len(items) - 1) if position >= 0 else len(items) + position
    return next((index for index in range(start, -1, -1) if strict_equals(items[index], target)), -1)


def join_items(budget: Budget, items: list[Any], separator: str) -> str:
    budget.charge(len(items))
    if len(items) * len(separator) > MAX_TEXT:
        text_limit(" " * (MAX_TEXT + 1))
    return text_limit(separator.join("" if item is None or item is UNDEFINED else to_string(item) for item in items))


def _join(budget: Budget, items: list[Any], args: list[Any]) -> str:
    return join_items(budget, items, "," if arg(args, 0) is UNDEFINED else to_string(args[0]))


def _flatten(budget: Budget, items: list[Any], depth: int) -> list[Any]:
    budget.charge(len(items))
    result: list[Any] = []
    for item in items:
        if type(item) is list and depth > 0:
            result.extend(_flatten(budget, item, depth - 1))
        else:
            result.append(item)
    return result


def _flat(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    depth = 1 if arg(args, 0) is UNDEFINED else to_integer(args[0])
    return _flatten(budget, items, min(depth, 64))


def _sorted(budget: Budget, items: list[Any], fn: Any) -> list[Any]:
    """Array.prototype.sort's order: undefined last and never compared; without a comparator,
    by the items' strings (``[10, 2]`` stays ``[10, 2]``); stable."""
    if fn is not UNDEFINED and not isinstance(fn, JsCallable):
        raise fail("The comparison function must be either a function or undefined")
    budget.charge(len(items) * max(1, len(items).bit_length()))
    present = [item for item in items if item is not UNDEFINED]
    missing = [UNDEFINED] * (len(items) - len(present))
    if fn is UNDEFINED:
        present.sort(key=lambda item: units(to_string(item)))
    else:
        def compare(left: Any, right: Any) -> int:
            order = to_num(fn.call(budget, [left, right]))
            return 0 if math.isnan(order) else (order > 0) - (order < 0)

        present.sort(key=cmp_to_key(compare))
    return present + missing


def _sort(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    check_writable(budget, items)
    items[:] = _sorted(budget, items, arg(args, 0))
    return items


def _splice_parts(items: list[Any], args: list[Any]) -> tuple[int, int]:
    start = relative(arg(args, 0), len(items), 0)
    if not args:
        return start, 0
    count = len(items) - start if len(args) < 2 else max(0, min(to_integer(args[1]), len(items) - start))
    return start, count


def _splice(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    check_writable(budget, items)
    start, count = _splice_parts(items, args)
    size_limit(budget, len(items) + len(args))
    removed = items[start:start + count]
    items[start:start + count] = args[2:]
    return removed


def _to_spliced(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    start, count = _splice_parts(items, args)
    size_limit(budget, len(items) + len(args))
    return items[:start] + list(args[2:]) + items[start + count:]


def _fill(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    check_writable(budget, items)
    start, end = relative(arg(args, 1), len(items), 0), relative(arg(args, 2), len(items), len(items))
    budget.charge(len(items))
    for index in range(start, end):
        items[index] = arg(args, 0)
    return items


def _copy_within(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    check_writable(budget, items)
    length = len(items)
    target, start = relative(arg(args, 0), length, 0), relative(arg(args, 1), length, 0)
    end = relative(arg(args, 2), length, length)
    count = min(end - start, length - target)
    if count > 0:
        budget.charge(count)
        items[target:target + count] = items[start:start + count]
    return items


def _with(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    index = to_integer(arg(args, 0))
    position = index + len(items) if index < 0 else index
    if not 0 <= position < len(items):
        raise range_error("Invalid index")
    copy = list(items)
    copy[position] = arg(args, 1)
    return copy


def _at(budget: Budget, items: list[Any], args: list[Any]) -> Any:
    index = to_integer(arg(args, 0))
    index = index + len(items) if index < 0 else index
    return items[index] if 0 <= index < len(items) else UNDEFINED


def _push(budget: Budget, items: list[Any], args: list[Any]) -> int:
    check_writable(budget, items)
    size_limit(budget, len(items) + len(args))
    items.extend(args)
    return len(items)


def _unshift(budget: Budget, items: list[Any], args: list[Any]) -> int:
    check_writable(budget, items)
    size_limit(budget, len(items) + len(args))
    items[0:0] = args
    return len(items)


def _take_out(index: int) -> Method:
    def take(budget: Budget, items: list[Any], args: list[Any]) -> Any:
        check_writable(budget, items)
        return items.pop(index) if items else UNDEFINED

    return take


def _reverse(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    check_writable(budget, items)
    items.reverse()
    return items


def _reduce(backwards: bool) -> Method:
    def reduce(budget: Budget, items: list[Any], args: list[Any]) -> Any:
        fn = arg(args, 0)
        if not isinstance(fn, JsCallable):
            raise fail("reducer is not a function")
        order = list(range(len(items) - 1, -1, -1) if backwards else range(len(items)))
        if len(args) > 1:
            accumulator = args[1]
        elif order:
            accumulator = items[order.pop(0)]
        else:
            raise fail("Reduce of empty array with no initial value")
        snapshot = list(items)
        for index in order:
            accumulator = fn.call(budget, [accumulator, snapshot[index], index, items])
        return accumulator

    return reduce


def _concat(budget: Budget, items: list[Any], args: list[Any]) -> list[Any]:
    result = list(items)
    for part in args:
        if type(part) is list:
            result.extend(part)
        else:
            result.append(part)
    size_limit(budget, len(result))
    return result


def _find(backwards: bool, want_index: bool) -> Method:
    def find(budget: Budget, items: list[Any], args: list[Any]) -> Any:
        for index, item, hit in _each(budget, items, arg(args, 0), backwards):
            if truthy(hit):
                return index if want_index else item
        return -1 if want_index else UNDEFINED

    return find


ARRAY_METHODS: dict[str, Method] = {
    "at": _at,
    "concat": _concat,
    "copyWithin": _copy_within,
    "entries": lambda budget, items, args: [[index, item] for index, item in enumerate(items)],
    "every": lambda budget, items, args: all(truthy(hit) for _, _, hit in _each(budget, items, arg(args, 0))),
    "fill": _fill,
    "filter": lambda budget, items, args: [
        item for _, item, keep in _each(budget, items, arg(args, 0)) if truthy(keep)],
    "find": _find(backwards=False, want_index=False),
    "findIndex": _find(backwards=False, want_index=True),
    "findLast": _find(backwards=True, want_index=False),
    "findLastIndex": _find(backwards=True, want_index=True),
    "flat": _flat,
    "flatMap": lambda budget, items, args: _flatten(
        budget, [out for _, _, out in _each(budget, items, arg(args, 0))], 1),
    "forEach": lambda budget, items, args: [None for _ in _each(budget, items, arg(args, 0))] and UNDEFINED,
    "includes": _includes,
    "indexOf": _index_of,
    "join": _join,
    "keys": lambda budget, items, args: list(range(len(items))),
    "lastIndexOf": _last_index_of,
    "map": lambda budget, items, args: [result for _, _, result in _each(budget, items, arg(args, 0))],
    "pop": _take_out(-1),
    "push": _push,
    "reduce": _reduce(backwards=False),
    "reduceRight": _reduce(backwards=True),
    "reverse": _reverse,
    "shift": _take_out(0),
    "slice": lambda budget, items, args: items[relative(arg(args, 0), len(items), 0):
                                               relative(arg(args, 1), len(items), len(items))],
    "some": lambda budget, items, args: any(truthy(hit) for _, _, hit in _each(budget, items, arg(args, 0))),
    "sort": _sort,
    "splice": _splice,
    "toLocaleString": lambda budget, items, args: join_items(budget, items, ","),
    "toReversed": lambda budget, items, args: items[::-1],
    "toSorted": lambda budget, items, args: _sorted(budget, list(items), arg(args, 0)),
    "toSpliced": _to_spliced,
    "toString": lambda budget, items, args: join_items(budget, items, ","),
    "unshift": _unshift,
    "values": lambda budget, items, args: list(items),
    "with": _with,
}
"""The whole of ``Array.prototype`` (``keys``/``values``/``entries`` give arrays, which spread
and iterate as their iterators do)."""


def _array(budget: Budget, args: list[Any]) -> list[Any]:
    """``Array(n)`` / ``new Array(n)``: n undefined items; ``Array(a, b)``: the items."""
    if len(args) == 1 and type(args[0]) in (int, float):
        count = args[0]
        if not (count >= 0 and float(count).is_integer() and count < 2**32):
            raise range_error("Invalid array length")
        return [UNDEFINED] * size_limit(budget, int(count))
    return list(args)


def array_from(budget: Budget, args: list[Any], items: list[Any]) -> list[Any]:
    fn = arg(args, 1)
    return items if fn is UNDEFINED else [call(budget, fn, item, index) for index, item in enumerate(items)]


def array_like(budget: Budget, source: Any) -> list[Any]:
    """What ``Array.from`` reads from ``{length: n}``: n undefined items (or the indexed ones)."""
    count = to_integer(source.get("length", 0))
    return [source.get(str(index), UNDEFINED) for index in range(size_limit(budget, max(0, count)))]


def make_array(from_fn: Callable[[Budget, list[Any]], Any]) -> Builtin:
    return Builtin("Array", _array, {
        "isArray": Builtin("isArray", lambda budget, args: type(arg(args, 0)) is list),
        "from": Builtin("from", from_fn),
        "of": Builtin("of", lambda budget, args: list(args)),
    })
