"""What differs between two JSON values, path by path: the one diff every part uses.

A manual edit's change list, an imported chat's, the opening's, the ``changes`` rows a migration
back-fills from stored versions, and the diff hosts ask for between two points of a playthrough
all come from :func:`json_diff`, so each says the same thing of the same two states.

Objects are compared key by key, arrays index by index (a longer array adds its tail, a shorter
one removes it, last index first so each pointer is valid when applied in order, as RFC 6902
would); anything else that differs, or a value that changes type, is replaced whole. Paths are
RFC 6901 JSON pointers (``''`` is the whole value). The work is bounded by the values' sizes (each
node is visited once) and the answer by ``limit`` differences: beyond it ``truncated`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mvu_store.jsonvalue import JsonValue, json_equal, json_pointer

MAX_DIFFERENCES = 1_000
"""Differences one diff lists by default (a whole 2 MiB state replaced would list each key)."""

DiffOp = Literal["add", "remove", "replace"]


@dataclass(frozen=True, slots=True)
class Difference:
    """One path whose value differs. ``before``/``after`` hold the value (an empty tuple: none)."""

    path: str
    op: DiffOp
    before: tuple[JsonValue, ...] = ()
    after: tuple[JsonValue, ...] = ()

    def to_json(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = {"path": self.path, "op": self.op}
        if self.before:
            data["before"] = self.before[0]
        if self.after:
            data["after"] = self.after[0]
        return data


@dataclass(frozen=True, slots=True)
class Diff:
    differences: tuple[Difference, ...]
    truncated: bool = False
    """More differences than the limit: only the first ``limit`` (in document order) are listed."""


def json_diff(before: JsonValue, after: JsonValue, *, limit: int = MAX_DIFFERENCES) -> Diff:
    """The differences that turn ``before`` into ``after`` (both JSON data, as the store reads it)."""
    found: list[Difference] = []
    # Depth first in document order; a frame is (path, before, after).
    stack: list[tuple[list[str | int], JsonValue, JsonValue]] = [([], before, after)]
    while stack:
        path, old, new = stack.pop()
        if type(old) is dict and type(new) is dict:
            frames: list[tuple[list[str | int], JsonValue, JsonValue]] = []
            for key, value in old.items():
                if key not in new:
                    frames.append(([*path, key], value, _ABSENT))
                elif not json_equal(value, new[key]):
                    frames.append(([*path, key], value, new[key]))
            frames.extend(([*path, key], _ABSENT, value) for key, value in new.items() if key not in old)
            stack.extend(reversed(frames))
        elif type(old) is list and type(new) is list:
            common = min(len(old), len(new))
            frames = [([*path, index], old[index], new[index]) for index in range(common)
                      if not json_equal(old[index], new[index])]
            frames.extend(([*path, index], _ABSENT, new[index]) for index in range(common, len(new)))
            frames.extend(([*path, index], old[index], _ABSENT) for index in range(len(old) - 1, common - 1, -1))
            stack.extend(reversed(frames))
        else:
            if old is _ABSENT:
                found.append(Difference(json_pointer(path), "add", after=(new,)))
            elif new is _ABSENT:
                found.append(Difference(json_pointer(path), "remove", before=(old,)))
            elif not json_equal(old, new):
                found.append(Difference(json_pointer(path), "replace", (old,), (new,)))
            if len(found) > limit:
                return Diff(tuple(found[:limit]), truncated=True)
    return Diff(tuple(found))


class _Absent:
    """No value at a path (a key one side lacks): not JSON, so never equal to a value."""

    __slots__ = ()


_ABSENT: JsonValue = _Absent()
