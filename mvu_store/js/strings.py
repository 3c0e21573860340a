"""JavaScript strings are sequences of UTF-16 code units; Python's are code points.

Indexes, lengths and slices of a declaration's strings are JavaScript's: a text with characters
beyond the BMP is viewed as its code units (each surrogate one Python character) while it is
indexed, and joined back afterwards (a pair becomes its character again, a lone half stays).
BMP-only texts, nearly all of them, are their own units and cost nothing.
"""

from __future__ import annotations

import unicodedata

_ASTRAL = "\U00010000"


def units(text: str) -> str:
    """``text`` with every character beyond the BMP as its two surrogates."""
    if text.isascii() or max(text) < _ASTRAL:
        return text
    return "".join(char if char < _ASTRAL else _pair(char) for char in text)


def _pair(char: str) -> str:
    point = ord(char) - 0x10000
    return chr(0xD800 + (point >> 10)) + chr(0xDC00 + (point & 0x3FF))


def joined(code_units: str) -> str:
    """The inverse of :func:`units`: surrogate pairs become their characters again."""
    if code_units.isascii() or not any("\ud800" <= char <= "\udfff" for char in code_units):
        return code_units
    return code_units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def lone_surrogates(text: str) -> bool:
    return not text.isascii() and any("\ud800" <= char <= "\udfff" for char in text)


def well_formed(text: str) -> str:
    """``toWellFormed``: every lone surrogate becomes U+FFFD."""
    if not lone_surrogates(text):
        return text
    return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)


# -- localeCompare ---------------------------------------------------------------------------
# A compact form of the Unicode collation ICU's root locale uses (en and zh agree on the scripts
# cards write): spaces and punctuation first, then symbols, digits, Latin letters, other scripts;
# letters compare without case and accents first, then accents, then case (lower first).


def _primary(char: str) -> tuple[int, int]:
    category = unicodedata.category(char)
    if category == "Cs":  # a lone surrogate sorts after every character
        return (5, ord(char))
    if category[0] in "ZPC":
        return (0, ord(char))
    if category[0] == "S":
        return (1, ord(char))
    if category == "Nd":
        return (2, unicodedata.digit(char, 0))
    if char.isascii() and char.isalpha():
        return (3, ord(char.lower()))
    return (4, ord(char.lower()))


def collation_key(text: str) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    primary: list[tuple[int, int]] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    for char in unicodedata.normalize("NFD", text).replace("ß", "ss"):
        if unicodedata.category(char) == "Cf":  # format characters (a BOM) are ignorable
            continue
        if unicodedata.combining(char):
            if secondary:
                secondary[-1] = secondary[-1] * 1000 + ord(char)
            continue
        primary.append(_primary(char))
        secondary.append(0)
        tertiary.append(1 if char.isupper() else 0)
    return primary, secondary, tertiary


def locale_compare(left: str, right: str) -> int:
    a, b = collation_key(left), collation_key(right)
    return (a > b) - (a < b)
