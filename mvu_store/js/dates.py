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


# -- the toLocale* family ---------------------------------------------------------------------
# What V8 with ICU writes for the locales cards use: English (en, en-US: the default locale) and
# Chinese (zh, zh-CN), in the fixed-offset time zones below. Any other locale, zone or option is
# refused by the caller (MVU_UNSUPPORTED naming it): a guess would differ from the browser's.

LOCALE_ZONES = {"UTC": 0, "Etc/UTC": 0, "GMT": 0, "Etc/GMT": 0, "Asia/Shanghai": 480, "Asia/Hong_Kong": 480,
                "Asia/Taipei": 480, "Asia/Singapore": 480, "Asia/Tokyo": 540, "Asia/Seoul": 540}
_LONG_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")
_LONG_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_ZH_DAYS = "日一二三四五六"
_DATE_FIELDS = ("weekday", "year", "month", "day")
_TIME_FIELDS = ("hour", "minute", "second")
_DATE_STYLES = {"full": {"weekday": "long", "year": "numeric", "month": "long", "day": "numeric"},
                "long": {"year": "numeric", "month": "long", "day": "numeric"},
                "medium": {"year": "numeric", "month": "short", "day": "numeric"},
                "short": {"year": "2-digit", "month": "numeric", "day": "numeric"}}
_TIME_STYLES = {"medium": {"hour": "numeric", "minute": "2-digit", "second": "2-digit"},
                "short": {"hour": "numeric", "minute": "2-digit"}}


def resolve_fields(options: dict[str, str], required: str, defaults: str) -> dict[str, str]:
    """ToDateTimeOptions: the components to write (``required``/``defaults`` are ``date``,
    ``time`` or ``any``/``all``); style options expand to their components."""
    fields = {name: options[name] for name in (*_DATE_FIELDS, *_TIME_FIELDS) if name in options}
    if "dateStyle" in options or "timeStyle" in options:
        styled = dict(_DATE_STYLES.get(options.get("dateStyle", ""), {}))
        styled.update(_TIME_STYLES.get(options.get("timeStyle", ""), {}))
        return styled
    need_defaults = not any(name in fields for name in (
        _DATE_FIELDS if required == "date" else _TIME_FIELDS if required == "time" else (*_DATE_FIELDS, *_TIME_FIELDS)))
    if need_defaults and defaults in ("date", "all"):
        fields.update({"year": "numeric", "month": "numeric", "day": "numeric"})
    if need_defaults and defaults in ("time", "all"):
        fields.update({"hour": "numeric", "minute": "numeric", "second": "numeric"})
    return fields


def _two(number: int, style: str) -> str:
    return f"{number:02d}" if style == "2-digit" else str(number)


def _era_year(year: int) -> int:
    """ICU writes the year of the era: the year 0 is 1 BC, -1 is 2 BC."""
    return year if year > 0 else 1 - year


def _english_date(values: list[int], fields: dict[str, str]) -> str:
    year, month, day, weekday = _era_year(values[0]), values[1], values[2], values[7]
    year_text = f"{year % 100:02d}" if fields.get("year") == "2-digit" else str(year)
    month_style = fields.get("month")
    parts: list[str] = []
    if month_style in ("long", "short", "narrow"):
        name = {"long": _LONG_MONTHS[month], "short": _MONTHS[month], "narrow": _LONG_MONTHS[month][0]}[month_style]
        text = f"{name} {_two(day, fields['day'])}" if "day" in fields else name
        if "year" in fields:
            text += f", {year_text}" if "day" in fields else f" {year_text}"
        parts.append(text)
    elif month_style or "day" in fields or "year" in fields:
        numbers = [_two(month + 1, month_style) if month_style else None,
                   _two(day, fields["day"]) if "day" in fields else None, year_text if "year" in fields else None]
        parts.append("/".join(part for part in numbers if part is not None))
    if "weekday" in fields:
        name = _LONG_DAYS[weekday] if fields["weekday"] == "long" else _DAYS[weekday]
        parts.insert(0, name[0] if fields["weekday"] == "narrow" else name)
    return ", ".join(parts)


def _chinese_date(values: list[int], fields: dict[str, str]) -> str:
    year, month, day, weekday = _era_year(values[0]), values[1], values[2], values[7]
    year_text = f"{year % 100:02d}" if fields.get("year") == "2-digit" else str(year)
    month_style = fields.get("month")
    if month_style in ("long", "short", "narrow"):
        text = (f"{year_text}年" if "year" in fields else "") + f"{month + 1}月" + (
            f"{_two(day, fields['day'])}日" if "day" in fields else "")
    elif month_style or "day" in fields or "year" in fields:
        numbers = [year_text if "year" in fields else None, _two(month + 1, month_style) if month_style else None,
                   _two(day, fields["day"]) if "day" in fields else None]
        text = "/".join(part for part in numbers if part is not None)
    else:
        text = ""
    if "weekday" in fields:
        text += ("星期" if fields["weekday"] == "long" else "周") + _ZH_DAYS[weekday]
    return text


def _time(values: list[int], fields: dict[str, str], english: bool, hour12: bool | None) -> str:
    hours, minutes, seconds = values[3], values[4], values[5]
    twelve = english if hour12 is None else hour12
    parts = []
    if "hour" in fields:
        if twelve:
            shown = hours % 12 if not english else (hours % 12 or 12)  # zh counts 0-11, en 1-12
            parts.append(_two(shown, fields["hour"]) if english else str(shown))
        else:
            shown = hours if not english or hour12 is None else (hours or 24)  # en's hour12:false is h24
            parts.append(f"{shown:02d}" if not english or "minute" in fields or fields["hour"] == "2-digit"
                         else str(shown))
    if "minute" in fields:
        parts.append(f"{minutes:02d}" if parts else _two(minutes, fields["minute"]))
    if "second" in fields:
        parts.append(f"{seconds:02d}" if parts else _two(seconds, fields["second"]))
    text = ":".join(parts)
    if twelve and "hour" in fields:
        noon = hours >= 12
        return f"{text} {'PM' if noon else 'AM'}" if english else f"{'下午' if noon else '上午'}{text}"
    return text


def locale_text(time: int, english: bool, fields: dict[str, str], hour12: bool | None, offset_minutes: int) -> str:
    """A valid time value as ``toLocale*String`` writes it with the resolved ``fields``."""
    values = fields_of(time + offset_minutes * 60_000)
    date = (_english_date if english else _chinese_date)(values, fields)
    clock = _time(values, fields, english, hour12) if any(name in fields for name in _TIME_FIELDS) else ""
    if not date or not clock:
        return date or clock
    if not english:
        return f"{date} {clock}"
    textual = fields.get("month") in ("long",) and "day" in fields and "year" in fields and "weekday" not in fields
    return f"{date} at {clock}" if textual else f"{date}, {clock}"
