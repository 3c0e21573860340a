"""A receipt's stored result, without a second copy of the state its version already holds.

An edit's receipt returns ``{id, type, content, revision, scope, authority}``, and ``content``
is the very state the commit writes: stored verbatim it would double the receipt's bytes (a
12 KiB envelope written twice per edit, and encoded twice). So a top-level field of the result
that *is* the committed variables object (the same object, not an equal one: nothing is
compared) is stored as a name under :data:`STATE_FIELDS`, and put back from the version's state
when the result is read again (a replay, an export). What a caller gets back never changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from mvu_store.jsonvalue import JsonValue, canonical_text, copy_json

STATE_FIELDS = "$stateFields"
"""The stored result's list of fields that hold the version's state. No result the service or
the original's JSON ledger writes has a ``$`` key at its top level; an imported one that did
is refused at import rather than misread (:func:`holds_marker`)."""


def stored_result(result: JsonValue, variables: JsonValue) -> str:
    """The receipt row's text of ``result`` for a commit of ``variables``."""
    if isinstance(result, dict) and isinstance(variables, dict):
        shared = sorted(name for name, value in result.items() if value is variables)
        if shared:
            result = {name: value for name, value in result.items() if name not in shared}
            result[STATE_FIELDS] = shared
    return canonical_text(result)


def restored_result(text: str, state: Callable[[], JsonValue]) -> JsonValue:
    """The result stored as ``text``, its state fields filled from ``state()`` (called only if
    there are any; each field gets its own copy, as each was its own value when written)."""
    result = json.loads(text)
    if not isinstance(result, dict) or STATE_FIELDS not in result:
        return result
    names = result.pop(STATE_FIELDS)
    value = state()
    for index, name in enumerate(names):
        result[name] = value if index == 0 else copy_json(value)
    return result


def holds_marker(result: JsonValue) -> bool:
    """Whether a result from outside (an imported ledger) carries the stored form's marker."""
    return isinstance(result, dict) and STATE_FIELDS in result
