"""Paths into ``stat_data``: MagVarUpdate's lodash-style text paths and JSON pointers.

A parsed path is a tuple of string segments; ``()`` is the root. Segments stay strings (as in
lodash, where ``a.0`` and ``a[0]`` both mean the key ``"0"``) and become indexes only when the
container they meet is an array. Prototype keys and paths deeper than :data:`MAX_SEGMENTS` are
refused with ``MVU_PATH`` because the hosts on the other side are JavaScript.
"""

from __future__ import annotations

import re
from typing import TypeAlias

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import UNSAFE_KEYS, JsonValue, json_pointer

Path: TypeAlias = tuple[str, ...]

MAX_SEGMENTS = 64

# MagVarUpdate strips every leading and trailing run of these from a command's path argument.
_TRIMMED = "\\\"'` "
_QUOTES = "\"'`"
_DIGITS = frozenset("0123456789")
_SPECIAL = re.compile(r"[\[\"'`]")


def trim_quotes(text: str) -> str:
    """Strip all leading and trailing quotes, backticks, backslashes and spaces."""
    return text.strip(_TRIMMED)


def is_index(segment: str) -> bool:
    """True for a canonical array index (``0``, ``12``; not ``01``, ``-1`` or ``１``)."""
    return bool(segment) and set(segment) <= _DIGITS and (segment == "0" or segment[0] != "0")


def _checked(segments: list[str], source: str) -> Path:
    if len(segments) > MAX_SEGMENTS:
        raise MvuError(Code.PATH, f"path {source[:200]!r} has more than {MAX_SEGMENTS} segments", path=source[:200])
    for segment in segments:
        if segment in UNSAFE_KEYS:
            raise MvuError(Code.PATH, f"path {source[:200]!r}: the segment {segment!r} is refused "
                                      "(it names JavaScript's prototype machinery)", path=source[:200],
                           pointer=json_pointer(list(segments)))
    return tuple(segments)


def _read_quoted(text: str, start: int) -> int:
    """Index of the quote closing the one at ``start`` (a backslash escapes), or -1."""
    quote = text[start]
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == quote:
            return index
        index += 1
    return -1


def _unescape(body: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(body):
        if body[index] == "\\" and index + 1 < len(body):
            index += 1
        out.append(body[index])
        index += 1
    return "".join(out)


def parse_path(raw: str) -> Path:
    """Parse a command's path argument the way MagVarUpdate resolves it.

    ``a.b``, ``a[0]``, ``a.0``, ``a[b]``, ``['a b']``, ``["x.y"]`` and ``a."x.y"`` all work;
    unquoted spaces are part of a key (``npc list.the innkeeper``). Malformed paths such as
    ``a..b`` parse to keys that will not exist, which is how MagVarUpdate fails on them too.
    """
    text = trim_quotes(raw.strip())
    if text and not _SPECIAL.search(text):
        # Only dots: _segments would split at every one of them, empty segments included.
        return _checked(text.split("."), raw)
    return _checked(_segments(text), raw)


def _segments(text: str) -> list[str]:
    """The segments of a trimmed path text, one construct at a time (up to one too many)."""
    segments: list[str] = []
    index = 0
    expect_segment = True
    while index < len(text):
        char = text[index]
        if char == ".":
            if expect_segment:
                segments.append("")
            expect_segment = True
            index += 1
        elif char == "[":
            index = _read_bracket(text, index, segments)
            expect_segment = False
        else:
            index = _read_dotted(text, index, segments)
            expect_segment = False
        if len(segments) > MAX_SEGMENTS:
            break
    if expect_segment and segments:
        segments.append("")
    return segments


def _read_bracket(text: str, start: int, segments: list[str]) -> int:
    inner = start + 1
    while inner < len(text) and text[inner] == " ":
        inner += 1
    if inner < len(text) and text[inner] in _QUOTES:
        close = _read_quoted(text, inner)
        if close != -1:
            after = close + 1
            while after < len(text) and text[after] == " ":
                after += 1
            if after < len(text) and text[after] == "]":
                segments.append(_unescape(text[inner + 1 : close]))
                return after + 1
    end = text.find("]", start + 1)
    if end == -1:
        # An unclosed bracket is an ordinary character of the key, as in lodash.
        return _read_dotted(text, start, segments, allow_bracket=True)
    segments.append(text[start + 1 : end].strip())
    return end + 1


def _read_dotted(text: str, start: int, segments: list[str], *, allow_bracket: bool = False) -> int:
    if text[start] in _QUOTES:
        close = _read_quoted(text, start)
        if close != -1 and (close + 1 == len(text) or text[close + 1] in ".["):
            segments.append(_unescape(text[start + 1 : close]))
            return close + 1
    index = start + 1 if allow_bracket else start
    while index < len(text) and text[index] not in ".[":
        index += 1
    segments.append(text[start:index])
    return index


def lodash_path(text: str, root: JsonValue) -> Path:
    """The path lodash's ``_.get/_.set`` use for ``text``: a whole top-level key wins over splitting.

    lodash first asks whether the path text is itself a key of the object: with a key ``"Lv.2"``
    in ``stat_data``, ``Lv.2`` names it, not ``Lv`` -> ``2``. (Brackets and quotes are rewritten
    before that check in MagVarUpdate, so a text with them never names a whole key here.)
    """
    path = parse_path(text)
    whole = trim_quotes(text.strip())
    if len(path) > 1 and not set(whole) & set("[]\"'") and isinstance(root, dict) and whole in root:
        return (whole,)
    return path


def parse_pointer(pointer: str) -> Path:
    """Parse a JSON Patch path: RFC 6901 with ``~1``/``~0`` decoded.

    Like MagVarUpdate, a missing leading ``/`` is tolerated and ``/`` alone is the root. A path
    with no ``/`` at all is not a pointer but a model writing the command syntax
    (``角色.好感度``): MagVarUpdate resolves it with lodash, so we read it as a command path.
    """
    if "/" not in pointer:
        return parse_path(pointer)
    body = pointer[1:] if pointer.startswith("/") else pointer
    if body == "":
        return ()
    segments = [part.replace("~1", "/").replace("~0", "~") for part in body.split("/")]
    return _checked(segments, pointer)


def format_path(path: Path) -> str:
    """A readable dotted form of a path, for diagnostics."""
    text = ""
    for part in path:
        text += f"[{part}]" if is_index(part) else (f".{part}" if text else part)
    return text


def _child(container: JsonValue, segment: str) -> tuple[bool, JsonValue]:
    if isinstance(container, dict):
        if segment in container:
            return True, container[segment]
        return False, None
    if isinstance(container, list):
        if segment == "length":
            # Writing an array's length truncates it in JavaScript; we refuse the whole idea.
            raise MvuError(Code.PATH, "array 'length' is not a path segment")
        if is_index(segment) and int(segment) < len(container):
            return True, container[int(segment)]
    return False, None


def lookup(root: JsonValue, path: Path) -> tuple[bool, JsonValue]:
    """``(found, value)`` at ``path``: lodash ``_.has`` and ``_.get`` in one walk."""
    current = root
    for segment in path:
        found, current = _child(current, segment)
        if not found:
            return False, None
    return True, current


def assigned(root: JsonValue, path: Path, value: JsonValue) -> JsonValue:
    """A copy of ``root`` with ``value`` written at ``path`` (its parent must exist; not the root).

    Nothing is mutated: only the containers from the root to the parent are copied, every other
    subtree is shared with ``root`` (states are persistent, see :mod:`mvu_store.lang.apply`).
    """
    containers = [root]
    for segment in path[:-1]:
        found, child = _child(containers[-1], segment)
        if not found:
            raise MvuError(Code.PATH_MISSING, f"cannot write at {format_path(path)!r}", found=False)
        containers.append(child)
    key = path[-1]
    parent = containers[-1]
    if not isinstance(parent, dict) and not (isinstance(parent, list) and is_index(key) and int(key) < len(parent)):
        raise MvuError(Code.PATH_MISSING, f"cannot write at {format_path(path)!r}", found=True)
    for container, segment in zip(reversed(containers), reversed(path), strict=True):
        if isinstance(container, dict):
            value = {**container, segment: value}
        else:
            copied = list(container)
            copied[int(segment)] = value
            value = copied
    return value
