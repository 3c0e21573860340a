"""Extracting update commands from a reply: ``_.set(...)`` calls and ``<JSONPatch>`` blocks.

This follows MagVarUpdate's extractor (as observed by running it): a command is
``_.name(`` (case-sensitive, no word boundary, no space before ``(``), its arguments up to the
matching ``)``, then a mandatory ``;`` and an optional ``// reason`` that may start on the next
line and runs to the end of its line. Everything is found by linear scans, never by a
backtracking pattern, so adversarial replies cost time proportional to their length.

One deliberate difference: commands inside a closed ``<thinking>``/``<think>`` block are not
extracted (MagVarUpdate applies the model's drafts too; see the compatibility table in docs/compatibility.md).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import json_pointer, utf8
from mvu_store.lang.jsonpatch import PATCH_TAG, PatchOp, find_patch_blocks
from mvu_store.lang.outcomes import (
    ARGUMENTS,
    MAX_OUTCOME_TEXT,
    NO_TERMINATOR,
    THINKING,
    UNCLOSED,
    Noted,
    ReplyNotes,
)
from mvu_store.lang.paths import Path, parse_path
from mvu_store.lang.scanner import find_closes, simple_close

MAX_TEXT_BYTES = 1024 * 1024
MAX_COMMANDS = 1000

ALIASES = {
    "set": "set",
    "add": "add",
    "insert": "insert",
    "assign": "insert",
    "delete": "delete",
    "remove": "delete",
    "unset": "delete",
}
_NAMES = "set|insert|assign|remove|unset|delete|add"
_CALL = re.compile(rf"_\.({_NAMES})\(")
# JavaScript's \s (MagVarUpdate's reason pattern), which also spans the ideographic space that
# Chinese replies put before "//"; Python's \s differs (it has \x1c-\x1f, not \ufeff).
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_REASON = re.compile(f"[{_JS_SPACE}]*//([^\n\r\u2028\u2029]*)")
# Something shaped like a call: "_", ".", a name, "(" with spaces allowed between (possessive,
# so each attempt reads one name and its spaces once), that is not a command (_CALL): the
# lookahead skips the reply's real commands in the pattern engine, not one by one in Python
# (after the "_", so that the engine still looks for that character first).
_POSSIBLE = re.compile(rf"_(?!\.(?:{_NAMES})\()\s*+\.\s*+[A-Za-z_$][\w$]*+\s*+\(")
_THINKING = re.compile(r"<(/?)(thinking|think)>", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Command:
    """One update command, in text order.

    ``type`` is the canonical operation (``set``, ``add``, ``insert``, ``delete`` or ``move``);
    ``name`` is what was written (``assign``, ``unset``, a JSON Patch ``op``...). ``args`` are the
    raw argument strings (for JSON Patch, the translated MagVarUpdate arguments); ``path`` is
    the parsed first argument (for an insert from JSON Patch, the container). ``start``/``end``
    is the source span (a JSON Patch command spans its whole block).
    """

    type: str
    name: str
    args: tuple[str, ...]
    path: Path
    full_match: str
    reason: str
    start: int
    end: int
    source: str = "function"
    patch_index: int | None = None
    """For a JSON Patch operation, its place in the block (``full_match`` is then its own text)."""


def _arity_ok(kind: str, count: int) -> bool:
    if kind == "add":
        return count == 2
    if kind == "delete":
        return count >= 1
    return count >= 2


# One argument with no bracket or backslash in it: plain characters and whole quoted runs.
_PLAIN_ARGUMENT = re.compile(r"""(?:[^,"'`]++|"[^"]*+"|'[^']*+'|`[^`]*+`)*+""")
_NOT_PLAIN = re.compile(r"[()\[\]{}\\]")


def _split_plain(body: str) -> list[str] | None:
    """:func:`split_arguments` for a body without brackets or backslashes; ``None`` if a quote
    is left open (the slow path then lets it swallow the rest, as MagVarUpdate does)."""
    parts: list[str] = []
    position = 0
    while True:
        match = _PLAIN_ARGUMENT.match(body, position)
        assert match is not None  # the pattern matches the empty string
        end = match.end()
        parts.append(body[position:end].strip())
        if end == len(body):
            break
        if body[end] != ",":
            return None
        position = end + 1
    if parts[-1] == "":
        parts.pop()
    return parts


def split_arguments(body: str) -> list[str]:
    """Split on top-level commas (outside quotes and ``()[]{}``); trim; drop a trailing empty."""
    plain = None if _NOT_PLAIN.search(body) else _split_plain(body)
    return _split_scanning(body) if plain is None else plain


def _split_scanning(body: str) -> list[str]:
    """:func:`split_arguments` for any body, one character at a time."""
    parts: list[str] = []
    # MagVarUpdate counts each bracket kind on its own: "(]" is not balanced.
    depth = {"(": 0, "[": 0, "{": 0}
    closer = {")": "(", "]": "[", "}": "{"}
    quote = ""
    start = 0
    for index, char in enumerate(body):
        if char in "\"'`" and (index == 0 or body[index - 1] != "\\"):
            if not quote:
                quote = char
            elif quote == char:
                quote = ""
        elif quote:
            continue
        elif char in depth:
            depth[char] += 1
        elif char in closer:
            depth[closer[char]] -= 1
        elif char == "," and not any(depth.values()):
            parts.append(body[start:index].strip())
            start = index + 1
    parts.append(body[start:].strip())
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def _thinking_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    opened = -1
    for match in _THINKING.finditer(text):
        if not match.group(1):
            if opened == -1:
                opened = match.start()
        elif opened != -1:
            spans.append((opened, match.end()))
            opened = -1
    return spans


def inside_spans(spans: list[tuple[int, int]]) -> Callable[[int], bool]:
    """A test "is this offset inside one of these sorted, disjoint spans?" in O(log n)."""
    starts = [start for start, _ in spans]

    def inside(offset: int) -> bool:
        index = bisect_right(starts, offset) - 1
        return index >= 0 and offset < spans[index][1]

    return inside


def _too_many() -> MvuError:
    return MvuError(Code.LIMIT, f"reply has more than {MAX_COMMANDS} commands", limit=MAX_COMMANDS, kind="commands")


def _line_end(text: str, start: int) -> int:
    """Where an unclosed call is shown to end: its line's end, at most a shown text away."""
    limit = min(len(text), start + MAX_OUTCOME_TEXT)
    found = text.find("\n", start, limit)
    return limit if found == -1 else found


def _possible_end(text: str, start: int) -> int:
    """Where a near-miss is shown to end: its first ``;`` (a real command may follow on its
    line), else where an unclosed call would."""
    line_end = _line_end(text, start)
    semicolon = text.find(";", start, line_end)
    return line_end if semicolon == -1 else semicolon + 1


def _function_commands(text: str, hidden: Callable[[int], bool], notes: Noted | None) -> list[Command]:
    # A call needs a ')' after its '(': none can start after the text's last ')'.
    end_of_calls = max(text.rfind(")"), 0)
    # The track scan runs once, from the first call that simple_close cannot settle; later
    # calls then take their close from it (it has them all, at no extra cost).
    closes: dict[int, int] | None = None
    commands: list[Command] = []
    resume = 0
    # Accounting (notes) sees the calls past the last ')' too: they are all unclosed.
    for match in _CALL.finditer(text, 0, len(text) if notes is not None else end_of_calls):
        start, open_at, name = match.start(), match.end() - 1, match.group(1)
        if start < resume:
            continue
        close_at = simple_close(text, open_at) if closes is None else None
        if close_at is None:
            if closes is None:
                # Only ints are kept for the scan, not a match object per call.
                closes = find_closes(text, [m.end() - 1 for m in _CALL.finditer(text, start, end_of_calls)])
            close_at = closes.get(open_at)
        if close_at is None:
            if notes is not None:
                notes.ignore(text, start, _line_end(text, start), UNCLOSED, f"no ')' closes this {name} call",
                             op=ALIASES[name])
            resume = open_at + 1
            continue
        end = close_at + 1
        resume = end
        if not text.startswith(";", end):
            if notes is not None:
                notes.ignore(text, start, end, NO_TERMINATOR, "a command must end with ';'", op=ALIASES[name],
                             path=partial(_call_pointer, text, open_at, close_at))
            continue  # MagVarUpdate silently drops a call not followed by ';'
        end += 1
        reason = ""
        found = _REASON.match(text, end)
        if found:
            reason = found.group(1).strip()
            end = found.end()
        resume = end
        kind = ALIASES[name]
        args = split_arguments(text[open_at + 1 : close_at])
        if not _arity_ok(kind, len(args)) or hidden(start):
            if notes is not None:
                _note_unrun(notes, text, start, end, kind, args, hidden(start))
            continue
        if len(commands) == MAX_COMMANDS:
            raise _too_many()  # stop early: the rest of the text cannot change the outcome
        commands.append(Command(kind, name, tuple(args), parse_path(args[0]), text[start:end], reason, start, end))
    return commands


def _note_unrun(notes: Noted, text: str, start: int, end: int, kind: str, args: list[str], hidden: bool) -> None:
    path = partial(_named_pointer, args)
    if hidden:
        notes.ignore(text, start, end, THINKING, "inside the model's thinking", op=kind, path=path)
    else:
        notes.ignore(text, start, end, ARGUMENTS, f"{kind} does not take {len(args)} argument(s)", op=kind,
                     path=path)


def _call_pointer(text: str, open_at: int, close_at: int) -> str | None:
    """The JSON pointer the call whose arguments are ``text[open_at + 1 : close_at]`` names."""
    return _named_pointer(split_arguments(text[open_at + 1 : close_at]))


def _named_pointer(args: list[str]) -> str | None:
    """The JSON pointer an ignored call's first argument names, if it names one."""
    try:
        return json_pointer(list(parse_path(args[0]))) if args else None
    except MvuError:
        return None


def _possible_commands(text: str, notes: Noted) -> None:
    """Text shaped like a call (``_.sett(``, ``_.set (``, ``_.Set(``) that is not one."""
    for match in _POSSIBLE.finditer(text):
        notes.maybe(text, match.start(), _possible_end(text, match.start()),
                    f"not a command: the names are {', '.join(ALIASES)}, written _.name( with no space")


def _patch_command(op: PatchOp, start: int, end: int) -> Command:
    return Command(op.type, op.name, op.args, op.path, op.text, "json_patch", start, end, "json_patch", op.index)


def parse_commands(text: str) -> list[Command]:
    """Every update command in ``text``, in text order (``MVU_LIMIT`` past 1 MiB / 1,000)."""
    return _parse(text, None)


@dataclass(frozen=True, slots=True)
class Scanned:
    """A reply's commands, and what reading it noted besides (ignored and possible commands)."""

    commands: tuple[Command, ...]
    notes: ReplyNotes


def scan_commands(text: str) -> Scanned:
    """:func:`parse_commands`, accounting for what it does not extract: the calls and JSON Patch
    operations it ignores (with why) and the near-misses (bounded: :mod:`mvu_store.lang.outcomes`)."""
    notes = Noted()
    commands = _parse(text, notes)
    _possible_commands(text, notes)
    return Scanned(tuple(commands), notes.frozen())


def _parse(text: str, notes: Noted | None) -> list[Command]:
    if not isinstance(text, str):
        raise MvuError(Code.PARSE, "the reply must be text")
    # utf8() refuses a lone surrogate (MVU_JSON): no value taken from such a reply could be saved.
    # ASCII text (isascii() is O(1)) has neither, and its length is its size: no encoding then.
    if len(text) > MAX_TEXT_BYTES or (not text.isascii() and len(utf8(text)) > MAX_TEXT_BYTES):
        raise MvuError(Code.LIMIT, "reply is over 1 MiB", limit=MAX_TEXT_BYTES, kind="text")
    # Thinking and patch tags start with "<": a text without one skips both pattern scans.
    tagged = "<" in text
    hidden = inside_spans(_thinking_spans(text) if tagged else [])
    commands = _function_commands(text, hidden, notes)
    for block in find_patch_blocks(text, hidden, notes) if tagged else ():
        commands.extend(_patch_command(op, block.start, block.end) for op in block.ops)
        if len(commands) > MAX_COMMANDS:
            raise _too_many()
    commands.sort(key=lambda command: command.start)
    return commands


def contains_update(text: str) -> bool:
    """Whether ``text`` holds at least one command that would be run (for ``containsMvuUpdate``)."""
    if not isinstance(text, str):
        return False
    try:
        return bool(parse_commands(text))
    except MvuError:
        # Over a limit or carrying an unsafe path: the reply still *contains* an update attempt
        # (it will be refused), unless it has nothing that looks like one at all.
        return _CALL.search(text) is not None or PATCH_TAG.search(text) is not None
