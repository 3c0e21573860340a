"""Text measured and scanned the way JavaScript sees it: in UTF-16 code units.

The YAML emitter and the macro both count lengths (line widths, prefix indentation) in JavaScript
``String.length`` units, where a character outside the Basic Multilingual Plane (an emoji) counts
twice. Working on a Python string whose astral characters are split into surrogate pairs makes
``len()`` and indexing agree with JavaScript; ``join_units`` turns such a string back.
"""

from __future__ import annotations

import re

# JavaScript's LineTerminator set: what `^`/`$` (multiline) and `.` treat as a line break.
LINE_TERMINATORS = "\n\r\u2028\u2029"

# String.prototype.trimEnd's set: WhiteSpace plus LineTerminator. Python's str.rstrip differs
# (it strips U+001C..U+001F and U+0085, and keeps U+FEFF).
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
    "\u2028\u2029\u202f\u205f\u3000\ufeff"

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_LONE_SURROGATE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def _pair(found: re.Match[str]) -> str:
    code = ord(found.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def split_units(text: str) -> str:
    """The same text with every astral character written as its two UTF-16 surrogates."""
    return text if text.isascii() else _ASTRAL.sub(_pair, text)


def join_units(text: str) -> str:
    """The inverse of ``split_units``: surrogate pairs become characters, lone ones stay."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def js_length(text: str) -> int:
    """``text.length`` in JavaScript."""
    return len(split_units(text))


def has_lone_surrogate(units: str) -> bool:
    """Whether a unit string holds a surrogate that is not half of a pair."""
    return _LONE_SURROGATE.search(units) is not None


def js_trim_end(text: str) -> str:
    """``String.prototype.trimEnd``."""
    return text.rstrip(JS_WHITESPACE)
