"""The YAML text the JavaScript ``yaml`` package (2.x) writes for JSON data.

``yaml_stringify(value)`` is ``YAML.stringify(value, {blockQuote: 'literal'})`` with the package's
other defaults (YAML 1.2 core schema, two-space indentation, sequences indented under their key,
80-column folding, plain scalars unless a reader would take them for something else). The
world-book macro prints state through that call, and a prompt must be byte-identical to what the
original host sends, so this is a faithful emitter of our own rather than a general YAML library
(ruamel.yaml's output differs in key order, quoting, sequence indentation and block scalars).

Only what JSON data can reach is here: no comments, anchors, tags or flow collections (an empty
map or list prints as ``{}`` / ``[]``). All lengths and positions are JavaScript's UTF-16 code
units: the text is split into units on the way in and joined on the way out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mvu_store.js.numbers import number_to_string
from mvu_store.jsonvalue import JsonValue, js_json
from mvu_store.prompt.units import LINE_TERMINATORS, has_lone_surrogate, join_units, split_units

_INDENT_STEP = "  "
_LINE_WIDTH = 80
_MIN_CONTENT_WIDTH = 20
_MAX_IMPLICIT_KEY = 1024
_FOLD_FLOW = "flow"
_FOLD_QUOTED = "quoted"

# Texts the core schema would read back as something other than a string (null, booleans,
# octal/decimal/hex integers, .inf/.nan, floats): a plain string that matches is quoted.
_NON_STRING = tuple(
    re.compile(pattern)
    for pattern in (
        r"(?:~|[Nn]ull|NULL)?",
        r"(?:[Tt]rue|TRUE|[Ff]alse|FALSE)",
        r"0o[0-7]+",
        r"[-+]?[0-9]+",
        r"0x[0-9a-fA-F]+",
        r"(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)",
        r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+",
        r"[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)",
    )
)
# What a plain scalar may not look like: a leading indicator, "- " or "? ", ": " or " #" inside,
# whitespace around a line break, a trailing space or colon.
_NOT_PLAIN = re.compile(
    r"\A[\n\t ,\[\]{}#&*!|>'\"%@`]|\A[?-]\Z|\A[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]\Z"
)
# A line that a YAML 1.1 reader would take for a directive or document marker.
_DOCUMENT_MARKER = re.compile(f"(?:\\A|(?<=[{LINE_TERMINATORS}]))(?:%|---|\\.\\.\\.)")
_FORCE_DOUBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NEWLINES = re.compile("\n+")
_INNER_END_NEWLINES = re.compile(r"(?<!\n)\n+(?!\n|\Z)")
_TRAILING_BLANK_LINE = re.compile(r"\n[\t ]+\Z")
_SPACE_AT_BREAK = re.compile(r"[ \t]\n|\n[ \t]")
# Double-quoted escapes the yaml package writes instead of JSON's \u00XX forms.
_SHORT_ESCAPES = {"0000": "\\0", "0007": "\\a", "000b": "\\v", "001b": "\\e", "0085": "\\N", "00a0": "\\_",
                  "2028": "\\L", "2029": "\\P"}
_MAX_ARRAY_INDEX = 2**32 - 2


@dataclass(frozen=True)
class _Context:
    indent: str = ""
    implicit_key: bool = False
    # Columns already used on the line where a map value starts (`key: `), if this is one.
    indent_at_start: int | None = None


def yaml_stringify(value: JsonValue) -> str:
    """``YAML.stringify(value, {blockQuote: 'literal'})`` for JSON data (the text ends in a newline)."""
    return join_units(_node(value, _Context()) + "\n")


def js_key_order(mapping: dict[str, JsonValue]) -> list[str]:
    """``Object.keys`` order: array-index keys ascending, then the others as inserted."""
    indices = sorted((key for key in mapping if _is_array_index(key)), key=int)
    if not indices:
        return list(mapping)
    chosen = set(indices)
    return indices + [key for key in mapping if key not in chosen]


def _is_array_index(key: str) -> bool:
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) <= _MAX_ARRAY_INDEX


def _node(value: JsonValue, ctx: _Context) -> str:
    if isinstance(value, dict):
        return _mapping(value, ctx)
    if isinstance(value, list):
        return _sequence(value, ctx)
    if isinstance(value, str):
        return _string(split_units(value), ctx)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _number(value)


def _number(value: float | int) -> str:
    if type(value) is int and abs(value) >= 2**53:
        value = float(value)  # JavaScript holds every number as a double
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return "-.inf" if value < 0 else ".inf"
        if value == 0 and math.copysign(1.0, value) < 0:
            return "-0"
    return number_to_string(value)


def _mapping(mapping: dict[str, JsonValue], ctx: _Context) -> str:
    if not mapping:
        return "{}"
    lines = [_pair(key, mapping[key], ctx.indent) for key in js_key_order(mapping)]
    return ("\n" + ctx.indent).join(lines)


def _sequence(items: list[JsonValue], ctx: _Context) -> str:
    if not items:
        return "[]"
    item_ctx = _Context(indent=ctx.indent + _INDENT_STEP)
    return ("\n" + ctx.indent).join("- " + _node(item, item_ctx) for item in items)


def _pair(key: str, value: JsonValue, indent: str) -> str:
    inner = indent + _INDENT_STEP
    key_text = _string(split_units(key), _Context(indent=inner, implicit_key=True))
    explicit = len(key_text) > _MAX_IMPLICIT_KEY
    head = f"? {key_text}\n{indent}:" if explicit else f"{key_text}:"
    collection = isinstance(value, dict | list)
    value_ctx = _Context(indent=inner, indent_at_start=None if explicit or collection else len(head) + 1)
    text = _node(value, value_ctx)
    separator = " "
    if collection and not explicit:
        if "\n" in text or value:  # a non-empty collection starts on its own line
            separator = "\n" + inner
    elif text == "" or text.startswith("\n"):
        separator = ""
    return head + separator + text


def _string(units: str, ctx: _Context) -> str:
    if _FORCE_DOUBLE.search(units) or has_lone_surrogate(units):
        return _double_quoted(units, ctx)
    return _plain(units, ctx)


def _plain(units: str, ctx: _Context) -> str:
    multi_line = "\n" in units
    if ctx.implicit_key and multi_line:
        return _quoted(units, ctx)
    if _NOT_PLAIN.search(units):
        return _quoted(units, ctx) if ctx.implicit_key or not multi_line else _literal_block(units, ctx)
    if not ctx.implicit_key and multi_line:
        return _literal_block(units, ctx)
    if _DOCUMENT_MARKER.search(units):
        if ctx.indent == "":
            return _literal_block(units, ctx)  # at the root the block is indented for the marker
        if ctx.implicit_key and ctx.indent == _INDENT_STEP:
            return _quoted(units, ctx)
    # No line break is left here: keys with one were quoted and values went to a block.
    if any(pattern.fullmatch(units) for pattern in _NON_STRING):
        return _quoted(units, ctx)
    if ctx.implicit_key:
        return units
    return _fold(units, ctx.indent, _FOLD_FLOW, ctx.indent_at_start)


def _quoted(units: str, ctx: _Context) -> str:
    has_double, has_single = '"' in units, "'" in units
    if has_double and not has_single:
        return _single_quoted(units, ctx)
    return _double_quoted(units, ctx)


def _marker_indent(units: str, ctx: _Context) -> str:
    return ctx.indent or ("  " if _DOCUMENT_MARKER.search(units) else "")


def _single_quoted(units: str, ctx: _Context) -> str:
    if (ctx.implicit_key and "\n" in units) or _SPACE_AT_BREAK.search(units):
        return _double_quoted(units, ctx)
    indent = _marker_indent(units, ctx)
    body = _NEWLINES.sub(lambda found: f"{found.group()}\n{indent}", units.replace("'", "''"))
    text = f"'{body}'"
    return text if ctx.implicit_key else _fold(text, indent, _FOLD_FLOW, ctx.indent_at_start)


def _double_quoted(units: str, ctx: _Context) -> str:
    json = split_units(js_json(join_units(units)))
    indent = _marker_indent(units, ctx)
    out: list[str] = []
    start = 0
    i = 0
    size = len(json)

    def at(index: int) -> str:
        return json[index] if index < size else ""

    while i < size:
        ch = json[i]
        if ch == " " and at(i + 1) == "\\" and at(i + 2) == "n":
            # A space before a line break is escaped, or folding would eat it.
            out.append(json[start:i] + "\\ ")
            i += 1
            start = i
            ch = "\\"
        if ch == "\\":
            follower = at(i + 1)
            if follower == "u":
                out.append(json[start:i])
                code = json[i + 2:i + 6]
                if code in _SHORT_ESCAPES:
                    out.append(_SHORT_ESCAPES[code])
                elif code.startswith("00"):
                    out.append("\\x" + code[2:])
                else:
                    out.append(json[i:i + 6])
                i += 5
                start = i + 1
            elif follower == "n":
                if ctx.implicit_key or at(i + 2) == '"' or size < 40:
                    i += 1
                else:
                    # Written as real line breaks (folding eats the first one).
                    out.append(json[start:i] + "\n\n")
                    while at(i + 2) == "\\" and at(i + 3) == "n" and at(i + 4) != '"':
                        out.append("\n")
                        i += 2
                    out.append(indent)
                    if at(i + 2) == " ":
                        out.append("\\")  # a space after a line break is escaped too
                    i += 1
                    start = i + 1
            else:
                i += 1
        i += 1
    text = "".join(out) + json[start:] if start else json
    return text if ctx.implicit_key else _fold(text, indent, _FOLD_QUOTED, ctx.indent_at_start)


def _literal_block(units: str, ctx: _Context) -> str:
    if _TRAILING_BLANK_LINE.search(units):
        return _quoted(units, ctx)  # a block cannot end in a whitespace-only line
    indent = _marker_indent(units, ctx)
    if not units:
        return "|\n"
    body_end = len(units)
    while body_end > 0 and units[body_end - 1] in "\n\t ":
        body_end -= 1
    end = units[body_end:]
    newline_at = end.find("\n")
    if newline_at == -1:
        chomp = "-"
    elif units == end or newline_at != len(end) - 1:
        chomp = "+"
    else:
        chomp = ""
    value = units
    if end:
        value = units[: len(units) - len(end)]
        end = end.removesuffix("\n")
        end = _INNER_END_NEWLINES.sub(lambda found: found.group() + indent, end)
    starts_with_space = False
    last_newline = -1
    for position, ch in enumerate(value):
        if ch == " ":
            starts_with_space = True
        elif ch == "\n":
            last_newline = position
        else:
            break
    start = value[: last_newline + 1]
    if start:
        value = value[len(start):]
        start = _NEWLINES.sub(lambda found: found.group() + indent, start)
    # An explicit indentation indicator when the text itself starts with spaces.
    header = ("2" if indent else "1") + chomp if starts_with_space else chomp
    value = _NEWLINES.sub(lambda found: found.group() + indent, value)
    return f"|{header}\n{indent}{start}{value}{end}"


def _fold(text: str, indent: str, mode: str, indent_at_start: int | None) -> str:
    """Break a flow scalar at spaces to keep lines within the line width (yaml's foldFlowLines)."""
    end_step = max(1 + _MIN_CONTENT_WIDTH, 1 + _LINE_WIDTH - len(indent))
    size = len(text)
    if size <= end_step:
        return text
    folds: list[int] = []
    escaped_folds: set[int] = set()
    end = _LINE_WIDTH - len(indent)
    if indent_at_start is not None:
        if indent_at_start > _LINE_WIDTH - max(2, _MIN_CONTENT_WIDTH):
            folds.append(0)
        else:
            end = _LINE_WIDTH - indent_at_start
    split: int | None = None
    prev = ""
    i = -1
    escape_start = escape_end = -1

    def at(index: int) -> str:
        return text[index] if 0 <= index < size else ""

    while True:
        i += 1
        ch = at(i)
        if not ch:
            break
        if mode == _FOLD_QUOTED and ch == "\\":
            escape_start = i
            i += {"x": 3, "u": 5, "U": 9}.get(at(i + 1), 1)
            escape_end = i
        if ch == "\n":
            end = i + len(indent) + end_step
            split = None
        else:
            if ch == " " and prev and prev not in " \n\t":
                following = at(i + 1)
                if following and following not in " \n\t":
                    split = i
            if i >= end:
                if split:
                    folds.append(split)
                    end = split + end_step
                    split = None
                elif mode == _FOLD_QUOTED:
                    # Whitespace gathered at the end may run past the width.
                    while prev in (" ", "\t"):
                        prev = ch
                        i += 1
                        ch = at(i)
                    fold_at = i - 2 if i > escape_end + 1 else escape_start - 1
                    if fold_at in escaped_folds:
                        return text
                    folds.append(fold_at)
                    escaped_folds.add(fold_at)
                    end = fold_at + end_step
                    split = None
        prev = ch
    return _join_folds(text, folds, escaped_folds, indent, mode) if folds else text


def _join_folds(text: str, folds: list[int], escaped_folds: set[int], indent: str, mode: str) -> str:
    """The text broken at each fold position (a fold at 0 starts the scalar on its own line)."""
    out = [text[: folds[0]]]
    for number, fold in enumerate(folds):
        stop = folds[number + 1] if number + 1 < len(folds) else len(text)
        if fold == 0:
            out = ["\n", indent, text[:stop]]
        else:
            if mode == _FOLD_QUOTED and fold in escaped_folds:
                out.append(text[fold] + "\\")
            out.append("\n" + indent + text[fold + 1:stop])
    return "".join(out)
