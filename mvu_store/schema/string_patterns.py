"""String.prototype's pattern methods: ``match``, ``matchAll``, ``search``, ``replace``,
``replaceAll`` and ``split``, with a string or a ``RegExp`` (``regex.py``) as the pattern.

They follow the ECMAScript algorithms (``RegExp.prototype[@@match]`` and its kin): global loops
start at 0, step over empty matches by a code unit (a code point with ``u``) and leave
``lastIndex`` at 0; replacement templates read ``$$ $& $` $' $n $nn $<name>``; a function
replacer gets (match, captures…, offset, string[, groups]); offsets count UTF-16 code units.
Every loop runs over RE2 searches that pay the shared budget for what they scan.
"""

from __future__ import annotations

from typing import Any

from mvu_store.js.values import UNDEFINED, Budget, JsCallable, arg, fail, text_limit, to_number, to_string
from mvu_store.schema.builtins import call_fn
from mvu_store.schema.regex import (
    Program,
    Regex,
    Spans,
    Subject,
    compile_program,
    compile_regex,
    groups_of,
    join_units,
    match_array,
    search,
    to_length,
)
from mvu_store.schema.regex_syntax import to_units


def _regex_of(budget: Budget, pattern: Any, flags: str) -> Regex:
    """The pattern itself when it is a RegExp, else ``new RegExp(pattern, flags)`` (RegExpCreate)."""
    if isinstance(pattern, Regex):
        return pattern
    return compile_regex("" if pattern is UNDEFINED else to_string(pattern), flags, budget)


def _all_matches(budget: Budget, program: Program, subject: Subject, start: int) -> list[Spans]:
    """Every match of a global loop from ``start``: empty matches step one code unit (or point)."""
    found: list[Spans] = []
    position = start
    sticky = "y" in program.flags
    while True:
        spans = search(subject, position, budget, sticky=sticky)
        if spans is None:
            return found
        found.append(spans)
        low, high = spans[0]  # type: ignore[misc]
        position = subject.advance(high) if low == high else high


def match(budget: Budget, text: str, args: list[Any]) -> Any:
    regex = _regex_of(budget, arg(args, 0), "")
    program = regex.program
    if "g" not in program.flags:
        subject, spans = regex.exec(budget, text)
        return None if spans is None else match_array(program, subject, spans)
    subject = Subject(text, program, budget)
    found = _all_matches(budget, program, subject, 0)
    regex.write_last_index(budget, 0)
    return [subject.piece(*spans[0]) for spans in found] or None  # type: ignore[misc]


def match_all(budget: Budget, text: str, args: list[Any]) -> list[Any]:
    pattern = arg(args, 0)
    if isinstance(pattern, Regex) and "g" not in pattern.program.flags:
        raise fail("String.prototype.matchAll called with a non-global RegExp argument")
    regex = _regex_of(budget, pattern, "g")
    program = regex.program
    subject = Subject(text, program, budget)
    start = to_length(regex.read_last_index(budget)) if isinstance(pattern, Regex) else 0
    return [match_array(program, subject, spans) for spans in _all_matches(budget, program, subject, start)]


def search_in(budget: Budget, text: str, args: list[Any]) -> int:
    program = _regex_of(budget, arg(args, 0), "").program
    spans = search(Subject(text, program, budget), 0, budget, sticky="y" in program.flags)
    return -1 if spans is None else spans[0][0]  # type: ignore[index]


# -- replace ---------------------------------------------------------------------------------


def substitution(template: str, matched: str, units: str, position: int, captures: list[Any], groups: Any) -> str:
    """GetSubstitution: ``template`` with its ``$`` references filled in."""
    if "$" not in template:
        return template
    out: list[str] = []
    index = 0
    tail = position + len(to_units(matched))
    while index < len(template):
        dollar = template.find("$", index)
        if dollar < 0 or dollar + 1 >= len(template):
            out.append(template[index:])
            break
        out.append(template[index:dollar])
        kind = template[dollar + 1]
        index = dollar + 2
        if kind == "$":
            out.append("$")
        elif kind == "&":
            out.append(matched)
        elif kind == "`":
            out.append(join_units(units[:position]))
        elif kind == "'":
            out.append(join_units(units[tail:]))
        elif kind.isascii() and kind.isdigit():
            digits = template[dollar + 1:dollar + 3]
            digits = digits if len(digits) == 2 and digits.isascii() and digits.isdigit() else kind
            if int(digits) > len(captures) and len(digits) == 2:
                digits = kind
            number = int(digits)
            if 1 <= number <= len(captures):
                capture = captures[number - 1]
                out.append("" if capture is UNDEFINED else capture)
            else:
                out.append("$" + digits)
            index = dollar + 1 + len(digits)
        elif kind == "<" and groups is not UNDEFINED and template.find(">", index) >= 0:
            close = template.find(">", index)
            capture = groups.get(template[index:close], UNDEFINED)
            out.append("" if capture is UNDEFINED else to_string(capture))
            index = close + 1
        else:
            out.append("$" + kind)
    return "".join(out)


def _replacement(budget: Budget, replacer: Any, matched: str, units: str, position: int,
                 captures: list[Any], groups: Any, text: str) -> str:
    if isinstance(replacer, JsCallable):
        extra = [] if groups is UNDEFINED else [groups]
        return to_string(call_fn(budget, replacer, matched, *captures, position, text, *extra))
    return substitution(replacer, matched, units, position, captures, groups)


def _assemble(budget: Budget, units: str, pieces: list[tuple[int, int, str]]) -> str:
    """The text with each (start, end) span of code units replaced, in order."""
    out: list[str] = []
    cursor = 0
    for start, end, replacement in pieces:
        if start >= cursor:
            out.append(units[cursor:start])
            out.append(to_units(replacement))
            cursor = end
    out.append(units[cursor:])
    result = "".join(out)
    budget.charge(1 + len(result) // 16)
    return join_units(text_limit(result))


def replace(every: bool) -> Any:
    """``replace`` (``every`` False) or ``replaceAll``."""
    def method(budget: Budget, text: str, args: list[Any]) -> str:
        pattern, replacer = arg(args, 0), arg(args, 1)
        if not isinstance(replacer, JsCallable):
            replacer = to_string(replacer)
        if isinstance(pattern, Regex):
            return _replace_regex(budget, text, pattern, replacer, every=every)
        return _replace_text(budget, text, to_string(pattern), replacer, every=every)

    return method


def _replace_regex(budget: Budget, text: str, regex: Regex, replacer: Any, *, every: bool) -> str:
    program = regex.program
    if every and "g" not in program.flags:
        raise fail("replaceAll must be called with a global RegExp")
    if "g" in program.flags:
        subject = Subject(text, program, budget)
        found = _all_matches(budget, program, subject, 0)
        regex.write_last_index(budget, 0)
    else:
        subject, spans = regex.exec(budget, text)
        found = [] if spans is None else [spans]
    pieces = []
    for spans in found:
        items = [UNDEFINED if span is None else subject.piece(*span) for span in spans]
        start, end = spans[0]  # type: ignore[misc]
        replacement = _replacement(budget, replacer, items[0], subject.units, start, items[1:],
                                   groups_of(program, items), text)
        pieces.append((start, end, replacement))
    return _assemble(budget, subject.units, pieces)


def _replace_text(budget: Budget, text: str, pattern: str, replacer: Any, *, every: bool) -> str:
    units, needle = to_units(text), to_units(pattern)
    budget.charge(1 + len(units) // 16)
    positions: list[int] = []
    position = units.find(needle)
    while position >= 0:
        positions.append(position)
        if not every:
            break
        budget.charge(1)
        position = units.find(needle, position + max(1, len(needle))) if position < len(units) else -1
    pieces = [(start, start + len(needle), _replacement(budget, replacer, pattern, units, start, [], UNDEFINED, text))
              for start in positions]
    return _assemble(budget, units, pieces)


# -- split -----------------------------------------------------------------------------------


def split(budget: Budget, text: str, args: list[Any]) -> list[Any]:
    separator, limit_arg = arg(args, 0), arg(args, 1)
    limit = 2**32 - 1 if limit_arg is UNDEFINED else to_uint32(limit_arg)
    if isinstance(separator, Regex):
        return _split_regex(budget, text, separator.program, limit)
    budget.charge(1 + len(text) // 16)
    if limit == 0:
        return []
    if separator is UNDEFINED:
        return [text]
    units, needle = to_units(text), to_units(to_string(separator))
    parts = list(units) if not needle else units.split(needle)
    return [join_units(part) for part in parts[:limit]]


def to_uint32(value: Any) -> int:
    number = to_number(value, explicit=True)
    if number != number or number in (float("inf"), float("-inf")):
        return 0
    return int(number) % 2**32


def _split_regex(budget: Budget, text: str, program: Program, limit: int) -> list[Any]:
    """RegExp.prototype[@@split]: the splitter's sticky attempts at each position, found here by
    one leftmost search from each position (the same match where the first attempt succeeds)."""
    if limit == 0:
        return []
    program = compile_program(program.source, program.flags.replace("y", ""), budget)
    subject = Subject(text, program, budget)
    size = subject.length
    if size == 0:
        return [] if search(subject, 0, budget, sticky=True) is not None else [text]
    parts: list[Any] = []
    previous = position = 0
    while position < size:
        spans = search(subject, position, budget, sticky=False)
        if spans is None or spans[0][0] >= size:  # type: ignore[index]
            break
        start, end = spans[0]  # type: ignore[misc]
        end = min(end, size)
        if end == previous:
            position = subject.advance(start)
            continue
        parts.append(subject.piece(previous, start))
        if len(parts) == limit:
            return parts
        previous = end
        for span in spans[1:]:
            parts.append(UNDEFINED if span is None else subject.piece(*span))
            if len(parts) == limit:
                return parts
        position = previous
    parts.append(subject.piece(previous, size))
    return parts
