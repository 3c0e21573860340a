"""Date strings as ``add`` reads them: MagVarUpdate adds milliseconds to a date.

Without a declaration, ``_.add('世界.时间', 1800000)`` on a text that JavaScript's ``new Date``
reads as a date (and that is not a plain number) moves it by that many milliseconds and stores
``toISOString()``'s form, ``2025-06-02T08:30:00.000Z``. We read the forms cards and models
write: ISO dates and times (``2025-06-02``, ``2025-06-02T08:00``, ``2025-06-02 08:00:00.5``,
offsets ``Z`` / ``+08:00``), ``2025/06/02 08:00``, ``6/2/2025`` and English month names
(``June 2, 2025``, ``2 Jun 2025 10:00``, ``Mon, 02 Jun 2025 08:00:00 GMT``). A time without an
offset is read as UTC: the store has no time zone (the browser's local time in the original).
Day overflow rolls over as in JavaScript (``2025-02-30`` is 2 March).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MONTHS = {name: number for number, names in enumerate(
    (("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
     ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
     ("dec", "december")), start=1) for name in names}

_TIME = r"(?:[T ](?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d+))?)?)?"
_ZONE = r"\s*(?P<z>Z|GMT|UTC|[+-]\d{2}:?\d{2})?"
_ISO = re.compile(r"(?P<y>[+-]\d{6}|\d{4})-(?P<mo>\d{1,2})(?:-(?P<d>\d{1,2}))?" + _TIME + _ZONE)
_SLASHED = re.compile(r"(?P<y>\d{4})/(?P<mo>\d{1,2})/(?P<d>\d{1,2})" + _TIME + _ZONE)
_AMERICAN = re.compile(r"(?P<mo>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})" + _TIME + _ZONE)
_WEEKDAY = r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+)?"
_NAMED = re.compile(_WEEKDAY + r"(?P<mn>[a-z]+)\.?\s+(?P<d>\d{1,2}),?\s+(?P<y>\d{4})" + _TIME + _ZONE, re.I)
_NAMED_DAY_FIRST = re.compile(_WEEKDAY + r"(?P<d>\d{1,2})\s+(?P<mn>[a-z]+)\.?,?\s+(?P<y>\d{4})" + _TIME + _ZONE, re.I)
_FORMS = (_ISO, _SLASHED, _AMERICAN, _NAMED, _NAMED_DAY_FIRST)


def _offset(zone: str | None) -> timedelta:
    if zone is None or zone in ("Z", "GMT", "UTC"):
        return timedelta(0)
    digits = zone[1:].replace(":", "")
    sign = -1 if zone[0] == "-" else 1
    return sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))


def parse_date(text: str) -> int | None:
    """Milliseconds since the epoch for a date text (see the module docstring), else ``None``."""
    stripped = text.strip()
    for form in _FORMS:
        found = form.fullmatch(stripped)
        if found is not None:
            return _moment(found)
    return None


def _moment(found: re.Match[str]) -> int | None:
    parts = found.groupdict()
    month = _MONTHS.get(parts["mn"].lower()) if parts.get("mn") else int(parts["mo"])
    day = int(parts["d"] or 1)
    hour, minute, second = int(parts["h"] or 0), int(parts["mi"] or 0), int(parts["s"] or 0)
    fraction = int((parts["f"] or "0")[:3].ljust(3, "0"))
    if month is None or not 1 <= month <= 12 or not 1 <= day <= 31 or minute > 59 or second > 59:
        return None
    if hour > 24 or (hour == 24 and (minute or second or fraction)):
        return None
    try:
        start = datetime(int(parts["y"]), month, 1, tzinfo=UTC)
    except ValueError:
        return None
    moment = start + timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second, milliseconds=fraction)
    moment -= _offset(parts["z"])
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def iso_string(milliseconds: int) -> str | None:
    """``Date.prototype.toISOString`` for years 1 to 9999 (``None`` outside)."""
    try:
        moment = _EPOCH + timedelta(milliseconds=milliseconds)
    except OverflowError:
        return None
    if not 1 <= moment.year <= 9999:
        return None
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
            f"{moment.second:02d}.{moment.microsecond // 1000:03d}Z")
