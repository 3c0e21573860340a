"""JavaScript's ``Date`` for declarations: the caller's clock, UTC as the local time zone.

``Date.now()``, ``new Date()`` and ``Date()`` read the clock the caller gave the validation
(``Budget.now_ms``: the turn's time); without one they raise ``MVU_SCHEMA`` (kind ``clock``),
so a result never depends on when or where it was computed. Every other form is a pure
function of its arguments. The interpreter's local time zone is UTC, so ``getHours()`` equals
``getUTCHours()`` and a date-time text without an offset is read as UTC.

Arithmetic follows ECMAScript's day and time functions (MakeDay, MakeTime, TimeClip) on
integers, for the whole range of ±8.64e15 ms. ``Date.parse`` reads the ISO format (as V8 does:
any number of fraction digits, a space for ``T``, ``+0800`` offsets), the numeric
``2025/6/2 10:30`` forms and the texts ``toString`` / ``toUTCString`` write; any other text is
an invalid date (NaN), where V8 would guess at more.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.schema.values import (
    Budget,
    Builtin,
    PrimitiveObject,
    ScriptError,
    arg,
    to_number,
    to_string,
)

MS_PER_DAY = 86_400_000
MAX_TIME = 8.64e15
_DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH_NUMBER = {name.lower(): index for index, name in enumerate(_MONTHS)}


class JsDate(PrimitiveObject):
    """A ``Date`` object: its time value in ms since the epoch, or NaN for an invalid date."""

    __slots__ = ("time",)
    type_name = "object"

    def __init__(self, time: float | int) -> None:
        self.time = time

    def number(self) -> float | int:
        return self.time

    def text(self) -> str:
        return _to_string(self.time)

    def json(self) -> str | None:
        """``JSON.stringify``'s view (``toJSON``): the ISO text, or null for an invalid date."""
        return None if math.isnan(self.time) else _iso(int(self.time))

    def get(self, key: str) -> Any:
        method = _METHODS.get(key)
        if method is None:
            raise MvuError(Code.UNSUPPORTED, f"`{key}` of a Date is not supported")
        return Builtin(key, lambda budget, args: method(budget, self, args))

    def describe(self) -> str:
        return "a Date"


# -- ECMAScript's day and time arithmetic --------------------------------------------------------


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to year-month-day (proleptic Gregorian; month 1..12)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month 1..12, day 1..31) of a day number."""
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted + 2) // 5 + 1
    month = shifted + (3 if shifted < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


def _integer(value: float | int) -> float | int:
    """ToIntegerOrInfinity; NaN stays NaN so the whole result becomes NaN."""
    if math.isnan(value) or math.isinf(value):
        return value
    return int(value)


def make_time(fields: list[float | int]) -> float | int:
    """A date's time value from [year, month 0..11 (may overflow), day, hours, minutes, seconds,
    ms], as MakeDate(MakeDay(...), MakeTime(...)) and TimeClip compute it."""
    if any(math.isnan(field) or math.isinf(field) for field in fields):
        return math.nan
    year, month, day, hours, minutes, seconds, ms = (int(field) for field in fields)
    if abs(year) > 400_000 or abs(month) > 10_000_000:
        return math.nan  # far beyond TimeClip's range whatever the other fields say
    year += month // 12
    day_number = _days_from_civil(year, month % 12 + 1, 1) + day - 1
    return time_clip(day_number * MS_PER_DAY + hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + ms)


def time_clip(time: float | int) -> float | int:
    if math.isnan(time) or math.isinf(time) or abs(time) > MAX_TIME:
        return math.nan
    return int(time)


def fields_of(time: int) -> list[int]:
    """[year, month 0..11, day, hours, minutes, seconds, ms, weekday] of a valid time value."""
    days, within = divmod(time, MS_PER_DAY)
    year, month, day = _civil_from_days(days)
    return [year, month - 1, day, within // 3_600_000, within // 60_000 % 60, within // 1000 % 60, within % 1000,
            (days + 4) % 7]


# -- texts ------------------------------------------------------------------------------------------


def _year_text(year: int) -> str:
    return f"{year:04d}" if 0 <= year <= 9999 else f"{'-' if year < 0 else '+'}{abs(year):06d}"


def _iso(time: int) -> str:
    year, month, day, hours, minutes, seconds, ms, _ = fields_of(time)
    return f"{_year_text(year)}-{month + 1:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}.{ms:03d}Z"


def _written_year(year: int) -> str:
    """The year as toString and toUTCString write it: four digits at least, a sign if negative."""
    return f"{'-' if year < 0 else ''}{abs(year):04d}"


def _date_part(fields: list[int]) -> str:
    return f"{_DAYS[fields[7]]} {_MONTHS[fields[1]]} {fields[2]:02d} {_written_year(fields[0])}"


def _time_part(fields: list[int]) -> str:
    return f"{fields[3]:02d}:{fields[4]:02d}:{fields[5]:02d} GMT+0000 (Coordinated Universal Time)"


def _to_string(time: float | int) -> str:
    if math.isnan(time):
        return "Invalid Date"
    fields = fields_of(int(time))
    return f"{_date_part(fields)} {_time_part(fields)}"


def _utc_string(time: int) -> str:
    fields = fields_of(time)
    return (f"{_DAYS[fields[7]]}, {fields[2]:02d} {_MONTHS[fields[1]]} {_written_year(fields[0])} "
            f"{fields[3]:02d}:{fields[4]:02d}:{fields[5]:02d} GMT")


# -- parsing -----------------------------------------------------------------------------------------

_ISO = re.compile(
    r"([+-]\d{6}|\d{4})(?:-(\d\d)(?:-(\d\d))?)?"
    r"(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?)?"
    r" ?([Zz]|[+-]\d\d:?\d\d)?", re.ASCII)
_NUMERIC = re.compile(
    r"(\d{1,6})([-/.])(\d{1,2})\2(\d{1,2})"
    r"(?:[Tt ]+(\d{1,2}):(\d\d)(?::(\d\d)(?:\.(\d+))?)?)?"
    r"(?: *(?:[Zz]|GMT|UTC|([+-]\d\d:?\d\d)))?", re.ASCII)
# What toString and toUTCString write: `Mon Mar 03 2025 00:00:00 GMT+0000 (…)`, `Mon, 03 Mar 2025 00:00:00 GMT`.
_WRITTEN = re.compile(
    r"(?:[A-Za-z]{3},? +)?(?:([A-Za-z]{3}) +(\d{1,2})|(\d{1,2}) +([A-Za-z]{3})) +(-?\d{4,6})"
    r"(?: +(\d\d):(\d\d)(?::(\d\d))?)?(?: *(?:GMT|UTC|Z)([+-]\d\d:?\d\d)?)?(?: *\([^()]*\))?", re.ASCII)


def _offset_ms(text: str | None) -> int:
    if not text or text in {"Z", "z"}:
        return 0
    digits = text[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + int(digits[2:])
    return -minutes * 60_000 if text[0] == "+" else minutes * 60_000


def _clock_ok(hours: int, minutes: int, seconds: int, ms: int) -> bool:
    if hours == 24:
        return minutes == seconds == ms == 0
    return hours < 24 and minutes < 60 and seconds < 60


def _assemble(year: int, month: int, day: int, clock: tuple[int, int, int, int], offset: int) -> float | int:
    if not (1 <= month <= 12 and 1 <= day <= 31 and _clock_ok(*clock)):
        return math.nan
    time = make_time([year, month - 1, day, *clock])
    return time if math.isnan(time) else time_clip(time + offset)


def _fraction(text: str | None) -> int:
    return int((text or "0")[:3].ljust(3, "0"))


def parse_date(text: str) -> float | int:
    """``Date.parse(text)``: the time value, or NaN."""
    text = text.strip()
    found = _ISO.fullmatch(text)
    if found is not None:
        year_text, month, day, hours, minutes, seconds, fraction, zone = found.groups()
        if year_text == "-000000":
            return math.nan
        clock = (int(hours or 0), int(minutes or 0), int(seconds or 0), _fraction(fraction))
        return _assemble(int(year_text), int(month or 1), int(day or 1), clock, _offset_ms(zone))
    found = _NUMERIC.fullmatch(text)
    if found is not None:
        year, _, month, day, hours, minutes, seconds, fraction, zone = found.groups()
        clock = (int(hours or 0), int(minutes or 0), int(seconds or 0), _fraction(fraction))
        return _assemble(int(year), int(month), int(day), clock, _offset_ms(zone))
    found = _WRITTEN.fullmatch(text)
    if found is not None:
        month_a, day_a, day_b, month_b, year, hours, minutes, seconds, zone = found.groups()
        month_index = _MONTH_NUMBER.get((month_a or month_b).lower())
        if month_index is None:
            return math.nan
        clock = (int(hours or 0), int(minutes or 0), int(seconds or 0), 0)
        return _assemble(int(year), month_index + 1, int(day_a or day_b), clock, _offset_ms(zone))
    return math.nan


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
    year = _integer(fields[0])
    if not math.isnan(year) and 0 <= year <= 99:
        fields[0] = 1900 + year
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
    return _to_string(clock(budget, "Date()"))  # `Date()` as a function: the clock's text


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


_METHODS: dict[str, DateMethod] = {
    "getTime": lambda budget, date, args: date.time,
    "valueOf": lambda budget, date, args: date.time,
    "getTimezoneOffset": lambda budget, date, args: math.nan if math.isnan(date.time) else 0,
    "toISOString": _valid(_iso),
    "toJSON": lambda budget, date, args: date.json(),
    "toString": lambda budget, date, args: date.text(),
    "toUTCString": lambda budget, date, args: "Invalid Date" if math.isnan(date.time) else _utc_string(int(date.time)),
    "toDateString": _or_invalid(_date_part),
    "toTimeString": _or_invalid(_time_part),
    "setTime": _set_time,
}
for _prefix in ("get", "getUTC"):
    for _index, _name in enumerate(("FullYear", "Month", "Date", "Hours", "Minutes", "Seconds", "Milliseconds", "Day")):
        _METHODS[_prefix + _name] = _field(_index)
for _prefix in ("set", "setUTC"):
    for _index, (_name, _most) in enumerate((("FullYear", 3), ("Month", 2), ("Date", 1), ("Hours", 4),
                                             ("Minutes", 3), ("Seconds", 2), ("Milliseconds", 1))):
        _METHODS[_prefix + _name] = _setter(_index, _most)
del _prefix, _index, _name, _most
