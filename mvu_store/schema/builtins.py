"""The pure library a declaration may use: ``Math``, the lodash helpers cards use, ``Number``,
``String``, ``Object.keys``-style readers, and the array and string methods.

Everything here is deterministic (no ``Math.random``; ``Date.now()`` is the caller's ``now_ms``),
charges the budget in proportion to the data it touches, and never exposes a prototype.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from functools import cmp_to_key
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import UNSAFE_KEYS
from mvu_store.schema.values import (
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    Namespace,
    Opaque,
    arg,
    fail,
    is_number,
    js_length,
    number_to_string,
    strict_equals,
    to_number,
    to_string,
    truthy,
    typeof,
)

Fn = Callable[[Budget, list[Any]], Any]


def check_writable(budget: Budget, obj: Any) -> None:
    """Refuse writes to anything but a JSON container created outside the declaration's constants."""
    if type(obj) is not dict and type(obj) is not list:
        raise fail(f"cannot modify a {typeof(obj)}")
    if id(obj) in budget.frozen:
        raise MvuError(Code.SCHEMA, "the declaration's constants are read-only")


def iterate(budget: Budget, value: Any) -> list[Any]:
    """The items ``...value`` spreads (arrays and strings)."""
    if type(value) is list:
        budget.charge(len(value))
        return list(value)
    if type(value) is str:
        budget.charge(len(value))
        return list(value)
    raise fail(f"a {typeof(value)} is not iterable")


def spread_entries(value: Any) -> dict[str, Any]:
    """The own entries ``{...value}`` copies."""
    if type(value) is dict:
        return {key: item for key, item in value.items() if key not in UNSAFE_KEYS}
    if type(value) is list or type(value) is str:
        return {str(index): item for index, item in enumerate(value)}
    if value is None or value is UNDEFINED or type(value) in (bool, int, float):
        return {}
    raise fail(f"cannot spread a {typeof(value)}")


def _call(budget: Budget, fn: Any, *args: Any) -> Any:
    if not isinstance(fn, JsCallable):
        raise fail("callback is not a function")
    return fn.call(budget, list(args))


def _predicate(budget: Budget, matcher: Any) -> Callable[[Any, Any], bool]:
    """lodash's iteratee shorthand: a function, a property name or a partial object."""
    if isinstance(matcher, JsCallable):
        return lambda item, key: truthy(matcher.call(budget, [item, key]))
    if type(matcher) is str:
        return lambda item, key: type(item) is dict and truthy(item.get(matcher, UNDEFINED))
    if matcher is UNDEFINED:
        return lambda item, key: truthy(item)
    if type(matcher) is dict:
        return lambda item, key: type(item) is dict and all(
            strict_equals(item.get(k, UNDEFINED), v) for k, v in matcher.items())
    raise fail("unsupported iteratee")


def _mapper(budget: Budget, mapper: Any) -> Callable[[Any, Any], Any]:
    if isinstance(mapper, JsCallable):
        return lambda item, key: mapper.call(budget, [item, key])
    if type(mapper) is str:
        return lambda item, key: item.get(mapper, UNDEFINED) if type(item) is dict else UNDEFINED
    if mapper is UNDEFINED:
        return lambda item, key: item
    raise fail("unsupported iteratee")


def _collection(budget: Budget, value: Any) -> list[tuple[Any, Any]]:
    """(key, item) pairs of an array or an object, as lodash's collection helpers see them."""
    if type(value) is list:
        budget.charge(len(value))
        return list(zip(range(len(value)), value, strict=True))
    if type(value) is dict:
        budget.charge(len(value))
        return list(value.items())
    if value is None or value is UNDEFINED:
        return []
    raise fail(f"expected a collection, got {typeof(value)}")


def js_compare(left: Any, right: Any) -> int:
    """Default ordering for ``sort``/``sortBy``: numbers by value, everything else as strings."""
    if left is UNDEFINED or right is UNDEFINED:
        return (left is UNDEFINED) - (right is UNDEFINED)
    if is_number(left) and is_number(right):
        return int(left > right) - int(left < right)
    a, b = to_string(left), to_string(right)
    return int(a > b) - int(a < b)


def _round(value: float | int, digits: int = 0) -> float | int:
    """JavaScript's Math.round (halves go up) with lodash's optional precision."""
    if not math.isfinite(value):
        return value
    factor = 10**digits
    result = math.floor(value * factor + 0.5) / factor
    return int(result) if digits <= 0 else result


def _num(value: Any) -> float | int:
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[no-any-return]
    return to_number(value, explicit=True)


def _clamp(budget: Budget, args: list[Any]) -> Any:
    number = _num(arg(args, 0))
    lower, upper = arg(args, 1), arg(args, 2)
    if upper is UNDEFINED:
        lower, upper = UNDEFINED, lower
    if math.isnan(number):
        return number
    if upper is not UNDEFINED and not math.isnan(_num(upper)):
        number = min(number, _num(upper))
    if lower is not UNDEFINED and not math.isnan(_num(lower)):
        number = max(number, _num(lower))
    return number


def _math_minmax(pick: Callable[..., Any], empty: float) -> Fn:
    def minmax(budget: Budget, args: list[Any]) -> Any:
        numbers = [_num(item) for item in args]
        if any(math.isnan(item) for item in numbers):
            return math.nan
        return pick(numbers) if numbers else empty

    return minmax


def _unary_math(fn: Callable[[float], float]) -> Fn:
    def apply(budget: Budget, args: list[Any]) -> Any:
        number = _num(arg(args, 0))
        try:
            result = fn(number)
        except (ValueError, OverflowError):
            return math.nan
        return int(result) if isinstance(result, float) and result.is_integer() and abs(result) < 2**53 else result

    return apply


def _math_round(budget: Budget, args: list[Any]) -> Any:
    return _round(_num(arg(args, 0)))


def _sign(value: float) -> float:
    return value if value == 0 or math.isnan(value) else math.copysign(1, value)


MATH = Namespace("Math", {
    "abs": Builtin("abs", _unary_math(abs)),
    "ceil": Builtin("ceil", _unary_math(lambda x: x if not math.isfinite(x) else float(math.ceil(x)))),
    "floor": Builtin("floor", _unary_math(lambda x: x if not math.isfinite(x) else float(math.floor(x)))),
    "trunc": Builtin("trunc", _unary_math(lambda x: x if not math.isfinite(x) else float(math.trunc(x)))),
    "round": Builtin("round", _math_round),
    "sign": Builtin("sign", _unary_math(_sign)),
    "sqrt": Builtin("sqrt", _unary_math(math.sqrt)),
    "cbrt": Builtin("cbrt", _unary_math(lambda x: math.copysign(abs(x) ** (1 / 3), x))),
    "log": Builtin("log", _unary_math(math.log)),
    "log10": Builtin("log10", _unary_math(math.log10)),
    "log2": Builtin("log2", _unary_math(math.log2)),
    "exp": Builtin("exp", _unary_math(math.exp)),
    "pow": Builtin("pow", lambda b, a: _unary_math(lambda x: x ** _num(arg(a, 1)))(b, a)),
    "min": Builtin("min", _math_minmax(min, math.inf)),
    "max": Builtin("max", _math_minmax(max, -math.inf)),
    "hypot": Builtin("hypot", lambda b, a: math.hypot(*(_num(x) for x in a))),
    "PI": math.pi,
    "E": math.e,
})


# -- lodash --------------------------------------------------------------------------------


def _pick_by(keep: bool) -> Fn:
    def pick_by(budget: Budget, args: list[Any]) -> Any:
        test = _predicate(budget, arg(args, 1))
        return {key: item for key, item in _collection(budget, arg(args, 0)) if test(item, key) == keep}

    return pick_by


def _pick(keep: bool) -> Fn:
    def pick(budget: Budget, args: list[Any]) -> Any:
        names: set[str] = set()
        for item in args[1:]:
            names.update(to_string(name) for name in (item if type(item) is list else [item]))
        return {key: item for key, item in _collection(budget, arg(args, 0)) if (key in names) == keep}

    return pick


def _map_values(budget: Budget, args: list[Any]) -> Any:
    mapper = _mapper(budget, arg(args, 1))
    return {key: mapper(item, key) for key, item in _collection(budget, arg(args, 0))}


def _lodash_map(budget: Budget, args: list[Any]) -> Any:
    mapper = _mapper(budget, arg(args, 1))
    return [mapper(item, key) for key, item in _collection(budget, arg(args, 0))]


def _lodash_filter(budget: Budget, args: list[Any]) -> Any:
    test = _predicate(budget, arg(args, 1))
    return [item for key, item in _collection(budget, arg(args, 0)) if test(item, key)]


def _lodash_get(budget: Budget, args: list[Any]) -> Any:
    from mvu_store.schema.evaluate import get_member

    value, path, default = arg(args, 0), arg(args, 1), arg(args, 2)
    parts = path if type(path) is list else to_string(path).replace("[", ".").replace("]", "").split(".")
    budget.charge(len(parts))
    for part in parts:
        if type(value) is not dict and type(value) is not list:
            return default
        value = get_member(value, part)
        if value is UNDEFINED:
            return default
    return value


def _is_empty(budget: Budget, args: list[Any]) -> bool:
    value = arg(args, 0)
    if type(value) in (dict, list, str):
        return len(value) == 0
    return True


def _sort_by(budget: Budget, args: list[Any]) -> Any:
    items = [item for _, item in _collection(budget, arg(args, 0))]
    keys = arg(args, 1)
    mappers = [_mapper(budget, key) for key in (keys if type(keys) is list else [keys])]
    budget.charge(len(items) * max(1, len(items).bit_length()))
    decorated = [([mapper(item, None) for mapper in mappers], item) for item in items]

    def compare(left: tuple[list[Any], Any], right: tuple[list[Any], Any]) -> int:
        for a, b in zip(left[0], right[0], strict=True):
            order = js_compare(a, b)
            if order:
                return order
        return 0

    return [item for _, item in sorted(decorated, key=cmp_to_key(compare))]


def _uniq(budget: Budget, args: list[Any]) -> Any:
    items = arg(args, 0)
    if type(items) is not list:
        return []
    budget.charge(len(items) ** 2 // 64 + len(items))
    result: list[Any] = []
    for item in items:
        if not any(strict_equals(item, seen) for seen in result):
            result.append(item)
    return result


def _sum(budget: Budget, args: list[Any]) -> Any:
    items = [item for _, item in _collection(budget, arg(args, 0))]
    return sum((_num(item) for item in items), 0)


def _deep_copy(budget: Budget, value: Any) -> Any:
    if type(value) is dict:
        budget.charge(len(value))
        return {key: _deep_copy(budget, item) for key, item in value.items()}
    if type(value) is list:
        budget.charge(len(value))
        return [_deep_copy(budget, item) for item in value]
    return value


def _merge(budget: Budget, args: list[Any]) -> Any:
    target = arg(args, 0)
    check_writable(budget, target)

    def merge_into(into: dict[str, Any], source: Any) -> None:
        if type(source) is not dict:
            return
        budget.charge(len(source))
        for key, item in source.items():
            if key in UNSAFE_KEYS:
                continue
            if type(item) is dict and type(into.get(key)) is dict and id(into[key]) not in budget.frozen:
                merge_into(into[key], item)
            else:
                into[key] = _deep_copy(budget, item)

    for source in args[1:]:
        merge_into(target, source)
    return target


def _range(budget: Budget, args: list[Any]) -> Any:
    numbers = [_num(item) for item in args if item is not UNDEFINED]
    if len(numbers) == 1:
        numbers = [0, numbers[0]]
    start, end, step = numbers[0], numbers[1], numbers[2] if len(numbers) > 2 else 1
    if step == 0 or not all(math.isfinite(x) for x in (start, end, step)):
        return []
    count = max(0, math.ceil((end - start) / step))
    budget.charge(count)
    return [start + index * step for index in range(count)]


def _wrap(name: str, fn: Callable[..., Any]) -> Builtin:
    """A lodash helper of plain values: ``fn(*args)`` without the budget."""
    return Builtin(name, lambda budget, args: fn(*args))


def _entries(budget: Budget, args: list[Any]) -> Any:
    return [[to_string(key), item] for key, item in _collection(budget, arg(args, 0))]


def _keys(budget: Budget, args: list[Any]) -> Any:
    return [to_string(key) for key, _ in _collection(budget, arg(args, 0))]


def _values(budget: Budget, args: list[Any]) -> Any:
    return [item for _, item in _collection(budget, arg(args, 0))]


def _from_entries(budget: Budget, args: list[Any]) -> Any:
    result: dict[str, Any] = {}
    for _, pair in _collection(budget, arg(args, 0)):
        if type(pair) is not list:
            raise fail("fromEntries needs [key, value] pairs")
        key = to_string(arg(pair, 0))
        if key in UNSAFE_KEYS:
            raise MvuError(Code.SCHEMA, f"the key `{key}` is not allowed", key=key)
        result[key] = arg(pair, 1)
    return result


def _size(budget: Budget, args: list[Any]) -> Any:
    value = arg(args, 0)
    return len(value) if type(value) in (dict, list, str) else 0


def _lodash_round(method: str) -> Fn:
    def apply(budget: Budget, args: list[Any]) -> Any:
        number, digits = _num(arg(args, 0)), arg(args, 1)
        precision = 0 if digits is UNDEFINED else int(_num(digits))
        if method == "round":
            return _round(number, precision)
        factor = 10**precision
        rounded = (math.floor if method == "floor" else math.ceil)(number * factor) / factor
        return int(rounded) if precision <= 0 else rounded

    return apply


def _minmax_of(pick: Callable[..., Any]) -> Fn:
    def apply(budget: Budget, args: list[Any]) -> Any:
        items = [item for _, item in _collection(budget, arg(args, 0))]
        return pick(items, key=_num) if items else UNDEFINED

    return apply


def _take(from_end: bool) -> Fn:
    def take(budget: Budget, args: list[Any]) -> Any:
        items = arg(args, 0)
        count = 1 if arg(args, 1) is UNDEFINED else max(0, int(_num(arg(args, 1))))
        if type(items) is not list:
            return []
        budget.charge(len(items))
        if from_end:
            return items[len(items) - count:] if count else []
        return items[:count]

    return take


def _is_plain(value: Any) -> bool:
    return type(value) is dict


def _is_integer(value: Any) -> bool:
    return is_number(value) and math.isfinite(value) and value == int(value)


class LodashChain(Opaque):
    """``_(value)`` / ``_.chain(value)``: lodash's wrapper, ended by ``.value()``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def get(self, key: str) -> Any:
        if key == "value":
            return Builtin("value", lambda budget, args: self.value)
        helper = _LODASH_HELPERS.get(key)
        if not isinstance(helper, Builtin):
            return super().get(key)
        return Builtin(key, lambda budget, args: LodashChain(helper.call(budget, [self.value, *args])))


_LODASH_HELPERS: dict[str, Any] = {
    "clamp": Builtin("clamp", _clamp),
    "pickBy": Builtin("pickBy", _pick_by(True)),
    "omitBy": Builtin("omitBy", _pick_by(False)),
    "pick": Builtin("pick", _pick(True)),
    "omit": Builtin("omit", _pick(False)),
    "mapValues": Builtin("mapValues", _map_values),
    "map": Builtin("map", _lodash_map),
    "filter": Builtin("filter", _lodash_filter),
    "get": Builtin("get", _lodash_get),
    "isEmpty": Builtin("isEmpty", _is_empty),
    "sortBy": Builtin("sortBy", _sort_by),
    "uniq": Builtin("uniq", _uniq),
    "sum": Builtin("sum", _sum),
    "keys": Builtin("keys", _keys),
    "values": Builtin("values", _values),
    "entries": Builtin("entries", _entries),
    "toPairs": Builtin("toPairs", _entries),
    "fromPairs": Builtin("fromPairs", _from_entries),
    "size": Builtin("size", _size),
    "round": Builtin("round", _lodash_round("round")),
    "floor": Builtin("floor", _lodash_round("floor")),
    "ceil": Builtin("ceil", _lodash_round("ceil")),
    "max": Builtin("max", _minmax_of(max)),
    "min": Builtin("min", _minmax_of(min)),
    "take": Builtin("take", _take(False)),
    "takeRight": Builtin("takeRight", _take(True)),
    "range": Builtin("range", _range),
    "merge": Builtin("merge", _merge),
    "cloneDeep": Builtin("cloneDeep", lambda budget, args: _deep_copy(budget, arg(args, 0))),
    "has": Builtin("has", lambda budget, args: type(arg(args, 0)) is dict and to_string(arg(args, 1)) in arg(args, 0)),
    "includes": Builtin("includes", lambda budget, args: any(
        strict_equals(item, arg(args, 1)) for _, item in _collection(budget, arg(args, 0)))),
    "isNumber": _wrap("isNumber", lambda value=UNDEFINED, *_: is_number(value)),
    "isString": _wrap("isString", lambda value=UNDEFINED, *_: type(value) is str),
    "isBoolean": _wrap("isBoolean", lambda value=UNDEFINED, *_: type(value) is bool),
    "isArray": _wrap("isArray", lambda value=UNDEFINED, *_: type(value) is list),
    "isPlainObject": _wrap("isPlainObject", lambda value=UNDEFINED, *_: _is_plain(value)),
    "isObject": _wrap("isObject", lambda value=UNDEFINED, *_: type(value) in (dict, list) or isinstance(value, Opaque)),
    "isNil": _wrap("isNil", lambda value=UNDEFINED, *_: value is None or value is UNDEFINED),
    "isFinite": _wrap("isFinite", lambda value=UNDEFINED, *_: is_number(value) and math.isfinite(value)),
    "isInteger": _wrap("isInteger", lambda value=UNDEFINED, *_: _is_integer(value)),
    "inRange": Builtin("inRange", lambda budget, args: _in_range(args)),
    "toNumber": _wrap("toNumber", lambda value=UNDEFINED, *_: _num(value)),
    "toString": _wrap("toString", lambda value=UNDEFINED, *_: "" if value in (None, UNDEFINED) else to_string(value)),
    "first": _wrap("first", lambda value=UNDEFINED, *_: value[0] if type(value) is list and value else UNDEFINED),
    "head": _wrap("head", lambda value=UNDEFINED, *_: value[0] if type(value) is list and value else UNDEFINED),
    "last": _wrap("last", lambda value=UNDEFINED, *_: value[-1] if type(value) is list and value else UNDEFINED),
    "compact": _wrap("compact", lambda value=UNDEFINED, *_: [x for x in value if truthy(x)] if type(value) is list
                     else []),
}
_LODASH_HELPERS["chain"] = Builtin("chain", lambda budget, args: LodashChain(arg(args, 0)))
LODASH = Builtin("_", lambda budget, args: LodashChain(arg(args, 0)), _LODASH_HELPERS)


def _in_range(args: list[Any]) -> bool:
    number, start, end = _num(arg(args, 0)), _num(arg(args, 1)), arg(args, 2)
    if end is UNDEFINED:
        start, end = 0, start
    low, high = sorted((start, _num(end)))
    return bool(low <= number < high)


# -- global functions and namespaces ------------------------------------------------------------


def _parse_float(budget: Budget, args: list[Any]) -> Any:
    text = to_string(arg(args, 0)).strip()
    end = 0
    best: float | int = math.nan
    while end < len(text) and end < 400:
        end += 1
        candidate = text[:end]
        if candidate.lower() in {"inf", "infi", "infin", "infini", "infinit", "nan"}:
            continue
        try:
            best = float(candidate)
        except ValueError:
            if candidate[-1] not in "eE+-.":
                break
    if text.startswith(("Infinity", "+Infinity")):
        return math.inf
    if text.startswith("-Infinity"):
        return -math.inf
    return int(best) if isinstance(best, float) and best.is_integer() and abs(best) < 2**53 else best


def _parse_int(budget: Budget, args: list[Any]) -> Any:
    text = to_string(arg(args, 0)).strip()
    radix = arg(args, 1)
    base = 10 if radix is UNDEFINED or _num(radix) == 0 else int(_num(radix))
    sign = -1 if text.startswith("-") else 1
    text = text.lstrip("+-")
    if base in (10, 16) and text.lower().startswith("0x") and radix in (UNDEFINED, 16):
        base, text = 16, text[2:]
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:base]
    count = 0
    while count < len(text) and text[count].lower() in digits:
        count += 1
    if count == 0 or not 2 <= base <= 36:
        return math.nan
    value = sign * int(text[:count], base)
    return value if abs(value) < 2**53 else float(value)


def _number(budget: Budget, args: list[Any]) -> Any:
    return 0 if not args else _num(args[0])


def _string(budget: Budget, args: list[Any]) -> Any:
    return "" if not args else to_string(args[0])


def _date_now(budget: Budget, args: list[Any]) -> Any:
    if budget.now_ms is None:
        raise MvuError(Code.SCHEMA, "Date.now() needs the caller's clock (now_ms)")
    return budget.now_ms


def _has_own(budget: Budget, args: list[Any]) -> bool:
    target, key = arg(args, 0), to_string(arg(args, 1))
    if type(target) is dict:
        return key in target
    if type(target) is list:
        return key.isdigit() and int(key) < len(target)
    return False


def _define_property(budget: Budget, args: list[Any]) -> Any:
    """``Object.defineProperty(target, key, {value | get})``: bundlers' export getters.

    A getter is read once, now: declarations are evaluated once, top to bottom.
    """
    from mvu_store.schema.evaluate import set_member  # evaluate imports this module

    target, key, descriptor = arg(args, 0), arg(args, 1), arg(args, 2)
    if type(descriptor) is not dict:
        raise fail("Object.defineProperty needs a descriptor object")
    getter = descriptor.get("get")
    if "value" in descriptor:
        value = descriptor["value"]
    elif isinstance(getter, JsCallable):
        value = getter.call(budget, [])
    else:
        value = UNDEFINED
    set_member(budget, target, key, value)
    return target


def _stringify(budget: Budget, args: list[Any]) -> Any:
    value = arg(args, 0)
    if value is UNDEFINED or isinstance(value, Opaque):
        return UNDEFINED
    budget.charge(len(value) if type(value) in (dict, list, str) else 1)

    def clean(item: Any) -> Any:
        if type(item) is dict:
            return {key: clean(child) for key, child in item.items()
                    if child is not UNDEFINED and not isinstance(child, Opaque)}
        if type(item) is list:
            return [None if child is UNDEFINED or isinstance(child, Opaque) else clean(child) for child in item]
        if type(item) is float and not math.isfinite(item):
            return None
        return item

    return json.dumps(clean(value), ensure_ascii=False, separators=(",", ":"))


def _json_parse(budget: Budget, args: list[Any]) -> Any:
    from mvu_store.jsonvalue import loads

    text = to_string(arg(args, 0))
    budget.charge(len(text))
    return loads(text)


NUMBER = Builtin("Number", _number, {
    "isInteger": _wrap("isInteger", lambda value=UNDEFINED, *_: _is_integer(value)),
    "isSafeInteger": _wrap("isSafeInteger", lambda value=UNDEFINED, *_: is_number(value) and math.isfinite(value)
                           and value == int(value) and abs(value) <= 2**53 - 1),
    "isFinite": _wrap("isFinite", lambda value=UNDEFINED, *_: is_number(value) and math.isfinite(value)),
    "isNaN": _wrap("isNaN", lambda value=UNDEFINED, *_: is_number(value) and math.isnan(value)),
    "parseFloat": Builtin("parseFloat", _parse_float),
    "parseInt": Builtin("parseInt", _parse_int),
    "MAX_SAFE_INTEGER": 2**53 - 1,
    "MIN_SAFE_INTEGER": -(2**53 - 1),
    "MAX_VALUE": 1.7976931348623157e308,
    "EPSILON": 2.0**-52,
    "POSITIVE_INFINITY": math.inf,
    "NEGATIVE_INFINITY": -math.inf,
    "NaN": math.nan,
})
OBJECT = Namespace("Object", {
    "keys": Builtin("keys", _keys),
    "values": Builtin("values", _values),
    "entries": Builtin("entries", _entries),
    "fromEntries": Builtin("fromEntries", _from_entries),
    "freeze": Builtin("freeze", lambda budget, args: arg(args, 0)),
    "defineProperty": Builtin("defineProperty", _define_property),
    "prototype": Namespace("Object.prototype", {
        "hasOwnProperty": Namespace("Object.prototype.hasOwnProperty", {"call": Builtin("hasOwnProperty", _has_own)}),
    }),
})
_QUIET = Builtin("log", lambda budget, args: UNDEFINED)
GLOBALS: dict[str, Any] = {
    # Cards log around registration; the interpreter has no console, so logging does nothing.
    "console": Namespace("console", {name: _QUIET for name in ("log", "info", "warn", "error", "debug")}),
    "Math": MATH,
    "_": LODASH,
    "Number": NUMBER,
    "String": Builtin("String", _string),
    "Boolean": Builtin("Boolean", lambda budget, args: truthy(arg(args, 0))),
    "Array": Namespace("Array", {"isArray": _wrap("isArray", lambda value=UNDEFINED, *_: type(value) is list)}),
    "Object": OBJECT,
    "JSON": Namespace("JSON", {"stringify": Builtin("stringify", _stringify), "parse": Builtin("parse", _json_parse)}),
    "Date": Namespace("Date", {"now": Builtin("now", _date_now)}),
    "parseInt": Builtin("parseInt", _parse_int),
    "parseFloat": Builtin("parseFloat", _parse_float),
    "isNaN": Builtin("isNaN", lambda budget, args: math.isnan(_num(arg(args, 0)))),
    "isFinite": Builtin("isFinite", lambda budget, args: math.isfinite(_num(arg(args, 0)))),
    "Infinity": math.inf,
    "NaN": math.nan,
}


# -- methods of arrays, strings and numbers ----------------------------------------------------


def method_of(value: Any, name: str) -> Any:
    """``value.name`` for an array, a string, a number or a boolean: a bound builtin."""
    table = _ARRAY_METHODS if type(value) is list else _STRING_METHODS if type(value) is str else _NUMBER_METHODS
    if type(value) is bool:
        table = {"toString": _NUMBER_METHODS["toString"]}
    method = table.get(name)
    if method is None:
        raise MvuError(Code.UNSUPPORTED, f"`{name}` of a {typeof(value)} is not supported")
    return Builtin(name, lambda budget, args: method(budget, value, args))


Method = Callable[[Budget, Any, list[Any]], Any]


def _each(budget: Budget, items: list[Any], fn: Any) -> Iterator[tuple[int, Any, Any]]:
    """(index, item, fn(item, index)) for a callback over a snapshot of ``items``."""
    for index, item in enumerate(list(items)):
        yield index, item, _call(budget, fn, item, index)


def _slice_bounds(length: int, args: list[Any]) -> tuple[int, int]:
    def position(value: Any, default: int) -> int:
        if value is UNDEFINED:
            return default
        number = _num(value)
        if math.isnan(number):
            return 0
        index = int(number) if math.isfinite(number) else (length if number > 0 else -length)
        return max(0, length + index) if index < 0 else min(index, length)

    return position(arg(args, 0), 0), position(arg(args, 1), length)


def _reduce(budget: Budget, items: list[Any], args: list[Any]) -> Any:
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
        accumulator = _call(budget, fn, accumulator, item, index + offset)
    return accumulator


def _sort(budget: Budget, items: list[Any], args: list[Any]) -> Any:
    check_writable(budget, items)
    fn = arg(args, 0)
    budget.charge(len(items) * max(1, len(items).bit_length()))
    if fn is UNDEFINED:
        items.sort(key=cmp_to_key(js_compare))
    else:
        def compare(left: Any, right: Any) -> int:
            order = _num(_call(budget, fn, left, right))
            return 0 if math.isnan(order) else (order > 0) - (order < 0)

        items.sort(key=cmp_to_key(compare))
    return items


def _splice(budget: Budget, items: list[Any], args: list[Any]) -> Any:
    check_writable(budget, items)
    start, _ = _slice_bounds(len(items), [arg(args, 0)])
    count = len(items) - start if len(args) < 2 else max(0, min(int(_num(args[1])), len(items) - start))
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


def _join(budget: Budget, items: list[Any], args: list[Any]) -> str:
    separator = "," if arg(args, 0) is UNDEFINED else to_string(args[0])
    budget.charge(len(items))
    return separator.join("" if item is None or item is UNDEFINED else to_string(item) for item in items)


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
    index = int(_num(arg(args, 0)))
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
    "includes": lambda budget, items, args: any(strict_equals(item, arg(args, 0)) for item in items),
    "indexOf": _index_of,
    "join": _join,
    "slice": lambda budget, items, args: items[slice(*_slice_bounds(len(items), args))],
    "concat": lambda budget, items, args: items + [x for part in args
                                                   for x in (part if type(part) is list else [part])],
    "flat": _flat,
    "at": _at,
    "sort": _sort,
    "toSorted": lambda budget, items, args: _sort(budget, list(items), args),
    "reverse": lambda budget, items, args: _reverse(budget, items),
    "toReversed": lambda budget, items, args: items[::-1],
    "push": _push,
    "pop": lambda budget, items, args: _take_out(budget, items, -1),
    "shift": lambda budget, items, args: _take_out(budget, items, 0),
    "unshift": lambda budget, items, args: (_splice(budget, items, [0, 0, *args]) and len(items)) or len(items),
    "splice": _splice,
}


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
        return text.replace(pattern, replacement, -1 if every else 1)

    return replace


def _pad(at_start: bool) -> Method:
    def pad(budget: Budget, text: str, args: list[Any]) -> str:
        width = int(_num(arg(args, 0)))
        filler = " " if arg(args, 1) is UNDEFINED else to_string(args[1])
        missing = width - js_length(text)
        if missing <= 0 or not filler:
            return text
        budget.charge(missing)
        padding = (filler * (missing // len(filler) + 1))[:missing]
        return padding + text if at_start else text + padding

    return pad


def _repeat(budget: Budget, text: str, args: list[Any]) -> str:
    count = int(_num(arg(args, 0)))
    if count < 0:
        raise fail("invalid repeat count")
    budget.charge(len(text) * count)
    return text * count


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
        max(0, _num(arg(args, 0))) if arg(args, 0) is not UNDEFINED else 0,
        max(0, _num(arg(args, 1))) if arg(args, 1) is not UNDEFINED else UNDEFINED])))],
    "split": _split,
    "replace": _replace(False),
    "replaceAll": _replace(True),
    "padStart": _pad(True),
    "padEnd": _pad(False),
    "repeat": _repeat,
    "charAt": lambda budget, text, args: _at(budget, text, args[:1] or [0]) if _num(arg(args, 0) or 0) >= 0 else "",
    "at": _at,
    "concat": lambda budget, text, args: text + "".join(to_string(part) for part in args),
    "toString": lambda budget, text, args: text,
}


def _to_fixed(budget: Budget, number: Any, args: list[Any]) -> str:
    digits = 0 if arg(args, 0) is UNDEFINED else int(_num(args[0]))
    if not 0 <= digits <= 100:
        raise fail("toFixed() digits must be between 0 and 100")
    if not math.isfinite(number) or abs(number) >= 1e21:
        return number_to_string(number)
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(number).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


_NUMBER_METHODS: dict[str, Method] = {
    "toFixed": _to_fixed,
    "toString": lambda budget, value, args: to_string(value),
}
