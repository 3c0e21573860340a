"""Command values: the text of an argument turned into a JSON value, MagVarUpdate's way.

The order matters and follows MagVarUpdate: the words ``true/false/null/undefined``, strict
JSON, a JavaScript-style ``{...}``/``[...]`` literal (read as JSON5), arithmetic, YAML (through
the restricted loader) and finally the text itself with its quotes trimmed. So ``'5'`` stays
the string ``"5"`` (it matters for ``add``), ``10+2`` is 12 and ``2024-01-01`` is 2022, exactly
as a card author sees in MagVarUpdate. Reading a value never fails: the last step always
produces a string. The one exception is a value that carries a prototype key, refused with
``MVU_PATH`` wherever it comes from.
"""

from __future__ import annotations

import json
import math
from functools import partial

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, find_unsafe_key, normalize
from mvu_store.lang.arith import evaluate, without_comments
from mvu_store.lang.paths import trim_quotes
from mvu_store.lang.slowparse import ParseBudget, Unreadable, read_json5, read_yaml, refuse_constant

# YAML is the slow last resort for one argument; a bigger argument is kept as text.
MAX_VALUE_YAML_BYTES = 64 * 1024

# JSON has no undefined: it reads as null here, and set/insert drop the key instead of storing it
# (mvu_store.lang.executors), which is what MagVarUpdate's saved JSON shows.
_WORDS: dict[str, JsonValue] = {"true": True, "false": False, "null": None, "undefined": None}


def _finite(value: JsonValue) -> JsonValue:
    """A normalised copy, or ``Unreadable`` for NaN/Infinity and other non-JSON content."""
    try:
        normalized, _, _ = normalize(value)
    except MvuError as error:
        if error.code == Code.LIMIT:
            raise
        raise Unreadable(error.message) from None
    return normalized


def _json(text: str) -> JsonValue:
    try:
        return _finite(json.loads(text, parse_constant=refuse_constant))
    except (ValueError, RecursionError):
        raise Unreadable from None


def _json5(text: str, budget: ParseBudget | None) -> JsonValue:
    if not ((text.startswith("{") and text.endswith("}")) or (text.startswith("[") and text.endswith("]"))):
        raise Unreadable
    return _finite(read_json5(text, budget))


def _arithmetic(text: str) -> JsonValue:
    if "#" in text and not without_comments(text).strip():
        return text  # mathjs reads only a comment (a colour, "#3"): MagVarUpdate keeps the text
    value = evaluate(text)
    if value is None:
        raise Unreadable
    return value


def _yaml(text: str, budget: ParseBudget | None) -> JsonValue:
    if text.startswith("`"):
        raise Unreadable  # a backtick literal: YAML reserves the character; the fallback trims it
    try:
        return _finite(read_yaml(text, budget, max_bytes=MAX_VALUE_YAML_BYTES))
    except MvuError:
        raise Unreadable from None


def parse_value(raw: str, budget: ParseBudget | None = None, *, arithmetic: bool = True) -> JsonValue:
    """Read one command argument as a JSON value (see the module docstring for the order).

    ``budget`` bounds what one update may spend in the slow JSON5/YAML readers. Without
    ``arithmetic`` (a card's declaration runs the commands, as its helper does) the arithmetic
    stage is skipped: ``120+30``, ``2025-06-02`` and ``10:30`` stay text.
    """
    text = raw.strip()
    if text in _WORDS:
        return _WORDS[text]
    stages = (_json, partial(_json5, budget=budget), _arithmetic, partial(_yaml, budget=budget))
    for stage in stages if arithmetic else (stages[0], stages[1], stages[3]):
        try:
            value = stage(text)
        except Unreadable:
            continue
        if find_unsafe_key(value) is not None:
            raise MvuError(Code.PATH, "a value carries a prototype key", key=str(find_unsafe_key(value)))
        return value
    return trim_quotes(raw.strip())


def to_number(value: JsonValue) -> float | int | None:
    """JavaScript's ``Number(value)``; ``None`` stands for NaN (JSON has no NaN, hosts store null)."""
    if value is None or value is False:
        return 0
    if value is True:
        return 1
    if isinstance(value, int | float):
        return value
    if isinstance(value, list):
        # Number([x]) is Number(String([x])): only a lone string, number or null survives.
        if not value or (len(value) == 1 and value[0] is None):
            return 0
        single = len(value) == 1 and isinstance(value[0], str | int | float) and not isinstance(value[0], bool)
        return to_number(value[0]) if single else None
    if isinstance(value, dict):
        return None
    text = str(value).strip()
    if text == "":
        return 0
    if text[:2].lower() in ("0x", "0o", "0b"):
        try:
            return int(text, 0)
        except ValueError:
            return None
    if not all(char in "0123456789+-.eE" for char in text):
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 1e21 else number
