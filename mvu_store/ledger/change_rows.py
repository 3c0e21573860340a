"""The ``changes`` rows of one version: what a :class:`ChangeRow` becomes in the table, within its
bounds, and the rows two stored states show when nothing else recorded them (back-fill, import).

Every path that writes a version writes its rows through :func:`table_rows` (a commit, a chat's
import, ``mvu import``, the migration's back-fill), and so does a resource's creation (an
instance's opening, at :data:`CREATION_POSITION`), so each bounds them the same way:

- a value (``before``/``after``) whose canonical JSON is longer than :data:`MAX_VALUE_BYTES` is
  stored as SQL NULL with ``omitted`` set: the version's state holds it, and a row stays small
  whatever the state (a whole 2 MiB ``stat_data`` replaced costs a row, not 4 MiB);
- a version keeps at most :data:`MAX_CHANGES_PER_VERSION` rows: the first ones in order, the last
  of which then says how many more there were (``reason`` :data:`TRUNCATED`), so a write is never
  refused for what it changed;
- ``command`` and ``message`` are cut to :data:`MAX_TEXT_CHARS` characters, ``op``, ``code`` and
  ``reason`` to their columns' widths, and text no column can hold (NUL, which PostgreSQL refuses,
  and lone surrogates, which UTF-8 cannot carry) is replaced, so untrusted reply text can never
  fail the write it describes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mvu_store.json_diff import json_diff
from mvu_store.jsonvalue import JsonValue, dumps
from mvu_store.ledger.records import ChangeActor, ChangeRow

CREATION_POSITION = -1
"""The ``position`` of the rows a resource's creation wrote (revision 0): what the opening changed
in the template's initial data, before the resource's first version (position 0)."""
MAX_VALUE_BYTES = 1024
"""The longest canonical JSON (UTF-8 bytes) a row keeps inline as ``before`` or ``after``."""
MAX_CHANGES_PER_VERSION = 1024
"""The most rows one version writes (the last then marks the rest as left out)."""
MAX_TEXT_CHARS = 1024
"""The longest ``command`` or ``message`` a row keeps (characters; longer ones are cut)."""
TRUNCATED = "truncated"
"""The ``reason`` of the row that stands for the rows a version had beyond the cap."""

_WIDTHS = {"op": 32, "code": 64, "reason": 32}
"""The ``String`` columns' widths (``tables.changes``): longer values are cut to fit."""

KIND_ACTORS: dict[str, ChangeActor] = {
    "reply": "reply", "failed": "reply", "manual": "manual", "card": "script", "initial": "initial",
    "import": "import",
    # A fork child's copy of its parent's entry, as the original's files hold it: the parent's
    # turns, whose flags the copy no longer carries.
    "inherited": "reply",
}
"""Who wrote a version of each kind, for rows derived from stored states."""


def table_rows(changes: Iterable[ChangeRow], *, resource_id: str, position: int, revision: int,
               session_id: str | None, message_seq: int | None, derived: bool = False) -> list[dict[str, Any]]:
    """The ``changes`` rows (without ``ledger_id`` and ``bytes``, which the store adds) of the
    version at ``position``, within the bounds above."""
    rows: list[dict[str, Any]] = []
    more = 0
    for change in changes:
        if len(rows) == MAX_CHANGES_PER_VERSION:
            more += 1
            continue
        before, before_omitted = _value(change.before)
        after, after_omitted = _value(change.after)
        rows.append({
            "resource_id": resource_id, "position": position, "seq": len(rows), "revision": revision,
            "session_id": session_id, "turn": change.turn, "message_seq": message_seq,
            "path": column_text(change.path), "op": _clip(change.op, _WIDTHS["op"]), "status": change.status,
            "actor": change.actor, "before": before, "after": after, "omitted": before_omitted or after_omitted,
            "command": _clip(change.command, MAX_TEXT_CHARS), "code": _clip(change.code, _WIDTHS["code"]),
            "reason": _clip(change.reason, _WIDTHS["reason"]), "message": _clip(change.message, MAX_TEXT_CHARS),
            "derived": derived,
        })
    if more:
        # The last row kept gives its place to the one that says what is missing.
        last = rows[-1]
        rows[-1] = {**last, "path": "", "op": None, "status": "ignored", "before": None, "after": None,
                    "omitted": False, "command": None, "code": None, "reason": TRUNCATED,
                    "message": f"at least {more + 1} more changes of this version are not listed: its state holds "
                               "what they changed"}
    return rows


def derived_changes(before: JsonValue, after: JsonValue, *, kind: str, error: str | None,
                    source: str) -> list[ChangeRow]:
    """The rows two consecutive stored states show: each path of ``stat_data`` that differs
    (the actor by the version's ``kind``, the turn its ``source`` text names); a failed version's
    one refusal (``error``, path '')."""
    actor = KIND_ACTORS.get(kind, "reply")
    turn = _turn(source)
    if kind == "failed":
        return [ChangeRow("", "refused", actor, code=error, turn=turn)]
    return state_changes(_stat_data(before), _stat_data(after), actor, turn=turn)


def state_changes(before: JsonValue, after: JsonValue, actor: ChangeActor, *,
                  turn: int | None = None) -> list[ChangeRow]:
    """The applied rows of a write that replaced ``stat_data`` ``before`` with ``after`` as a
    whole (an edit, an import, the opening): one per path that differs (:func:`json_diff`)."""
    # One past the cap, so table_rows sees that there were more.
    diff = json_diff(before, after, limit=MAX_CHANGES_PER_VERSION + 1)
    return [ChangeRow(d.path, "applied", actor, op=d.op, before=d.before, after=d.after, turn=turn)
            for d in diff.differences]


def _turn(source: str) -> int | None:
    """The turn a version's source names (a reply's and an imported message's do)."""
    turn = json.loads(source).get("turn") if '"turn"' in source else None
    return turn if type(turn) is int else None


def _stat_data(state: JsonValue) -> JsonValue:
    """The variables of a stored envelope (``{}`` when it has none)."""
    return state.get("stat_data", {}) if isinstance(state, dict) else {}


def _value(held: tuple[JsonValue, ...]) -> tuple[str | None, bool]:
    """A value's stored text and whether it was left out for its size (no value: NULL, kept)."""
    if not held:
        return None, False
    value = held[0]
    # An integer (most values a turn changes) is its own canonical JSON: no encoder call.
    text = str(value) if type(value) is int else column_text(dumps(value))
    if len(text) > MAX_VALUE_BYTES // 4 and len(text.encode()) > MAX_VALUE_BYTES:
        return None, True
    return text, False


def _clip(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    return column_text(text if len(text) <= limit else text[:limit - 1] + "…")


def column_text(text: str) -> str:
    """``text`` as a column can hold it: NUL replaced, a lone surrogate written as its escape
    (``\\ud800``: inside canonical JSON, which escapes NUL itself, the same value)."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode()
    return text
