"""JavaScript's number texts: ``Number::toString`` (any radix), ``toFixed``, ``toPrecision``,
``toExponential`` and StringToNumber.

Decimal texts come from Python's shortest round-trip ``repr`` (the same digits ECMAScript's
Number::toString asks for), laid out by ECMAScript's rules. Fixed, precision and exponential
forms round the double's exact decimal value, ties away from zero ("pick the larger n"), as
the standard says. Other radixes follow V8's digit generation (digits up to the double's own
precision), because the standard leaves those digits to the implementation and cards run in V8.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal, localcontext

DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_SAFE = 2**53


def number_to_string(value: float | int) -> str:
    """ECMAScript ``Number::toString(value)`` in base 10: ``1`` not ``1.0``, ``1e21``, ``1e-7``."""
    if type(value) is int:
        return str(value) if abs(value) < 10**21 else number_to_string(float(value))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    if float(value).is_integer() and abs(value) < _SAFE:
        return str(int(value))
    sign = "-" if value < 0 else ""
    digits, point = _shortest(abs(value))
    if -6 < point <= 21:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        fraction = f".{digits[point:]}" if len(digits) > point else ""
        return f"{sign}{digits[:point]}{'0' * (point - len(digits))}{fraction}"
    head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{head}e{'+' if point - 1 >= 0 else '-'}{abs(point - 1)}"


def _shortest(value: float) -> tuple[str, int]:
    """(digits, n) with value = 0.digits × 10**n and the fewest digits that round-trip."""
    mantissa, _, exponent_text = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exponent_text or 0) if whole != "0" else int(exponent_text or 0) - (
        len(fraction) - len(fraction.lstrip("0")))
    return digits.rstrip("0") or "0", point


def radix_string(value: float | int, radix: int) -> str:
    """``Number.prototype.toString(radix)`` for radix 2..36 (10 goes to :func:`number_to_string`)."""
    if radix == 10:
        return number_to_string(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if type(value) is int and abs(value) < _SAFE:
        return _integer_digits(abs(value), radix, "-" if value < 0 else "")
    number = float(value)
    negative = number < 0
    number = abs(number)
    integer = float(math.floor(number))
    fraction = number - integer
    # V8: fraction digits only up to the double's precision (half the gap to the next double).
    delta = max(0.5 * (math.nextafter(number, math.inf) - number), math.nextafter(0.0, 1.0))
    out: list[int] = []
    if fraction >= delta:
        while True:
            fraction *= radix
            delta *= radix
            digit = int(fraction)
            out.append(digit)
            fraction -= digit
            if (fraction > 0.5 or (fraction == 0.5 and digit & 1)) and fraction + delta > 1:
                while True:  # round up, carrying into earlier digits (and the integer part)
                    if not out:
                        integer += 1
                        break
                    last = out.pop()
                    if last + 1 < radix:
                        out.append(last + 1)
                        break
                break
            if fraction < delta:
                break
    zeros = 0
    while math.frexp(integer / radix)[1] > 53:  # beyond 2**53 the low digits are not represented
        integer /= radix
        zeros += 1
    whole: list[str] = []
    while True:  # in doubles, as V8 divides (exact integer division would differ in the last digits)
        remainder = math.fmod(integer, radix)
        whole.append(DIGITS[int(remainder)])
        integer = (integer - remainder) / radix
        if integer <= 0:
            break
    head = ("-" if negative else "") + "".join(reversed(whole)) + "0" * zeros
    return head + ("." + "".join(DIGITS[digit] for digit in out) if out else "")


def _integer_digits(number: int, radix: int, sign: str) -> str:
    if number == 0:
        return sign + "0"
    out = []
    while number:
        number, digit = divmod(number, radix)
        out.append(DIGITS[digit])
    return sign + "".join(reversed(out))


def _exact(value: float | int) -> Decimal:
    return Decimal(value)


def to_fixed(value: float | int, digits: int) -> str:
    """``Number.prototype.toFixed(digits)`` for a checked ``digits`` (0..100)."""
    if not math.isfinite(value) or abs(value) >= 1e21:
        return number_to_string(value)
    sign = "-" if value < 0 else ""
    with localcontext() as context:
        context.prec = 500
        text = format(_exact(abs(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP), "f")
    return sign + text


def _significant(value: float | int, count: int) -> tuple[str, int]:
    """(``count`` digits, e) with value ≈ d.ddd × 10**e, rounded on the exact value, ties up."""
    exact = _exact(abs(value))
    exponent = exact.adjusted()
    with localcontext() as context:
        context.prec = 500
        scaled = exact.scaleb(count - 1 - exponent).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    digits = str(int(scaled))
    if len(digits) > count:  # 9.99 -> 10.0: one more digit, one more power
        digits, exponent = digits[:count], exponent + 1
    return digits, exponent


def to_exponential(value: float | int, fraction_digits: int | None) -> str:
    """``toExponential(f)``; ``None`` (no argument) uses as many digits as the value needs."""
    if not math.isfinite(value):
        return number_to_string(value)
    sign = "-" if value < 0 else ""
    if value == 0:
        digits, exponent = "0" * (1 + (fraction_digits or 0)), 0
    elif fraction_digits is None:
        digits, point = _shortest(abs(float(value)))
        exponent = point - 1
    else:
        digits, exponent = _significant(value, fraction_digits + 1)
    head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{head}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def to_precision(value: float | int, precision: int) -> str:
    """``toPrecision(p)`` for a checked ``p`` (1..100)."""
    if not math.isfinite(value):
        return number_to_string(value)
    sign = "-" if value < 0 else ""
    if value == 0:
        digits, exponent = "0" * precision, 0
    else:
        digits, exponent = _significant(value, precision)
    if exponent < -6 or exponent >= precision:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    if exponent >= 0:
        whole, rest = digits[:exponent + 1], digits[exponent + 1:]
        return sign + whole + ("." + rest if rest else "")
    return f"{sign}0.{'0' * (-exponent - 1)}{digits}"


# StringToNumber's decimal literal (no `_`, no `inf`/`nan` spellings Python's float() accepts).
# `\d+(?:\.\d*)?`, not the same language's `\d+\.?\d*`: two adjacent digit runs made a failed
# full match try every split of a long digit string (20,000 digits and a letter: 18 s).
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
WHITESPACE = " \t\n\r\v\f\u00a0\ufeff\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
             "\u2028\u2029\u202f\u205f\u3000"
"""ECMAScript's WhiteSpace and LineTerminator code points (what ``trim`` and ``Number`` strip)."""


def string_to_number(text: str) -> float | int:
    """ECMAScript StringToNumber: integers below 2**53 stay ``int``."""
    stripped = text.strip(WHITESPACE)
    if not stripped:
        return 0
    if len(stripped) < 16 and stripped.isdigit() and stripped.isascii():
        return int(stripped)  # "85", the common coerced field (below 2**53): no regex, no float
    if stripped[:2] in {"0x", "0X", "0o", "0O", "0b", "0B"}:
        body = stripped[2:]
        if not body or not body.isascii() or not body.isalnum():
            return math.nan
        try:
            return integral(int(stripped, 0))
        except ValueError:
            return math.nan
    if stripped.lstrip("+-") == "Infinity" and len(stripped) - len(stripped.lstrip("+-")) <= 1:
        return -math.inf if stripped.startswith("-") else math.inf
    if not _NUMBER_TEXT.fullmatch(stripped):
        return math.nan
    return integral(float(stripped))


def integral(number: float | int) -> float | int:
    """A number as the interpreter keeps it: ``int`` when integral below 2**53 (but never -0)."""
    if type(number) is int:
        if abs(number) < _SAFE:
            return number
        try:
            return float(number)
        except OverflowError:  # a 400-digit hex literal
            return math.inf
    if float(number).is_integer() and abs(number) < _SAFE and not (number == 0 and math.copysign(1, number) < 0):
        return int(number)
    return number
