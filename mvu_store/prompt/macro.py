"""The world-book macro ``{{format_message_variable::<path>}}``, rendered as JS-Slash-Runner does.

A value is printed as is when it is a string, otherwise as YAML (``yaml_stringify``) with trailing
whitespace removed; object keys starting with ``$`` are dropped at every depth first. Every line
break of the printed value is followed by as many spaces as the text before the macro on its line
takes (in UTF-16 units), so a multi-line value lines up under the macro's column.

Where a line holds several macros, the last one is expanded first and the text before it (with
any earlier macros, expanded the same way) is the prefix that sets its indentation. What a value
contains is never expanded again: macro characters inside state stay literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.prompt.paths import get_path
from mvu_store.prompt.units import LINE_TERMINATORS, js_length, js_trim_end
from mvu_store.prompt.yaml_text import js_key_order, yaml_stringify

MAX_EXPANDED_CHARS = 16 * 1024 * 1024
"""What one text may grow to with its macros expanded. Each macro's lines are indented by the
text before it on its line, so a line of macros of a multi-line value doubles with each (forty
of them: a terabyte), and a 2 MiB text of macros naming a large state is gigabytes."""

_OPENER = re.compile(r"\{\{format_message_variable::", re.IGNORECASE | re.ASCII)
_OPENER_LENGTH = len("{{format_message_variable::")
_LINE_END = re.compile(f"[{LINE_TERMINATORS}]")


@dataclass(frozen=True, slots=True)
class MacroLine:
    """One line's macros, as the regular expression
    ``^([^LT]*)\\{\\{format_message_variable::([^LT]*?)\\}\\}`` (LT: JavaScript's line
    terminators; case-insensitive) and its repeated application to the text before each match
    read them: the last opener on the line followed by a ``}}`` on it, its path ending at the first
    ``}}``, then the same in the text before that opener. The regex rescanned a line from every
    unclosed opener (160 KB: 16 s); :func:`macro_lines` looks at each character a bounded number
    of times."""

    start: int
    end: int
    head: str
    """The line's text before its first macro."""
    macros: tuple[tuple[str, str], ...]
    """(path, text up to the next macro) of each macro in text order; the last one's text is empty."""


def macro_lines(text: str) -> Iterator[MacroLine]:
    """The lines of ``text`` that hold a macro, in order."""
    line_start = 0
    while line_start <= len(text):
        terminator = _LINE_END.search(text, line_start)
        line_end = len(text) if terminator is None else terminator.start()
        line = _macro_line(text, line_start, line_end)
        if line is not None:
            yield line
        line_start = line_end + 1


def _macro_line(text: str, start: int, end: int) -> MacroLine | None:
    openers = [found.start() for found in _OPENER.finditer(text, start, end)]
    found: list[tuple[int, int]] = []  # (opener, close) from the last macro to the first
    bound = end  # where a macro's "}}" must end: the line's end, then the opener of the macro found
    scanned = bound  # [scanned, bound) holds no "}}" (openers never overlap, so each search is new text)
    for opener in reversed(openers):
        path_start = opener + _OPENER_LENGTH
        close = text.find("}}", path_start, min(scanned + 1, bound))
        scanned = path_start
        if close != -1:
            found.append((opener, close))
            bound = scanned = opener
    if not found:
        return None
    found.reverse()
    ends = [opener for opener, _ in found[1:]] + [found[-1][1] + 2]
    macros = tuple((text[opener + _OPENER_LENGTH:close], text[close + 2:following])
                   for (opener, close), following in zip(found, ends, strict=True))
    return MacroLine(start, found[-1][1] + 2, text[start:found[0][0]], macros)


def format_message_variable(value: JsonValue, prefix: str = "") -> str:
    """The macro's text for ``value``; ``prefix`` is the text before the macro on its line."""
    return _shown(value).replace("\n", "\n" + " " * js_length(prefix))


def _shown(value: JsonValue) -> str:
    """The macro's text for ``value`` before its lines are indented."""
    shown = without_dollar_keys(value)
    return shown if isinstance(shown, str) else js_trim_end(yaml_stringify(shown))


def without_dollar_keys(value: JsonValue) -> JsonValue:
    """A copy of ``value`` without object keys that start with ``$``, at every depth."""
    if isinstance(value, dict):
        return {key: without_dollar_keys(value[key]) for key in js_key_order(value) if not key.startswith("$")}
    if isinstance(value, list):
        return [without_dollar_keys(item) for item in value]
    return value


def has_macro(text: str) -> bool:
    """Whether ``text`` holds a macro (text without one never needs the state)."""
    return next(macro_lines(text), None) is not None


def macro_paths(text: str) -> list[str]:
    """The paths the macros in ``text`` read, in text order (repeats kept)."""
    return [path for line in macro_lines(text) for path, _ in line.macros]


def expand_message_variables(text: str, variables: JsonValue) -> str:
    """``text`` with every macro replaced by the value its path reads in ``variables``."""
    parts: list[str] = []
    size = len(text)
    copied = 0
    for line in macro_lines(text):
        parts.append(text[copied:line.start])
        parts.append(line.head)
        indent = js_length(line.head)  # of the line's text so far, kept as it grows (not measured again)
        for path, after in line.macros:
            shown = _shown(get_path(variables, path))
            size += len(shown) + shown.count("\n") * indent
            if size > MAX_EXPANDED_CHARS:
                raise MvuError(Code.LIMIT, f"the text's macros would expand it past {MAX_EXPANDED_CHARS} characters",
                               limit=MAX_EXPANDED_CHARS, kind="chars")
            piece = shown.replace("\n", "\n" + " " * indent) + after
            parts.append(piece)
            indent += js_length(piece)
        copied = line.end
    parts.append(text[copied:])
    return "".join(parts)
