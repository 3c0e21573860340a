"""Methods of arrays, strings and numbers (``list.map``, ``text.padStart``, ``n.toFixed``).

Mutating array methods check that the array is the declaration's to change (never one of its
constants during a validation); every method charges the budget for what it touches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    arg,
    text_limit,
    to_string,
)
from mvu_store.schema.arrays import ARRAY_METHODS
from mvu_store.schema.numeric import NUMBER_METHODS, REFUSED_NUMBER_METHODS
from mvu_store.schema.strings import REFUSED_STRING_METHODS, STRING_METHODS


def method_of(value: Any, name: str) -> Any:
    """``value.name`` for an array, a string, a number or a boolean: a bound builtin."""
    table = ARRAY_METHODS if type(value) is list else _STRING_METHODS if type(value) is str else NUMBER_METHODS
    if type(value) is bool:
        table = _BOOLEAN_METHODS
    method = table.get(name)
    if method is None:
        return _missing(value, name)
    size = 1 + len(value) // 4 if type(value) is list or type(value) is str else 1

    def bound(budget: Budget, args: list[Any]) -> Any:
        budget.charge(size)  # every array or string method may touch all of it
        return method(budget, value, args)

    return Builtin(name, bound)


Method = Callable[[Budget, Any, list[Any]], Any]


def _missing(value: Any, name: str) -> Any:
    """A name the prototype lacks: ``undefined`` as in JavaScript, unless the standard defines
    it and it is refused here (``MVU_UNSUPPORTED`` naming it and why)."""
    owner = "Array" if type(value) is list else "String" if type(value) is str else \
        "Boolean" if type(value) is bool else "Number"
    reason = REFUSED_METHODS[owner].get(name)
    if reason is None and type(value) is str and name in _REGEX_METHODS:
        reason = "regular expressions are not supported here"
    if reason is None:
        return UNDEFINED
    raise MvuError(Code.UNSUPPORTED, f"`{owner}.prototype.{name}` is not supported: {reason}",
                   function=f"{owner}.prototype.{name}")


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


_STRING_METHODS: dict[str, Method] = {
    **STRING_METHODS,
    "split": _split,
    "replace": _replace(False),
    "replaceAll": _replace(True),
}
_REGEX_METHODS = frozenset({"match", "matchAll", "search"})


_BOOLEAN_METHODS: dict[str, Method] = {
    "toString": lambda budget, value, args: to_string(value),
    "valueOf": lambda budget, value, args: value,
}

REFUSED_METHODS: dict[str, dict[str, str]] = {
    "String": REFUSED_STRING_METHODS,
    "Number": REFUSED_NUMBER_METHODS,
    "Boolean": {},
    "Array": {},
}
