"""Interpreter v2 path creation (DIGEST U-6): commands may create missing paths.

Under a card's declaration (:mod:`mvu_store.lang.declared`) ``set`` and ``insert`` write through
:func:`written`, lodash's ``_.set``: a missing (or scalar) container on the way is created, an
array when the next segment is an index, else an object. Created arrays stay dense: an index is
only created at the end of an array. The schema interpreter is known here only through
:class:`CandidateValidator`, so the language does not depend on ``mvu_store.schema``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Protocol

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, find_unsafe_key, normalize
from mvu_store.lang.paths import Path, format_path, is_index


@dataclass(frozen=True, slots=True)
class Validation:
    """A validator's answer: ``ok``, the parsed candidate (``None``: keep it as built), issues."""

    ok: bool
    value: JsonValue = None
    issues: tuple[str, ...] = ()


class CandidateValidator(Protocol):
    """Validates a candidate ``stat_data`` against the state's declared schema."""

    def validate(self, stat_data: JsonValue) -> Validation:
        """Accept (possibly transforming) or refuse ``stat_data``; must not mutate it."""
        ...


def _container_for(segment: str) -> JsonValue:
    return [] if is_index(segment) else {}


def written(root: JsonValue, path: Path, value: JsonValue, *, drop: bool = False) -> JsonValue:
    """A copy of ``root`` with ``value`` at ``path`` (not the root), creating what is missing.

    ``drop`` removes the key instead (JavaScript's ``undefined``; in an array it is ``null``).
    Only the containers on the path are copied; the rest is shared (states are persistent).
    """
    return _written(root, path, 0, value, drop)


def _written(current: JsonValue, path: Path, position: int, value: JsonValue, drop: bool) -> JsonValue:
    segment = path[position]
    last = position == len(path) - 1
    if isinstance(current, dict):
        if last and drop:
            return {key: item for key, item in current.items() if key != segment}
        child = current.get(segment)
        if not last and not isinstance(child, dict | list):
            child = _container_for(path[position + 1])
        return {**current, segment: value if last else _written(child, path, position + 1, value, drop)}
    if isinstance(current, list) and is_index(segment) and int(segment) <= len(current):
        index = int(segment)
        child = current[index] if index < len(current) else None
        if not last and not isinstance(child, dict | list):
            child = _container_for(path[position + 1])
        item = value if last else _written(child, path, position + 1, value, drop)
        return [*current[:index], item, *current[index + 1 :]]
    raise MvuError(Code.PATH_MISSING, f"cannot create {format_path(path)!r} (arrays stay dense)")


def validated(validator: CandidateValidator, candidate: JsonValue) -> JsonValue | None:
    """The accepted (normalised) candidate, or ``None`` if the validator refuses it."""
    try:
        outcome = validator.validate(copy.deepcopy(candidate))
    except MvuError:
        raise
    except Exception as error:  # a validator bug must not escape as anything but MvuError
        raise MvuError(Code.SCHEMA_CODE, f"validator failed: {type(error).__name__}") from None
    if not outcome.ok:
        return None
    accepted = candidate if outcome.value is None else outcome.value
    normalized, _, _ = normalize(accepted)
    if not isinstance(normalized, dict):
        raise MvuError(Code.SCHEMA_CODE, "validator returned a non-object stat_data")
    if find_unsafe_key(normalized) is not None:
        raise MvuError(Code.PATH, "validator returned a prototype key")
    return normalized
