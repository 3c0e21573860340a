"""JavaScript's operators on the interpreter's values (``+`` concatenates or adds, ``%`` keeps
the dividend's sign, bitwise operators work on 32-bit integers, integers stay exact only up to
2**53). Objects never convert implicitly (S-7).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mvu_store.js.members import array_index, property_key
from mvu_store.js.values import (
    UNDEFINED,
    Opaque,
    PrimitiveObject,
    fail,
    is_number,
    loose_equals,
    strict_equals,
    text_limit,
    to_number,
    to_string,
    truthy,
    typeof,
)
from mvu_store.schema.accessors import GetterObject
from mvu_store.schema.numeric import power

_INT_LIMIT = 2**53


def clip(value: Any) -> Any:
    """Keep integer results within JavaScript's exact range (beyond it numbers are doubles)."""
    if type(value) is int and not -_INT_LIMIT <= value <= _INT_LIMIT:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def _add(left: Any, right: Any) -> Any:
    if is_number(left) and is_number(right):
        return clip(left + right)
    if type(left) is str and type(right) is str:
        return text_limit(left + right)
    if isinstance(left, PrimitiveObject) or isinstance(right, PrimitiveObject):
        return text_limit(to_string(left) + to_string(right))  # a Date's `+` is its text, as in JavaScript
    if type(left) is dict or type(right) is dict or isinstance(left, Opaque) or isinstance(right, Opaque):
        raise fail("implicit conversion of an object is not allowed")
    if type(left) is str or type(right) is str or type(left) is list or type(right) is list:
        return text_limit(to_string(left) + to_string(right))
    return clip(to_number(left) + to_number(right))


def _divide(left: Any, right: Any) -> Any:
    a, b = to_number(left), to_number(right)
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def _remainder(left: Any, right: Any) -> Any:
    a, b = to_number(left), to_number(right)
    if b == 0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    if math.isinf(b):
        return a
    if type(a) is int and type(b) is int:
        result = abs(a) % abs(b)
        return -result if a < 0 else result
    return math.fmod(a, b)


def _power(left: Any, right: Any) -> Any:
    return power(to_number(left), to_number(right))


def _int32(value: Any) -> int:
    number = to_number(value)
    if math.isnan(number) or math.isinf(number):
        return 0
    result = int(number) & 0xFFFFFFFF
    return result - 2**32 if result >= 2**31 else result


def _compare(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(left: Any, right: Any) -> bool:
        left_kind, right_kind = type(left), type(right)
        if (left_kind is int or left_kind is float) and (right_kind is int or right_kind is float):
            return test(left, right)
        if left_kind is str and right_kind is str:
            return test(left, right)
        return test(to_number(left), to_number(right))

    return compare


def _in(left: Any, right: Any) -> bool:
    if type(right) is dict:
        return property_key(left) in right
    if type(right) is list:
        index = array_index(left)
        return (index is not None and 0 <= index < len(right)) or property_key(left) == "length"
    if type(right) is GetterObject:  # a getter's key is there without running it
        return property_key(left) in right.entries
    raise fail("`in` needs an object on its right")


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": _add,
    "-": lambda a, b: clip(to_number(a) - to_number(b)),
    "*": lambda a, b: clip(to_number(a) * to_number(b)),
    "/": _divide,
    "%": _remainder,
    "**": _power,
    "<": _compare(lambda a, b: a < b),
    ">": _compare(lambda a, b: a > b),
    "<=": _compare(lambda a, b: a <= b),
    ">=": _compare(lambda a, b: a >= b),
    "===": strict_equals,
    "!==": lambda a, b: not strict_equals(a, b),
    "==": loose_equals,
    "!=": lambda a, b: not loose_equals(a, b),
    "&": lambda a, b: _int32(_int32(a) & _int32(b)),
    "|": lambda a, b: _int32(_int32(a) | _int32(b)),
    "^": lambda a, b: _int32(_int32(a) ^ _int32(b)),
    "<<": lambda a, b: _int32(_int32(a) << (_int32(b) & 31)),
    ">>": lambda a, b: _int32(a) >> (_int32(b) & 31),
    ">>>": lambda a, b: (_int32(a) & 0xFFFFFFFF) >> (_int32(b) & 31),
    "in": _in,
}


def _negate(value: Any) -> Any:
    number = to_number(value)
    return -number if number != 0 else (-0.0 if type(number) is float or number == 0 else 0)


UNARY: dict[str, Callable[[Any], Any]] = {
    "!": lambda value: not truthy(value),
    "-": _negate,
    "+": to_number,
    "typeof": typeof,
    "void": lambda value: UNDEFINED,
    "~": lambda value: _int32(~_int32(value)),
}


