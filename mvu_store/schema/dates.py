"""JavaScript's ``Date`` for declarations: the caller's clock, UTC as the local time zone.

``Date.now()``, ``new Date()`` and ``Date()`` read the clock the caller gave the validation
(``Budget.now_ms``: the turn's time); without one they raise ``MVU_SCHEMA`` (kind ``clock``),
so a result never depends on when or where it was computed. Every other form is a pure
function of its arguments. The interpreter's local time zone is UTC, so ``getHours()`` equals
``getUTCHours()`` and a date-time text without an offset is read as UTC.

The arithmetic, ``Date.parse`` and the texts are the JavaScript core's (``mvu_store.js.dates``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.dates import (
    LOCALE_ZONES,
    date_part,
    date_text,
    fields_of,
    iso_text,
    locale_text,
    make_time,
    parse_date,
    resolve_fields,
    time_clip,
    time_part,
    utc_text,
)
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    PrimitiveObject,
    ScriptError,
    arg,
    to_number,
    to_string,
    truthy,
)


class JsDate(PrimitiveObject):
    """A ``Date`` object: its time value in ms since the epoch, or NaN for an invalid date."""

    __slots__ = ("time",)
    type_name = "object"

    def __init__(self, time: float | int) -> None:
        self.time = time

    def number(self) -> float | int:
        return self.time

    def text(self) -> str:
        return date_text(self.time)

    def json(self) -> str | None:
        """``JSON.stringify``'s view (``toJSON``): the ISO text, or null for an invalid date."""
        return None if math.isnan(self.time) else iso_text(int(self.time))

    def get(self, key: str) -> Any:
        method = _METHODS.get(key)
        if method is None:
            raise MvuError(Code.UNSUPPORTED, f"`{key}` of a Date is not supported")
        return Builtin(key, lambda budget, args: method(budget, self, args))

    def describe(self) -> str:
        return "a Date"


# -- the constructor, the namespace and the methods ----------------------------------------------


def clock(budget: Budget, what: str) -> int:
    """The caller's clock, or the refusal that says it is missing."""
    if budget.now_ms is None:
        raise MvuError(Code.SCHEMA, f"{what} reads the clock, and this validation was given none "
                                    "(a turn without a time)", kind="clock")
    return budget.now_ms


def _from_fields(args: list[Any]) -> float | int:
    """``Date.UTC(...)`` and ``new Date(y, m, ...)`` (local time is UTC): two-digit years are 19xx."""
    fields: list[float | int] = [to_number(arg(args, 0), explicit=True), 0, 1, 0, 0, 0, 0]
    for index in range(1, min(len(args), 7)):
        fields[index] = to_number(args[index], explicit=True)
    year = fields[0]
    if math.isfinite(year) and 0 <= int(year) <= 99:
        fields[0] = 1900 + int(year)
    return make_time(fields)


def construct(budget: Budget, args: list[Any]) -> JsDate:
    """``new Date(...)``."""
    if not args:
        return JsDate(clock(budget, "new Date()"))
    if len(args) > 1:
        return JsDate(_from_fields(args))
    value = args[0]
    if isinstance(value, JsDate):
        return JsDate(value.time)
    if type(value) is str or type(value) is list or type(value) is dict:
        return JsDate(parse_date(to_string(value)))
    return JsDate(time_clip(to_number(value, explicit=True)))


def _now(budget: Budget, args: list[Any]) -> int:
    return clock(budget, "Date.now()")


def _called(budget: Budget, args: list[Any]) -> str:
    return date_text(clock(budget, "Date()"))  # `Date()` as a function: the clock's text


def _parse(budget: Budget, args: list[Any]) -> float | int:
    return parse_date(to_string(arg(args, 0)))


DATE = Builtin("Date", _called, {
    "now": Builtin("now", _now),
    "parse": Builtin("parse", _parse),
    "UTC": Builtin("UTC", lambda budget, args: _from_fields(args)),
})

DateMethod = Callable[[Budget, JsDate, list[Any]], Any]


def _field(index: int) -> DateMethod:
    def read(budget: Budget, date: JsDate, args: list[Any]) -> Any:
        return math.nan if math.isnan(date.time) else fields_of(int(date.time))[index]

    return read


def _setter(first: int, most: int) -> DateMethod:
    """``setMonth(m, d?)`` and kin: replace up to ``most`` fields from ``first`` on, recompute."""
    def write(budget: Budget, date: JsDate, args: list[Any]) -> Any:
        _check_writable(budget, date)
        values = [to_number(value, explicit=True) for value in args[:most]] or [math.nan]
        if math.isnan(date.time):
            if first != 0:
                return math.nan  # only setFullYear revives an invalid date (from +0)
            fields: list[float | int] = [*fields_of(0)[:7]]
        else:
            fields = [*fields_of(int(date.time))[:7]]
        fields[first:first + len(values)] = values
        date.time = make_time(fields)
        return date.time

    return write


def _check_writable(budget: Budget, date: JsDate) -> None:
    if id(date) in budget.frozen:
        raise MvuError(Code.SCHEMA, "the declaration's constants are read-only")


def _set_time(budget: Budget, date: JsDate, args: list[Any]) -> Any:
    _check_writable(budget, date)
    date.time = time_clip(to_number(arg(args, 0), explicit=True))
    return date.time


def _valid(text: Callable[[int], str]) -> DateMethod:
    def write(budget: Budget, date: JsDate, args: list[Any]) -> Any:
        if math.isnan(date.time):
            raise ScriptError("Invalid time value", {"name": "RangeError", "message": "Invalid time value"})
        return text(int(date.time))

    return write


def _or_invalid(text: Callable[[list[int]], str]) -> DateMethod:
    def write(budget: Budget, date: JsDate, args: list[Any]) -> Any:
        return "Invalid Date" if math.isnan(date.time) else text(fields_of(int(date.time)))

    return write


_ENGLISH = frozenset({"en", "en-US", "en-Latn-US"})
_CHINESE = frozenset({"zh", "zh-CN", "zh-Hans", "zh-Hans-CN"})
_CHOICES = {"weekday": ("long", "short", "narrow"), "year": ("numeric", "2-digit"),
            "month": ("numeric", "2-digit", "long", "short", "narrow"), "day": ("numeric", "2-digit"),
            "hour": ("numeric", "2-digit"), "minute": ("numeric", "2-digit"), "second": ("numeric", "2-digit"),
            "dateStyle": ("full", "long", "medium", "short"), "timeStyle": ("full", "long", "medium", "short")}


def _unsupported(what: str) -> MvuError:
    return MvuError(Code.UNSUPPORTED, f"Date.prototype.toLocaleString: {what} is not supported (en-US and zh-CN "
                                      "in fixed-offset time zones are)", function="Date.prototype.toLocaleString")


def _english(locales: Any) -> bool:
    locale = locales[0] if type(locales) is list and locales else locales
    if locale is UNDEFINED or (type(locales) is list and not locales) or locale in _ENGLISH:
        return True
    if locale in _CHINESE:
        return False
    raise _unsupported(f"the locale {to_string(locale)!r}")


def _locale(required: str, defaults: str) -> DateMethod:
    """``toLocaleString``/``toLocaleDateString``/``toLocaleTimeString(locales, options)``."""
    def write(budget: Budget, date: JsDate, args: list[Any]) -> Any:
        english = _english(arg(args, 0))
        options = arg(args, 1)
        if options is UNDEFINED:
            options = {}
        if type(options) is not dict:
            raise _unsupported("options that are not an object")
        chosen: dict[str, str] = {}
        for key, value in options.items():
            if value is UNDEFINED:
                continue
            if key in _CHOICES:
                text = to_string(value)
                if text not in _CHOICES[key]:
                    raise ScriptError(f"Value {text} out of range for {key}", {"name": "RangeError", "message": key})
                chosen[key] = text
            elif key not in ("timeZone", "hour12"):
                raise _unsupported(f"the option {key!r}")
        zone = options.get("timeZone", "UTC")
        if zone is UNDEFINED:
            zone = "UTC"
        if zone not in LOCALE_ZONES:
            raise _unsupported(f"the time zone {to_string(zone)!r}")
        if chosen.get("timeStyle") in ("full", "long"):
            raise _unsupported("timeStyle full and long (they write the zone's name)")
        styled = "dateStyle" in chosen or "timeStyle" in chosen
        if styled and any(name in chosen for name in ("weekday", "year", "month", "day", "hour", "minute", "second")):
            raise ScriptError("Invalid option : dateStyle", {"name": "TypeError", "message": "dateStyle"})
        if (required == "time" and "dateStyle" in chosen) or (required == "date" and "timeStyle" in chosen):
            raise ScriptError("Invalid option : style", {"name": "TypeError", "message": "style"})
        if math.isnan(date.time):
            return "Invalid Date"
        hour12 = options.get("hour12", UNDEFINED)
        fields = resolve_fields(chosen, required, defaults)
        return locale_text(int(date.time), english, fields, None if hour12 is UNDEFINED else truthy(hour12),
                           LOCALE_ZONES[zone])

    return write


_METHODS: dict[str, DateMethod] = {
    "getTime": lambda budget, date, args: date.time,
    "valueOf": lambda budget, date, args: date.time,
    "getTimezoneOffset": lambda budget, date, args: math.nan if math.isnan(date.time) else 0,
    "toISOString": _valid(iso_text),
    "toJSON": lambda budget, date, args: date.json(),
    "toString": lambda budget, date, args: date.text(),
    "toUTCString": lambda budget, date, args: "Invalid Date" if math.isnan(date.time) else utc_text(int(date.time)),
    "toDateString": _or_invalid(date_part),
    "toTimeString": _or_invalid(time_part),
    "setTime": _set_time,
    "toLocaleString": _locale("any", "all"),
    "toLocaleDateString": _locale("date", "date"),
    "toLocaleTimeString": _locale("time", "time"),
    "getYear": lambda budget, date, args: math.nan if math.isnan(date.time) else fields_of(int(date.time))[0] - 1900,
    "toGMTString": lambda budget, date, args: "Invalid Date" if math.isnan(date.time) else utc_text(int(date.time)),
}
for _prefix in ("get", "getUTC"):
    for _index, _name in enumerate(("FullYear", "Month", "Date", "Hours", "Minutes", "Seconds", "Milliseconds", "Day")):
        _METHODS[_prefix + _name] = _field(_index)
for _prefix in ("set", "setUTC"):
    for _index, (_name, _most) in enumerate((("FullYear", 3), ("Month", 2), ("Date", 1), ("Hours", 4),
                                             ("Minutes", 3), ("Seconds", 2), ("Milliseconds", 1))):
        _METHODS[_prefix + _name] = _setter(_index, _most)
del _prefix, _index, _name, _most
