"""More of lodash's pure functions: math and comparison, type checks, conversions, the
``forOwn``/``forIn`` family, the ``*While`` slicers, case conversions and HTML escaping.

lodash.py keeps the helpers cards call most; these complete the documented families that can be
pure (nothing here reads the clock, chance or the environment).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from typing import Any

from mvu_store.js.members import check_writable, data_member, own_keys, safe_key
from mvu_store.js.numbers import WHITESPACE
from mvu_store.js.values import (
    MAX_SAFE_INTEGER,
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    arg,
    fail,
    is_number,
    loose_equals,
    same_value_key,
    to_string,
    truthy,
)
from mvu_store.schema.arrays import join_items, relative, size_limit
from mvu_store.schema.builtins import (
    call_fn,
    collection,
    has_key,
    item_string,
    lodash_array,
    lodash_string,
    make_mapper,
    make_predicate,
    matches_source,
    path_parts,
    read_path,
)
from mvu_store.schema.dates import JsDate
from mvu_store.schema.lodash_order import sorted_index
from mvu_store.schema.lodash_paths import index_of
from mvu_store.schema.maps import JsMap
from mvu_store.schema.numeric import to_integer, to_num
from mvu_store.schema.operators import BINARY

Fn = Callable[[Budget, list[Any]], Any]


def _lodash_number(value: Any) -> float | int:
    return to_num(value) if value is not UNDEFINED else math.nan


def _arithmetic(operator: str, default: int) -> Fn:
    """``_.add``/``subtract``/``multiply``/``divide``: one undefined side gives the other, both
    give ``default``; strings on either side concatenate as text (lodash's baseToString)."""
    apply = BINARY[operator]

    def calculate(budget: Budget, args: list[Any]) -> Any:
        left, right = arg(args, 0), arg(args, 1)
        if left is UNDEFINED and right is UNDEFINED:
            return default
        if left is UNDEFINED:
            return right
        if right is UNDEFINED:
            return left
        if type(left) is str or type(right) is str:
            left, right = item_string(left), item_string(right)
            if operator == "+":
                return left + right
        return _signed_zero(apply, to_num(left), to_num(right), product=operator == "*")

    return calculate


def _signed_zero(apply: Callable[[Any, Any], Any], left: float | int, right: float | int, *, product: bool) -> Any:
    """``apply(left, right)`` with IEEE's sign on a zero product (``0 * -1`` is -0 in JavaScript,
    where Python's integers have no -0)."""
    result = apply(left, right)
    if product and result == 0 and type(result) is int and math.copysign(1, left) * math.copysign(1, right) < 0:
        return -0.0
    return result


def _compare(test: Callable[[Any, Any], bool]) -> Fn:
    def compare(budget: Budget, args: list[Any]) -> bool:
        left, right = arg(args, 0), arg(args, 1)
        if not (type(left) is str and type(right) is str):
            left, right = to_num(left), to_num(right)
        return test(left, right)

    return compare


def _for_each(keys_of: Callable[[Budget, Any], list[tuple[Any, Any]]], backwards: bool) -> Fn:
    """``forOwn``/``forIn``/``forEachRight``/``forOwnRight``: stop when the callback returns false."""
    def walk(budget: Budget, args: list[Any]) -> Any:
        target, fn = arg(args, 0), arg(args, 1)
        pairs = keys_of(budget, target)
        for key, item in reversed(pairs) if backwards else pairs:
            if isinstance(fn, JsCallable) and fn.call(budget, [item, key, target]) is False:
                break
        return target

    return walk


def _own_pairs(budget: Budget, value: Any) -> list[tuple[Any, Any]]:
    if type(value) is dict:
        return [(key, value[key]) for key in own_keys(value)]
    return [(str(key), item) for key, item in collection(budget, value)]


def _while(from_end: bool, take: bool) -> Fn:
    """``takeWhile``/``dropWhile`` and their ``Right`` forms over an array-like (a string's
    characters too): the iteratee sees (item, index)."""
    def slicer(budget: Budget, args: list[Any]) -> Any:
        items = lodash_array(budget, arg(args, 0))
        test = make_predicate(budget, arg(args, 1))
        order = range(len(items) - 1, -1, -1) if from_end else range(len(items))
        count = 0
        for index in order:
            if not test(items[index], index):
                break
            count += 1
        if take:
            return items[len(items) - count:] if from_end else items[:count]
        return items[:len(items) - count] if from_end else items[count:]

    return slicer


def _flatten_deep(items: list[Any], budget: Budget) -> list[Any]:
    result: list[Any] = []
    budget.charge(len(items))
    for item in items:
        result.extend(_flatten_deep(item, budget) if type(item) is list else [item])
    return result


def _uniq_by(budget: Budget, args: list[Any]) -> Any:
    items = lodash_array(budget, arg(args, 0))
    mapper = make_mapper(budget, arg(args, 1))
    seen: set[tuple[str, Any]] = set()
    result = []
    for item in items:
        key = same_value_key(mapper(item, UNDEFINED))  # lodash passes the item alone
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


def _sorted_uniq(budget: Budget, args: list[Any]) -> Any:
    """``sortedUniq``/``sortedUniqBy``: drop an item whose iteratee value equals (SameValueZero)
    the last kept one's; lodash writes a kept -0 as 0."""
    get = make_mapper(budget, arg(args, 1))
    result: list[Any] = []
    last: Any = None
    for index, item in enumerate(lodash_array(budget, arg(args, 0))):
        computed = same_value_key(get(item, UNDEFINED))
        if not index or computed != last:
            last = computed
            result.append(0 if is_number(item) and item == 0 else item)
    return result


def _sorted_index_of(budget: Budget, args: list[Any]) -> int:
    """``sortedIndexOf``: the binary-search position, where the item there equals the value."""
    items, value = lodash_array(budget, arg(args, 0)), arg(args, 1)
    index = sorted_index(budget, items, value, last=False)
    return index if index < len(items) and same_value_key(items[index]) == same_value_key(value) else -1


def _conforms_to(budget: Budget, args: list[Any]) -> bool:
    """``conformsTo``: each of the source's predicates (last key first) holds for the value at
    its key, which must exist."""
    target, source = arg(args, 0), arg(args, 1)
    if source is None or source is UNDEFINED:
        return True
    pairs = collection(budget, source)
    if target is None or target is UNDEFINED:
        return not pairs
    for key, predicate in reversed(pairs):
        name = to_string(key)
        value = data_member(target, name) if type(target) in (dict, list, str) else UNDEFINED
        if (value is UNDEFINED and not has_key(target, name)) or not truthy(call_fn(budget, predicate, value)):
            return False
    return True


def _zip(budget: Budget, arrays: list[Any]) -> list[Any]:
    lists = [item for item in arrays if type(item) is list]
    width = max((len(item) for item in lists), default=0)
    size_limit(budget, width * max(1, len(lists)))
    return [[item[index] if index < len(item) else UNDEFINED for item in lists] for index in range(width)]


def _invert_by(budget: Budget, args: list[Any]) -> Any:
    mapper = make_mapper(budget, arg(args, 1))
    result: dict[str, list[str]] = {}
    for key, item in _own_pairs(budget, arg(args, 0)):
        result.setdefault(safe_key(to_string(mapper(item, UNDEFINED))), []).append(to_string(key))
    return result


def _transform(budget: Budget, args: list[Any]) -> Any:
    target, fn = arg(args, 0), arg(args, 1)
    accumulator = arg(args, 2)
    if accumulator is UNDEFINED:
        accumulator = [] if type(target) is list else {}
    pairs = collection(budget, target) if type(target) is list else _own_pairs(budget, target)
    for key, item in pairs:  # an array's indexes are numbers, other keys (a string's too) text
        if isinstance(fn, JsCallable) and fn.call(budget, [accumulator, item, key, target]) is False:
            break
    return accumulator


def last_match(budget: Budget, pairs: list[tuple[Any, Any]], matcher: Any) -> tuple[Any, Any] | None:
    """The last (key, item) the iteratee accepts (``findLast``, ``findLastKey``)."""
    test = make_predicate(budget, matcher)
    return next(((key, item) for key, item in reversed(pairs) if test(item, key)), None)


def _find_last_key(budget: Budget, args: list[Any]) -> Any:
    found = last_match(budget, _own_pairs(budget, arg(args, 0)), arg(args, 1))
    return UNDEFINED if found is None else found[0]


def _text(args: list[Any]) -> str:
    return lodash_string(arg(args, 0))


_ESCAPE = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
_UNESCAPE = {entity: char for char, entity in _ESCAPE.items()}


def _to_length(value: Any) -> int:
    number = to_integer(value)
    return max(0, min(number, 4_294_967_295))


def _to_safe_integer(value: Any) -> float | int:
    number = to_num(value)
    if math.isnan(number) or number == 0:
        return number if number == 0 else 0  # -0 stays -0
    return max(-MAX_SAFE_INTEGER, min(MAX_SAFE_INTEGER, math.trunc(number) if math.isfinite(number) else number))


def _type_check(test: Callable[[Any], bool]) -> Fn:
    return lambda budget, args: test(arg(args, 0))


def _result(budget: Budget, args: list[Any]) -> Any:
    value = read_path(arg(args, 0), path_parts(arg(args, 1), arg(args, 0)))
    if isinstance(value, JsCallable):
        return value.call(budget, [])
    return arg(args, 2) if value is UNDEFINED else value


def has_in(budget: Budget, args: list[Any]) -> bool:
    value = arg(args, 0)
    for part in path_parts(arg(args, 1), value):
        if type(value) is dict and to_string(part) in value:
            value = value[to_string(part)]
        elif type(value) in (list, str) and data_member(value, part) is not UNDEFINED:
            value = data_member(value, part)
        else:
            return type(value) in (list, str) and to_string(part) == "length"
    return True


def _list(value: Any) -> list[Any]:
    return value if type(value) is list else []


def _slice(budget: Budget, args: list[Any]) -> list[Any]:
    items = _list(arg(args, 0))
    budget.charge(len(items))
    return items[relative(arg(args, 1), len(items), 0):relative(arg(args, 2), len(items), len(items))]


def _fill(budget: Budget, args: list[Any]) -> list[Any]:
    items = arg(args, 0)
    if type(items) is not list:
        return []
    check_writable(budget, items)
    budget.charge(len(items))
    for index in range(relative(arg(args, 2), len(items), 0), relative(arg(args, 3), len(items), len(items))):
        items[index] = arg(args, 1)
    return items


def _distinct(pairs: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    seen: set[Any] = set()
    result = []
    for key, item in pairs:
        if key not in seen:
            seen.add(key)
            result.append((key, item))
    return result


def _set_algebra(mode: str) -> Fn:
    def combine(budget: Budget, args: list[Any]) -> list[Any]:
        arrays = list(args)
        iteratee = arrays.pop() if len(arrays) > 1 and type(arrays[-1]) is not list else UNDEFINED
        mapper = make_mapper(budget, iteratee)
        lists = [_list(part) for part in arrays]
        budget.charge(sum(len(part) for part in lists))
        keyed = [[(same_value_key(mapper(item, index)), item) for index, item in enumerate(part)] for part in lists]
        if not keyed:
            return []
        if mode == "union":
            return [item for _, item in _distinct([pair for part in keyed for pair in part])]
        if mode == "difference":
            excluded = {key for part in keyed[1:] for key, _ in part}
            return [item for key, item in keyed[0] if key not in excluded]
        if mode == "intersection":
            shared = [{key for key, _ in part} for part in keyed[1:]]
            return [item for key, item in _distinct(keyed[0]) if all(key in keys for keys in shared)]
        counts: dict[Any, int] = {}
        for part in keyed:
            for key in {key for key, _ in part}:
                counts[key] = counts.get(key, 0) + 1
        return [item for key, item in _distinct([pair for part in keyed for pair in part]) if counts[key] == 1]

    return combine


def _pull_all(budget: Budget, args: list[Any]) -> list[Any]:
    items = arg(args, 0)
    if type(items) is not list:
        return items  # type: ignore[no-any-return]
    check_writable(budget, items)
    excluded = {same_value_key(item) for item in _list(arg(args, 1))}
    budget.charge(len(items))
    items[:] = [item for item in items if same_value_key(item) not in excluded]
    return items


def _writable(budget: Budget, value: Any) -> list[Any] | None:
    """The array a mutating helper changes (``None`` for anything else: lodash returns [])."""
    if type(value) is not list:
        return None
    check_writable(budget, value)
    return value


def _pull_at(budget: Budget, args: list[Any]) -> list[Any]:
    """``_.pullAt(array, ...paths)``: the values at the paths (``_.at``), then the array indexes
    among them removed in place."""
    items = _writable(budget, arg(args, 0))
    if items is None:
        return []
    paths = [path for part in args[1:] for path in (part if type(part) is list else [part])]
    size_limit(budget, len(paths))
    picked = [read_path(items, path_parts(path, items)) for path in paths]
    indexes = {index for path in paths if (index := index_of(path)) is not None and index < len(items)}
    for index in sorted(indexes, reverse=True):
        del items[index]
    return picked


def _remove(budget: Budget, args: list[Any]) -> list[Any]:
    """``_.remove``: the items the predicate accepts, taken out of the array in place (a string
    cannot lose characters: TypeError once there is one to remove)."""
    target = arg(args, 0)
    if type(target) is str:
        test = make_predicate(budget, arg(args, 1))
        if any(test(item, index) for index, item in enumerate(lodash_array(budget, target))):
            raise fail("cannot remove the characters of a string")
        return []
    items = _writable(budget, target)
    if items is None:
        return []
    test = make_predicate(budget, arg(args, 1))
    removed = [index for index, item in enumerate(list(items)) if test(item, index)]
    picked = [items[index] for index in removed]
    for index in reversed(removed):
        del items[index]
    return picked


def _flatten_depth(budget: Budget, args: list[Any]) -> list[Any]:
    depth = 1 if arg(args, 1) is UNDEFINED else to_integer(arg(args, 1))

    def flat(items: list[Any], level: int) -> list[Any]:
        budget.charge(len(items))
        result: list[Any] = []
        for item in items:
            result.extend(flat(item, level - 1) if type(item) is list and level > 0 else [item])
        return result

    return flat(_list(arg(args, 0)), min(depth, 64))


def _sorted_index(last: bool) -> Fn:
    return lambda budget, args: sorted_index(budget, _list(arg(args, 0)), arg(args, 1), last=last)


def _last_index_of(budget: Budget, args: list[Any]) -> int:
    items = _list(arg(args, 0))
    budget.charge(len(items))
    target = same_value_key(arg(args, 1))
    start = len(items) - 1 if arg(args, 2) is UNDEFINED else to_integer(arg(args, 2))
    start = start + len(items) if start < 0 else min(start, len(items) - 1)
    return next((index for index in range(start, -1, -1) if same_value_key(items[index]) == target), -1)


def _trim_chars(strip: Callable[[str, str], str]) -> Fn:
    """``_.trimStart``/``_.trimEnd(text, chars?)``: JavaScript's whitespace, or the given characters."""
    return lambda budget, args: strip(_text(args), WHITESPACE if arg(args, 1) is UNDEFINED else to_string(arg(args, 1)))


def _pad_both(budget: Budget, args: list[Any]) -> str:
    """``_.pad(text, length, chars)``: padding split between the sides, the extra on the right."""
    text = _text(args)
    length = to_integer(arg(args, 1)) if arg(args, 1) is not UNDEFINED else 0
    chars = " " if arg(args, 2) is UNDEFINED else to_string(arg(args, 2))
    missing = length - len(text)
    if missing <= 0 or not chars:
        return text
    size_limit(budget, missing)
    left = missing // 2
    fill = chars * (missing // len(chars) + 1)
    return fill[:left] + text + fill[:missing - left]


def _at_paths(budget: Budget, args: list[Any]) -> list[Any]:
    paths = [path for part in args[1:] for path in (part if type(part) is list else [part])]
    size_limit(budget, len(paths))
    return [read_path(arg(args, 0), path_parts(path, arg(args, 0))) for path in paths]


EXTRA_HELPERS: dict[str, Any] = {
    "trim": Builtin("trim", _trim_chars(str.strip)),
    "trimStart": Builtin("trimStart", _trim_chars(str.lstrip)),
    "trimEnd": Builtin("trimEnd", _trim_chars(str.rstrip)),
    "pad": Builtin("pad", _pad_both),
    "at": Builtin("at", _at_paths),
    "toPath": Builtin("toPath", lambda budget, args: [to_string(part) for part in path_parts(arg(args, 0))]),
    "isMatch": Builtin("isMatch", lambda budget, args: matches_source(budget, arg(args, 0), arg(args, 1))),
    "matches": Builtin("matches", lambda budget, args: _iteratee("matches", arg(args, 0))),
    "matchesProperty": Builtin("matchesProperty", lambda budget, args: _iteratee(
        "matchesProperty", [arg(args, 0), arg(args, 1)])),
    "property": Builtin("property", lambda budget, args: _property(path_parts(arg(args, 0)))),
    "iteratee": Builtin("iteratee", lambda budget, args: _iteratee("iteratee", arg(args, 0))),
    "slice": Builtin("slice", _slice),
    "fill": Builtin("fill", _fill),
    "concat": Builtin("concat", lambda budget, args: [
        item for part in args for item in (part if type(part) is list else [part])]),
    "join": Builtin("join", lambda budget, args: join_items(
        budget, _list(arg(args, 0)), "," if arg(args, 1) is UNDEFINED else to_string(arg(args, 1)))),
    "unionBy": Builtin("unionBy", _set_algebra("union")),
    "differenceBy": Builtin("differenceBy", _set_algebra("difference")),
    "intersectionBy": Builtin("intersectionBy", _set_algebra("intersection")),
    "xor": Builtin("xor", _set_algebra("xor")),
    "xorBy": Builtin("xorBy", _set_algebra("xor")),
    "pull": Builtin("pull", lambda budget, args: _pull_all(budget, [arg(args, 0), list(args[1:])])),
    "pullAll": Builtin("pullAll", _pull_all),
    "pullAt": Builtin("pullAt", _pull_at),
    "remove": Builtin("remove", _remove),
    "flattenDepth": Builtin("flattenDepth", _flatten_depth),
    "sortedIndex": Builtin("sortedIndex", _sorted_index(last=False)),
    "sortedLastIndex": Builtin("sortedLastIndex", _sorted_index(last=True)),
    "lastIndexOf": Builtin("lastIndexOf", _last_index_of),
    "add": Builtin("add", _arithmetic("+", 0)),
    "subtract": Builtin("subtract", _arithmetic("-", 0)),
    "multiply": Builtin("multiply", _arithmetic("*", 1)),
    "divide": Builtin("divide", _arithmetic("/", 1)),
    "gt": Builtin("gt", _compare(lambda a, b: a > b)),
    "gte": Builtin("gte", _compare(lambda a, b: a >= b)),
    "lt": Builtin("lt", _compare(lambda a, b: a < b)),
    "lte": Builtin("lte", _compare(lambda a, b: a <= b)),
    "eq": Builtin("eq", lambda budget, args: same_value_key(arg(args, 0)) == same_value_key(arg(args, 1)) or (
        is_number(arg(args, 0)) and loose_equals(arg(args, 0), arg(args, 1)) and is_number(arg(args, 1)))),
    "forOwn": Builtin("forOwn", _for_each(_own_pairs, backwards=False)),
    "forIn": Builtin("forIn", _for_each(_own_pairs, backwards=False)),
    "forOwnRight": Builtin("forOwnRight", _for_each(_own_pairs, backwards=True)),
    "forEachRight": Builtin("forEachRight", _for_each(collection, backwards=True)),
    "eachRight": Builtin("eachRight", _for_each(collection, backwards=True)),
    "reject": Builtin("reject", lambda budget, args: [
        item for key, item in collection(budget, arg(args, 0)) if not make_predicate(budget, arg(args, 1))(item, key)]),
    "findLastKey": Builtin("findLastKey", _find_last_key),
    "takeWhile": Builtin("takeWhile", _while(from_end=False, take=True)),
    "takeRightWhile": Builtin("takeRightWhile", _while(from_end=True, take=True)),
    "dropWhile": Builtin("dropWhile", _while(from_end=False, take=False)),
    "dropRightWhile": Builtin("dropRightWhile", _while(from_end=True, take=False)),
    "flattenDeep": Builtin("flattenDeep", lambda budget, args: _flatten_deep(
        lodash_array(budget, arg(args, 0)), budget)),
    "flatMapDeep": Builtin("flatMapDeep", lambda budget, args: _flatten_deep(
        [make_mapper(budget, arg(args, 1))(item, key) for key, item in collection(budget, arg(args, 0))], budget)),
    "uniqBy": Builtin("uniqBy", _uniq_by),
    "sortedUniq": Builtin("sortedUniq", _sorted_uniq),
    "sortedUniqBy": Builtin("sortedUniqBy", _sorted_uniq),
    "sortedIndexOf": Builtin("sortedIndexOf", _sorted_index_of),
    "conformsTo": Builtin("conformsTo", _conforms_to),
    "conforms": Builtin("conforms", lambda budget, args: _conforms(arg(args, 0))),
    "zip": Builtin("zip", lambda budget, args: _zip(budget, list(args))),
    "unzip": Builtin("unzip", lambda budget, args: _zip(budget, arg(args, 0)) if type(arg(args, 0)) is list else []),
    "invertBy": Builtin("invertBy", _invert_by),
    "transform": Builtin("transform", _transform),
    "result": Builtin("result", _result),
    "hasIn": Builtin("hasIn", has_in),
    "keysIn": Builtin("keysIn", lambda budget, args: [str(key) for key, _ in _own_pairs(budget, arg(args, 0))]),
    "valuesIn": Builtin("valuesIn", lambda budget, args: [item for _, item in _own_pairs(budget, arg(args, 0))]),
    "toPairsIn": Builtin("toPairsIn", lambda budget, args: [[str(key), item]
                                                            for key, item in _own_pairs(budget, arg(args, 0))]),
    "escape": Builtin("escape", lambda budget, args: re.sub("[&<>\"']", lambda found: _ESCAPE[found.group()],
                                                            _text(args))),
    "unescape": Builtin("unescape", lambda budget, args: re.sub(
        "&(?:amp|lt|gt|quot|#39);", lambda found: _UNESCAPE[found.group()], _text(args))),
    "escapeRegExp": Builtin("escapeRegExp", lambda budget, args: re.sub(
        r"[\\^$.*+?()[\]{}|]", lambda found: "\\" + found.group(), _text(args))),
    "toFinite": Builtin("toFinite", lambda budget, args: _finite(to_num(arg(args, 0)))),
    "toLength": Builtin("toLength", lambda budget, args: _to_length(arg(args, 0))),
    "toSafeInteger": Builtin("toSafeInteger", lambda budget, args: _to_safe_integer(arg(args, 0))),
    "isSafeInteger": Builtin("isSafeInteger", _type_check(
        lambda value: is_number(value) and math.isfinite(value) and value == int(value)
        and abs(value) <= MAX_SAFE_INTEGER)),
    "isLength": Builtin("isLength", _type_check(
        lambda value: is_number(value) and math.isfinite(value) and value == int(value)
        and 0 <= value <= MAX_SAFE_INTEGER)),
    "isObjectLike": Builtin("isObjectLike", _type_check(lambda value: type(value) in (dict, list)
                                                        or isinstance(value, JsDate))),
    "isArrayLike": Builtin("isArrayLike", _type_check(lambda value: type(value) in (list, str))),
    "isDate": Builtin("isDate", _type_check(lambda value: isinstance(value, JsDate))),
    "isError": Builtin("isError", _type_check(lambda value: False)),
    "isSymbol": Builtin("isSymbol", _type_check(lambda value: False)),
    "isMap": Builtin("isMap", _type_check(lambda value: isinstance(value, JsMap))),
    "isWeakMap": Builtin("isWeakMap", _type_check(lambda value: False)),
    "isWeakSet": Builtin("isWeakSet", _type_check(lambda value: False)),
    "isArguments": Builtin("isArguments", _type_check(lambda value: False)),
    "isBuffer": Builtin("isBuffer", _type_check(lambda value: False)),
    "isTypedArray": Builtin("isTypedArray", _type_check(lambda value: False)),
    "isArrayBuffer": Builtin("isArrayBuffer", _type_check(lambda value: False)),
    "isElement": Builtin("isElement", _type_check(lambda value: False)),
    "isNative": Builtin("isNative", _type_check(lambda value: False)),
    "noop": Builtin("noop", lambda budget, args: UNDEFINED),
    "stubArray": Builtin("stubArray", lambda budget, args: []),
    "stubObject": Builtin("stubObject", lambda budget, args: {}),
    "stubString": Builtin("stubString", lambda budget, args: ""),
    "stubTrue": Builtin("stubTrue", lambda budget, args: True),
    "stubFalse": Builtin("stubFalse", lambda budget, args: False),
    "castArray": Builtin("castArray", lambda budget, args: [] if not args else
                         arg(args, 0) if type(arg(args, 0)) is list else [arg(args, 0)]),
    "constant": Builtin("constant", lambda budget, args: _constant(arg(args, 0))),
    "thru": Builtin("thru", lambda budget, args: arg(args, 1).call(budget, [arg(args, 0)])
                    if isinstance(arg(args, 1), JsCallable) else arg(args, 0)),
}


def _iteratee(name: str, spec: Any) -> Builtin:
    """The function lodash's ``iteratee`` makes of ``spec`` (``matches``, ``property``...)."""
    return Builtin(name, lambda budget, args: make_mapper(budget, spec)(arg(args, 0), arg(args, 1)))


def _property(parts: list[Any]) -> Builtin:
    return Builtin("property", lambda budget, args: read_path(arg(args, 0), parts))


def _conforms(source: Any) -> Builtin:
    return Builtin("conforms", lambda budget, args: _conforms_to(budget, [arg(args, 0), source]))


def _constant(value: Any) -> Builtin:
    return Builtin("constant", lambda budget, args: value)


def _finite(number: float | int) -> float | int:
    if math.isnan(number):
        return 0
    return math.copysign(sys.float_info.max, number) if math.isinf(number) else number

