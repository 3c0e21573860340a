"""JavaScript's ``RegExp`` on RE2, a linear-time engine: a card's pattern cannot backtrack.

``regex_syntax`` translates the pattern; this module runs it with JavaScript's semantics:

- The subject is what JavaScript sees, UTF-16 code units. Without ``u`` every code unit is one
  RE2 character: an astral character is fed as its two surrogates (each a 3-byte sequence RE2
  reads as one rune), so ``.`` takes half of it as JavaScript does. With ``u`` code points are
  characters; a lone surrogate is one character too (JavaScript reads it so), and surrogate
  halves the interpreter holds apart are joined first. Every index a result reports
  (``index``, ``lastIndex``, offsets given to replacers, ``search``) counts code units.
- ``lastIndex``, ``g`` and ``y`` live here: RE2 searches from a byte offset (``\\b`` and ``^``
  still see what precedes it) or anchors there (sticky).
- With ``m``, RE2's ``^``/``$`` know only ``\\n``: a subject holding ``\\r``, U+2028 or U+2029
  is fed with those as ``\\n`` when no atom of the pattern tells line terminators apart, and to
  the pattern's line form otherwise (``regex_syntax``), whose triples count as one code unit.

Every compile pays the pattern's length and program size; every search pays a fixed cost plus
the bytes it scans times a factor of the program's size, from the shared budget, cached or not.
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from re2 import Options, _re2

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    PrimitiveObject,
    arg,
    fail,
    text_limit,
    to_number,
    to_string,
)
from mvu_store.schema.regex_syntax import FLAGS, LINE_MARKERS, Translation, check_flags, to_units, translate

MAX_PATTERN_CHARS = 4096
MAX_GROUP_DEPTH = 16
MAX_PROGRAM = 20_000
"""RE2 instructions one pattern may compile to (a counted repetition multiplies its body)."""
SEARCH_COST = 8
"""Fuel of one search besides the bytes it scans: building its result costs about as much as
eight interpreter steps, so a global loop over many small matches pays its Python work."""
_CACHE_SIZE = 256
_OPTIONS = Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 8 << 20
_UNANCHORED = _re2.RE2.Anchor.UNANCHORED
_ANCHORED = _re2.RE2.Anchor.ANCHOR_START
_OTHER_LINE_ENDS = ("\r", "\u2028", "\u2029")
_AS_NEWLINE = str.maketrans(dict.fromkeys(_OTHER_LINE_ENDS, "\n"))
_TRIPLES = str.maketrans({end: f"\n{marker}\n" for end, marker in LINE_MARKERS.items()})
_MARKER_BYTES = frozenset(marker.encode() for marker in LINE_MARKERS.values())
_FLAG_NAMES = {"hasIndices": "d", "global": "g", "ignoreCase": "i", "multiline": "m", "dotAll": "s",
               "unicode": "u", "unicodeSets": "v", "sticky": "y"}


@dataclass(frozen=True, slots=True)
class Program:
    """A translated and compiled pattern, shared by every ``RegExp`` with its source and flags."""

    source: str
    flags: str
    translation: Translation
    engine: Any  # re2._re2.RE2
    size: int
    slots: tuple[int, ...]  # RE2's group index of the match and of each JavaScript capture
    resets: tuple[tuple[int, int, tuple[int, ...]], ...]  # Reset by index, outermost first

    @property
    def unicode(self) -> bool:
        return "u" in self.flags


_programs: OrderedDict[tuple[str, str, bool], Program] = OrderedDict()
_shared = threading.Lock()
"""Guards the process-wide tables here (programs, match fields, per-run lastIndex maps):
validations on other threads compile and match too."""


def compile_program(source: str, flags: str, budget: Budget, *, line_form: bool = False) -> Program:
    """The program of ``/source/flags`` (or its line form, see ``regex_syntax``): SyntaxError,
    ``MVU_UNSUPPORTED`` or ``MVU_LIMIT`` when none."""
    if len(source) > MAX_PATTERN_CHARS:
        raise MvuError(Code.LIMIT, f"regex is longer than {MAX_PATTERN_CHARS} characters",
                       limit=MAX_PATTERN_CHARS, kind="regex_length")
    budget.charge(1 + len(source))
    key = (source, flags, line_form)
    program = _programs.get(key)
    if program is None:
        check_flags(flags)
        _check_depth(source, flags)
        translation = translate(source, flags, line_form=line_form)
        engine = _re2.RE2(translation.re2.encode("utf-8", "surrogatepass"), _OPTIONS)
        if not engine.ok() or engine.ProgramSize() > MAX_PROGRAM:
            raise _refusal(source, flags, engine)
        index = {name.decode(): number for name, number in engine.NamedCapturingGroups()}
        slots = (0, *(index[f"g{number}"] for number in range(1, translation.groups + 1)))
        resets = tuple((index[reset.hidden], reset.minimum, tuple(index[name] for name in reset.inner))
                       for reset in reversed(translation.resets))
        program = Program(source, flags, translation, engine, engine.ProgramSize(), slots, resets)
        with _shared:
            _programs[key] = program
            if len(_programs) > _CACHE_SIZE:
                _programs.popitem(last=False)
    budget.charge(program.size)  # the same whether the program was cached or not
    return program


def _refusal(source: str, flags: str, engine: Any) -> MvuError:
    message = engine.error() if not engine.ok() else "program too large"
    message = message.decode() if isinstance(message, bytes) else str(message)
    if "too large" in message or "repetition" in message or engine.ok():
        return MvuError(Code.LIMIT, f"regex /{source}/{flags} compiles to more than {MAX_PROGRAM} instructions",
                        limit=MAX_PROGRAM, kind="regex_states")
    return MvuError(Code.UNSUPPORTED, f"regex /{source}/{flags}: {message}", feature="regex")


def _check_depth(source: str, flags: str) -> None:
    depth, index = 0, 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 1
        elif char == "(":
            depth += 1
            if depth > MAX_GROUP_DEPTH:
                raise MvuError(Code.LIMIT, f"regex /{source}/{flags}: groups nest deeper than {MAX_GROUP_DEPTH}",
                               limit=MAX_GROUP_DEPTH, kind="regex_depth")
        elif char == ")":
            depth -= 1
        index += 1


# -- the subject ---------------------------------------------------------------------------------


def join_units(units: str) -> str:
    """A run of code units as the interpreter holds text: surrogate pairs joined, lone ones kept."""
    if units.isascii():
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


class Subject:
    """A string prepared for one program: its code units, the bytes RE2 reads and the map between."""

    __slots__ = ("ascii", "data", "feed", "length", "line_form", "mark", "program", "text", "unicode", "units")

    def __init__(self, text: str, program: Program, budget: Budget) -> None:
        budget.charge(1 + len(text) // 16)
        self.text = text
        self.units = to_units(text)
        self.length = len(self.units)
        self.unicode = program.unicode
        self.line_form = False
        self.feed: dict[int, str] | None = None  # how line terminators are written for RE2, if rewritten
        fed = self.units
        if program.translation.line_anchors and any(end in fed for end in _OTHER_LINE_ENDS):
            if program.translation.tells_lines_apart:
                if any(marker in fed for marker in LINE_MARKERS.values()):
                    raise MvuError(Code.UNSUPPORTED, f"regex /{program.source}/{program.flags}: `^`/`$` with the m "
                                   "flag on a text holding both U+FDD0…U+FDD3 and \\r, U+2028 or U+2029",
                                   feature="multiline anchors")
                program = compile_program(program.source, program.flags, budget, line_form=True)
                self.line_form = True
                self.feed = _TRIPLES
            else:  # nothing in the pattern tells them apart: one unit for one unit
                self.feed = _AS_NEWLINE
            fed = fed.translate(self.feed)
        self.program = program
        self.ascii = fed.isascii()
        self.data = (join_units(fed) if self.unicode else fed).encode("utf-8", "surrogatepass")
        self.mark = (0, 0)  # a known (unit, byte) pair: walks forward convert only what they pass

    def byte_of(self, unit: int) -> int:
        if self.ascii:
            return unit
        if unit == self.mark[0]:
            return self.mark[1]  # a global loop's next search starts where the last match ended
        if self.unicode and 0 < unit < self.length and 0xDC00 <= ord(self.units[unit]) <= 0xDFFF \
                and 0xD800 <= ord(self.units[unit - 1]) <= 0xDBFF:
            unit -= 1  # inside a pair: JavaScript starts at the pair (as V8 does)
        from_unit, from_byte = self.mark if self.mark[0] <= unit else (0, 0)
        segment = self.units[from_unit:unit]
        if self.feed is not None:
            segment = segment.translate(self.feed)
        byte = from_byte + len((join_units(segment) if self.unicode else segment).encode("utf-8", "surrogatepass"))
        self.mark = (unit, byte)
        return byte

    def unit_of(self, byte: int, base: tuple[int, int] | None = None) -> int:
        if self.ascii:
            return byte
        from_unit, from_byte = base or (self.mark if self.mark[1] <= byte else (0, 0))
        piece = self.data[from_byte:byte].decode("utf-8", "surrogatepass")
        units = len(piece.encode("utf-16-le", "surrogatepass")) // 2 if not piece.isascii() else len(piece)
        if self.line_form:
            units -= 2 * sum(piece.count(marker) for marker in LINE_MARKERS.values())  # a triple is one unit
        unit = from_unit + units
        if base is None:
            self.mark = (unit, byte)
        return unit

    def inside_line_end(self, byte: int) -> bool:
        """Whether ``byte`` is inside a line terminator's triple (before or after its marker)."""
        data = self.data
        return self.line_form and (data[byte:byte + 3] in _MARKER_BYTES or data[max(0, byte - 3):byte] in _MARKER_BYTES)

    def next_position(self, byte: int) -> int:
        """The first byte after ``byte`` where a JavaScript position is."""
        byte += 1
        while byte < len(self.data) and (0x80 <= self.data[byte] <= 0xBF or self.inside_line_end(byte)):
            byte += 1
        return byte

    def piece(self, start: int, end: int) -> str:
        return join_units(self.units[start:end])

    def advance(self, unit: int) -> int:
        """AdvanceStringIndex: one code unit, or a whole pair with ``u``."""
        if self.unicode and unit + 1 < self.length and 0xD800 <= ord(self.units[unit]) <= 0xDBFF \
                and 0xDC00 <= ord(self.units[unit + 1]) <= 0xDFFF:
            return unit + 2
        return unit + 1


Spans = list[tuple[int, int] | None]


def search(subject: Subject, start: int, budget: Budget, *, sticky: bool) -> Spans | None:
    """The leftmost match at or after code unit ``start`` (exactly at it when sticky), in code units."""
    if start > subject.length:
        return None
    program = subject.program
    data = subject.data
    begin = subject.byte_of(start)
    while True:
        spans = program.engine.Match(_ANCHORED if sticky else _UNANCHORED, data, begin, len(data))
        whole = spans[0]
        scanned = (whole[1] if whole[0] >= 0 else len(data)) - begin
        budget.charge(SEARCH_COST + scanned * (1 + program.size // 16))
        if whole[0] < 0:
            return None
        if whole[0] == len(data) or not (0x80 <= data[whole[0]] <= 0xBF or subject.inside_line_end(whole[0])):
            break
        # RE2's `\B` holds between the bytes of one character, its line anchors inside a line
        # terminator's triple: no JavaScript position is there, and every consuming atom takes
        # whole characters and triples, so only an empty match can be there.
        if sticky:
            return None
        begin = subject.next_position(whole[0])
    if program.resets:
        spans = _last_iteration_only(program, list(spans))
    first = subject.unit_of(whole[0])
    base = (first, whole[0])
    last = subject.unit_of(whole[1], base)
    subject.mark = (last, whole[1])  # a global loop goes on from here
    found: Spans = [(first, last)]
    for slot in program.slots[1:]:
        low, high = spans[slot]
        found.append(None if low < 0 else (subject.unit_of(low, base), subject.unit_of(high, base)))
    return found


def _last_iteration_only(program: Program, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Captures as JavaScript reports them: a repeated atom's captures from its last iteration
    only, and none from an empty iteration beyond a zero minimum (JavaScript rejects those)."""
    unset = (-1, -1)
    for hidden, minimum, inner in program.resets:
        low, high = spans[hidden]
        for group in inner:
            if low < 0 or (low == high and minimum == 0) or spans[group][0] < low:
                spans[group] = unset
    return spans


# -- match arrays --------------------------------------------------------------------------------

# `m.index`, `m.input`, `m.groups`, `m.indices` of a match array: the interpreter's arrays are
# plain lists, so these live beside them, keyed by identity (the entry holds the list, so the id
# cannot be reused while it is here). When the table grows past its bound, the entries of arrays
# nothing else holds any more (none can read them again) go; only if more than that many match
# arrays are alive at once do the oldest lose their fields.
_MATCH_FIELDS_KEPT = 4096
_match_fields: OrderedDict[int, tuple[list[Any], dict[str, Any]]] = OrderedDict()
MATCH_FIELDS = frozenset({"index", "input", "groups", "indices"})


def _keep_fields(items: list[Any], fields: dict[str, Any]) -> None:
    with _shared:
        _match_fields[id(items)] = (items, fields)
        if len(_match_fields) > _MATCH_FIELDS_KEPT:
            # getrefcount counts its argument and the table's entry: 2 means unreachable elsewhere
            for key in [key for key, entry in _match_fields.items() if sys.getrefcount(entry[0]) <= 2]:
                del _match_fields[key]
            while len(_match_fields) > _MATCH_FIELDS_KEPT:
                _match_fields.popitem(last=False)


def match_field(items: list[Any], name: str) -> Any:
    """``items.name`` for a match array's own field, or None when ``items`` is no match array."""
    entry = _match_fields.get(id(items))
    if entry is None or entry[0] is not items:
        return None
    return entry[1].get(name, UNDEFINED)


def match_array(program: Program, subject: Subject, spans: Spans) -> list[Any]:
    """What ``exec`` returns: the match and its captures, with ``index``, ``input`` and ``groups``."""
    items: list[Any] = [UNDEFINED if span is None else subject.piece(*span) for span in spans]
    names = program.translation.names
    groups: Any = {name: items[number] for name, number in names.items()} if names else UNDEFINED
    assert spans[0] is not None
    fields = {"index": spans[0][0], "input": subject.text, "groups": groups}
    if "d" in program.flags:
        indices: list[Any] = [UNDEFINED if span is None else [span[0], span[1]] for span in spans]
        _keep_fields(indices, {"groups": {name: indices[number] for name, number in names.items()}
                               if names else UNDEFINED})
        fields["indices"] = indices
    _keep_fields(items, fields)
    return items


def groups_of(program: Program, items: list[Any]) -> Any:
    names = program.translation.names
    return {name: items[number] for name, number in names.items()} if names else UNDEFINED


# -- RegExp objects ------------------------------------------------------------------------------


def to_length(value: Any) -> int:
    """ECMAScript ToLength, as ``lastIndex`` is read."""
    number = to_number(value, explicit=True)
    if math.isnan(number) or number <= 0:
        return 0
    return int(min(number, 2**53 - 1))


class Regex(PrimitiveObject):
    """A ``RegExp``: a shared program and this object's own ``lastIndex``.

    A regex among the declaration's constants keeps one ``lastIndex`` per validation (in
    ``_per_run``, keyed by the validation's budget), so every validation starts from the
    declaration's own state, as with its other constants (``evaluate`` reads ``re.lastIndex``
    through :meth:`read_last_index`).
    """

    __slots__ = ("_per_run", "last_index", "program")
    type_name = "object"

    def __init__(self, program: Program) -> None:
        self.program = program
        self.last_index: Any = 0
        self._per_run: weakref.WeakKeyDictionary[Budget, Any] | None = None

    # -- lastIndex --

    def read_last_index(self, budget: Budget) -> Any:
        if self._per_run is not None and id(self) in budget.frozen:
            return self._per_run.get(budget, self.last_index)
        return self.last_index

    def write_last_index(self, budget: Budget, value: Any) -> None:
        if id(self) in budget.frozen:
            with _shared:
                if self._per_run is None:  # validations on two threads may come here at once
                    self._per_run = weakref.WeakKeyDictionary()
                self._per_run[budget] = value
        else:
            self.last_index = value

    def set(self, budget: Budget, key: str, value: Any) -> None:
        if key != "lastIndex":
            raise fail(f"cannot set `{key}` of a RegExp")
        self.write_last_index(budget, value)

    # -- matching --

    def exec(self, budget: Budget, text: str, subject: Subject | None = None) -> tuple[Subject, Spans | None]:
        """RegExpBuiltinExec: the match from ``lastIndex`` (``g``/``y``) or 0, updating ``lastIndex``."""
        flags = self.program.flags
        stateful = "g" in flags or "y" in flags
        start = to_length(self.read_last_index(budget)) if stateful else 0
        subject = subject or Subject(text, self.program, budget)
        spans = search(subject, start, budget, sticky="y" in flags)
        if stateful:
            self.write_last_index(budget, 0 if spans is None else spans[0][1])  # type: ignore[index]
        return subject, spans

    def matches(self, text: str, budget: Budget) -> bool:
        """Zod's ``.regex()`` check: ``lastIndex = 0`` then ``test`` (the state is left alone)."""
        subject = Subject(text, self.program, budget)
        return search(subject, 0, budget, sticky="y" in self.program.flags) is not None

    def _exec(self, budget: Budget, args: list[Any]) -> Any:
        subject, spans = self.exec(budget, to_string(arg(args, 0)))
        return None if spans is None else match_array(self.program, subject, spans)

    def _test(self, budget: Budget, args: list[Any]) -> bool:
        return self.exec(budget, to_string(arg(args, 0)))[1] is not None

    # -- the object --

    def get(self, key: str) -> Any:
        if key == "lastIndex":
            return self.last_index
        if key == "source":
            return escaped_source(self.program.source)
        if key == "flags":
            return "".join(flag for flag in FLAGS if flag in self.program.flags)
        if key in _FLAG_NAMES:
            return _FLAG_NAMES[key] in self.program.flags
        if key == "test":
            return Builtin("test", self._test)
        if key == "exec":
            return Builtin("exec", self._exec)
        if key == "toString":
            return Builtin("toString", lambda budget, args: self.text())
        return super().get(key)

    def text(self) -> str:
        return f"/{escaped_source(self.program.source)}/{self.get('flags')}"

    def number(self) -> float:
        return math.nan

    def describe(self) -> str:
        return "RegExp"


def escaped_source(source: str) -> str:
    """EscapeRegExpPattern as V8 writes it: ``/`` outside classes and line terminators escaped."""
    if not source:
        return "(?:)"
    out: list[str] = []
    in_class = escaped = False
    for char in source:
        if escaped:
            out.append({"\n": "n", "\r": "r", "\u2028": "u2028", "\u2029": "u2029"}.get(char, char))
            escaped = False
            continue
        if char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "/" and not in_class:
            out.append("\\")
        out.append({"\n": "\\n", "\r": "\\r", "\u2028": "\\u2028", "\u2029": "\\u2029"}.get(char, char))
    return "".join(out)


def compile_regex(pattern: str, flags: str, budget: Budget) -> Regex:
    """A new ``RegExp`` object for ``/pattern/flags``."""
    return Regex(compile_program(pattern, flags, budget))


def construct(budget: Budget, args: list[Any]) -> Regex:
    """``new RegExp(pattern, flags)`` and ``RegExp(...)``: a string or another RegExp."""
    pattern, flags = arg(args, 0), arg(args, 1)
    if isinstance(pattern, Regex):
        source = pattern.program.source
        flags = pattern.program.flags if flags is UNDEFINED else to_string(flags)
    else:
        source = "" if pattern is UNDEFINED else to_string(pattern)
        flags = "" if flags is UNDEFINED else to_string(flags)
    return compile_regex(text_limit(source), flags, budget)


REGEXP = Builtin("RegExp", construct)
