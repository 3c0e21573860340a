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
  diff an imported chat's versions and the migration's back-fill use too).

The ledger bounds what a version keeps (``ledger.change_rows``: at most 1,024 rows, the last
then saying how many more there were; large values left out): the rows here are never cut.
"""

from __future__ import annotations

from collections.abc import Iterable

from mvu_store.errors import MvuError
from mvu_store.lang.outcomes import CommandOutcome, clipped
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


def _outcome_row(outcome: CommandOutcome, turn: int) -> ChangeRow:
    status = outcome.kind
    assert status != "possible"
    return ChangeRow(path=outcome.path or "", status=status, actor="reply", op=outcome.op, before=outcome.before,
                     after=outcome.after, command=outcome.command, code=outcome.code, reason=outcome.reason,
                     message=outcome.message, turn=turn)


def failure_rows(error: MvuError, turn: int | None, *, actor: ChangeActor = "reply") -> tuple[ChangeRow, ...]:
    """A failed version's one row: refused, with the failure's code and message, at the JSON
    pointer it names (``''`` when it names none; the message names a path it spells otherwise)."""
    return (ChangeRow(path=failure_path(error), status="refused", actor=actor,
                      code=error.code, message=clipped(error.message), turn=turn),)
