"""JavaScript's time values: ECMAScript's day and time arithmetic, ``Date.parse`` and the texts
``Date`` writes (``toISOString``, ``toString``, ``toUTCString`` and the ``toLocale*`` family).

The interpreter's local time zone is UTC, so local and UTC fields are one, and a date-time text
without an offset is read as UTC. Arithmetic follows ECMAScript's day and time functions
(MakeDay, MakeTime, TimeClip) on integers, for the whole range of ±8.64e15 ms.

``parse_date`` is the one date reader of the project (the interpreter's ``Date`` and the ``add``
command on date texts): the ISO format (as V8 reads it: any number of fraction digits, a space for
``T``, ``+0800`` offsets, one-digit months and days), the numeric forms ``2025/6/2 10:30`` and
``6/2/2025``, English month names (``June 2, 2025``, ``2 Jun 2025 10:00``) and the texts
``toString`` / ``toUTCString`` write. Any other text is an invalid date (NaN) where V8 would guess
at more. Day overflow rolls over as in JavaScript (``2025-02-30`` is 2 March).
"""

from __future__ import annotations

import math
import re

MS_PER_DAY = 86_400_000
MAX_TIME = 8.64e15
_DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH_NUMBER = {name.lower(): index for index, name in enumerate(_MONTHS)}


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


def iso_text(time: int) -> str:
    year, month, day, hours, minutes, seconds, ms, _ = fields_of(time)
    return f"{_year_text(year)}-{month + 1:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}.{ms:03d}Z"


def _written_year(year: int) -> str:
    """The year as toString and toUTCString write it: four digits at least, a sign if negative."""
    return f"{'-' if year < 0 else ''}{abs(year):04d}"


def date_part(fields: list[int]) -> str:
    return f"{_DAYS[fields[7]]} {_MONTHS[fields[1]]} {fields[2]:02d} {_written_year(fields[0])}"


def time_part(fields: list[int]) -> str:
    return f"{fields[3]:02d}:{fields[4]:02d}:{fields[5]:02d} GMT+0000 (Coordinated Universal Time)"


def date_text(time: float | int) -> str:
    if math.isnan(time):
        return "Invalid Date"
    fields = fields_of(int(time))
    return f"{date_part(fields)} {time_part(fields)}"


def utc_text(time: int) -> str:
    fields = fields_of(time)
    return (f"{_DAYS[fields[7]]}, {fields[2]:02d} {_MONTHS[fields[1]]} {_written_year(fields[0])} "
            f"{fields[3]:02d}:{fields[4]:02d}:{fields[5]:02d} GMT")


# -- parsing -----------------------------------------------------------------------------------------

_CLOCK = r"(\d{1,2}):(\d\d)(?::(\d\d)(?:\.(\d+))?)?"
_TIME = r"(?: +" + _CLOCK + ")?"  # the legacy forms separate the time by spaces, never by `T`
_ZONE = r" *(?:[Zz]|GMT|UTC)?([+-]\d\d:?\d\d)?"
_ISO = re.compile(r"([+-]\d{6}|\d{4})(?:-(\d\d)(?:-(\d\d))?)?"
                  r"(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?)? ?([Zz]|[+-]\d\d:?\d\d)?", re.ASCII)
_YEAR_FIRST = re.compile(r"(\d{1,6})([-/.])(\d{1,2})\2(\d{1,2})" + _TIME + _ZONE, re.ASCII)
_MONTH_FIRST = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})" + _TIME + _ZONE, re.ASCII)
# English month names (any word starting with one), day before or after them, an optional
# weekday, and what toString and toUTCString write: `Mon Mar 03 2025 00:00:00 GMT+0000 (…)`.
_WRITTEN = re.compile(
    r"(?:[A-Za-z]{3}[A-Za-z]*,? +)?(?:([A-Za-z]{3,})\.? +(\d{1,2})|(\d{1,2}) +([A-Za-z]{3,})\.?),? +(-?\d{4,6})"
    r"(?:,? +(\d{1,2}):(\d\d)(?::(\d\d))?)?" + _ZONE + r"(?: *\([^()]*\))?", re.ASCII)


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


def _clock(hours: str | None, minutes: str | None, seconds: str | None,
           fraction: str | None) -> tuple[int, int, int, int]:
    return int(hours or 0), int(minutes or 0), int(seconds or 0), _fraction(fraction)


def parse_date(text: str) -> float | int:
    """``Date.parse(text)``: the time value, or NaN (see the module docstring for the forms)."""
    text = text.strip()
    found = _ISO.fullmatch(text)
    if found is not None:
        year_text, month, day, hours, minutes, seconds, fraction, zone = found.groups()
        if year_text == "-000000":
            return math.nan
        clock = _clock(hours, minutes, seconds, fraction)
        return _assemble(int(year_text), int(month or 1), int(day or 1), clock, _offset_ms(zone))
    found = _YEAR_FIRST.fullmatch(text)
    if found is not None:
        year, _, month, day, hours, minutes, seconds, fraction, zone = found.groups()
        clock = _clock(hours, minutes, seconds, fraction)
        return _assemble(int(year), int(month), int(day), clock, _offset_ms(zone))
    found = _MONTH_FIRST.fullmatch(text)
    if found is not None:
        month, day, year, hours, minutes, seconds, fraction, zone = found.groups()
        clock = _clock(hours, minutes, seconds, fraction)
        return _assemble(int(year), int(month), int(day), clock, _offset_ms(zone))
    found = _WRITTEN.fullmatch(text)
    if found is not None:
        month_a, day_a, day_b, month_b, year, hours, minutes, seconds, zone = found.groups()
        month_index = _MONTH_NUMBER.get((month_a or month_b)[:3].lower())
        if month_index is None:
            return math.nan
        clock = _clock(hours, minutes, seconds, None)
        return _assemble(int(year), month_index + 1, int(day_a or day_b), clock, _offset_ms(zone))
    return math.nan
