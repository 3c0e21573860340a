"""Building each command's outcome as an update runs it, and the ``update_diagnostics`` they make.

:mod:`mvu_store.lang.apply` calls :func:`run_outcome` / :func:`refused_outcome` for every command
it runs; :func:`merged_outcomes` puts them in text order with what reading the reply ignored.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue, json_pointer
from mvu_store.lang.commands import Command
from mvu_store.lang.outcomes import MAX_IGNORED, NO_OP, SCRIPT_FILTERED, STRIPPED, CommandOutcome, ReplyNotes, clipped
from mvu_store.lang.paths import format_path


def _ignored_message(reason: str, path: str) -> str:
    path = path or "stat_data"
    if reason == STRIPPED:
        return f"the card's schema dropped what was written at {path!r}: it does not keep that key"
    return f"{path!r} already holds this value: nothing changed"


def run_outcome(command: Command, index: int, changes: list[dict[str, Any]], ignored: str | None) -> CommandOutcome:
    """The outcome of a command that ran: its first real change, or why it changed nothing
    (``ignored``, a reason of :mod:`~mvu_store.lang.outcomes`)."""
    if not changes:
        reason = ignored or NO_OP
        return CommandOutcome("ignored", clipped(command.full_match), command.start, command.end, index,
                              op=command.type, path=json_pointer(list(command.path)), reason=reason,
                              message=clipped(_ignored_message(reason, format_path(command.path))),
                              patch_index=command.patch_index)
    change = changes[0]
    return CommandOutcome("applied", clipped(command.full_match), command.start, command.end, index,
                          op=command.type, path=change["path"],
                          before=(change["previous"],) if "previous" in change else (),
                          after=(change["value"],) if "value" in change else (),
                          key=(change["key"],) if "key" in change else (), patch_index=command.patch_index)


def refused_outcome(command: Command, index: int, error: MvuError) -> CommandOutcome:
    """A command refused for an ordinary reason (its diagnostic): the message names the path."""
    dotted = format_path(command.path)
    message = error.message if not dotted or dotted in error.message else f"{dotted!r}: {error.message}"
    return CommandOutcome("refused", clipped(command.full_match), command.start, command.end, index,
                          op=command.type, path=json_pointer(list(command.path)), code=error.code,
                          message=clipped(message), patch_index=command.patch_index)


def filtered_notes(notes: ReplyNotes, offered: tuple[Command, ...], chosen: tuple[Command, ...]) -> ReplyNotes:
    """``notes`` with every command of ``offered`` that a command processor left out of
    ``chosen`` (a filtered subsequence of it) ignored as ``script_filtered``."""
    if len(chosen) >= len(offered):
        return notes  # nothing dropped (a repair offers commands the reply's text did not have)
    remaining = iter(chosen)
    following = next(remaining, None)
    dropped: list[CommandOutcome] = []
    for command in offered:
        if following is not None and command == following:
            following = next(remaining, None)
            continue
        dropped.append(CommandOutcome(
            "ignored", clipped(command.full_match), command.start, command.end, op=command.type,
            path=json_pointer(list(command.path)), reason=SCRIPT_FILTERED,
            message="the card's command processor dropped this command before it ran",
            patch_index=command.patch_index))
    room = max(0, MAX_IGNORED - len(notes.ignored))
    ignored = tuple(sorted((*notes.ignored, *dropped[:room]), key=lambda item: (item.start, item.patch_index or 0)))
    return replace(notes, ignored=ignored, ignored_total=notes.ignored_total + len(dropped))


def merged_outcomes(ran: list[CommandOutcome], notes: ReplyNotes) -> tuple[CommandOutcome, ...]:
    """The commands that ran and those reading ignored, in text order (a block's operations in
    their order)."""
    if not notes.ignored:
        return tuple(ran)
    return tuple(sorted((*ran, *notes.ignored), key=lambda outcome: (outcome.start, outcome.patch_index or 0)))


def update_diagnostics(outcomes: tuple[CommandOutcome, ...], notes: ReplyNotes) -> list[dict[str, JsonValue]]:
    """What a version's ``update_diagnostics`` lists: every command that did not apply (refused or
    ignored), then the near-misses, each possible command with the reply's ``total`` of them."""
    listed = [outcome.to_json() for outcome in outcomes if outcome.kind != "applied"]
    listed.extend({**outcome.to_json(), "total": notes.possible_total} for outcome in notes.possible)
    return listed
