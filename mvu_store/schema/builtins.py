"""The pure library a declaration may use: ``Math``, ``Number``, ``String``, ``Object``'s
readers, ``JSON``, the global functions, and the helpers the lodash and method modules share.

Everything here is deterministic (no ``Math.random``; ``Date`` reads the caller's ``now_ms``),
charges the budget in proportion to the data it touches, and never exposes a prototype.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js import json as json_text
from mvu_store.js.members import check_writable, data_member, own_keys, property_key, safe_key, set_member
from mvu_store.js.strings import units
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    Namespace,
    Opaque,
    arg,
    fail,
    is_number,
    same_value_key,
    strict_equals,
    text_limit,
    to_string,
    truthy,
    typeof,
)
from mvu_store.jsonvalue import UNSAFE_KEYS
from mvu_store.schema.accessors import GetterObject
from mvu_store.schema.arrays import array_from, array_like, make_array
from mvu_store.schema.dates import DATE, JsDate
from mvu_store.schema.locale_numbers import INTL
from mvu_store.schema.maps import JsMap
from mvu_store.schema.numeric import MATH, NUMBER, parse_float, parse_int, to_num
from mvu_store.schema.regex import REGEXP
from mvu_store.schema.strings import STRING_STATICS

Fn = Callable[[Budget, list[Any]], Any]


def iterate(budget: Budget, value: Any) -> list[Any]:
    """The items ``...value`` spreads (arrays, strings and sets)."""
    if isinstance(value, JsSet):
        value = value.items
    if isinstance(value, JsMap):
        value = value.pairs()
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


def call_fn(budget: Budget, fn: Any, *args: Any) -> Any:
    if not isinstance(fn, JsCallable):
        raise fail("callback is not a function")
    return fn.call(budget, list(args))


# lodash's own path grammar (``stringToPath``): plain segments, ``[0]``/``[-1.5]`` numbers,
# quoted keys with backslash escapes, and the empty keys of ``a..b`` or ``a[]``.
_PATH_SEGMENT = re.compile(
    r"""[^.[\]]+|\[(?:(-?\d+(?:\.\d+)?)|(["'])((?:(?!\2)[^\\]|\\.)*?)\2)\]|(?=(?:\.|\[\])(?:\.|\[\]|$))""")
_ESCAPED = re.compile(r"\\(\\)?")
_DEEP_PATH = re.compile(r"""\.|\[(?:[^[\]]*|(["'])(?:(?!\1)[^\\]|\\.)*?\1)\]""")
_PLAIN_KEY = re.compile(r"\w*", re.ASCII)


def path_parts(path: Any, target: Any = UNDEFINED) -> list[Any]:
    """lodash's ``castPath``: an array as it is; a number, boolean or null, a key without dots or
    brackets, or a key ``target`` already has, as one key; any other text parsed as a path."""
    if type(path) is list:
        return path
    if path is None or path is UNDEFINED or type(path) in (bool, int, float):
        return [item_string(path)]
    path = item_string(path)  # an object's text is parsed: `{}` is the path `object Object`
    if _PLAIN_KEY.fullmatch(path) or not _DEEP_PATH.search(path) or has_key(target, path):
        return [path]
    parts: list[Any] = [""] if path.startswith(".") else []
    for found in _PATH_SEGMENT.finditer(path):
        number, quote, quoted = found.group(1), found.group(2), found.group(3)
        parts.append(_ESCAPED.sub(lambda escape: escape.group(1) or "", quoted) if quote else number or found.group())
    return parts


def has_key(target: Any, key: str) -> bool:
    """JavaScript's ``key in Object(target)`` for the own data lodash's paths read."""
    if type(target) is dict:
        return key in target
    return type(target) in (list, str) and (key == "length" or data_member(target, key) is not UNDEFINED)


def lodash_array(budget: Budget, value: Any) -> list[Any]:
    """The items of an array-like, as lodash's *array* helpers see them: an array, a string's
    UTF-16 units, and nothing for an object (it has no length: `_.sum({a: 1})` is 0)."""
    if type(value) is list:
        budget.charge(len(value))
        return value
    if type(value) is str:
        budget.charge(len(value))
        return list(units(value))
    return []


def lodash_string(value: Any) -> str:
    """lodash's ``toString``: ``''`` for null and undefined, the rest as :func:`item_string`."""
    return "" if value is None or value is UNDEFINED else item_string(value)


def item_string(value: Any) -> str:
    """lodash's ``baseToString``: ``'-0'`` for -0 and arrays joined from their items' own
    ``baseToString`` (so ``[null, -0]`` gives ``'null,-0'`` where JavaScript gives ``',0'``)."""
    if type(value) is list:
        return text_limit(",".join(item_string(item) for item in value))
    if type(value) is float and value == 0 and math.copysign(1, value) < 0:
        return "-0"
    return to_string(value)


def read_path(value: Any, parts: list[Any]) -> Any:
    """``_.get(value, parts)``: own data along the path, ``undefined`` where it ends."""
    for part in parts:
        if type(value) is GetterObject:  # its data, or a refusal naming a getter (no budget here)
            value = value.get(property_key(part))
            continue
        if type(value) is not dict and type(value) is not list and type(value) is not str:
            return UNDEFINED
        value = data_member(value, part)
    return value


def is_match(budget: Budget, item: Any, source: Any) -> bool:
    """lodash's ``isMatch``: every entry of ``source`` is in ``item`` (objects partially, deeply)."""
    budget.charge(1)
    if type(source) is dict:  # every own key of source, on any non-null value (`isMatch(1, {})`)
        if item is None or item is UNDEFINED:
            return not source
        return all(has_key(item, key) and is_match(budget, data_member(item, key), value)
                   for key, value in source.items())
    if type(source) is list:
        return type(item) is list and all(any(is_match(budget, have, want) for have in item) for want in source)
    return same_value_key(item) == same_value_key(source) or (
        type(item) in (int, float) and type(source) in (int, float) and item == source)


def matches_source(budget: Budget, item: Any, source: Any) -> bool:
    """lodash's ``baseIsMatch``: the source's own keys in order (an array source index by index),
    their values compared partially (nested arrays in any order)."""
    if type(source) is list:
        source = {str(index): value for index, value in enumerate(source)}
    return is_match(budget, item, source) if type(source) is dict else True


def _matches_property(budget: Budget, item: Any, parts: list[Any], wanted: Any) -> bool:
    """lodash's ``matchesProperty``: an undefined value matches undefined only where the path exists."""
    found = read_path(item, parts)
    if found is UNDEFINED and wanted is UNDEFINED:
        return _path_exists(item, parts)
    return is_match(budget, found, wanted)


def _path_exists(value: Any, parts: list[Any]) -> bool:
    for part in parts:
        key = item_string(part)
        if not has_key(value, key):
            return False
        value = data_member(value, key)
    return True


def make_mapper(budget: Budget, mapper: Any) -> Callable[[Any, Any], Any]:
    """lodash's iteratee: a function, a property path, ``[path, value]`` (matchesProperty), a
    partial object (matches), or nothing (identity)."""
    if isinstance(mapper, JsCallable):
        return lambda item, key: mapper.call(budget, [item, key])
    if mapper is UNDEFINED or mapper is None:
        return lambda item, key: item
    if type(mapper) is str or type(mapper) in (int, float):
        parts = path_parts(mapper)
        return lambda item, key: read_path(item, parts)
    if type(mapper) is list:
        parts, wanted = path_parts(arg(mapper, 0)), arg(mapper, 1)
        return lambda item, key: _matches_property(budget, item, parts, wanted)
    if type(mapper) is dict:
        return lambda item, key: matches_source(budget, item, mapper)
    raise fail("unsupported iteratee")


def make_predicate(budget: Budget, matcher: Any) -> Callable[[Any, Any], bool]:
    mapper = make_mapper(budget, matcher)
    return lambda item, key: truthy(mapper(item, key))


def collection(budget: Budget, value: Any) -> list[tuple[Any, Any]]:
    """(key, item) pairs of an array or an object, as lodash's collection helpers see them."""
    if type(value) is list:
        budget.charge(len(value))
        return list(zip(range(len(value)), value, strict=True))
    if type(value) is dict:
        budget.charge(len(value))
        return [(key, value[key]) for key in own_keys(value)]
    if type(value) is str:  # lodash reads a string as an array of its characters
        budget.charge(len(value))
        return list(enumerate(units(value)))
    return []  # null, undefined, numbers and booleans have no entries


def js_compare(left: Any, right: Any) -> int:
    """Default ordering for ``sort``/``sortBy``: numbers by value, everything else as strings."""
    if left is UNDEFINED or right is UNDEFINED:
        return (left is UNDEFINED) - (right is UNDEFINED)
    if is_number(left) and is_number(right):
        return int(left > right) - int(left < right)
    a, b = to_string(left), to_string(right)
    return int(a > b) - int(a < b)


# -- lodash --------------------------------------------------------------------------------


def deep_copy(budget: Budget, value: Any) -> Any:
    if type(value) is dict:
        budget.charge(len(value))
        return {key: deep_copy(budget, item) for key, item in value.items()}
    if type(value) is list:
        budget.charge(len(value))
        return [deep_copy(budget, item) for item in value]
    return value


def plain(name: str, fn: Callable[..., Any]) -> Builtin:
    """A helper of plain values, ``fn(*args)``, charged for the size of its first argument."""
    def call(budget: Budget, args: list[Any]) -> Any:
        first: Any = args[0] if args else None
        budget.charge(len(first) if type(first) in (dict, list, str) else 1)
        return fn(*args)

    return Builtin(name, call)


def entries(budget: Budget, args: list[Any]) -> Any:
    return [[to_string(key), item] for key, item in collection(budget, arg(args, 0))]


def keys(budget: Budget, args: list[Any]) -> Any:
    return [to_string(key) for key, _ in collection(budget, arg(args, 0))]


def values(budget: Budget, args: list[Any]) -> Any:
    return [item for _, item in collection(budget, arg(args, 0))]


def from_entries(budget: Budget, args: list[Any]) -> Any:
    result: dict[str, Any] = {}
    source = arg(args, 0)
    iterable = isinstance(source, JsMap | JsSet)
    for _, pair in list(enumerate(iterate(budget, source))) if iterable else collection(budget, source):
        if type(pair) is not list:
            raise fail("fromEntries needs [key, value] pairs")
        result[safe_key(to_string(arg(pair, 0)))] = arg(pair, 1)
    return result


def charged_text(budget: Budget, value: Any) -> str:
    """``ToString`` that pays for an array's text: joining a large array is real work, and a loop
    of ``String(items)`` or ``` `${items}` ``` must exhaust the budget like any other loop."""
    text = to_string(value)
    if type(value) is list:
        budget.charge(len(text) // 8)
    return text


def _string(budget: Budget, args: list[Any]) -> Any:
    return "" if not args else charged_text(budget, args[0])


def assign_into(defaults_only: bool) -> Fn:
    """``Object.assign`` / ``_.assign`` (later sources win) and ``_.defaults`` (fills only
    undefined keys): shallow copies of own entries into a writable target."""
    def assign(budget: Budget, args: list[Any]) -> Any:
        target = arg(args, 0)
        check_writable(budget, target)
        for source in args[1:]:
            for key, item in collection(budget, source):
                name = to_string(key)
                if name in UNSAFE_KEYS or (defaults_only and data_member(target, name) is not UNDEFINED):
                    continue
                set_member(budget, target, name, item)
        return target

    return assign


class JsSet(Opaque):
    """``new Set(items)``: insertion-ordered unique items (JavaScript equality on primitives)."""

    __slots__ = ("items", "keys")

    def __init__(self, items: list[Any]) -> None:
        self.items: list[Any] = []
        self.keys: set[tuple[str, Any]] = set()  # hashed identities: adding stays O(1)
        for item in items:
            self.add(item)

    def add(self, item: Any) -> JsSet:
        key = same_value_key(item)
        if key not in self.keys:
            self.keys.add(key)
            self.items.append(item)
        return self

    def add_checked(self, budget: Budget, args: list[Any]) -> JsSet:
        if id(self) in budget.frozen:
            raise MvuError(Code.SCHEMA, "the declaration's constants are read-only")
        return self.add(arg(args, 0))

    def get(self, key: str) -> Any:
        if key == "size":
            return len(self.items)
        if key == "has":
            return Builtin("has", lambda budget, args: same_value_key(arg(args, 0)) in self.keys)
        if key == "add":
            return Builtin("add", self.add_checked)
        if key == "values":
            return Builtin("values", lambda budget, args: list(self.items))
        return super().get(key)


def _array_from(budget: Budget, args: list[Any]) -> Any:
    source = arg(args, 0)
    if type(source) is dict:  # Array.from({ length: n }, fn)
        items = array_like(budget, source)
    elif type(source) is list or type(source) is str or isinstance(source, JsSet | JsMap):
        items = iterate(budget, source)
    else:
        items = []
    return array_from(budget, args, items)


def _define_property(budget: Budget, args: list[Any]) -> Any:
    """``Object.defineProperty(target, key, {value | get})``: bundlers' export getters.

    A getter is read once, now: declarations are evaluated once, top to bottom.
    """
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


def _to_json(value: Any) -> Any:
    """A Date's ``toJSON``: the ISO text (null for an invalid date)."""
    return value.json() if isinstance(value, JsDate) else value


def _stringify(budget: Budget, args: list[Any]) -> Any:
    value = arg(args, 0)
    budget.charge(len(value) if type(value) in (dict, list, str) else 1)
    text = json_text.stringify(budget, value, arg(args, 1), arg(args, 2), _to_json)
    return text if text is UNDEFINED else text_limit(text)


def _json_parse(budget: Budget, args: list[Any]) -> Any:
    text = to_string(arg(args, 0))
    budget.charge(len(text))
    value = json_text.parse(text)
    reviver = arg(args, 1)
    if not isinstance(reviver, JsCallable):
        return value
    return json_text.revive(budget, {"": value}, "", reviver)


def _own_entries(budget: Budget, value: Any) -> list[tuple[str, Any]]:
    """Own enumerable entries as ``Object.keys``/``values``/``entries`` see them (a string's
    indexes, nothing of a number or boolean; null and undefined are a TypeError)."""
    if value is None or value is UNDEFINED:
        raise fail(f"Cannot convert {to_string(value)} to object")
    if type(value) is dict:
        budget.charge(len(value))
        return [(key, value[key]) for key in own_keys(value)]
    if type(value) is list or type(value) is str:
        budget.charge(len(value))
        items = list(units(value)) if type(value) is str else value
        return [(str(index), item) for index, item in enumerate(items)]
    if type(value) is GetterObject:  # `Object.values` runs each getter once, as `{...value}` does
        budget.charge(len(value.entries))
        entries = value.values(budget)
        return [(key, entries[key]) for key in own_keys(entries)]
    return []


def _has_own(budget: Budget, args: list[Any]) -> bool:
    target, key = arg(args, 0), to_string(arg(args, 1))
    if target is None or target is UNDEFINED:
        raise fail(f"Cannot convert {to_string(target)} to object")
    if type(target) is dict:
        return key in target
    if type(target) is list or type(target) is str:
        return key == "length" or any(name == key for name, _ in _own_entries(budget, target))
    return False


def _same_value(budget: Budget, args: list[Any]) -> bool:
    """``Object.is``: SameValue (NaN is itself, -0 is not 0)."""
    left, right = arg(args, 0), arg(args, 1)
    if is_number(left) and is_number(right):
        if left != left and right != right:
            return True
        return bool(left == right) and math.copysign(1, left) == math.copysign(1, right)
    return strict_equals(left, right)


def _object_assign(budget: Budget, args: list[Any]) -> Any:
    """``Object.assign``: own entries of each source (a string's characters too), later wins."""
    target = arg(args, 0)
    check_writable(budget, target)
    for source in args[1:]:
        if source is None or source is UNDEFINED:
            continue
        for key, item in _own_entries(budget, source):
            set_member(budget, target, key, item)
    return target


def _property_names(budget: Budget, args: list[Any]) -> list[str]:
    names = [key for key, _ in _own_entries(budget, arg(args, 0))]
    return [*names, "length"] if type(arg(args, 0)) in (list, str) else names


def _primitive_or(answer: bool) -> Fn:
    """``Object.isFrozen``/``isSealed``/``isExtensible``: primitives are frozen and sealed; the
    declaration's objects are plain ones (``freeze`` does not mark them)."""
    return lambda budget, args: (type(arg(args, 0)) not in (dict, list)) != answer


class _ObjectFunction(Namespace, JsCallable):
    """``Object``: a namespace of statics that can also be called (``Object(value)``, which
    lodash's ``setWith(target, path, value, Object)`` calls for each container it needs)."""

    __slots__ = ()

    def call(self, budget: Budget, args: list[Any]) -> Any:
        value = arg(args, 0)
        if value is None or value is UNDEFINED:
            return {}
        if type(value) is dict or type(value) is list or isinstance(value, Opaque):
            return value
        raise MvuError(Code.UNSUPPORTED, f"`Object(value)` of a {typeof(value)}: wrapper objects are not supported")


OBJECT = _ObjectFunction("Object", {
    "keys": Builtin("keys", lambda budget, args: [key for key, _ in _own_entries(budget, arg(args, 0))]),
    "values": Builtin("values", lambda budget, args: [item for _, item in _own_entries(budget, arg(args, 0))]),
    "entries": Builtin("entries", lambda budget, args: [
        [key, item] for key, item in _own_entries(budget, arg(args, 0))]),
    "getOwnPropertyNames": Builtin("getOwnPropertyNames", _property_names),
    "fromEntries": Builtin("fromEntries", from_entries),
    "hasOwn": Builtin("hasOwn", _has_own),
    "is": Builtin("is", _same_value),
    "isFrozen": Builtin("isFrozen", _primitive_or(False)),
    "isSealed": Builtin("isSealed", _primitive_or(False)),
    "isExtensible": Builtin("isExtensible", _primitive_or(True)),
    "freeze": Builtin("freeze", lambda budget, args: arg(args, 0)),
    "seal": Builtin("seal", lambda budget, args: arg(args, 0)),
    "preventExtensions": Builtin("preventExtensions", lambda budget, args: arg(args, 0)),
    "assign": Builtin("assign", _object_assign),
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
    "Number": NUMBER,
    "String": Builtin("String", _string, STRING_STATICS),
    "Boolean": Builtin("Boolean", lambda budget, args: truthy(arg(args, 0))),
    "Array": make_array(_array_from),
    "structuredClone": Builtin("structuredClone", lambda budget, args: deep_copy(budget, arg(args, 0))),
    "Object": OBJECT,
    "JSON": Namespace("JSON", {"stringify": Builtin("stringify", _stringify), "parse": Builtin("parse", _json_parse)}),
    "Date": DATE,
    "Intl": INTL,
    "RegExp": REGEXP,
    "parseInt": Builtin("parseInt", parse_int),
    "parseFloat": Builtin("parseFloat", parse_float),
    "isNaN": Builtin("isNaN", lambda budget, args: math.isnan(to_num(arg(args, 0)))),
    "isFinite": Builtin("isFinite", lambda budget, args: math.isfinite(to_num(arg(args, 0)))),
    "Infinity": math.inf,
    "NaN": math.nan,
}
