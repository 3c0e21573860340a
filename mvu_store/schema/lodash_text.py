"""lodash's word-based text helpers: ``words``, ``deburr``, the case conversions (``camelCase``,
``kebabCase``...), ``truncate`` and a string's ``toArray``.

A text is split into words by lodash's rules, observed on lodash 4.17.21: text made of plain
ASCII words splits at anything that is not a letter or digit; any other text splits by letter
case, where only Latin-1's letters have a case (other scripts' letters are "misc" letters that
join either side), digits and ordinals (``1st``, ``2ND``) stand alone, and an emoji with its
modifiers and zero-width-joined partners is one word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

from mvu_store.js.strings import joined, units
from mvu_store.js.values import UNDEFINED, Budget, Builtin, arg
from mvu_store.schema.builtins import lodash_string
from mvu_store.schema.numeric import to_integer
from mvu_store.schema.regex import Regex, Subject, search

_UPPER = "A-Z\u00c0-\u00d6\u00d8-\u00de"
_LOWER = "a-z\u00df-\u00f6\u00f8-\u00ff"
_SPACES = "\t\n\v\f\r \u00a0\u1680\u180e\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_BREAK = "\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\u00bf\u00ac\u00b1\u00d7\u00f7\u2000-\u206f" + _SPACES
_ASTRAL = "\ud800-\udfff\U00010000-\U0010ffff"
_MISC = f"[^{_ASTRAL}{_BREAK}0-9\u2700-\u27bf{_LOWER}{_UPPER}]"
_APOSTROPHE = "['\u2019]"
_SYMBOL = "(?:[\u2700-\u27bf]|[\U0001f1e6-\U0001f1ff]{2}|[\U00010000-\U0010ffff])"
_TRAILER = "[\ufe0e\ufe0f]?(?:[\u0300-\u036f\ufe20-\ufe2f\u20d0-\u20ff\U0001f3fb-\U0001f3ff])?"
_JOINED = f"(?:\u200d(?:[^{_ASTRAL}]|{_SYMBOL}){_TRAILER})*"
_UNICODE_WORD = re.compile("|".join([
    f"[{_UPPER}]?[{_LOWER}]+(?:{_APOSTROPHE}(?:d|ll|m|re|s|t|ve))?(?=[{_BREAK}]|[{_UPPER}]|$)",
    f"(?:[{_UPPER}]|{_MISC})+(?:{_APOSTROPHE}(?:D|LL|M|RE|S|T|VE))?(?=[{_BREAK}]|[{_UPPER}](?:[{_LOWER}]|{_MISC})|$)",
    f"[{_UPPER}]?(?:[{_LOWER}]|{_MISC})+(?:{_APOSTROPHE}(?:d|ll|m|re|s|t|ve))?",
    f"[{_UPPER}]+(?:{_APOSTROPHE}(?:D|LL|M|RE|S|T|VE))?",
    r"\d*(?:1ST|2ND|3RD|(?![123])\dTH)(?=\b|[a-z_])",
    r"\d*(?:1st|2nd|3rd|(?![123])\dth)(?=\b|[A-Z_])",
    r"\d+",
    f"{_SYMBOL}{_TRAILER}{_JOINED}",
]), re.ASCII)
_NEEDS_UNICODE_RULES = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]|[0-9][a-zA-Z]|[a-zA-Z][0-9]|[^a-zA-Z0-9 ]")
_ASCII_WORD = re.compile(r"[^\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+")


def words(text: str) -> list[str]:
    pattern = _UNICODE_WORD if _NEEDS_UNICODE_RULES.search(text) else _ASCII_WORD
    return pattern.findall(text)


# Latin letters without a canonical decomposition that deburr still spells in basic Latin.
_SPELLED = {
    "Æ": "Ae", "æ": "ae", "Ð": "D", "ð": "d", "Ø": "O", "ø": "o", "Þ": "Th", "þ": "th", "ß": "ss",
    "Đ": "D", "đ": "d", "Ħ": "H", "ħ": "h", "ı": "i", "Ĳ": "IJ", "ĳ": "ij", "ĸ": "k", "Ŀ": "L",
    "ŀ": "l", "Ł": "L", "ł": "l", "ŉ": "'n", "Ŋ": "N", "ŋ": "n", "Œ": "Oe", "œ": "oe", "Ŧ": "T",
    "ŧ": "t", "ſ": "s",
}
_LATIN_LETTER = re.compile("[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017f]")
_COMBINING = re.compile("[\u0300-\u036f\ufe20-\ufe2f\u20d0-\u20ff]")


def _plain_letter(found: re.Match[str]) -> str:
    letter = found.group()
    spelled = _SPELLED.get(letter)
    if spelled is not None:
        return spelled
    return _COMBINING.sub("", unicodedata.normalize("NFD", letter))


def deburr(text: str) -> str:
    """Latin-1 Supplement and Latin Extended-A letters as basic Latin, combining marks removed
    (nothing else changes: a no-break space stays one)."""
    return _COMBINING.sub("", _LATIN_LETTER.sub(_plain_letter, text))


def _upper_first(word: str) -> str:
    return word[:1].upper() + word[1:]


def _case_words(args: list[Any]) -> list[str]:
    return words(deburr(lodash_string(arg(args, 0))).replace("'", "").replace("\u2019", ""))


def _case(join: Callable[[list[str]], str]) -> Callable[[Budget, list[Any]], str]:
    return lambda budget, args: join(_case_words(args))


def _camel(parts: list[str]) -> str:
    return "".join(word.lower() if index == 0 else _upper_first(word.lower()) for index, word in enumerate(parts))


def _truncate(budget: Budget, args: list[Any]) -> str:
    """``_.truncate(text, {length = 30, omission = '...', separator})``: cut to ``length``
    characters with the omission, at the separator's last occurrence before the cut."""
    text = lodash_string(arg(args, 0))
    options = arg(args, 1) if type(arg(args, 1)) is dict else {}
    length = to_integer(options.get("length", 30))
    omission = lodash_string(options.get("omission", "..."))
    separator = options.get("separator", UNDEFINED)
    if length >= len(text):
        return text
    end = length - len(omission)
    if end < 1:
        return omission
    kept = text[:end]
    if isinstance(separator, Regex):
        kept = _cut_at_last_match(budget, text, kept, separator)
    elif separator is not UNDEFINED:
        mark = lodash_string(separator)
        if text.find(mark, end) != end and (index := kept.rfind(mark)) > -1:
            kept = kept[:index]
    return kept + omission


def _cut_at_last_match(budget: Budget, text: str, kept: str, separator: Regex) -> str:
    program = separator.program
    rest = search(Subject(text[len(kept):], program, budget), 0, budget, sticky=False)
    if rest is not None and _start(rest) == 0:
        return kept
    subject, position, last = Subject(kept, program, budget), 0, None
    while position <= len(units(kept)):
        spans = search(subject, position, budget, sticky=False)
        if spans is None:
            break
        last = _start(spans)
        position = max(_end(spans), last + 1)
    return kept if last is None else joined(units(kept)[:last])


def _start(spans: list[tuple[int, int] | None]) -> int:
    whole = spans[0]
    return -1 if whole is None else whole[0]


def _end(spans: list[tuple[int, int] | None]) -> int:
    whole = spans[0]
    return -1 if whole is None else whole[1]


_COMBO = "[\u0300-\u036f\ufe20-\ufe2f\u20d0-\u20ff]"
_PIECE = f"(?:[\U0001f1e6-\U0001f1ff]{{2}}|.){_COMBO}?[\ufe0e\ufe0f]?(?:{_COMBO}|[\U0001f3fb-\U0001f3ff])?"
_SYMBOL_OF_TEXT = re.compile(f"{_PIECE}(?:\u200d{_PIECE})*", re.DOTALL)
_HAS_UNICODE = re.compile(f"[\u200d{_ASTRAL}\u0300-\u036f\ufe20-\ufe2f\u20d0-\u20ff\ufe0e\ufe0f]")


def to_array_of_text(text: str) -> list[str]:
    """A string's ``_.toArray``: its symbols, as a reader sees them (a surrogate pair, a letter
    with its combining mark, an emoji with its modifiers and zero-width-joined partners)."""
    text = joined(text)
    return _SYMBOL_OF_TEXT.findall(text) if _HAS_UNICODE.search(text) else list(text)


TEXT_HELPERS: dict[str, Builtin] = {
    "camelCase": Builtin("camelCase", _case(_camel)),
    "kebabCase": Builtin("kebabCase", _case(lambda parts: "-".join(word.lower() for word in parts))),
    "snakeCase": Builtin("snakeCase", _case(lambda parts: "_".join(word.lower() for word in parts))),
    "lowerCase": Builtin("lowerCase", _case(lambda parts: " ".join(word.lower() for word in parts))),
    "upperCase": Builtin("upperCase", _case(lambda parts: " ".join(word.upper() for word in parts))),
    "startCase": Builtin("startCase", _case(lambda parts: " ".join(_upper_first(word) for word in parts))),
    "words": Builtin("words", lambda budget, args: words(lodash_string(arg(args, 0)))),
    "deburr": Builtin("deburr", lambda budget, args: deburr(lodash_string(arg(args, 0)))),
    "truncate": Builtin("truncate", _truncate),
}
