"""lodash's ordering: ``sortBy``, ``orderBy`` and the binary searches ``sortedIndex``,
``sortedLastIndex`` (and their ``By`` forms).

lodash orders values in two tiers: defined, non-null, non-NaN values compare with JavaScript's
``<``/``>`` (arrays and objects as their text), and after them come ``null``, then ``undefined``,
then ``NaN``. A sort is stable and a ``'desc'`` order flips the comparison of its key only.
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import Any

from mvu_store.js.values import UNDEFINED, Budget, arg, is_number, to_string
from mvu_store.schema.builtins import collection, make_mapper
from mvu_store.schema.operators import BINARY

_LESS, _GREATER, _AT_MOST = BINARY["<"], BINARY[">"], BINARY["<="]


def primitive(value: Any) -> Any:
    """JavaScript's ToPrimitive for lodash's ``+``, ``/``, ``<``: an array or object as its text."""
    return to_string(value) if type(value) is list or type(value) is dict else value


def _nan(value: Any) -> bool:
    return type(value) is float and value != value


def _tier(value: Any) -> int:
    if value is None:
        return 1
    if value is UNDEFINED:
        return 2
    return 3 if _nan(value) else 0


def compare_ascending(left: Any, right: Any) -> int:
    """lodash's ascending order of two iteratee values (0: keep their order)."""
    left_tier, right_tier = _tier(left), _tier(right)
    if left_tier or right_tier:
        return (left_tier > right_tier) - (left_tier < right_tier)
    left, right = primitive(left), primitive(right)
    if _GREATER(left, right):
        return 1
    return -1 if _LESS(left, right) else 0


def _iteratees(keys: Any) -> list[Any]:
    if type(keys) is list:
        return keys or [UNDEFINED]
    return [keys]


def _directions(orders: Any, count: int) -> list[int]:
    listed = orders if type(orders) is list else ([] if orders is None or orders is UNDEFINED else [orders])
    return [-1 if index < len(listed) and listed[index] == "desc" else 1 for index in range(count)]


def ordered(budget: Budget, items: Any, keys: Any, orders: Any) -> list[Any]:
    """The items of a collection sorted by each key (a path or a function of the item alone)."""
    values = [item for _, item in collection(budget, items)]
    mappers = [make_mapper(budget, key) for key in _iteratees(keys)]
    directions = _directions(orders, len(mappers))
    budget.charge(len(values) * max(1, len(values).bit_length()))
    decorated = [[mapper(item, UNDEFINED) for mapper in mappers] for item in values]

    def compare(left: int, right: int) -> int:
        for a, b, direction in zip(decorated[left], decorated[right], directions, strict=True):
            order = compare_ascending(a, b)
            if order:
                return order * direction
        return 0

    return [values[index] for index in sorted(range(len(values)), key=cmp_to_key(compare))]


def sort_by(budget: Budget, args: list[Any]) -> Any:
    """``_.sortBy(collection, ...iteratees)``: the iteratees may be listed or spread."""
    keys = [key for part in args[1:] for key in (part if type(part) is list else [part])]
    return ordered(budget, arg(args, 0), keys or UNDEFINED, UNDEFINED)


def order_by(budget: Budget, args: list[Any]) -> Any:
    return ordered(budget, arg(args, 0), arg(args, 1), arg(args, 2))


def _goes_after(item: Any, value: Any, *, last: bool) -> bool:
    """Whether ``value``'s place is after ``item`` (lodash's search over iteratee values)."""
    if _nan(value):
        return last or not _nan(item)
    if value is UNDEFINED:
        return not _nan(item) and (last or item is not UNDEFINED)
    if value is None:
        return not _nan(item) and item is not UNDEFINED and (last or item is not None)
    if item is None or item is UNDEFINED or _nan(item):
        return False
    return bool((_AT_MOST if last else _LESS)(primitive(item), primitive(value)))


def sorted_index(budget: Budget, items: list[Any], value: Any, *, last: bool, by: bool = False) -> int:
    """The binary-search position of ``value`` in ``items`` (after equal ones when ``last``);
    a plain number is searched with ``<`` alone (``null`` items stop it), as lodash does."""
    budget.charge(len(items).bit_length() + 1)
    plain = not by and is_number(value) and not _nan(value)
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        item = items[middle]
        if plain:
            after = item is not None and bool((_AT_MOST if last else _LESS)(primitive(item), value))
        else:
            after = _goes_after(item, value, last=last)
        if after:
            low = middle + 1
        else:
            high = middle
    return high
