"""Checking a recorded transition: does the reply's text, applied to the state before it, give
the state recorded after it? (docs/sillytavern.md#verification)

The reply's commands run as the service runs them (:func:`mvu_store.lang.apply.execute_commands`,
with the card's declaration at the message's time when the state carries one); only
``stat_data`` is compared, since ``display_data`` and ``delta_data`` are MagVarUpdate's
rendering of the same change. A difference is reported with the paths that differ; the recorded
state is never changed.
"""

from __future__ import annotations

import marshal
from typing import Any

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue, json_equal, json_pointer
from mvu_store.lang.apply import execute_commands
from mvu_store.lang.commands import parse_commands
from mvu_store.lang.macros import Names, substitute
from mvu_store.service.initial import DeclaredSchema

MAX_PATHS = 20
"""Paths named per difference; a count says how many there were in all."""


def differing_paths(left: JsonValue, right: JsonValue, limit: int = MAX_PATHS) -> tuple[list[str], int]:
    """JSON pointers where ``left`` and ``right`` differ (the first ``limit``), and their count."""
    found: list[str] = []
    count = 0
    stack: list[tuple[JsonValue, JsonValue, list[str | int]]] = [(left, right, [])]
    while stack:
        a, b, path = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(a.keys() | b.keys(), reverse=True):
                if key not in a or key not in b:
                    count += 1
                    if len(found) < limit:
                        found.append(json_pointer([*path, key]))
                else:
                    stack.append((a[key], b[key], [*path, key]))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            stack.extend((x, y, [*path, index]) for index, (x, y) in reversed(list(enumerate(zip(a, b, strict=True)))))
        elif not json_equal(a, b):
            count += 1
            if len(found) < limit:
                found.append(json_pointer(path) or "/")
    return found, count


def check_transition(before: dict[str, Any], text: str, after: dict[str, Any], *, names: Names,
                     at: int | None) -> dict[str, Any] | None:
    """None when ``text`` applied to ``before`` gives ``after``'s ``stat_data``; else what
    differs: ``paths`` and ``count``, or ``error`` (the code of a reply refused whole)."""
    try:
        # ``before`` is a state the import stored (checked then): the parts commands read are the
        # private envelope, since commands never change a state, they build the next one. The rest
        # (display_data, delta_data, the card's own keys) is left out: the run would only measure it.
        envelope: dict[str, Any] = {key: before[key] for key in ("stat_data", "schema", "mvu_schema") if key in before}
        commands = parse_commands(substitute(text, names))
        got = before["stat_data"]
        if commands:  # a reply without commands leaves the state as it was
            declared = DeclaredSchema.of(envelope, at)
            # Only stat_data is compared: the envelope is not finished (no schema reconciled, no
            # budget measured), which the service does to store a state, not to compare one.
            run, _ = execute_commands(envelope, commands, declared, declared.check if declared is not None else None)
            got = run.stat_data
    except MvuError as error:
        return {"paths": [], "count": 0, "error": error.code}
    recorded = after.get("stat_data")
    # Equal marshal bytes are the same values of the same types in the same order, so equal JSON:
    # the usual case decided at C speed, a third of encoding both. Version 2 writes no
    # back-references, so how values are shared does not change the bytes; anything else
    # (another key order, 5.0 against 5) is left to the exact walk.
    if marshal.dumps(got, 2) == marshal.dumps(recorded, 2):
        return None
    paths, count = differing_paths(got, recorded)
    return {"paths": paths, "count": count} if count else None
