"""The lodash helpers real cards call (``_.clamp``, ``_.pickBy``, chains ``_(x)...value()``).

Each takes plain JSON collections and declaration functions, charges the budget for the items it
touches and never mutates its input unless lodash itself does (``_.merge``, ``_.set``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.members import array_index, check_writable, data_member, safe_key, set_own
from mvu_store.js.strings import joined, units
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    Opaque,
    arg,
    fail,
    is_number,
    same_value_key,
    strict_equals,
    text_limit,
    to_string,
    truthy,
)
from mvu_store.schema.accessors import GetterObject
from mvu_store.schema.arrays import size_limit
from mvu_store.schema.builtins import (
    Fn,
    assign_into,
    call_fn,
    collection,
    deep_copy,
    entries,
    item_string,
    keys,
    lodash_array,
    lodash_string,
    make_mapper,
    make_predicate,
    path_parts,
    plain,
    read_path,
    values,
)
from mvu_store.schema.lodash_comparators import COMPARATOR_HELPERS
from mvu_store.schema.lodash_extra import EXTRA_HELPERS, has_in, last_match
from mvu_store.schema.lodash_functions import FUNCTION_HELPERS
from mvu_store.schema.lodash_merge import MERGE_HELPERS
from mvu_store.schema.lodash_order import order_by, primitive, sort_by
from mvu_store.schema.lodash_paths import PATH_HELPERS, set_with
from mvu_store.schema.lodash_patterns import PATTERN_HELPERS
from mvu_store.schema.lodash_text import TEXT_HELPERS, to_array_of_text
from mvu_store.schema.numeric import MATH_FUNCTIONS, is_integer, range_error, to_integer, to_num
from mvu_store.schema.operators import BINARY, clip


def _clamp(budget: Budget, args: list[Any]) -> Any:
    # The common `_.clamp(v, 0, 100)` on plain numbers takes the short road.
    if len(args) == 3:
        number, lower, upper = args
        if plain_number(number) and plain_number(lower) and plain_number(upper):
            return max(min(number, upper), lower)
    return _clamp_slow(args)


def plain_number(item: Any) -> bool:
    """A number that is not NaN (a bool is no number here)."""
    kind = type(item)
    return (kind is int or kind is float) and item == item  # not NaN


def _clamp_slow(args: list[Any]) -> Any:
    """lodash's ``clamp``: a NaN bound counts as 0, a missing one does not bound."""
    lower, upper = arg(args, 1), arg(args, 2)
    if upper is UNDEFINED:
        lower, upper = UNDEFINED, lower
    number = to_num(arg(args, 0))
    if math.isnan(number):
        return number
    for bound, pick in ((upper, min), (lower, max)):
        if bound is not UNDEFINED:
            limit = to_num(bound)
            number = pick(number, 0 if math.isnan(limit) else limit)
    return number


def _pick_by(keep: bool) -> Fn:
    def pick_by(budget: Budget, args: list[Any]) -> Any:
        test = make_predicate(budget, arg(args, 1))
        return {key: item for key, item in _keyed(budget, arg(args, 0)) if test(item, key) == keep}

    return pick_by


def _omit(budget: Budget, args: list[Any]) -> Any:
    names: set[str] = set()
    for item in args[1:]:
        names.update(to_string(name) for name in (item if type(item) is list else [item]))
    return {key: item for key, item in _keyed(budget, arg(args, 0)) if key not in names}


def _pick(budget: Budget, args: list[Any]) -> Any:
    """``_.pick(object, ...paths)``: each path the object has (own or not) copied with its value,
    nested paths rebuilt (``'b.c'`` gives ``{b: {c}}``)."""
    source = arg(args, 0)
    result: dict[str, Any] = {}
    if source is None or source is UNDEFINED:
        return result
    for path in (path for part in args[1:] for path in (part if type(part) is list else [part])):
        parts = path_parts(path, source)
        if has_in(budget, [source, parts]):
            set_with(budget, result, parts, read_path(source, parts))
    return result


def _map_values(budget: Budget, args: list[Any]) -> Any:
    mapper = make_mapper(budget, arg(args, 1))
    return {key: mapper(item, key) for key, item in _keyed(budget, arg(args, 0))}


def _lodash_map(budget: Budget, args: list[Any]) -> Any:
    mapper = make_mapper(budget, arg(args, 1))
    return [mapper(item, key) for key, item in collection(budget, arg(args, 0))]


def _lodash_filter(budget: Budget, args: list[Any]) -> Any:
    test = make_predicate(budget, arg(args, 1))
    return [item for key, item in collection(budget, arg(args, 0)) if test(item, key)]


def _has(budget: Budget, args: list[Any]) -> bool:
    """``_.has(object, path)``: whether every step of the path is an own key or array index."""
    value, parts = arg(args, 0), path_parts(arg(args, 1), arg(args, 0))
    budget.charge(len(parts))
    for part in parts:
        key = to_string(part)
        if type(value) is dict and key in value:
            value = value[key]
        elif type(value) is list and (index := array_index(key)) is not None and index < len(value):
            value = value[index]
        elif type(value) in (list, str) and key == "length":
            value = len(value)
        else:
            return False
    return True


def _lodash_get(budget: Budget, args: list[Any]) -> Any:
    parts = path_parts(arg(args, 1), arg(args, 0))
    budget.charge(len(parts))
    value = read_path(arg(args, 0), parts)
    return arg(args, 2) if value is UNDEFINED else value


def _is_empty(budget: Budget, args: list[Any]) -> bool:
    value = arg(args, 0)
    if type(value) in (dict, list, str):
        return len(value) == 0
    return True


def _uniq(budget: Budget, args: list[Any]) -> Any:
    items = lodash_array(budget, arg(args, 0))
    seen: set[tuple[str, Any]] = set()
    result: list[Any] = []
    for item in items:
        key = same_value_key(item)
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


def to_finite(value: Any) -> float | int:
    """lodash's ``toFinite``: NaN is 0, the infinities are ±Number.MAX_VALUE."""
    number = to_num(value)
    if math.isnan(number):
        return 0
    return math.copysign(sys.float_info.max, number) if math.isinf(number) else number


def _range_of(reverse: bool) -> Fn:
    """``_.range`` / ``_.rangeRight(start = 0, end, step = ±1)``."""
    def build(budget: Budget, args: list[Any]) -> Any:
        start, end, step = arg(args, 0), arg(args, 1), arg(args, 2)
        start = to_finite(start)
        if end is UNDEFINED:
            start, end = 0, start
        else:
            end = to_finite(end)
        step = (1 if start < end else -1) if step is UNDEFINED else to_finite(step)
        span = (end - start) / (step or 1)
        if not span < 2**32:  # lodash's own Array(length) refuses it (an infinite span too)
            raise range_error("Invalid array length")
        count = math.ceil(span) if span > 0 else 0
        size_limit(budget, count)
        items = []
        for _ in range(count):  # lodash adds the step each time (0.1 steps drift as they do there)
            items.append(start)
            start = clip(start + step)
        return items[::-1] if reverse else items

    return build


def _size(budget: Budget, args: list[Any]) -> Any:
    value = arg(args, 0)
    return len(value) if type(value) in (dict, list, str) else 0


def _lodash_round(method: str) -> Fn:
    rounding = MATH_FUNCTIONS[method]

    def apply(budget: Budget, args: list[Any]) -> Any:
        number, digits = to_num(arg(args, 0)), arg(args, 1)
        precision = 0 if digits is None or digits is UNDEFINED else min(to_integer(digits), 292)
        if not precision or not math.isfinite(number):
            return rounding(number)
        # lodash shifts the decimal point in the number's text, so 1.005 rounds to 1.01
        mantissa, _, exponent = item_string(number).partition("e")
        shifted = rounding(to_num(f"{mantissa}e{int(exponent or 0) + precision}"))
        mantissa, _, exponent = item_string(shifted).partition("e")
        return to_num(f"{mantissa}e{int(exponent or 0) - precision}")

    return apply


def _base_sum(budget: Budget, items: list[Any], get: Callable[[Any, Any], Any]) -> Any:
    """lodash's ``baseSum``: JavaScript's ``+`` over the defined iteratee values (so strings
    concatenate), ``undefined`` when none is defined."""
    result: Any = UNDEFINED
    for item in items:
        current = get(item, UNDEFINED)
        if current is not UNDEFINED:
            result = current if result is UNDEFINED else BINARY["+"](primitive(result), primitive(current))
    return result


def _summed(mean: bool) -> Fn:
    """``sum``/``sumBy`` (0 for an empty array) and ``mean``/``meanBy`` (NaN for one)."""
    def total(budget: Budget, args: list[Any]) -> Any:
        items = lodash_array(budget, arg(args, 0))
        if not items:
            return math.nan if mean else 0
        result = _base_sum(budget, items, make_mapper(budget, arg(args, 1)))
        if type(result) is str:  # strings' units concatenated: a surrogate pair is one character again
            result = joined(result)
        return BINARY["/"](primitive(result), len(items)) if mean else result

    return total


def _extremum(operator: str) -> Fn:
    """lodash's ``baseExtremum``: the item whose iteratee value is not null and beats (JavaScript's
    ``>``/``<``) the best so far; the first candidate must be a non-NaN value."""
    beats = BINARY[operator]

    def pick(budget: Budget, args: list[Any]) -> Any:
        get = make_mapper(budget, arg(args, 1))
        result: Any = UNDEFINED
        computed: Any = UNDEFINED
        for item in lodash_array(budget, arg(args, 0)):
            current = get(item, UNDEFINED)
            if current is None or current is UNDEFINED:
                continue
            if (current == current) if computed is UNDEFINED else truthy(beats(primitive(current),
                                                                                primitive(computed))):
                computed, result = current, item
        return result

    return pick


def _take(from_end: bool) -> Fn:
    def take(budget: Budget, args: list[Any]) -> Any:
        items = lodash_array(budget, arg(args, 0))
        count = 1 if arg(args, 1) is UNDEFINED else max(0, to_integer(arg(args, 1)))
        if from_end:  # a count past the length takes everything (a negative slice start would not)
            return items[max(0, len(items) - count):] if count else []
        return items[:count]

    return take


# Helpers that end an implicit chain: `_(items).values().sumBy(f)` is a number, not a wrapper
# (lodash's "not chainable by default" methods; the list was taken from lodash 4.17 on node).
_UNWRAPPING = frozenset({
    "clamp", "find", "findKey", "some", "every", "forEach", "each", "reduce", "get", "has", "includes",
    "isEmpty", "isEqual", "sum", "sumBy", "max", "maxBy", "min", "minBy", "size", "round", "floor", "ceil",
    "times", "clone", "cloneDeep", "first", "head", "last", "inRange", "toNumber", "toInteger", "toString",
    "trim", "toLower", "toUpper", "capitalize", "startsWith", "endsWith", "isNumber", "isString", "isBoolean",
    "isArray", "isPlainObject", "isObject", "isNil", "isNull", "isUndefined", "isFinite", "isInteger",
    "isFunction", "isNaN", "findLast", "findIndex", "findLastIndex", "mean", "meanBy", "indexOf", "nth",
    "defaultTo", "identity", "truncate", "upperFirst", "lowerFirst", "padStart", "padEnd", "repeat",
})


def _includes(budget: Budget, args: list[Any]) -> bool:
    """``_.includes(collection, value, fromIndex)``: SameValueZero over an array-like or an
    object's values from ``fromIndex`` (negative counts from the end); substrings of a string."""
    target, wanted = arg(args, 0), arg(args, 1)
    items = target if type(target) in (list, str) else [item for _, item in collection(budget, target)]
    start = to_integer(arg(args, 2)) if truthy(arg(args, 2)) else 0
    if type(items) is str:
        text = units(items)
        start = max(len(text) + start, 0) if start < 0 else start
        return start <= len(text) and units(to_string(wanted)) in text[start:]
    budget.charge(len(items))
    start = max(len(items) + start, 0) if start < 0 else start
    key = same_value_key(wanted)
    return any(same_value_key(item) == key or (is_number(item) and is_number(wanted) and item == wanted)
               for item in items[start:])


def _starts_with(budget: Budget, args: list[Any]) -> bool:
    text, target = units(_text_of(args, 0)), units(item_string(arg(args, 1)))
    start = 0 if arg(args, 2) in (None, UNDEFINED) else min(max(to_integer(arg(args, 2)), 0), len(text))
    return text[start:start + len(target)] == target


def _ends_with(budget: Budget, args: list[Any]) -> bool:
    text, target = units(_text_of(args, 0)), units(item_string(arg(args, 1)))
    end = len(text) if arg(args, 2) is UNDEFINED else min(max(to_integer(arg(args, 2)), 0), len(text))
    return end - len(target) >= 0 and text[end - len(target):end] == target


def _to_text(budget: Budget, value: Any) -> str:
    text = lodash_string(value)
    if type(value) is list:  # joining a large array is real work (as in charged_text)
        budget.charge(len(text) // 8)
    return text


def _from_pairs(budget: Budget, args: list[Any]) -> Any:
    """``_.fromPairs``: ``result[pair[0]] = pair[1]`` for each item of an array-like."""
    result: dict[str, Any] = {}
    for pair in lodash_array(budget, arg(args, 0)):
        if pair is None or pair is UNDEFINED:
            raise fail("fromPairs: cannot read a pair of null or undefined")
        if type(pair) in (list, str):
            set_own(budget, result, data_member(pair, 0), data_member(pair, 1))
        else:
            set_own(budget, result, UNDEFINED, UNDEFINED)
    return result


def _end_item(items: list[Any], index: int) -> Any:
    return items[index] if items else UNDEFINED


class LodashChain(Opaque):
    """``_(value)`` (implicit: helpers of :data:`_UNWRAPPING` return plain values) or
    ``_.chain(value)`` (explicit: everything stays wrapped); either ends with ``.value()``."""

    __slots__ = ("explicit", "value")

    def __init__(self, value: Any, *, explicit: bool) -> None:
        self.value = value
        self.explicit = explicit

    def get(self, key: str) -> Any:
        if key == "value":
            return Builtin("value", lambda budget, args: self.value)
        helper = _LODASH_HELPERS.get(key)
        if not isinstance(helper, Builtin):
            return super().get(key)
        if not self.explicit and key in _UNWRAPPING:
            return Builtin(key, lambda budget, args: helper.call(budget, [self.value, *args]))
        return Builtin(key, lambda budget, args: LodashChain(helper.call(budget, [self.value, *args]),
                                                             explicit=self.explicit))


_LODASH_HELPERS: dict[str, Any] = {
    "clamp": Builtin("clamp", _clamp),
    "pickBy": Builtin("pickBy", _pick_by(True)),
    "omitBy": Builtin("omitBy", _pick_by(False)),
    "pick": Builtin("pick", _pick),
    "omit": Builtin("omit", _omit),
    "mapValues": Builtin("mapValues", _map_values),
    "map": Builtin("map", _lodash_map),
    "filter": Builtin("filter", _lodash_filter),
    "get": Builtin("get", _lodash_get),
    "isEmpty": Builtin("isEmpty", _is_empty),
    "sortBy": Builtin("sortBy", sort_by),
    "uniq": Builtin("uniq", _uniq),
    "sum": Builtin("sum", _summed(mean=False)),
    "keys": Builtin("keys", keys),
    "values": Builtin("values", values),
    "entries": Builtin("entries", entries),
    "toPairs": Builtin("toPairs", entries),
    "fromPairs": Builtin("fromPairs", _from_pairs),
    "size": Builtin("size", _size),
    "round": Builtin("round", _lodash_round("round")),
    "floor": Builtin("floor", _lodash_round("floor")),
    "ceil": Builtin("ceil", _lodash_round("ceil")),
    "max": Builtin("max", _extremum(">")),
    "min": Builtin("min", _extremum("<")),
    "take": Builtin("take", _take(False)),
    "takeRight": Builtin("takeRight", _take(True)),
    "range": Builtin("range", _range_of(reverse=False)),
    "rangeRight": Builtin("rangeRight", _range_of(reverse=True)),
    "cloneDeep": Builtin("cloneDeep", lambda budget, args: deep_copy(budget, arg(args, 0))),
    "has": Builtin("has", _has),
    "includes": Builtin("includes", _includes),
    "isNumber": plain("isNumber", lambda value=UNDEFINED, *_: is_number(value)),
    "isString": plain("isString", lambda value=UNDEFINED, *_: type(value) is str),
    "isBoolean": plain("isBoolean", lambda value=UNDEFINED, *_: type(value) is bool),
    "isArray": plain("isArray", lambda value=UNDEFINED, *_: type(value) is list),
    "isPlainObject": plain("isPlainObject", lambda value=UNDEFINED, *_: type(value) is dict),
    "isObject": plain("isObject", lambda value=UNDEFINED, *_: type(value) in (dict, list) or isinstance(value, Opaque)),
    "isNil": plain("isNil", lambda value=UNDEFINED, *_: value is None or value is UNDEFINED),
    "isNaN": plain("isNaN", lambda value=UNDEFINED, *_: type(value) is float and math.isnan(value)),
    "isFinite": plain("isFinite", lambda value=UNDEFINED, *_: is_number(value) and math.isfinite(value)),
    "isInteger": plain("isInteger", lambda value=UNDEFINED, *_: is_integer(value)),
    "inRange": Builtin("inRange", lambda budget, args: _in_range(args)),
    "toNumber": plain("toNumber", lambda value=UNDEFINED, *_: to_num(value)),
    "toString": Builtin("toString", lambda budget, args: _to_text(budget, arg(args, 0))),
    "first": Builtin("first", lambda budget, args: _end_item(lodash_array(budget, arg(args, 0)), 0)),
    "head": Builtin("head", lambda budget, args: _end_item(lodash_array(budget, arg(args, 0)), 0)),
    "last": Builtin("last", lambda budget, args: _end_item(lodash_array(budget, arg(args, 0)), -1)),
    "compact": Builtin("compact", lambda budget, args: [
        item for item in lodash_array(budget, arg(args, 0)) if truthy(item)]),
}


def _keyed(budget: Budget, value: Any) -> list[tuple[str, Any]]:
    """(key, item) pairs for helpers that build an object: an array's indexes become the string
    keys lodash gives them (`_.pickBy([a, b], f)` is `{"0": a, "1": b}`)."""
    return [(key if type(key) is str else str(key), item) for key, item in collection(budget, value)]


def _items(budget: Budget, value: Any) -> list[Any]:
    """The items of a collection (an object's values): for lodash's collection helpers."""
    return [item for _, item in collection(budget, value)]


def _find(want_key: bool) -> Fn:
    def find(budget: Budget, args: list[Any]) -> Any:
        test = make_predicate(budget, arg(args, 1))
        # findKey walks own keys (an array's as strings); find walks a collection (numeric indexes)
        for key, item in (_keyed if want_key else collection)(budget, arg(args, 0)):
            if test(item, key):
                return key if want_key else item
        return UNDEFINED

    return find


def _test_all(every: bool) -> Fn:
    def test_all(budget: Budget, args: list[Any]) -> bool:
        test = make_predicate(budget, arg(args, 1))
        hits = (test(item, key) for key, item in collection(budget, arg(args, 0)))
        return all(hits) if every else any(hits)

    return test_all


def _for_each(budget: Budget, args: list[Any]) -> Any:
    fn = make_mapper(budget, arg(args, 1))
    for key, item in collection(budget, arg(args, 0)):
        if fn(item, key) is False:
            break
    return arg(args, 0)


def _reduce(budget: Budget, args: list[Any], backwards: bool = False) -> Any:
    fn, pairs = arg(args, 1), collection(budget, arg(args, 0))
    if backwards:
        pairs.reverse()
    if len(args) > 2:
        accumulator = args[2]
    elif pairs:
        accumulator = pairs.pop(0)[1]
    else:
        return UNDEFINED
    for key, item in pairs:
        accumulator = call_fn(budget, fn, accumulator, item, key)
    return accumulator


def _group(mode: str) -> Fn:
    """``groupBy`` / ``keyBy`` / ``countBy``: bucket items by an iteratee's string."""
    def group(budget: Budget, args: list[Any]) -> Any:
        get = make_mapper(budget, arg(args, 1))
        result: dict[str, Any] = {}
        for _, item in collection(budget, arg(args, 0)):
            bucket = safe_key(to_string(get(item, UNDEFINED)))  # lodash passes the item alone
            if mode == "group":
                result.setdefault(bucket, []).append(item)
            elif mode == "key":
                result[bucket] = item
            else:
                result[bucket] = result.get(bucket, 0) + 1
        return result

    return group


def _map_keys(budget: Budget, args: list[Any]) -> Any:
    """``_.mapKeys``: each own key (an array's as text) renamed by the iteratee (the value itself
    without one)."""
    get = make_mapper(budget, arg(args, 1))
    return {safe_key(to_string(get(item, key))): item for key, item in _keyed(budget, arg(args, 0))}


def _set_ops(mode: str) -> Fn:
    """``union`` / ``difference`` / ``without`` on arrays, by JavaScript equality."""
    def set_op(budget: Budget, args: list[Any]) -> Any:
        first = lodash_array(budget, arg(args, 0))
        others = [item for part in args[1:] for item in (part if type(part) is list else [part])]
        budget.charge(len(first) + len(others))
        if mode == "union":
            return _uniq(budget, [first + [item for part in args[1:] if type(part) is list for item in part]])
        # lodash compares with SameValueZero; hashing keeps this linear (a pairwise scan of two
        # 3,000-item arrays cost seconds while charging a fraction of that)
        excluded = {same_value_key(other) for other in others}
        return [item for item in first if same_value_key(item) not in excluded]

    return set_op


def _flatten(budget: Budget, args: list[Any]) -> Any:
    return [part for item in lodash_array(budget, arg(args, 0)) for part in (item if type(item) is list else [item])]


def _drop(from_end: bool) -> Fn:
    def drop(budget: Budget, args: list[Any]) -> Any:
        items = lodash_array(budget, arg(args, 0))
        count = 1 if arg(args, 1) is UNDEFINED else max(0, to_integer(arg(args, 1)))
        return items[:max(0, len(items) - count)] if from_end else items[count:]

    return drop


def _reverse(budget: Budget, args: list[Any]) -> Any:
    """``_.reverse``: an array reversed in place; other values as ``Array.prototype.reverse``
    leaves them (a string of two or more characters cannot be changed: TypeError; a number or
    boolean comes back as its wrapper object, which has no own keys)."""
    value = arg(args, 0)
    if type(value) is list:
        check_writable(budget, value)
        budget.charge(len(value))
        value.reverse()
        return value
    if type(value) is str:
        if len(units(value)) > 1:
            raise fail("cannot assign to the characters of a string")
        return {"0": value} if value else {}
    if type(value) in (bool, int, float):
        return {}
    return value


def _times(budget: Budget, args: list[Any]) -> Any:
    count = _to_integer(to_num(arg(args, 0)))
    if count < 1 or count > 2**53 - 1:  # lodash gives [] beyond MAX_SAFE_INTEGER
        return []
    count = int(count)
    budget.charge(count)
    fn = arg(args, 1)
    return [index if fn is UNDEFINED else call_fn(budget, fn, index) for index in range(count)]


def _text_of(args: list[Any], index: int) -> str:
    return lodash_string(arg(args, index))


def _text(fn: Callable[[str], str]) -> Builtin:
    return plain("text", lambda value=UNDEFINED, *_: fn(lodash_string(value)))


_LODASH_HELPERS.update({
    "find": Builtin("find", _find(want_key=False)),
    "findKey": Builtin("findKey", _find(want_key=True)),
    "some": Builtin("some", _test_all(every=False)),
    "every": Builtin("every", _test_all(every=True)),
    "forEach": Builtin("forEach", _for_each),
    "each": Builtin("each", _for_each),
    "reduce": Builtin("reduce", _reduce),
    "reduceRight": Builtin("reduceRight", lambda budget, args: _reduce(budget, args, backwards=True)),
    "sumBy": Builtin("sumBy", _summed(mean=False)),
    "maxBy": Builtin("maxBy", _extremum(">")),
    "minBy": Builtin("minBy", _extremum("<")),
    "groupBy": Builtin("groupBy", _group("group")),
    "keyBy": Builtin("keyBy", _group("key")),
    "countBy": Builtin("countBy", _group("count")),
    "orderBy": Builtin("orderBy", order_by),
    "mapKeys": Builtin("mapKeys", _map_keys),
    "union": Builtin("union", _set_ops("union")),
    "difference": Builtin("difference", _set_ops("difference")),
    "without": Builtin("without", lambda budget, args: _set_ops("difference")(budget, [arg(args, 0), list(args[1:])])),
    "flatten": Builtin("flatten", _flatten),
    "assign": Builtin("assign", assign_into(defaults_only=False)),
    "assignIn": Builtin("assignIn", assign_into(defaults_only=False)),
    "extend": Builtin("extend", assign_into(defaults_only=False)),
    "defaults": Builtin("defaults", assign_into(defaults_only=True)),
    "drop": Builtin("drop", _drop(from_end=False)),
    "dropRight": Builtin("dropRight", _drop(from_end=True)),
    "reverse": Builtin("reverse", _reverse),
    "clone": Builtin("clone", lambda budget, args: spread_copy(arg(args, 0))),
    "times": Builtin("times", _times),
    "isUndefined": plain("isUndefined", lambda value=UNDEFINED, *_: value is UNDEFINED),
    "isNull": plain("isNull", lambda value=UNDEFINED, *_: value is None),
    "toInteger": plain("toInteger", lambda value=UNDEFINED, *_: _to_integer(to_num(value))),

    "toLower": _text(str.lower),
    "toUpper": _text(str.upper),
    "capitalize": _text(lambda text: text[:1].upper() + text[1:].lower()),
    "startsWith": Builtin("startsWith", _starts_with),
    "endsWith": Builtin("endsWith", _ends_with),
})


def _chunk(budget: Budget, args: list[Any]) -> Any:
    items = lodash_array(budget, arg(args, 0))
    size = 1 if arg(args, 1) is UNDEFINED else max(0, to_integer(arg(args, 1)))
    return [items[start:start + size] for start in range(0, len(items), size)] if size else []


def _partition(budget: Budget, args: list[Any]) -> Any:
    test = make_predicate(budget, arg(args, 1))
    kept: list[Any] = []
    dropped: list[Any] = []
    for _, item in collection(budget, arg(args, 0)):  # one call per item, with the item alone
        (kept if test(item, UNDEFINED) else dropped).append(item)
    return [kept, dropped]


def _intersection(budget: Budget, args: list[Any]) -> Any:
    first = lodash_array(budget, arg(args, 0))
    others = [{same_value_key(item) for item in lodash_array(budget, part)} for part in args[1:]]
    return _uniq(budget, [[item for item in first if all(same_value_key(item) in keys for keys in others)]])


def _zip_object(budget: Budget, args: list[Any]) -> Any:
    names, items = lodash_array(budget, arg(args, 0)), lodash_array(budget, arg(args, 1))
    return {safe_key(to_string(name)): items[index] if index < len(items) else UNDEFINED
            for index, name in enumerate(names)}


def _invert(budget: Budget, args: list[Any]) -> Any:
    return {safe_key(to_string(item)): to_string(key) for key, item in collection(budget, arg(args, 0))}


def _find_last(budget: Budget, args: list[Any]) -> Any:
    found = last_match(budget, collection(budget, arg(args, 0)), arg(args, 1))
    return UNDEFINED if found is None else found[1]


def _find_index(from_end: bool) -> Fn:
    def find_index(budget: Budget, args: list[Any]) -> Any:
        test = make_predicate(budget, arg(args, 1))
        pairs = list(enumerate(lodash_array(budget, arg(args, 0))))
        for index, item in (reversed(pairs) if from_end else pairs):
            if test(item, index):
                return index
        return -1

    return find_index


_LODASH_HELPERS.update({
    "chunk": Builtin("chunk", _chunk),
    "partition": Builtin("partition", _partition),
    "intersection": Builtin("intersection", _intersection),
    "zipObject": Builtin("zipObject", _zip_object),
    "invert": Builtin("invert", _invert),
    "findLast": Builtin("findLast", _find_last),
    "findIndex": Builtin("findIndex", _find_index(from_end=False)),
    "findLastIndex": Builtin("findLastIndex", _find_index(from_end=True)),
    "flatMap": Builtin("flatMap", lambda budget, args: _flatten(budget, [_lodash_map(budget, args)])),
    "mean": Builtin("mean", _summed(mean=True)),
    "meanBy": Builtin("meanBy", _summed(mean=True)),
    "indexOf": Builtin("indexOf", lambda budget, args: next(
        (index for index, item in enumerate(lodash_array(budget, arg(args, 0)))
         if strict_equals(item, arg(args, 1))), -1)),
    "nth": Builtin("nth", lambda budget, args: _nth(lodash_array(budget, arg(args, 0)), arg(args, 1))),
    "tail": Builtin("tail", lambda budget, args: lodash_array(budget, arg(args, 0))[1:]),
    "initial": Builtin("initial", lambda budget, args: lodash_array(budget, arg(args, 0))[:-1]),
    "toArray": Builtin("toArray", lambda budget, args: to_array_of_text(arg(args, 0)) if type(arg(args, 0)) is str
                       else _items(budget, arg(args, 0))),
    "castArray": plain("castArray", lambda value=UNDEFINED, *_: value if type(value) is list else [value]),
    "defaultTo": plain("defaultTo", lambda value=UNDEFINED, fallback=UNDEFINED, *_:
                       fallback if value is None or value is UNDEFINED or value != value else value),
    "identity": plain("identity", lambda value=UNDEFINED, *_: value),
    "isFunction": plain("isFunction", lambda value=UNDEFINED, *_: isinstance(value, Builtin) or (callable(
        getattr(value, "call", None)) and not isinstance(value, (dict, list, str)))),
    "upperFirst": _text(lambda text: text[:1].upper() + text[1:]),
    "lowerFirst": _text(lambda text: text[:1].lower() + text[1:]),
    "padStart": Builtin("padStart", lambda budget, args: _pad(budget, args, at_start=True)),
    "padEnd": Builtin("padEnd", lambda budget, args: _pad(budget, args, at_start=False)),
    "repeat": Builtin("repeat", lambda budget, args: _repeat(budget, args)),
})
_LODASH_HELPERS.update(EXTRA_HELPERS)
_LODASH_HELPERS.update(PATTERN_HELPERS)
_LODASH_HELPERS.update(TEXT_HELPERS)
_LODASH_HELPERS.update(PATH_HELPERS)
_LODASH_HELPERS.update(MERGE_HELPERS)
_LODASH_HELPERS.update(FUNCTION_HELPERS)
_LODASH_HELPERS.update(COMPARATOR_HELPERS)
_LODASH_HELPERS["chain"] = Builtin("chain", lambda budget, args: LodashChain(arg(args, 0), explicit=True))

# The helpers that do not look inside an object: they answer the same for an object with getters.
_TAKE_GETTER_OBJECTS = frozenset({"get", "identity", "isFunction", "isObject", "isObjectLike", "isNil", "isNull",
                                  "isUndefined", "constant", "stubArray", "stubFalse", "stubObject",
                                  "stubString", "stubTrue", "noop", "chain"})


def _refusing_getter_objects(name: str, fn: Fn) -> Fn:
    """``fn`` that refuses an object with getters by name: lodash would run its getters, and
    these helpers read plain data only, so an answer without them would be silently wrong
    (``_.keys`` of such an object giving ``[]``)."""
    def guarded(budget: Budget, args: list[Any]) -> Any:
        for value in args:
            if type(value) is GetterObject:
                raise MvuError(Code.UNSUPPORTED, f"`_.{name}` does not take an object with getters: read the "
                                                 "getter as `object.key`, or spread it first (`{...object}`)",
                               function=f"_.{name}")
        return fn(budget, args)
    return guarded


for _name, _helper in _LODASH_HELPERS.items():
    if _name not in _TAKE_GETTER_OBJECTS and isinstance(_helper, Builtin):
        _helper.fn = _refusing_getter_objects(_name, _helper.fn)

REFUSED_LODASH = {
    "random": "it draws chance", "sample": "it draws chance", "sampleSize": "it draws chance",
    "shuffle": "it draws chance", "now": "it reads the clock; `Date.now()` reads the turn's clock",
    "uniqueId": "its counter is shared between calls", "debounce": "timers", "throttle": "timers",
    "defer": "timers", "delay": "timers", "template": "it compiles text to code",
    "curry": "it reads a function's arity", "curryRight": "it reads a function's arity",
    "bind": "it fixes a function's `this`", "bindAll": "it fixes a function's `this`",
    "bindKey": "it fixes a function's `this`", "attempt": "it turns errors into Error objects",
    "mixin": "it changes lodash itself", "runInContext": "it makes another lodash",
    "noConflict": "it changes the global scope",
}
"""lodash functions refused by name (docs/schema.md lists them with these reasons)."""


class _Lodash(Builtin):
    """``_``: callable (an implicit chain) with the helpers as members; a refused helper is
    ``MVU_UNSUPPORTED`` naming it and why."""

    __slots__ = ()

    def get(self, key: str) -> Any:
        helper = self.members.get(key)
        if helper is not None:  # the hot road: `_.clamp` is read on every transform call
            return helper
        reason = REFUSED_LODASH.get(key)
        if reason is not None:
            raise MvuError(Code.UNSUPPORTED, f"`_.{key}` is not supported: {reason}", function=f"_.{key}")
        return super().get(key)


LODASH = _Lodash("_", lambda budget, args: LodashChain(arg(args, 0), explicit=False), _LODASH_HELPERS)


def _nth(items: list[Any], position: Any) -> Any:
    index = 0 if position is UNDEFINED else to_integer(position)
    index = index + len(items) if index < 0 else index
    return items[index] if 0 <= index < len(items) else UNDEFINED


def _pad(budget: Budget, args: list[Any], *, at_start: bool) -> str:
    text = _text_of(args, 0)
    width = 0 if arg(args, 1) is UNDEFINED else to_integer(arg(args, 1))
    filler = " " if arg(args, 2) is UNDEFINED else to_string(arg(args, 2))
    missing = width - len(text)
    if missing <= 0 or not filler:
        return text
    budget.charge(missing)
    padding = (filler * (missing // len(filler) + 1))[:missing]
    return padding + text if at_start else text + padding


def _repeat(budget: Budget, args: list[Any]) -> str:
    count = 1 if arg(args, 1) is UNDEFINED else max(0, to_integer(arg(args, 1)))
    text = _text_of(args, 0)
    budget.charge(len(text) * count)
    return text_limit(text * count)


def _to_integer(number: float | int) -> float | int:
    """lodash's ``toInteger``: NaN is 0 and the infinities become ±Number.MAX_VALUE (toFinite)."""
    if math.isnan(number):
        return 0
    if math.isinf(number):
        return math.copysign(sys.float_info.max, number)
    return number if number == 0 else int(number)  # -0 stays -0, as lodash's `result - remainder`


def spread_copy(value: Any) -> Any:
    """A shallow copy of a collection (``_.clone``)."""
    if type(value) is dict:
        return dict(value)
    if type(value) is list:
        return list(value)
    return value


def _in_range(args: list[Any]) -> bool:
    """lodash's ``inRange``: bounds through ``toFinite`` (NaN is 0), the end alone bounds from 0."""
    start, end = to_finite(arg(args, 1)), arg(args, 2)
    if end is UNDEFINED:
        start, end = 0, start
    else:
        end = to_finite(end)
    number = to_num(arg(args, 0))
    return bool(min(start, end) <= number < max(start, end))
