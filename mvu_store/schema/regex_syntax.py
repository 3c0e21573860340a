"""JavaScript regular expression syntax, translated to RE2's.

The parser follows ECMAScript's pattern grammar, with Annex B's web extensions when the ``u``
flag is absent (``]``, ``{`` and ``}`` as literals, identity escapes, legacy octal escapes,
``\\c`` without a letter). It writes an RE2 pattern whose every atom says exactly what
JavaScript means by it, whatever RE2's own defaults are:

- characters are written as ``\\x{…}`` code points; classes as explicit ranges (JavaScript's
  ``\\s`` is Unicode white space where RE2's is ASCII; ``.`` excludes the four line terminators);
- capture group N is RE2's ``(?P<gN>…)`` (JavaScript's own names are kept here); a repeated
  atom holding captures is wrapped in a hidden ``(?P<hK>…)``, the span of its last iteration:
  JavaScript forgets captures of earlier iterations, RE2 keeps the last value each one took,
  so ``regex.py`` drops those that start before it (see :class:`Reset`);
- ``^``/``$`` are ``\\A``/``\\z`` without ``m`` and RE2's line anchors with it. RE2 knows only
  ``\\n`` as a line end, so for a subject holding ``\\r``, U+2028 or U+2029 the *line form*
  of a pattern is matched against a subject whose four line terminators are each ``\\n``, a
  marker (U+FDD0…U+FDD3, noncharacters) and ``\\n``: every atom takes such a triple whole or not
  at all, RE2's anchors hold on its outer sides, and ``regex.py`` drops the empty matches RE2
  finds inside one;
- without ``u`` the subject is matched as UTF-16 code units (see ``regex.py``), so a pattern's
  own astral characters become their two surrogates, and ``i`` folds as JavaScript's
  ``Canonicalize`` does (upper case, never non-ASCII to ASCII), through explicit classes; with
  ``u`` and ``i`` RE2's simple case folding is JavaScript's.

What RE2 cannot express (lookaround, backreferences, the ``v`` flag) is ``MVU_UNSUPPORTED``
naming the feature and its offset; what JavaScript itself rejects is a ``SyntaxError``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cache

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import ScriptError

Ranges = list[tuple[int, int]]

FLAGS = "dgimsuvy"
MAX_REPEAT = 1000  # RE2's own bound on a counted repetition
LINE_TERMINATORS = (0x0A, 0x0D, 0x2028, 0x2029)
LINE_MARKERS = {"\n": "\ufdd0", "\r": "\ufdd1", "\u2028": "\ufdd2", "\u2029": "\ufdd3"}
"""The line form's middle rune of each line terminator (see the module's docstring)."""
_MARKER_RANGE: Ranges = [(0xFDD0, 0xFDD3)]
_DIGIT: Ranges = [(0x30, 0x39)]
_WORD: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_SPACE: Ranges = [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                  (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)]
_CLASS_ESCAPES = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_CONTROL = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_SYNTAX_CHARS = set("^$\\.*+?()[]{}|/")
_HEX = set("0123456789abcdefABCDEF")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")  # a fixed class: linear
# General categories RE2 knows, by JavaScript's long names as well.
_CATEGORY_NAMES = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
    "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M",
    "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N",
    "Decimal_Number": "Nd", "Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P",
    "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps",
    "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf",
    "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm", "Currency_Symbol": "Sc",
    "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z", "Space_Separator": "Zs",
    "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C", "Control": "Cc",
    "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co", "Unassigned": "Cn",
}
_SCRIPTS = frozenset({
    "Arabic", "Armenian", "Bengali", "Bopomofo", "Cyrillic", "Devanagari", "Ethiopic", "Georgian",
    "Greek", "Gujarati", "Gurmukhi", "Han", "Hangul", "Hebrew", "Hiragana", "Kannada", "Katakana",
    "Khmer", "Lao", "Latin", "Malayalam", "Mongolian", "Myanmar", "Oriya", "Sinhala", "Tamil",
    "Telugu", "Thaana", "Thai", "Tibetan", "Common", "Inherited", "Yi",
})
_SCRIPT_CODES = {  # ISO 15924 codes JavaScript also accepts (`\p{sc=Hani}`)
    "Arab": "Arabic", "Armn": "Armenian", "Beng": "Bengali", "Bopo": "Bopomofo", "Cyrl": "Cyrillic",
    "Deva": "Devanagari", "Ethi": "Ethiopic", "Geor": "Georgian", "Grek": "Greek", "Gujr": "Gujarati",
    "Guru": "Gurmukhi", "Hani": "Han", "Hang": "Hangul", "Hebr": "Hebrew", "Hira": "Hiragana", "Knda": "Kannada",
    "Kana": "Katakana", "Khmr": "Khmer", "Laoo": "Lao", "Latn": "Latin", "Mlym": "Malayalam", "Mong": "Mongolian",
    "Mymr": "Myanmar", "Orya": "Oriya", "Sinh": "Sinhala", "Taml": "Tamil", "Telu": "Telugu", "Thaa": "Thaana",
    "Tibt": "Tibetan", "Zyyy": "Common", "Zinh": "Inherited", "Qaai": "Inherited", "Yiii": "Yi",
}


@dataclass(frozen=True, slots=True)
class Reset:
    """A repeated atom holding captures: its hidden group, its minimum count, the groups inside."""

    hidden: str
    minimum: int
    inner: tuple[str, ...]


@dataclass(slots=True)
class Translation:
    """An RE2 pattern and what JavaScript's result objects need from the source."""

    re2: str
    groups: int
    names: dict[str, int] = field(default_factory=dict)  # group name -> group number, in order
    line_anchors: bool = False  # `^`/`$` under `m`: RE2 knows only `\n` as a line end
    tells_lines_apart: bool = False  # some atom matches one line terminator but not another
    resets: list[Reset] = field(default_factory=list)  # innermost first


def syntax_error(message: str) -> ScriptError:
    return ScriptError(message, {"name": "SyntaxError", "message": message})


def to_units(text: str) -> str:
    """``text`` with every astral character as its two UTF-16 surrogates (one char per code unit)."""
    if text.isascii():
        return text
    return _ASTRAL.sub(_surrogates, text)


def _surrogates(found: re.Match[str]) -> str:
    offset = ord(found.group()) - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


def check_flags(flags: str) -> None:
    if any(flag not in FLAGS for flag in flags) or len(set(flags)) != len(flags):
        raise syntax_error(f"Invalid flags supplied to RegExp constructor '{flags}'")
    if "v" in flags:
        raise MvuError(Code.UNSUPPORTED, "regex flag `v` (unicodeSets) is not supported", feature="regex flag v")


def translate(source: str, flags: str, *, line_form: bool = False) -> Translation:
    """The RE2 pattern for ``new RegExp(source, flags)``, or SyntaxError / ``MVU_UNSUPPORTED``;
    ``line_form`` for subjects whose line terminators are written as triples."""
    check_flags(flags)
    return _Parser(source, flags, line_form=line_form).parse()


# -- case folding without `u` (Canonicalize: simple upper case, never non-ASCII -> ASCII) ---------


@cache
def _orbits() -> list[tuple[int, ...]]:
    """The code units that share a canonical form with another one, grouped."""
    groups: dict[int, list[int]] = {}
    for point in range(0x10000):
        if 0xD800 <= point <= 0xDFFF:
            continue
        upper = chr(point).upper()
        canonical = ord(upper) if len(upper) == 1 and not (point >= 128 and ord(upper) < 128) else point
        groups.setdefault(canonical, []).append(point)
    return sorted(tuple(members) for members in groups.values() if len(members) > 1)


def _contains(ranges: Ranges, point: int) -> bool:
    index = bisect_right(ranges, (point, 0x10FFFF + 1)) - 1
    return index >= 0 and ranges[index][0] <= point <= ranges[index][1]


def _fold(ranges: Ranges) -> Ranges:
    """``ranges`` closed under JavaScript's non-Unicode case-insensitive equality."""
    ranges = _normalise(ranges)
    extra = [(point, point) for members in _orbits()
             if any(_contains(ranges, member) for member in members) for point in members]
    return _normalise(ranges + extra)


def _normalise(ranges: Ranges) -> Ranges:
    merged: Ranges = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _complement(ranges: Ranges, top: int) -> Ranges:
    result: Ranges = []
    next_low = 0
    for low, high in _normalise(ranges):
        if low > next_low:
            result.append((next_low, low - 1))
        next_low = high + 1
    if next_low <= top:
        result.append((next_low, top))
    return result


def _subtract(ranges: Ranges, removed: Ranges) -> Ranges:
    kept: Ranges = []
    for low, high in _normalise(ranges):
        for keep_low, keep_high in _complement(removed, 0x10FFFF):
            if max(low, keep_low) <= min(high, keep_high):
                kept.append((max(low, keep_low), min(high, keep_high)))
    return kept


def _point(code: int) -> str:
    if code < 128 and chr(code).isalnum():
        return chr(code)
    return f"\\x{{{code:X}}}"


def _class_body(ranges: Ranges) -> str:
    return "".join(_point(low) if low == high else f"{_point(low)}-{_point(high)}" for low, high in ranges)


# -- the parser ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _ClassSet:
    """A class being built: explicit ranges plus RE2 property items (``\\p{Han}``, only with ``u``)."""

    ranges: Ranges = field(default_factory=list)
    properties: list[str] = field(default_factory=list)


class _Parser:
    def __init__(self, source: str, flags: str, *, line_form: bool = False) -> None:
        self.line_form = line_form
        self.source = source
        self.flags = flags
        self.unicode = "u" in flags
        self.fold = "i" in flags and not self.unicode  # with `u`, RE2's (?i) folds as JavaScript does
        self.text = source if self.unicode else to_units(source)
        self.pos = 0
        self.top = 0x10FFFF if self.unicode else 0xFFFF
        self.groups, self.names = self.scan_groups()
        self.group_count = 0
        self.hidden = 0
        self.resets: list[Reset] = []
        self.line_anchors = False
        self.tells_lines_apart = False

    # -- helpers --

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        self.pos += 1
        return char

    def unsupported(self, feature: str, at: int) -> MvuError:
        return MvuError(Code.UNSUPPORTED, f"regex /{self.source}/{self.flags}: {feature} at offset {at} is not "
                        "supported (the linear-time engine has no lookaround or backreferences)",
                        feature=feature, offset=at)

    def error(self, message: str) -> ScriptError:
        return syntax_error(f"Invalid regular expression: /{self.source}/{self.flags}: {message}")

    def scan_groups(self) -> tuple[int, dict[str, int]]:
        """Capture groups and their names, counted before parsing (``\\2`` may precede group 2)."""
        count, names, index, in_class = 0, {}, 0, False
        text = self.text
        while index < len(text):
            char = text[index]
            if char == "\\":
                index += 2
                continue
            if char == "[":
                in_class = True
            elif char == "]":
                in_class = False
            elif char == "(" and not in_class:
                if text.startswith("(?<", index) and text[index + 3:index + 4] not in {"=", "!"}:
                    count += 1
                    end = text.find(">", index)
                    name = text[index + 3:end] if end > 0 else ""
                    if name in names:
                        raise self.error("Duplicate capture group name")
                    names[name] = count
                elif not text.startswith("(?", index):
                    count += 1
            index += 1
        return count, names

    # -- grammar --

    def parse(self) -> Translation:
        body = self.disjunction()
        if self.pos < len(self.text):
            raise self.error("Unmatched ')'" if self.peek() == ")" else "Unexpected character")
        prefix = "(?i)" if "i" in self.flags and self.unicode else ""
        return Translation(prefix + body, self.groups, self.names, self.line_anchors, self.tells_lines_apart,
                           self.resets)

    def disjunction(self) -> str:
        options = [self.alternative()]
        while self.peek() == "|":
            self.take()
            options.append(self.alternative())
        return "|".join(options)

    def alternative(self) -> str:
        parts: list[str] = []
        while self.pos < len(self.text) and self.peek() not in {"|", ")"}:
            parts.append(self.term())
        return "".join(parts)

    def term(self) -> str:
        start = self.pos
        char = self.peek()
        if char in {"^", "$"}:
            self.take()
            self.no_quantifier()
            if "m" in self.flags:
                self.line_anchors = True
                return "(?m:^)" if char == "^" else "(?m:$)"
            return "\\A" if char == "^" else "\\z"
        if char == "\\" and self.peek(1) in {"b", "B"}:
            self.pos += 2
            self.no_quantifier()
            return "\\" + self.text[self.pos - 1]
        if char == "(" and self.peek(1) == "?" and (self.peek(2) in {"=", "!"} or
                                                    (self.peek(2) == "<" and self.peek(3) in {"=", "!"})):
            behind = self.peek(2) == "<"
            raise self.unsupported(("lookbehind" if behind else "lookahead") + " `" +
                                   self.text[start:start + (4 if behind else 3)] + "`", start)
        groups, hidden = self.group_count, self.hidden
        atom = self.atom()
        quantifier = self.quantifier()
        if quantifier and self.group_count > groups:
            self.hidden += 1
            inner = [f"g{number}" for number in range(groups + 1, self.group_count + 1)]
            inner += [f"h{number}" for number in range(hidden + 1, self.hidden)]
            minimum = int(quantifier.strip("{}?").split(",")[0]) if quantifier[0] == "{" else int(quantifier[0] == "+")
            self.resets.append(Reset(f"h{self.hidden}", minimum, tuple(inner)))
            atom = f"(?P<h{self.hidden}>{atom})"
        return atom + quantifier

    def no_quantifier(self) -> None:
        if self.peek() in {"*", "+", "?"} or (self.peek() == "{" and self.braced_quantifier() is not None):
            raise self.error("Nothing to repeat")

    def braced_quantifier(self) -> tuple[int, int | None, int] | None:
        """``{n}``, ``{n,}`` or ``{n,m}`` at the position: (low, high, length), else None."""
        text, index = self.text, self.pos + 1
        digits = index
        while index < len(text) and text[index].isascii() and text[index].isdigit():
            index += 1
        if index == digits:
            return None
        low = int(text[digits:index])
        high: int | None = low
        if index < len(text) and text[index] == ",":
            index += 1
            second = index
            while index < len(text) and text[index].isascii() and text[index].isdigit():
                index += 1
            high = int(text[second:index]) if index > second else None
        if index >= len(text) or text[index] != "}":
            return None
        return low, high, index + 1 - self.pos

    def quantifier(self) -> str:
        char = self.peek()
        if char in {"*", "+", "?"}:
            self.take()
            text = char
        elif char == "{" and (braced := self.braced_quantifier()) is not None:
            low, high, length = braced
            self.pos += length
            if high is not None and high < low:
                raise self.error("numbers out of order in {} quantifier")
            if low > MAX_REPEAT or (high is not None and high > MAX_REPEAT):
                raise MvuError(Code.LIMIT, f"regex /{self.source}/{self.flags}: a repetition count above "
                               f"{MAX_REPEAT}", limit=MAX_REPEAT, kind="regex_repeat")
            text = f"{{{low}}}" if high == low else f"{{{low},}}" if high is None else f"{{{low},{high}}}"
        else:
            return ""
        if self.peek() == "?":
            self.take()
            text += "?"
        return text

    def atom(self) -> str:
        start = self.pos
        char = self.take()
        if char == "(":
            return self.group(start)
        if char == ".":
            if "s" in self.flags:
                return self.emit_set(_ClassSet(), negated=True)
            return self.emit_set(_ClassSet([(point, point) for point in LINE_TERMINATORS]), negated=True)
        if char == "[":
            return self.char_class()
        if char == "\\":
            return self.atom_escape(start)
        if char in {"*", "+", "?"}:
            raise self.error("Nothing to repeat")
        if char == "{":
            if self.unicode or self.braced_quantifier_at(start) is not None:
                raise self.error("Nothing to repeat" if not self.unicode else "Lone quantifier brackets")
        elif char in {"}", "]"} and self.unicode:
            raise self.error("Lone quantifier brackets")
        return self.literal(ord(char))

    def braced_quantifier_at(self, start: int) -> tuple[int, int | None, int] | None:
        saved, self.pos = self.pos, start
        try:
            return self.braced_quantifier()
        finally:
            self.pos = saved

    def group(self, start: int) -> str:
        capture = True
        if self.peek() == "?":
            if self.peek(1) == ":":
                self.pos += 2
                capture = False
            elif self.peek(1) == "<":
                end = self.text.find(">", self.pos)
                name = self.text[self.pos + 2:end] if end > 0 else ""
                if not _valid_group_name(name):
                    raise self.error("Invalid capture group name")
                self.pos = end + 1
            else:
                raise self.error("Invalid group")
        if capture:
            self.group_count += 1
            number = self.group_count
        body = self.disjunction()
        if self.take() != ")":
            raise self.error("Unterminated group")
        return f"(?P<g{number}>{body})" if capture else f"(?:{body})"

    def literal(self, point: int) -> str:
        return self.emit_set(_ClassSet([(point, point)]), negated=False)

    def emit_set(self, chars: _ClassSet, *, negated: bool) -> str:
        ranges = _fold(chars.ranges) if self.fold else _normalise(chars.ranges)
        members = [_contains(ranges, point) for point in LINE_TERMINATORS]
        if chars.properties or (any(members) and not all(members)):
            self.tells_lines_apart = True
        if self.line_form:
            return self.line_form_set(ranges, chars.properties, negated=negated)
        body = _class_body(ranges) + "".join(chars.properties)
        if not body:
            return "(?s:.)" if negated else "[^\\x{0}-\\x{10FFFF}]"
        if not negated and len(ranges) == 1 and ranges[0][0] == ranges[0][1] and not chars.properties:
            return _point(ranges[0][0])
        return f"[{'^' if negated else ''}{body}]"

    def line_form_set(self, ranges: Ranges, properties: list[str], *, negated: bool) -> str:
        """A set for the line form: other characters as a class, line terminators as triples."""
        if properties:
            raise MvuError(Code.UNSUPPORTED, f"regex /{self.source}/{self.flags}: `^`/`$` with the m flag and a "
                           "Unicode property on a text holding \\r, U+2028 or U+2029", feature="multiline anchors")
        terminators = [point for point in LINE_TERMINATORS if _contains(ranges, point) != negated]
        special = [(point, point) for point in LINE_TERMINATORS] + _MARKER_RANGE
        plain = _complement(_normalise(ranges + special), self.top) if negated else _subtract(ranges, special)
        options = [f"[{_class_body(plain)}]"] if plain else []
        if terminators:
            markers = "".join(_point(ord(LINE_MARKERS[chr(point)])) for point in terminators)
            options.append(f"\\x{{A}}[{markers}]\\x{{A}}")
        return f"(?:{'|'.join(options)})" if options else "[^\\x{0}-\\x{10FFFF}]"

    # -- escapes --

    def atom_escape(self, start: int) -> str:
        char = self.peek()
        if not char:
            raise self.error("\\ at end of pattern")
        if char.isascii() and char.isdigit() and char != "0":
            return self.decimal_escape(start)
        if char == "k" and (self.unicode or self.names):
            self.take()
            if self.peek() != "<" or self.text.find(">", self.pos) < 0:
                raise self.error("Invalid named reference")
            name = self.text[self.pos + 1:self.text.find(">", self.pos)]
            if name not in self.names:
                raise self.error("Invalid named capture referenced")
            raise self.unsupported(f"backreference `\\k<{name}>`", start)
        chars, negated = self.class_escape(in_class=False)
        return self.emit_set(chars, negated=negated)

    def decimal_escape(self, start: int) -> str:
        end = self.pos
        while end < len(self.text) and self.text[end].isascii() and self.text[end].isdigit():
            end += 1
        number = int(self.text[self.pos:end])
        if number <= self.groups:
            raise self.unsupported(f"backreference `\\{number}`", start)
        if self.unicode:
            raise self.error("Invalid escape")
        return self.literal(self.legacy_octal())

    def legacy_octal(self) -> int:
        """Annex B's ``\\NNN``: up to three octal digits (at most 0o377); ``\\8`` and ``\\9`` are themselves."""
        first = self.take()
        if first in {"8", "9"}:
            return ord(first)
        value = int(first)
        limit = 2 if first in "0123" else 1
        while limit and self.peek() and self.peek() in "01234567":
            value = value * 8 + int(self.take())
            limit -= 1
        return value

    def class_escape(self, *, in_class: bool) -> tuple[_ClassSet, bool]:
        """The set one escape (after its backslash) stands for, and whether it is negated."""
        char = self.take()
        lower = char.lower()
        if lower in _CLASS_ESCAPES:
            return _ClassSet(list(_CLASS_ESCAPES[lower])), char.isupper()
        if char in {"p", "P"} and self.unicode:
            return _ClassSet(properties=[self.property_escape(char)]), False
        return _ClassSet([(point := self.character_escape(char, in_class=in_class), point)]), False

    def property_escape(self, letter: str) -> str:
        if self.peek() != "{" or self.text.find("}", self.pos) < 0:
            raise self.error("Invalid property name")
        end = self.text.find("}", self.pos)
        body = self.text[self.pos + 1:end]
        self.pos = end + 1
        key, _, value = body.partition("=")
        if value and key in {"General_Category", "gc"}:
            body = value
        elif value and key in {"Script", "sc"} and _SCRIPT_CODES.get(value, value) in _SCRIPTS:
            return f"\\{letter}{{{_SCRIPT_CODES.get(value, value)}}}"
        elif value:
            raise MvuError(Code.UNSUPPORTED, f"regex /{self.source}/{self.flags}: property `\\{letter}{{{body}}}` "
                           "is not supported", feature=f"\\{letter}{{{body}}}")
        name = _CATEGORY_NAMES.get(body, body)
        if name == "Any":
            return f"\\{letter}{{Any}}"
        if name not in _CATEGORY_NAMES.values():
            raise MvuError(Code.UNSUPPORTED, f"regex /{self.source}/{self.flags}: property `\\{letter}{{{body}}}` "
                           "is not supported", feature=f"\\{letter}{{{body}}}")
        return f"\\{letter}{{{name}}}"

    def character_escape(self, char: str, *, in_class: bool) -> int:
        if char in _CONTROL:
            return _CONTROL[char]
        if char == "0" and not (self.peek().isascii() and self.peek().isdigit()):
            return 0
        if char == "c":
            letter = self.peek()
            if letter.isascii() and (letter.isalpha() or (in_class and not self.unicode and
                                                          (letter.isdigit() or letter == "_"))):
                self.take()
                return ord(letter) % 32
            if self.unicode:
                raise self.error("Invalid unicode escape")
            self.pos -= 1  # Annex B: `\c` without a letter is a backslash; `c` is read next
            return ord("\\")
        if char == "x":
            digits = self.text[self.pos:self.pos + 2]
            if len(digits) == 2 and set(digits) <= _HEX:
                self.pos += 2
                return int(digits, 16)
            if self.unicode:
                raise self.error("Invalid escape")
            return ord("x")
        if char == "u":
            return self.unicode_escape()
        if char.isascii() and char.isdigit():
            if self.unicode:
                raise self.error("Invalid class escape" if in_class else "Invalid decimal escape")
            self.pos -= 1
            return self.legacy_octal()
        if in_class and char == "b":
            return 0x08
        if self.unicode:
            if char in _SYNTAX_CHARS or (in_class and char == "-"):
                return ord(char)
            raise self.error("Invalid escape")
        if char == "k" and self.names:
            raise self.error("Invalid named reference")
        return ord(char)

    def unicode_escape(self) -> int:
        if self.unicode and self.peek() == "{":
            end = self.text.find("}", self.pos)
            digits = self.text[self.pos + 1:end] if end > 0 else ""
            if not digits or not set(digits) <= _HEX or int(digits, 16) > 0x10FFFF:
                raise self.error("Invalid Unicode escape")
            self.pos = end + 1
            return int(digits, 16)
        digits = self.text[self.pos:self.pos + 4]
        if len(digits) != 4 or not set(digits) <= _HEX:
            if self.unicode:
                raise self.error("Invalid Unicode escape")
            return ord("u")
        self.pos += 4
        point = int(digits, 16)
        trail = self.text[self.pos + 2:self.pos + 6]
        if (self.unicode and 0xD800 <= point <= 0xDBFF and self.text.startswith("\\u", self.pos)
                and len(trail) == 4 and set(trail) <= _HEX and 0xDC00 <= int(trail, 16) <= 0xDFFF):
            self.pos += 6
            return 0x10000 + ((point - 0xD800) << 10) + (int(trail, 16) - 0xDC00)
        return point

    # -- classes --

    def char_class(self) -> str:
        negated = self.peek() == "^"
        if negated:
            self.take()
        chars = _ClassSet()
        while True:
            if self.pos >= len(self.text):
                raise self.error("Unterminated character class")
            if self.peek() == "]":
                self.take()
                break
            low_set, low = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in {"]", ""}:
                self.take()
                high_set, high = self.class_atom()
                if low is None or high is None:
                    if self.unicode:
                        raise self.error("Invalid character class")
                    chars.ranges.append((0x2D, 0x2D))  # Annex B: `[\d-z]` is \d, '-' and 'z'
                elif high < low:
                    raise self.error("Range out of order in character class")
                else:
                    chars.ranges.append((low, high))
                    continue
                self.merge(chars, high_set)
            self.merge(chars, low_set)
        return self.emit_set(chars, negated=negated)

    def merge(self, into: _ClassSet, chars: _ClassSet) -> None:
        into.ranges.extend(chars.ranges)
        into.properties.extend(chars.properties)

    def class_atom(self) -> tuple[_ClassSet, int | None]:
        """One class member: its set, and its code point when it is a single character."""
        char = self.take()
        if char != "\\":
            return _ClassSet([(ord(char), ord(char))]), ord(char)
        if not self.peek():
            raise self.error("\\ at end of pattern")
        if self.peek() == "c" and not self.unicode and not (self.peek(1).isascii() and (
                self.peek(1).isalnum() or self.peek(1) == "_")):
            return _ClassSet([(0x5C, 0x5C)]), 0x5C  # `[\c]` is a backslash (the `c` comes next)
        chars, negated = self.class_escape(in_class=True)
        if negated:
            chars = _ClassSet(_complement(chars.ranges, self.top))
        if chars.properties:
            return chars, None
        single = len(chars.ranges) == 1 and chars.ranges[0][0] == chars.ranges[0][1]
        return chars, chars.ranges[0][0] if single else None


def _valid_group_name(name: str) -> bool:
    return bool(name) and (name[0].isidentifier() or name[0] == "$") and all(
        (char.isidentifier() or ("a" + char).isidentifier() or char == "$") for char in name)
