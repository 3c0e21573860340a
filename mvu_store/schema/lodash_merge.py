"""lodash's deep writers and comparers that take a customizer: ``merge``/``mergeWith``,
``defaultsDeep``, ``assignWith`` and ``isEqualWith``.

``merge`` copies a source's own keys into the target: an array or plain object in the source is
merged into the target's array or object at that key (a fresh one when there is none), anything
else replaces the target's value unless it is ``undefined`` where the key exists. A customizer,
``customizer(targetValue, sourceValue, key, target, source)``, answers first; ``undefined`` means
"merge as usual" (lodash also passes its internal stack object, which a declaration cannot see).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mvu_store.js.members import data_member, own_keys
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    Opaque,
    arg,
    same_value_key,
    strict_equals,
    truthy,
)
from mvu_store.jsonvalue import UNSAFE_KEYS
from mvu_store.schema.builtins import collection
from mvu_store.schema.dates import JsDate
from mvu_store.schema.lodash_paths import write
from mvu_store.schema.regex import Regex

Customizer = Callable[[Any, Any, str, Any, Any], Any] | None


def _container(value: Any) -> bool:
    return type(value) is dict or type(value) is list


def _same(left: Any, right: Any) -> bool:
    """lodash's ``eq`` (SameValueZero), by identity for containers."""
    if _container(left) or _container(right) or isinstance(left, Opaque):
        return left is right
    return same_value_key(left) == same_value_key(right) or strict_equals(left, right)


def _source_pairs(budget: Budget, source: Any) -> list[tuple[str, Any]]:
    """A source's own keys as text with their values (an array's or a string's indexes too)."""
    return [(str(key), item) for key, item in collection(budget, source) if str(key) not in UNSAFE_KEYS]


def _assign_merged(budget: Budget, target: Any, key: str, value: Any) -> None:
    """lodash's ``assignMergeValue``: a defined value that differs, or ``undefined`` for a key
    the target lacks."""
    current = data_member(target, key)
    exists = key in target if type(target) is dict else current is not UNDEFINED
    if (value is not UNDEFINED and not _same(current, value)) or (value is UNDEFINED and not exists):
        write(budget, target, key, value)


def merge_into(budget: Budget, target: Any, source: Any, customizer: Customizer) -> None:
    for key, item in _source_pairs(budget, source):
        current = data_member(target, key)
        merged = UNDEFINED if customizer is None else customizer(current, item, key, target, source)
        if merged is UNDEFINED and _container(item):
            if type(item) is list:
                merged = current if type(current) is list else []
            else:
                merged = current if _container(current) else {}
            if id(merged) in budget.frozen:  # the declaration's constants stay as they are
                merged = list(merged) if type(merged) is list else dict(merged)
            merge_into(budget, merged, item, customizer)
        elif merged is UNDEFINED:
            merged = item
        _assign_merged(budget, target, key, merged)


def _sources_and_customizer(args: list[Any], *, customized: bool) -> tuple[list[Any], Any]:
    """lodash's assigner arguments: a trailing function is the customizer when there are two
    or more sources; falsy sources are skipped."""
    sources = list(args[1:])
    customizer = UNDEFINED
    if customized and len(sources) > 1 and isinstance(sources[-1], JsCallable):
        customizer = sources.pop()
    return [source for source in sources if truthy(source)], customizer


def _script_customizer(budget: Budget, fn: Any) -> Customizer:
    if not isinstance(fn, JsCallable):
        return None
    return lambda current, item, key, target, source: fn.call(budget, [current, item, key, target, source])


def _target(value: Any) -> Any:
    return value if _container(value) else {}


def _merge(customized: bool) -> Callable[[Budget, list[Any]], Any]:
    def merge(budget: Budget, args: list[Any]) -> Any:
        target = _target(arg(args, 0))
        sources, fn = _sources_and_customizer(args, customized=customized)
        customizer = _script_customizer(budget, fn)
        for source in sources:
            merge_into(budget, target, source, customizer)
        return target

    return merge


def _defaults_deep(budget: Budget, args: list[Any]) -> Any:
    """``_.defaultsDeep``: a merge that keeps every value the target has, merging into the
    objects and arrays it has and filling only what is missing."""
    def keep(current: Any, item: Any, key: str, target: Any, source: Any) -> Any:
        if _container(current) and _container(item):
            merge_into(budget, current, item, keep)
        return current

    target = _target(arg(args, 0))
    for source in (source for source in args[1:] if truthy(source)):
        merge_into(budget, target, source, keep)
    return target


def _assign_with(budget: Budget, args: list[Any]) -> Any:
    """``_.assignWith``: ``assign`` where ``customizer(targetValue, sourceValue, key, target,
    source)`` gives each value (``undefined``: the source's)."""
    target = _target(arg(args, 0))
    sources, fn = _sources_and_customizer(args, customized=True)
    for source in sources:
        for key, item in _source_pairs(budget, source):
            current = data_member(target, key)
            value = item if not isinstance(fn, JsCallable) else fn.call(budget, [current, item, key, target, source])
            value = item if value is UNDEFINED else value
            exists = key in target if type(target) is dict else current is not UNDEFINED
            if not (exists and _same(current, value)):
                write(budget, target, key, value)
    return target


def is_equal(budget: Budget, left: Any, right: Any, customizer: Any = UNDEFINED, key: Any = UNDEFINED) -> bool:
    """lodash's ``isEqual`` (SameValueZero on primitives, deep on arrays and plain objects,
    dates by time, regexes by text); ``customizer(left, right, key)`` answers first when it
    gives something other than ``undefined``."""
    budget.charge(1)
    if isinstance(customizer, JsCallable):
        answer = customizer.call(budget, [left, right] if key is UNDEFINED else [left, right, key])
        if answer is not UNDEFINED:
            return truthy(answer)
    if type(left) is list and type(right) is list:
        return len(left) == len(right) and all(
            is_equal(budget, a, b, customizer, index) for index, (a, b) in enumerate(zip(left, right, strict=True)))
    if type(left) is dict and type(right) is dict:
        names = own_keys(left)
        return len(names) == len(right) and all(
            name in right and is_equal(budget, left[name], right[name], customizer, name) for name in names)
    if isinstance(left, JsDate) and isinstance(right, JsDate):
        return same_value_key(left.time) == same_value_key(right.time)
    if isinstance(left, Regex) and isinstance(right, Regex):
        return left.text() == right.text()
    return _same(left, right)


MERGE_HELPERS: dict[str, Builtin] = {
    "merge": Builtin("merge", _merge(customized=False)),
    "mergeWith": Builtin("mergeWith", _merge(customized=True)),
    "defaultsDeep": Builtin("defaultsDeep", _defaults_deep),
    "assignWith": Builtin("assignWith", _assign_with),
    "assignInWith": Builtin("assignInWith", _assign_with),
    "extendWith": Builtin("extendWith", _assign_with),
    "isEqual": Builtin("isEqual", lambda budget, args: is_equal(budget, arg(args, 0), arg(args, 1))),
    "isEqualWith": Builtin("isEqualWith", lambda budget, args: is_equal(
        budget, arg(args, 0), arg(args, 1), arg(args, 2))),
}
