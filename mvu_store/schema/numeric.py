"""``Math``, ``Number`` (its statics and its prototype) and the global number functions.

Results keep what JavaScript keeps: ``-0`` (``Math.round(-0.4)``), NaN for domain errors where
Python raises (``Math.log(-1)``, ``Math.pow(1, Infinity)``), infinities on overflow. Number
texts come from the JavaScript core (``mvu_store.js.numbers``). ``Math.random`` is refused:
a validation must not depend on chance.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from mvu_store.js.numbers import (
    WHITESPACE,
    integral,
    radix_string,
    to_exponential,
    to_fixed,
    to_precision,
)
from mvu_store.js.values import (
    MAX_SAFE_INTEGER,
    UNDEFINED,
    Budget,
    Builtin,
    Namespace,
    ScriptError,
    arg,
    is_number,
    to_number,
    to_string,
)
from mvu_store.schema.locale_numbers import to_locale

Fn = Callable[[Budget, list[Any]], Any]


def to_num(value: Any) -> float | int:
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[no-any-return]
    return to_number(value, explicit=True)


_INTEGER_BOUND = 2**53


def to_integer(value: Any) -> int:
    """ECMAScript ``ToIntegerOrInfinity`` for counts, indexes and widths: NaN is 0 and the
    infinities become ±2**53, so callers can do plain integer arithmetic (``int(inf)`` raises)."""
    number = to_num(value)
    if math.isnan(number):
        return 0
    if math.isinf(number):
        return _INTEGER_BOUND if number > 0 else -_INTEGER_BOUND
    return int(number)


def range_error(message: str) -> ScriptError:
    return ScriptError(message, {"name": "RangeError", "message": message})


def _negative_zero(value: float | int) -> bool:
    return value == 0 and math.copysign(1, value) < 0


def _keep_sign(result: float, of: float | int) -> float | int:
    """An integral result as ``int``, except a zero that keeps the sign of ``of`` (``-0``)."""
    if result == 0 and (of < 0 or _negative_zero(of)):
        return -0.0
    return integral(result)


def js_round(value: float | int) -> float | int:
    """``Math.round``: halves go up, ``-0.4`` is ``-0``, ``0.49999999999999994`` is 0."""
    if type(value) is int or not math.isfinite(value):
        return value
    floor = math.floor(value)
    rounded = floor + 1 if value - floor >= 0.5 else floor
    return _keep_sign(float(rounded), value)


def _rounding(fn: Callable[[float], float]) -> Callable[[float | int], float | int]:
    def apply(value: float | int) -> float | int:
        if type(value) is int or not math.isfinite(value):
            return value
        return _keep_sign(float(fn(value)), value)

    return apply


def _guarded(fn: Callable[[float], float], at_zero: float | None = None) -> Callable[[float | int], float | int]:
    """``fn`` with JavaScript's answers where Python raises: NaN for a domain error, ±Infinity
    on overflow, ``at_zero`` at ±0 (``Math.log(0)`` is -Infinity)."""
    def apply(value: float | int) -> float | int:
        if math.isnan(value):
            return math.nan
        if at_zero is not None and value == 0:
            return at_zero
        try:
            result = fn(value)
        except OverflowError:
            return math.inf if value > 0 or fn is math.cosh else -math.inf
        except ValueError:
            return math.nan
        return result if _negative_zero(value) and result == 0 else integral(result)

    return apply


def power(base: float | int, exponent: float | int) -> float | int:
    """``base ** exponent`` with JavaScript's special cases (``1 ** Infinity`` is NaN)."""
    if math.isnan(exponent):
        return math.nan
    if exponent == 0:
        return 1
    if math.isnan(base) or (abs(base) == 1 and math.isinf(exponent)):
        return math.nan
    if type(base) is int and type(exponent) is int and 0 < exponent * max(1, abs(base).bit_length()) <= 1100:
        result = base**exponent
        return integral(result) if abs(result) < 2**53 else _float(result)
    odd = math.isfinite(exponent) and float(exponent).is_integer() and int(exponent) % 2 == 1
    if base == 0 and exponent < 0:
        return -math.inf if odd and _negative_zero(base) else math.inf
    try:
        value = math.pow(base, exponent)
    except OverflowError:
        return -math.inf if odd and base < 0 else math.inf
    except ValueError:
        return math.nan
    return value if value == 0 else integral(value)


def _float(number: int) -> float:
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def pow_of(left: Any, right: Any) -> float | int:
    """``**`` and ``Math.pow``."""
    return power(to_num(left), to_num(right))


def _to_uint32(value: Any) -> int:
    number = to_num(value)
    if not math.isfinite(number):
        return 0
    return int(number) % 2**32


def _imul(budget: Budget, args: list[Any]) -> int:
    product = (_to_uint32(arg(args, 0)) * _to_uint32(arg(args, 1))) % 2**32
    return product - 2**32 if product >= 2**31 else product


def _cbrt(value: float) -> float:
    """The double nearest the cube root (the C library's can be one bit off: 0.125 gives 0.5)."""
    guess = math.cbrt(value)
    if guess == 0 or not math.isfinite(guess):
        return guess
    exact = Fraction(value)
    candidates = (math.nextafter(guess, -math.inf), guess, math.nextafter(guess, math.inf))
    return min(candidates, key=lambda item: abs(Fraction(item) ** 3 - exact))


def _atanh(value: float) -> float:
    return math.copysign(math.inf, value) if abs(value) == 1 else math.atanh(value)


def _log1p(value: float) -> float:
    return -math.inf if value == -1 else math.log1p(value)


def _clz32(value: float | int) -> int:
    number = int(value) % 2**32 if math.isfinite(value) else 0
    return 32 - number.bit_length()


def _fround(value: float | int) -> float | int:
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        result: float = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return result if _negative_zero(result) else integral(result)


def _sign(value: float | int) -> float | int:
    if value == 0 or math.isnan(value):
        return value
    return 1 if value > 0 else -1


def _extreme(largest: bool) -> Fn:
    def pick(budget: Budget, args: list[Any]) -> Any:
        if len(args) == 2 and type(args[0]) is int and type(args[1]) is int:
            return max(args) if largest else min(args)  # `Math.max(-100, v)` on integers: the hot path
        budget.charge(len(args))
        numbers = [to_num(item) for item in args]
        best: float | int = -math.inf if largest else math.inf
        for number in numbers:
            if math.isnan(number):
                return math.nan
            # -0 is smaller than +0 here, as in JavaScript
            if (number > best if largest else number < best) or (
                    number == best == 0 and _negative_zero(best) == largest):
                best = number
        return best

    return pick


def _hypot(budget: Budget, args: list[Any]) -> Any:
    budget.charge(len(args))
    numbers = [to_num(item) for item in args]
    if any(math.isinf(number) for number in numbers):
        return math.inf
    return integral(math.hypot(*numbers))


def _atan2(budget: Budget, args: list[Any]) -> Any:
    y, x = to_num(arg(args, 0)), to_num(arg(args, 1))
    result = math.atan2(y, x)
    return result if result == 0 else integral(result)


MATH_FUNCTIONS: dict[str, Callable[[float | int], float | int]] = {
    "abs": lambda x: abs(x) if not _negative_zero(x) else 0,
    "ceil": _rounding(math.ceil),
    "floor": _rounding(math.floor),
    "trunc": _rounding(math.trunc),
    "round": js_round,
    "sign": _sign,
    "sqrt": _guarded(math.sqrt),
    "cbrt": _guarded(_cbrt),
    "exp": _guarded(math.exp),
    "expm1": _guarded(math.expm1),
    "log": _guarded(math.log, at_zero=-math.inf),
    "log10": _guarded(math.log10, at_zero=-math.inf),
    "log2": _guarded(math.log2, at_zero=-math.inf),
    "log1p": _guarded(_log1p),
    "sin": _guarded(math.sin),
    "cos": _guarded(math.cos),
    "tan": _guarded(math.tan),
    "asin": _guarded(math.asin),
    "acos": _guarded(math.acos),
    "atan": _guarded(math.atan),
    "sinh": _guarded(math.sinh),
    "cosh": _guarded(math.cosh),
    "tanh": _guarded(math.tanh),
    "asinh": _guarded(math.asinh),
    "acosh": _guarded(math.acosh),
    "atanh": _guarded(_atanh),
    "clz32": _clz32,
    "fround": _fround,
}
_NAMED: dict[str, Any] = {}
for _name, _fn in MATH_FUNCTIONS.items():
    _NAMED[_name] = Builtin(_name, (lambda fn: lambda budget, args: fn(to_num(arg(args, 0))))(_fn))
del _name, _fn

MATH = Namespace("Math", {
    **_NAMED,
    "pow": Builtin("pow", lambda budget, args: pow_of(arg(args, 0), arg(args, 1))),
    "atan2": Builtin("atan2", _atan2),
    "imul": Builtin("imul", _imul),
    "min": Builtin("min", _extreme(largest=False)),
    "max": Builtin("max", _extreme(largest=True)),
    "hypot": Builtin("hypot", _hypot),
    "PI": math.pi,
    "E": math.e,
    "LN2": 0.6931471805599453,
    "LN10": 2.302585092994046,
    "LOG2E": 1.4426950408889634,
    "LOG10E": 0.4342944819032518,
    "SQRT1_2": 0.7071067811865476,
    "SQRT2": 1.4142135623730951,
})


# -- the global number functions -------------------------------------------------------------------


def _float_prefix(text: str) -> float | int:
    """The longest prefix of ``text`` that is a StrDecimalLiteral (``parseFloat``)."""
    end, seen_digit, seen_point, seen_exponent = 0, False, False, False
    if text[:1] in "+-":
        end = 1
    if text[end:end + 8] == "Infinity":
        return -math.inf if text.startswith("-") else math.inf
    best = 0
    while end < len(text):
        char = text[end]
        if char.isascii() and char.isdigit():
            seen_digit = True
            end += 1
            best = end
        elif char == "." and not seen_point and not seen_exponent:
            seen_point = True
            end += 1
            if seen_digit:
                best = end
        elif char in "eE" and seen_digit and not seen_exponent:
            seen_exponent = True
            end += 1
            if text[end:end + 1] in ("+", "-") and end < len(text):
                end += 1
        else:
            break
    if not seen_digit:
        return math.nan
    literal = text[:best].rstrip(".")
    number = float(literal) if literal not in ("", "+", "-") else math.nan
    return number if number == 0 and literal.startswith("-") else integral(number)


def parse_float(budget: Budget, args: list[Any]) -> Any:
    text = to_string(arg(args, 0)).lstrip(WHITESPACE)
    budget.charge(len(text) // 16)
    return _float_prefix(text[:1200])


def parse_int(budget: Budget, args: list[Any]) -> Any:
    text = to_string(arg(args, 0)).lstrip(WHITESPACE)
    budget.charge(len(text) // 16)
    radix = int(to_num(arg(args, 1))) % 2**32 if math.isfinite(to_num(arg(args, 1))) else 0
    radix = radix - 2**32 if radix >= 2**31 else radix
    sign = -1 if text.startswith("-") else 1
    if text[:1] in "+-":
        text = text[1:]
    strip_prefix = radix in (0, 16)
    if radix == 0:
        radix = 10
    if not 2 <= radix <= 36:
        return math.nan
    if strip_prefix and text[:2] in ("0x", "0X"):
        text, radix = text[2:], 16
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:radix]
    count = 0
    while count < len(text) and text[count].lower() in digits and text[count].isascii():
        count += 1
    if count == 0:
        return math.nan
    value = int(text[:count], radix)
    if value == 0:
        return -0.0 if sign < 0 else 0
    return integral(sign * value) if value < 2**53 else sign * _float(value)


def _number(budget: Budget, args: list[Any]) -> Any:
    return 0 if not args else to_num(args[0])


def is_integer(value: Any) -> bool:
    return is_number(value) and math.isfinite(value) and value == int(value)


def _is(name: str, test: Callable[[Any], bool]) -> Builtin:
    return Builtin(name, lambda budget, args: test(arg(args, 0)))


NUMBER = Builtin("Number", _number, {
    "isInteger": _is("isInteger", is_integer),
    "isSafeInteger": _is("isSafeInteger", lambda value: is_integer(value) and abs(value) <= MAX_SAFE_INTEGER),
    "isFinite": _is("isFinite", lambda value: is_number(value) and math.isfinite(value)),
    "isNaN": _is("isNaN", lambda value: is_number(value) and math.isnan(value)),
    "parseFloat": Builtin("parseFloat", parse_float),
    "parseInt": Builtin("parseInt", parse_int),
    "MAX_SAFE_INTEGER": MAX_SAFE_INTEGER,
    "MIN_SAFE_INTEGER": -MAX_SAFE_INTEGER,
    "MAX_VALUE": 1.7976931348623157e308,
    "MIN_VALUE": 5e-324,
    "EPSILON": 2.0**-52,
    "POSITIVE_INFINITY": math.inf,
    "NEGATIVE_INFINITY": -math.inf,
    "NaN": math.nan,
})


# -- Number.prototype --------------------------------------------------------------------------------


def _digits_argument(args: list[Any], low: int, high: int, what: str) -> int | None:
    if arg(args, 0) is UNDEFINED:
        return None
    digits = to_num(args[0])
    digits = 0 if math.isnan(digits) else digits
    if not low <= digits <= high:
        raise range_error(f"{what}() argument must be between {low} and {high}")
    return int(digits)


def _to_fixed(budget: Budget, number: Any, args: list[Any]) -> str:
    digits = _digits_argument(args, 0, 100, "toFixed")
    return to_fixed(number, digits or 0)


def _to_precision(budget: Budget, number: Any, args: list[Any]) -> str:
    if arg(args, 0) is UNDEFINED:
        return to_string(number)
    if not math.isfinite(number):
        return to_string(number)
    precision = _digits_argument(args, 1, 100, "toPrecision")
    return to_precision(number, precision or 1)


def _to_exponential(budget: Budget, number: Any, args: list[Any]) -> str:
    digits = to_num(arg(args, 0)) if arg(args, 0) is not UNDEFINED else None
    if not math.isfinite(number):
        return to_string(number)
    checked = _digits_argument(args, 0, 100, "toExponential") if digits is not None else None
    return to_exponential(number, checked)


def _to_string(budget: Budget, number: Any, args: list[Any]) -> str:
    if type(number) is bool:
        return to_string(number)
    if arg(args, 0) is UNDEFINED:
        return to_string(number)
    radix = to_integer(args[0])
    if not 2 <= radix <= 36:
        raise range_error("toString() radix must be between 2 and 36")
    budget.charge(16)
    return radix_string(number, radix)


NUMBER_METHODS: dict[str, Callable[[Budget, Any, list[Any]], Any]] = {
    "toFixed": _to_fixed,
    "toPrecision": _to_precision,
    "toExponential": _to_exponential,
    "toString": _to_string,
    "toLocaleString": to_locale,
    "valueOf": lambda budget, number, args: number,
}
REFUSED_NUMBER_METHODS: dict[str, str] = {}
"""Standard names of ``Number.prototype`` refused here (none: the table above is the whole list)."""
