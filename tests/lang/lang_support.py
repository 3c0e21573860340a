"""Helpers shared by the language tests."""

from __future__ import annotations

import json
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.lang import UpdateResult, Validation, apply_update, initialize_variables


def update(stat_data: dict[str, Any], text: str, **envelope: Any) -> UpdateResult:
    """Apply ``text`` to an envelope holding ``stat_data`` (and optional extra fields)."""
    return apply_update({"stat_data": stat_data, **envelope}, text)


def stat(stat_data: dict[str, Any], text: str, **envelope: Any) -> Any:
    """Only the resulting ``stat_data``."""
    return update(stat_data, text, **envelope).variables["stat_data"]


def codes(result: UpdateResult) -> list[str]:
    return [entry["code"] for entry in result.diagnostics]


def init(yaml_text: str) -> dict[str, Any]:
    return initialize_variables([yaml_text])


def text_of(value: Any) -> str:
    """Sorted-key JSON text: equal texts mean equal values with equal types (5 is not 5.0)."""
    return json.dumps(value, sort_keys=True)


class Recorder:
    """A check (and a v2 validator) that keeps every state it is given and its text then."""

    def __init__(self, refuse_call: int | None = None, refuse_count: int = 1) -> None:
        """Refuse ``refuse_count`` calls from the ``refuse_call``-th on (an insert that creates its
        container asks twice: for an object, then for an array)."""
        self.seen: list[tuple[Any, str]] = []
        self.checks = 0
        self.refused = range(refuse_call, refuse_call + refuse_count) if refuse_call is not None else range(0)

    def __call__(self, stat_data: Any) -> Any:
        self.seen.append((stat_data, text_of(stat_data)))
        self.checks += 1
        if self.checks in self.refused:
            raise MvuError(Code.SCHEMA, "refused by the test")
        return stat_data

    def validate(self, stat_data: Any) -> Validation:
        self.seen.append((stat_data, text_of(stat_data)))
        return Validation(True)

    def assert_unchanged(self) -> None:
        for state, text in self.seen:
            assert text_of(state) == text
