"""Reading a value at a macro's path, as lodash's ``_.get(variables, _.unescape(path), null)`` does.

A path is either a whole key of the root (``stat_data``, or any key the root holds verbatim) or a
property path: dot-separated names, ``[0]`` indices and ``["quoted"]`` / ``['quoted']`` names
with backslash escapes. HTML entities in the path (``&quot;``, ``&#39;``...) are decoded first,
because world-book text may carry them. Arrays and strings answer an index and ``length``; a
missing step gives ``None`` (JavaScript's ``null``).
"""

from __future__ import annotations

import re

from mvu_store.jsonvalue import JsonValue
from mvu_store.prompt.units import js_length, split_units

_HTML_ENTITIES = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'"}
_HTML_ENTITY = re.compile("&(?:amp|lt|gt|quot|#39);")
_PLAIN_PROPERTY = re.compile(r"\w*", re.ASCII)
_DEEP_PROPERTY = re.compile(r"\.|\[(?:[^\[\]]*|([\"'])(?:(?!\1)[^\\]|\\.)*?\1)\]")
_PROPERTY_NAME = re.compile(
    r"[^.\[\]]+|\[(?:(-?[0-9]+(?:\.[0-9]+)?)|([\"'])((?:(?!\2)[^\\]|\\.)*?)\2)\]|(?=(?:\.|\[\])(?:\.|\[\]|\Z))"
)
_ESCAPE = re.compile(r"\\(\\)?")
_MISSING = object()


def get_path(root: JsonValue, path: str) -> JsonValue:
    """The value at ``path`` inside ``root``, or ``None`` where the path leads nowhere."""
    path = _HTML_ENTITY.sub(lambda found: _HTML_ENTITIES[found.group()], path)
    steps = [path] if _is_whole_key(root, path) else _split(path)
    current: object = root
    for step in steps:
        if current is None:
            return None
        current = _step(current, step)
        if current is _MISSING:
            return None
    if not steps:
        return None
    return current


def _is_whole_key(root: JsonValue, path: str) -> bool:
    return (
        _PLAIN_PROPERTY.fullmatch(path) is not None
        or _DEEP_PROPERTY.search(path) is None
        or (isinstance(root, dict) and path in root)
    )


def _split(path: str) -> list[str]:
    steps = [""] if path.startswith(".") else []
    for found in _PROPERTY_NAME.finditer(path):
        number, quote, quoted = found.group(1), found.group(2), found.group(3)
        if quote:
            steps.append(_ESCAPE.sub(lambda escape: escape.group(1) or "", quoted))
        else:
            steps.append(number or found.group())
    return steps


def _step(current: object, key: str) -> object:
    if isinstance(current, dict):
        return current.get(key, _MISSING)
    if isinstance(current, list | str):
        sequence = split_units(current) if isinstance(current, str) else current
        if key == "length":
            return js_length(current) if isinstance(current, str) else len(current)
        if key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < len(sequence):
            return sequence[int(key)]
    return _MISSING
