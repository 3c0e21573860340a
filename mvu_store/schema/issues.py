"""Validation issues with Zod v4's codes, paths and default English messages."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from mvu_store.js.numbers import number_to_string
from mvu_store.js.values import UNDEFINED, JsCallable, Opaque


@dataclass(slots=True)
class Issue:
    """One reason a value was refused: a Zod issue ``code``, the ``path`` to it and a message.

    ``continues`` mirrors Zod's ``continue`` flag: a check failure (``too_small``...) lets later
    checks and refinements run, a type failure does not. ``stops`` is Zod's explicit
    ``continue: false`` (an aborting refinement, an oversized array): then even length checks
    stay silent. Both are internal and not compared.
    """

    code: str
    path: list[str | int]
    message: str
    continues: bool = field(default=False, compare=False, repr=False)
    stops: bool = field(default=False, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "path": list(self.path), "message": self.message}


NONOPTIONAL = "Invalid input: expected nonoptional, received undefined"


def prefix(issues: list[Issue], start: int, key: str | int) -> None:
    """Put ``key`` in front of the paths of ``issues[start:]`` (a child's issues, seen by its parent)."""
    for index in range(start, len(issues)):
        issues[index].path.insert(0, key)


def aborted(issues: list[Issue], start: int = 0) -> bool:
    """Zod's ``aborted``: some issue since ``start`` stops later checks."""
    return any(not issues[index].continues for index in range(start, len(issues)))


def received(value: Any) -> str:
    """Zod's name for the type of ``value`` in ``invalid_type`` messages."""
    kind = type(value)
    if kind is bool:
        return "boolean"
    if kind is int or kind is float:
        if math.isnan(value):
            return "NaN"
        return "number" if math.isfinite(value) else number_to_string(value)
    if kind is str:
        return "string"
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if kind is list:
        return "array"
    if isinstance(value, JsCallable):
        return "function"
    return "object"


def invalid_type(expected: str, value: Any) -> Issue:
    return Issue("invalid_type", [], f"Invalid input: expected {expected}, received {received(value)}")


def stringify_primitive(value: Any) -> str:
    if type(value) is str:
        return json.dumps(value, ensure_ascii=False)
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if type(value) is bool:
        return "true" if value else "false"
    if isinstance(value, Opaque):
        return value.describe()
    return number_to_string(value)


def invalid_value(values: list[Any]) -> Issue:
    if len(values) == 1:
        return Issue("invalid_value", [], f"Invalid input: expected {stringify_primitive(values[0])}")
    joined = "|".join(stringify_primitive(value) for value in values)
    return Issue("invalid_value", [], f"Invalid option: expected one of {joined}")


_UNITS = {"string": "characters", "array": "items"}


def size_issue(code: str, origin: str, limit: float | int, *, inclusive: bool, exact: bool = False) -> Issue:
    """``too_small`` / ``too_big`` for numbers, string lengths and array lengths."""
    word = "Too small" if code == "too_small" else "Too big"
    if exact:
        adjective = "exactly "
    elif code == "too_small":
        adjective = ">=" if inclusive else ">"
    else:
        adjective = "<=" if inclusive else "<"
    bound = number_to_string(limit)
    unit = _UNITS.get(origin)
    if unit is None:
        message = f"{word}: expected {origin} to be {adjective}{bound}"
    else:
        message = f"{word}: expected {origin} to have {adjective}{bound} {unit}"
    return Issue(code, [], message, continues=True)


def unrecognized_keys(keys: list[str]) -> Issue:
    plural = "s" if len(keys) > 1 else ""
    joined = ", ".join(json.dumps(key, ensure_ascii=False) for key in keys)
    return Issue("unrecognized_keys", [], f"Unrecognized key{plural}: {joined}", continues=True)
