"""lodash's helpers that take a comparator or a trailing iteratee: ``differenceWith``,
``intersectionWith``, ``unionWith``, ``zipWith``, ``unzipWith``, ``pullAllBy``, ``sortedIndexBy``.

A comparator is called as lodash calls it, ``comparator(value, other)``, once per pair it has to
look at (each call is charged); without one, values compare with SameValueZero.
"""

from __future__ import annotations

from typing import Any

from mvu_store.js.members import check_writable
from mvu_store.js.values import UNDEFINED, Budget, Builtin, JsCallable, arg, same_value_key, truthy
from mvu_store.schema.builtins import call_fn, lodash_array, make_mapper
from mvu_store.schema.lodash_order import sorted_index


def _includes_with(budget: Budget, comparator: Any, items: list[Any], value: Any) -> bool:
    """lodash's ``arrayIncludesWith`` (or ``arrayIncludes`` without a comparator)."""
    budget.charge(len(items))
    if comparator is UNDEFINED:
        key = same_value_key(value)
        return any(same_value_key(other) == key for other in items)
    return any(truthy(call_fn(budget, comparator, value, other)) for other in items)


def _arrays(values: list[Any]) -> list[list[Any]]:
    return [value for value in values if type(value) is list]


def _difference_with(budget: Budget, args: list[Any]) -> list[Any]:
    array, values = arg(args, 0), list(args[1:])
    comparator = values[-1] if values and type(values[-1]) is not list else UNDEFINED
    if type(array) is not list:
        return []
    excluded = [item for part in _arrays(values) for item in part]
    return [item for item in array if not _includes_with(budget, comparator, excluded, item)]


def _intersection_with(budget: Budget, args: list[Any]) -> list[Any]:
    arrays = list(args)
    comparator = UNDEFINED
    if arrays and type(arrays[-1]) is not list:
        comparator = arrays.pop()
    if not arrays or type(arrays[0]) is not list:
        return []
    others = [part if type(part) is list else [] for part in arrays[1:]]
    result: list[Any] = []
    for item in arrays[0]:
        if not _includes_with(budget, comparator, result, item) and all(
                _includes_with(budget, comparator, part, item) for part in others):
            result.append(item)
    return result


def _unique_with(budget: Budget, comparator: Any, items: list[Any]) -> list[Any]:
    """lodash's ``baseUniq`` with a comparator: keep an item no kept one matches."""
    result: list[Any] = []
    for item in items:
        if not _includes_with(budget, comparator, result, item):
            result.append(item)
    return result


def _union_with(budget: Budget, args: list[Any]) -> list[Any]:
    comparator = arg(args, len(args) - 1) if args else UNDEFINED
    comparator = comparator if isinstance(comparator, JsCallable) else UNDEFINED
    return _unique_with(budget, comparator, [item for part in _arrays(list(args)) for item in part])


def _unzip_with(budget: Budget, array: Any, iteratee: Any) -> list[Any]:
    if type(array) is not list or not array:
        return []
    lists = _arrays(array)
    width = max((len(part) for part in lists), default=0)
    budget.charge(width * max(1, len(lists)))
    groups = [[part[index] if index < len(part) else UNDEFINED for part in lists] for index in range(width)]
    if iteratee is None or iteratee is UNDEFINED:
        return groups
    return [call_fn(budget, iteratee, *group) for group in groups]


def _zip_with(budget: Budget, args: list[Any]) -> list[Any]:
    arrays = list(args)
    iteratee = arrays.pop() if len(arrays) > 1 and isinstance(arrays[-1], JsCallable) else UNDEFINED
    return _unzip_with(budget, arrays, iteratee)


def _pull_all_by(budget: Budget, args: list[Any]) -> Any:
    """``pullAllBy(array, values, iteratee)``: remove (in place) the items whose iteratee value is
    one of the values' (SameValueZero)."""
    array, values = arg(args, 0), arg(args, 1)
    if type(array) is not list or not array or type(values) is not list or not values:
        return array
    check_writable(budget, array)
    get = make_mapper(budget, arg(args, 2))
    excluded = {same_value_key(get(value, UNDEFINED)) for value in values}
    budget.charge(len(array))
    array[:] = [item for item in array if same_value_key(get(item, UNDEFINED)) not in excluded]
    return array


def _sorted_index_by(budget: Budget, args: list[Any]) -> Any:
    """``sortedIndexBy``: ``sortedIndex`` over the iteratee's values."""
    get = make_mapper(budget, arg(args, 2))
    items = arg(args, 0) if type(arg(args, 0)) is list else []
    keys = [get(item, UNDEFINED) for item in items]
    return sorted_index(budget, keys, get(arg(args, 1), UNDEFINED), last=False, by=True)


COMPARATOR_HELPERS: dict[str, Builtin] = {
    "differenceWith": Builtin("differenceWith", _difference_with),
    "intersectionWith": Builtin("intersectionWith", _intersection_with),
    "unionWith": Builtin("unionWith", _union_with),
    "zipWith": Builtin("zipWith", _zip_with),
    "unzipWith": Builtin("unzipWith", lambda budget, args: _unzip_with(budget, arg(args, 0), arg(args, 1))),
    "uniqWith": Builtin("uniqWith", lambda budget, args: _unique_with(
        budget, arg(args, 1), lodash_array(budget, arg(args, 0)))),
    "pullAllBy": Builtin("pullAllBy", _pull_all_by),
    "sortedIndexBy": Builtin("sortedIndexBy", _sorted_index_by),
}
