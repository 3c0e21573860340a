"""Interpreter v2 path creation (DIGEST U-6): commands may create missing paths.

For a state whose ``mvu_schema.interpreterVersion`` is 2, ``set`` and ``insert`` on a missing
path build a *candidate* ``stat_data`` and ask the schema interpreter whether it accepts it.
This module knows the interpreter only through :class:`CandidateValidator`, so the language
does not depend on ``mvu_store.schema``. ``insert`` tries an object container first and an
array second; only a candidate the validator accepts is kept, in the form it returned.
Created arrays stay dense: an index is only created at the end of an array.
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


def build_candidate(stat_data: JsonValue, path: Path, value: JsonValue) -> JsonValue:
    """A copy of ``stat_data`` with ``value`` written at ``path``, creating what is missing.

    Only the containers on the path are copied; the rest is shared (states are persistent).
    """
    return _written(stat_data, path, 0, value) if path else stat_data


def _written(current: JsonValue, path: Path, position: int, value: JsonValue) -> JsonValue:
    segment = path[position]
    last = position == len(path) - 1
    fresh = value if last else _container_for(path[position + 1])
    if isinstance(current, dict):
        child = current.get(segment)
        if last or child is None:
            child = fresh
        elif not isinstance(child, dict | list):
            raise MvuError(Code.PATH_MISSING, f"{format_path(path)!r} runs through a value")
        return {**current, segment: child if last else _written(child, path, position + 1, value)}
    if isinstance(current, list) and is_index(segment) and int(segment) <= len(current):
        index = int(segment)
        child = fresh if index == len(current) or last else current[index]
        if not isinstance(child, dict | list) and not last:
            raise MvuError(Code.PATH_MISSING, f"{format_path(path)!r} runs through a value")
        written = child if last else _written(child, path, position + 1, value)
        return [*current[:index], written, *current[index + 1 :]]
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


def create(
    validator: CandidateValidator | None, stat_data: JsonValue, path: Path, options: list[JsonValue]
) -> JsonValue:
    """The first accepted candidate writing one of ``options`` at ``path``; else ``MVU_SCHEMA``."""
    if validator is None:
        raise MvuError(Code.PATH_MISSING, f"{format_path(path)!r} does not exist (no validator to create it)")
    for option in options:
        accepted = validated(validator, build_candidate(stat_data, path, option))
        if accepted is not None:
            return accepted
    raise MvuError(Code.SCHEMA, f"the schema refuses creating {format_path(path)!r}")
