"""The ``changes`` rows a version commits (:attr:`~mvu_store.ledger.CommitRequest.changes`), for
every actor that writes one: what a row of each says is decided here, once.

- a reply (``reply``): one row per command found in it, from the outcomes the update already
  computed (no second diff of the state): an applied command with its path, op, before and
  after; a refused one with its code and message; an ignored one with its reason. A *possible*
  command (text that only looks like one) is no command and has no row: the version's
  ``update_diagnostics`` and the turn's outcome list it;
- a failed reply: one refused row, at the path the failure names (``''`` when it names none);
- a manual edit (``manual``), a card script's write (``script``), an imported chat's version
  (``import``): the difference between the ``stat_data`` before and after, path by path
  (:func:`~mvu_store.json_diff.json_diff`).

A version lists at most :data:`MAX_CHANGE_ROWS` rows (the ledger refuses more); beyond it the
last row says how many more there were (status ``ignored``, reason ``truncated``).
"""

from __future__ import annotations

from collections.abc import Iterable

from mvu_store.errors import MvuError
from mvu_store.json_diff import json_diff
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.outcomes import CommandOutcome, clipped
from mvu_store.ledger.records import ChangeActor, ChangeRow
from mvu_store.service.failures import failure_path

MAX_CHANGE_ROWS = 1_024
"""Rows one version writes at most (a whole 2 MiB state replaced by an edit would list each key)."""

TRUNCATED = "truncated"
"""The reason of the row that ends a list cut at :data:`MAX_CHANGE_ROWS`."""


def reply_rows(outcomes: Iterable[CommandOutcome], turn: int, *,
               ignored_total: int | None = None) -> tuple[ChangeRow, ...]:
    """A reply's rows: one per command outcome, in text order (possible commands left out).
    ``ignored_total``: the ignored commands the reply had in all, when ``outcomes`` names only
    some of them (the rest are counted in the truncation row)."""
    rows = [_outcome_row(outcome, turn) for outcome in outcomes if outcome.kind != "possible"]
    unnamed = 0
    if ignored_total is not None:
        unnamed = max(0, ignored_total - sum(1 for row in rows if row.status == "ignored"))
    return _capped(rows, "reply", turn, unnamed)


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


def diff_rows(before: JsonValue, after: JsonValue, actor: ChangeActor, turn: int | None) -> tuple[ChangeRow, ...]:
    """The rows of a write that replaced ``before`` (a ``stat_data``) with ``after``: one per
    path whose value differs (add / remove / replace)."""
    diff = json_diff(before, after, limit=MAX_CHANGE_ROWS)
    rows = [ChangeRow(path=item.path, status="applied", actor=actor, op=item.op, before=item.before,
                      after=item.after, turn=turn) for item in diff.differences]
    # A truncated diff does not say how many more there were: at least one.
    return _capped(rows, actor, turn, 1 if diff.truncated else 0)


def _capped(rows: list[ChangeRow], actor: ChangeActor, turn: int | None, unnamed: int) -> tuple[ChangeRow, ...]:
    """``rows`` within :data:`MAX_CHANGE_ROWS`, the last one saying what was left out."""
    if len(rows) + (1 if unnamed else 0) <= MAX_CHANGE_ROWS:
        kept = rows
    else:
        kept = rows[: MAX_CHANGE_ROWS - 1]
        unnamed += len(rows) - len(kept)
    if not unnamed:
        return tuple(kept)
    more = f"{unnamed} more" if actor == "reply" else "more"
    return (*kept, ChangeRow(path="", status="ignored", actor=actor, reason=TRUNCATED, turn=turn,
                             message=f"{more} not listed: a version lists at most {MAX_CHANGE_ROWS:,} changes"))
