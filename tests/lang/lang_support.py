"""Helpers shared by the language tests."""

from __future__ import annotations

from typing import Any

from mvu_store.lang import UpdateResult, apply_update, initialize_variables


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
