"""The ``changes`` rows a version commits (:attr:`~mvu_store.ledger.CommitRequest.changes`), for
every actor that writes one: what a row of each says is decided here, once.

- a reply (``reply``): one row per command found in it, from the outcomes the update already
  computed (no second diff of the state): an applied command with its path, op, before and
  after; a refused one with its code and message; an ignored one with its reason. A *possible*
  command (text that only looks like one) is no command and has no row: the version's
  ``update_diagnostics`` and the turn's outcome list it;
- a failed reply: one refused row, at the path the failure names (``''`` when it names none);
- a manual edit (``manual``), a card script's write (``script``): the difference between the
  ``stat_data`` before and after, path by path (:func:`~mvu_store.ledger.state_changes`, the
  diff an imported chat's versions and the migration's back-fill use too);
- an opening (``opening``), written with the instance it opens (no version): the difference its
  greeting made to the template's initial data, then its commands that ran without a change.

The ledger bounds what a version keeps (``ledger.change_rows``: at most 1,024 rows, the last
then saying how many more there were; large values left out): the rows here are never cut.
"""

from __future__ import annotations

from collections.abc import Iterable

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue, json_pointer
from mvu_store.lang.outcomes import CommandOutcome, clipped
from mvu_store.ledger import state_changes
from mvu_store.ledger.records import ChangeActor, ChangeRow
from mvu_store.service.failures import failure_path

UNLISTED = "unlisted"
"""The reason of the row that counts a reply's ignored commands its outcomes do not name."""


def reply_rows(outcomes: Iterable[CommandOutcome], turn: int, *,
               ignored_total: int | None = None) -> tuple[ChangeRow, ...]:
    """A reply's rows: one per command outcome, in text order (possible commands left out).
    ``ignored_total``: the ignored commands the reply had in all, when ``outcomes`` names only
    some of them (the rest are counted in the truncation row)."""
    rows = [_outcome_row(outcome, turn) for outcome in outcomes if outcome.kind != "possible"]
    unnamed = 0
    if ignored_total is not None:
        unnamed = max(0, ignored_total - sum(1 for row in rows if row.status == "ignored"))
    if unnamed:
        rows.append(ChangeRow(path="", status="ignored", actor="reply", reason=UNLISTED, turn=turn,
                              message=f"{unnamed} more ignored commands of this reply are not listed"))
    return tuple(rows)


def opening_rows(before: JsonValue, after: JsonValue, outcomes: Iterable[CommandOutcome]) -> tuple[ChangeRow, ...]:
    """An opening's rows: each path of ``stat_data`` its greeting changed, ``before`` (the
    template's initial data with the session's names) to ``after`` (its blocks applied, its
    ``<initvar>`` data and the declaration's parse included), then each of its commands that ran
    and changed nothing (ignored: a no-op, a value the declaration strips). A refused command
    refuses the whole opening, so none has a row. No turn: the opening is not one."""
    ignored = [_outcome_row(outcome, None, actor="opening") for outcome in outcomes if outcome.kind == "ignored"]
    return (*state_changes(before, after, "opening"), *ignored)


def _outcome_row(outcome: CommandOutcome, turn: int | None, *, actor: ChangeActor = "reply") -> ChangeRow:
    status = outcome.kind
    assert status != "possible"
    return ChangeRow(path=_changed_path(outcome), status=status, actor=actor, op=outcome.op, before=outcome.before,
                     after=outcome.after, command=outcome.command, code=outcome.code, reason=outcome.reason,
                     message=outcome.message, turn=turn)


def failure_rows(error: MvuError, turn: int | None, *, actor: ChangeActor = "reply") -> tuple[ChangeRow, ...]:
    """A failed version's one row: refused, with the failure's code and message, at the JSON
    pointer it names (``''`` when it names none; the message names a path it spells otherwise)."""
    return (ChangeRow(path=failure_path(error), status="refused", actor=actor,
                      code=error.code, message=clipped(error.message), turn=turn),)


def _changed_path(outcome: CommandOutcome) -> str:
    """The pointer whose value the row's before/after are: an insert under a key names the key
    (``_.insert('', 'extra', 1)`` set ``/extra``), an append or a merge its container."""
    path = outcome.path or ""
    if not outcome.key or not isinstance(outcome.key[0], (str, int)) or isinstance(outcome.key[0], bool):
        return path
    return path + json_pointer([outcome.key[0]])
