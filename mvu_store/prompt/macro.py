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

from mvu_store.jsonvalue import JsonValue
from mvu_store.prompt.paths import get_path
from mvu_store.prompt.units import LINE_TERMINATORS, js_length, js_trim_end
from mvu_store.prompt.yaml_text import js_key_order, yaml_stringify

_IN_LINE = f"[^{LINE_TERMINATORS}]"
# Greedy text before the macro, so the match is the line's last macro; the path is lazy, so it ends
# at the first `}}`. `^` means the start of a JavaScript line (any of its four line terminators).
MACRO = re.compile(
    f"(?<!{_IN_LINE})({_IN_LINE}*)\\{{\\{{format_message_variable::({_IN_LINE}*?)\\}}\\}}",
    re.IGNORECASE | re.ASCII,
)


def format_message_variable(value: JsonValue, prefix: str = "") -> str:
    """The macro's text for ``value``; ``prefix`` is the text before the macro on its line."""
    shown = without_dollar_keys(value)
    text = shown if isinstance(shown, str) else js_trim_end(yaml_stringify(shown))
    return text.replace("\n", "\n" + " " * js_length(prefix))


def without_dollar_keys(value: JsonValue) -> JsonValue:
    """A copy of ``value`` without object keys that start with ``$``, at every depth."""
    if isinstance(value, dict):
        return {key: without_dollar_keys(value[key]) for key in js_key_order(value) if not key.startswith("$")}
    if isinstance(value, list):
        return [without_dollar_keys(item) for item in value]
    return value


def has_macro(text: str) -> bool:
    """Whether ``text`` holds a macro (text without one never needs the state)."""
    return MACRO.search(text) is not None


def macro_paths(text: str) -> list[str]:
    """The paths the macros in ``text`` read, in text order (repeats kept)."""
    paths: list[str] = []
    for found in MACRO.finditer(text):
        paths.extend(reversed(_line_paths(found)[0]))
    return paths


def expand_message_variables(text: str, variables: JsonValue) -> str:
    """``text`` with every macro replaced by the value its path reads in ``variables``."""
    return MACRO.sub(lambda found: _expand_line(found, variables), text)


def _line_paths(found: re.Match[str]) -> tuple[list[str], list[str], str]:
    """The paths of one matched line from last to first, the text between them, the line's start."""
    paths = [found.group(2)]
    between: list[str] = []
    prefix = found.group(1)
    while (inner := MACRO.match(prefix)) is not None:
        between.append(prefix[inner.end():])
        paths.append(inner.group(2))
        prefix = inner.group(1)
    return paths, between, prefix


def _expand_line(found: re.Match[str], variables: JsonValue) -> str:
    paths, between, built = _line_paths(found)
    for index in range(len(paths) - 1, -1, -1):
        built += format_message_variable(get_path(variables, paths[index]), built)
        if index:
            built += between[index - 1]
    return built
