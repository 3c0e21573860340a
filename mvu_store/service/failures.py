"""A failed reply's own diagnostics: what its receipt stores, and what a current read shows after it.

A failed receipt claims a revision but leaves the head (its key and state) where it was, as the
original does. Its version stores the head's state with no changes and one diagnostic, the
failure; its ``meta`` keeps that diagnostic, so a current read (which reads the head, and the
failure when the receipt is the resource's last version: :attr:`~mvu_store.ledger.records.Head.failure`)
shows the failure as the record's ``update_diagnostics`` instead of the diagnostics and changes of
the version before, which belong to another turn.
"""

from __future__ import annotations

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.outcomes import clipped

FAILURE = "failure"
"""The key of a failed receipt's ``meta`` that holds its diagnostic."""


def failure_diagnostic(error: MvuError) -> dict[str, JsonValue]:
    """The one diagnostic of a reply that failed with ``error``: refused, its code, its message
    (which names the path of a path refusal), and that path when it is a JSON pointer."""
    item: dict[str, JsonValue] = {"kind": "refused", "code": error.code, "message": clipped(error.message)}
    path = failure_path(error)
    if path:
        item["path"] = path
    return item


def failure_path(error: MvuError) -> str:
    """The JSON pointer a failure names (``''``: none, or a path only its message spells): its
    ``pointer`` (a dotted path the language turned into one), else a ``path`` given as one."""
    for name in ("pointer", "path"):
        path = error.details.get(name)
        if isinstance(path, str) and path.startswith("/"):
            return path
    return ""


def with_failure(variables: JsonValue, diagnostic: JsonValue) -> JsonValue:
    """``variables`` as the failed turn leaves them: no changes, the failure as the diagnostics."""
    if not isinstance(variables, dict):
        return variables
    return {**variables, "delta_data": {"changes": []}, "update_diagnostics": [diagnostic]}


def shown_after_failure(variables: JsonValue, failure: JsonValue) -> JsonValue:
    """The content a current read shows: the head's, with the diagnostic of a failed receipt
    written since (``failure``: its ``meta``, :attr:`~mvu_store.ledger.records.Head.failure`)."""
    if not isinstance(failure, dict) or not isinstance(failure.get(FAILURE), dict):
        return variables
    return with_failure(variables, failure[FAILURE])
