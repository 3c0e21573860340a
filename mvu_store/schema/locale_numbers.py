"""Numbers as en-US and zh-CN write them (the two agree): ``Number.prototype.toLocaleString``
and ``Intl.NumberFormat(locale).format``.

Grouped thousands, at most three fraction digits, halves away from zero, ``-0`` for a negative
number that rounds to zero, ``∞`` and ``NaN``. Other locales and any formatting option are
``MVU_UNSUPPORTED`` naming the function: their output depends on ICU data this service does not
reproduce. The rest of ``Intl`` (``DateTimeFormat``, ``Collator``...) is refused by name.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.numbers import to_fixed
from mvu_store.js.values import UNDEFINED, Budget, Builtin, Namespace, Opaque, arg, to_number, to_string

_LOCALES = frozenset({"en", "en-US", "zh", "zh-CN"})


def check_locale(function: str, locales: Any, options: Any) -> None:
    """Refuse what the formatting below does not reproduce (a locale or an option)."""
    listed = locales if type(locales) is list else [locales]
    known = all(locale is UNDEFINED or locale in _LOCALES for locale in listed)
    if not known or not (options is UNDEFINED or (type(options) is dict and not options)):
        raise MvuError(Code.UNSUPPORTED, f"`{function}` supports only the locales en, en-US, zh and zh-CN "
                       "without options", function=function)


def _group(digits: str) -> str:
    head = len(digits) % 3 or 3
    return ",".join([digits[:head]] + [digits[index:index + 3] for index in range(head, len(digits), 3)])


def locale_text(number: Any) -> str:
    if type(number) is bool:
        return to_string(number)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    if abs(number) >= 1e21:  # toFixed writes these with an exponent; ICU writes every digit
        whole, fraction = format(Decimal(repr(float(abs(number)))), "f"), ""
    else:
        text = to_fixed(round(float(number), 12) if abs(number) < 1e15 else number, 3)
        whole, _, fraction = text.lstrip("-").partition(".")
        fraction = fraction.rstrip("0")
    sign = "-" if number < 0 or math.copysign(1, number) < 0 else ""
    return sign + _group(whole) + ("." + fraction if fraction else "")


def to_locale(budget: Budget, number: Any, args: list[Any]) -> str:
    """``Number.prototype.toLocaleString(locales?, options?)``."""
    check_locale("Number.prototype.toLocaleString", arg(args, 0), arg(args, 1))
    return locale_text(number)


class _NumberFormat(Opaque):
    """What ``new Intl.NumberFormat(locale)`` makes: its ``format``."""

    __slots__ = ()

    def get(self, key: str) -> Any:
        if key == "format":
            return Builtin("format", lambda budget, args: locale_text(to_number(arg(args, 0), explicit=True)))
        return super().get(key)

    def describe(self) -> str:
        return "Intl.NumberFormat"


def _number_format(budget: Budget, args: list[Any]) -> _NumberFormat:
    check_locale("Intl.NumberFormat", arg(args, 0), arg(args, 1))
    return _NumberFormat()


INTL = Namespace("Intl", {"NumberFormat": Builtin("NumberFormat", _number_format)})
