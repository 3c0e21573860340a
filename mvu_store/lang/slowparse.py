"""The slow readers (JSON5 and YAML) behind a per-update budget.

Both are pure Python: json5 reads about 0.1 MB/s and ruamel's YAML about 0.25 MB/s on this
machine (benchmarks/lang.py). Fast strict JSON is always tried first, so ordinary replies
never reach them; but a reply made of a thousand broken blocks or arguments would make every
one of them go through both. A :class:`ParseBudget` caps the characters one update may feed to
the slow readers (whatever is left over is treated as unreadable and falls through to the next
way of reading the text), so the worst case stays around a second instead of tens of seconds.
"""

from __future__ import annotations

from typing import Any

import json5

from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.restricted_yaml import load_yaml

SLOW_PARSE_CHARS = 64 * 1024
MAX_JSON5_CHARS = 64 * 1024

# What json5 raises on bad input besides ValueError (it is not consistent about it).
_JSON5_FAILURES = (ValueError, RecursionError, TypeError, IndexError, KeyError, AttributeError)


class Unreadable(Exception):
    """This reader cannot read the text, or may not because the budget is spent."""


class ParseBudget:
    """Characters the slow readers may still read in one update."""

    def __init__(self, chars: int = SLOW_PARSE_CHARS) -> None:
        self.remaining = chars

    def spend(self, text: str) -> None:
        if len(text) > self.remaining:
            raise Unreadable("the slow-parse budget of this update is spent")
        self.remaining -= len(text)


def refuse_constant(name: str) -> Any:
    """``parse_constant`` hook for json/json5: NaN and Infinity are not JSON values."""
    raise Unreadable(f"{name} is not a finite number")


def read_json5(text: str, budget: ParseBudget | None) -> JsonValue:
    """A JSON5 (JavaScript literal) value; NaN and Infinity are refused. Raises Unreadable."""
    if len(text) > MAX_JSON5_CHARS:
        raise Unreadable("too long for JSON5")
    if budget is not None:
        budget.spend(text)
    try:
        return json5.loads(text, parse_constant=refuse_constant)
    except _JSON5_FAILURES:
        raise Unreadable("not JSON5") from None


def read_yaml(text: str, budget: ParseBudget | None, *, max_bytes: int) -> JsonValue:
    """A value through the restricted YAML loader (``MvuError`` when refused; Unreadable)."""
    if budget is not None:
        budget.spend(text)
    return load_yaml(text, max_bytes=max_bytes)
