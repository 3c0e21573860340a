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
    to_string,
)
from mvu_store.schema import string_patterns
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
    if reason is None:
        return UNDEFINED
    raise MvuError(Code.UNSUPPORTED, f"`{owner}.prototype.{name}` is not supported: {reason}",
                   function=f"{owner}.prototype.{name}")


# The pattern methods take a RegExp or a string: string_patterns runs both, as JavaScript does.
_STRING_METHODS: dict[str, Method] = {
    **STRING_METHODS,
    "split": string_patterns.split,
    "replace": string_patterns.replace(every=False),
    "replaceAll": string_patterns.replace(every=True),
    "match": string_patterns.match,
    "matchAll": string_patterns.match_all,
    "search": string_patterns.search_in,
}


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
