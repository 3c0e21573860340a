"""The answers of ``MvuService.changes_json`` and ``MvuService.diff_json``: the JSON of
:meth:`Changes.to_json <mvu_store.service.models.Changes.to_json>` and
:meth:`StateDiff.to_json <mvu_store.service.models.StateDiff.to_json>`, written straight from what
the ledger read.

A story's page holds up to a thousand changes: as models, each would cost a model, a dict and the
encoder's walk of its values, several times what reading its row costs. Here a change is one
string made from its entry, its values spliced in as the canonical JSON text the table keeps
(``before``/``after`` are never decoded), its strings quoted once per page when they repeat
(the owner, the session, the path, codes). A diff's differences are plain dicts given to the
encoder once. The same answers as the models' ``to_json()``: ``tests/service/test_change_json.py``
compares them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring

from mvu_store.json_diff import Diff
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import ChangeEntry, StatePoint

_BOOL = ("false", "true")


def changes_text(resource_id: str, entries: Sequence[ChangeEntry], next_before: int | None,
                 truncated: bool) -> bytes:
    """The JSON of a :class:`~mvu_store.service.models.Changes` of ``entries``, UTF-8."""
    quoted = _quoter()
    changes = ",".join([_change(entry, quoted) for entry in entries])
    return (f'{{"id":{encode_basestring(resource_id)},"changes":[{changes}],'
            f'"nextBefore":{"null" if next_before is None else next_before},"truncated":{_BOOL[truncated]}}}'
            ).encode()


def _quoter() -> Callable[[str], str]:
    """A JSON string of a text, each text quoted once (the texts a page repeats)."""
    quoted: dict[str, str] = {}

    def quote(text: str) -> str:
        found = quoted.get(text)
        if found is None:
            found = quoted[text] = encode_basestring(text)
        return found

    return quote


def _change(entry: ChangeEntry, quote: Callable[[str], str]) -> str:
    # The keys in Change.to_json's order; absent optional fields are left out as there. One
    # string per change, no list or dict in between: a page writes a thousand.
    session_id, turn, message_seq, op = entry.session_id, entry.turn, entry.message_seq, entry.op
    before, after, command, code = entry.before_text, entry.after_text, entry.command, entry.code
    reason, message = entry.reason, entry.message
    return "".join((
        '{"resourceId":', quote(entry.resource_id), ',"inherited":', _BOOL[entry.inherited],
        ',"position":', str(entry.position), ',"revision":', str(entry.revision), ',"seq":', str(entry.seq),
        "" if session_id is None else ',"sessionId":' + quote(session_id),
        "" if turn is None else ',"turn":' + str(turn),
        "" if message_seq is None else ',"messageSeq":' + str(message_seq),
        ',"path":', quote(entry.path), "" if op is None else ',"op":' + quote(op),
        ',"status":', quote(entry.status), ',"actor":', quote(entry.actor),
        "" if before is None else ',"before":' + before, "" if after is None else ',"after":' + after,
        ',"omitted":', _BOOL[entry.omitted],
        "" if command is None else ',"command":' + encode_basestring(command),
        "" if code is None else ',"code":' + quote(code), "" if reason is None else ',"reason":' + quote(reason),
        "" if message is None else ',"message":' + encode_basestring(message),
        ',"derived":', _BOOL[entry.derived], "}"))


def diff_text(before: StatePoint, after: StatePoint, found: Diff) -> bytes:
    """The JSON of a :class:`~mvu_store.service.models.StateDiff` of ``found`` between two points, UTF-8."""
    changes: list[dict[str, JsonValue]] = []
    for difference in found.differences:
        change: dict[str, JsonValue] = {"path": difference.path, "op": difference.op}
        if difference.before:
            change["before"] = difference.before[0]
        if difference.after:
            change["after"] = difference.after[0]
        changes.append(change)
    data = {"from": _point(before), "to": _point(after), "changes": changes, "truncated": found.truncated}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def _point(point: StatePoint) -> dict[str, JsonValue]:
    return {"id": point.resource_id, "revision": point.revision, "versionKey": point.version_key}
