"""What became of each command of a reply: applied, refused, ignored, or only a possible command.

One :class:`CommandOutcome` per command found in a reply (and per near-miss that only looks like
one), frozen and JSON-serialisable (:meth:`CommandOutcome.to_json`), so that a host, the stored
version and later an audit table can all say why a value did or did not change. Replies are
untrusted: every text an outcome carries is cut to :data:`MAX_OUTCOME_TEXT` characters and the
outcomes a reply may produce without running are counted beyond a cap (:class:`Noted`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from mvu_store.jsonvalue import JsonValue

MAX_OUTCOME_TEXT = 200
"""Characters of a command's text (or of a message) an outcome keeps."""
MAX_IGNORED = 64
"""Ignored commands one reply reports by name (the rest are only counted)."""
MAX_POSSIBLE = 32
"""Possible commands (near-misses) one reply reports by name (the rest are only counted)."""

Kind = Literal["applied", "refused", "ignored", "possible"]

# Why a command did not run, or ran without a real change (the ``reason`` of an ignored outcome).
UNCLOSED = "unclosed"
"""``_.set('hp', 50`` with no ``)`` closing the call."""
NO_TERMINATOR = "no_terminator"
"""A closed call not followed by ``;`` (MagVarUpdate drops it too)."""
ARGUMENTS = "arguments"
"""The wrong number of arguments for the command."""
THINKING = "thinking"
"""Inside a closed ``<thinking>`` / ``<think>`` block: the model's draft."""
UNKNOWN_OP = "unknown_op"
"""A JSON Patch operation MagVarUpdate does not run (``copy``, ``test``, an unknown ``op``)."""
UNCLOSED_BLOCK = "unclosed_block"
"""A ``<JSONPatch>`` with no matching closing tag."""
UNREADABLE_BLOCK = "unreadable_block"
"""A JSON Patch block whose body is not an array of operations."""
NO_OP = "no_op"
"""The command ran and changed nothing (the value was already there)."""
STRIPPED = "stripped"
"""The card's declaration dropped what the command wrote (a key its ``z.object`` strips)."""
SCRIPT_FILTERED = "script_filtered"
"""The card's command processor (its script) dropped the command before it ran."""
LOOKS_LIKE_COMMAND = "looks_like_command"
"""Text shaped like a command that the extractor does not read as one (a possible command)."""


def clipped(text: str) -> str:
    """``text`` cut to :data:`MAX_OUTCOME_TEXT` characters (an ellipsis says it was cut)."""
    return text if len(text) <= MAX_OUTCOME_TEXT else text[: MAX_OUTCOME_TEXT - 1] + "…"


class CommandOutcome(NamedTuple):
    """One command of a reply and what became of it.

    ``start``/``end`` locate the command in the reply (after macro substitution); ``ran_index``
    is its place among the commands that ran (None for one that never ran; ``index`` in JSON, a
    name a tuple keeps for its own method). ``before``/``after`` hold the value at ``path``
    before and after an applied command: an empty tuple means there was no value (a key
    created, or removed). ``code`` and ``message`` say why a command was
    refused (an error code) or ignored (``reason`` is then one of this module's reasons).

    A named tuple rather than a frozen dataclass: every command of every turn builds one, and a
    tuple costs a fifth of a frozen dataclass's field-by-field ``__init__`` (docs/performance.md).
    """

    kind: Kind
    command: str
    start: int
    end: int
    ran_index: int | None = None
    op: str | None = None
    path: str | None = None
    before: tuple[JsonValue, ...] = ()
    after: tuple[JsonValue, ...] = ()
    key: tuple[JsonValue, ...] = ()
    """The key an insert wrote under (empty: an append or a merge)."""
    code: str | None = None
    reason: str | None = None
    message: str | None = None
    patch_index: int | None = None

    def to_json(self, *, values: bool = True) -> dict[str, JsonValue]:
        """The outcome as camelCase JSON; absent values are left out (``values`` false: ``before``,
        ``after`` and ``key`` too, as a version's ``meta`` keeps an applied command)."""
        # Spelled out field by field: this runs for every command of every turn, twice.
        data: dict[str, JsonValue] = {"kind": self.kind, "command": self.command, "start": self.start,
                                      "end": self.end}
        if self.ran_index is not None:
            data["index"] = self.ran_index
        if self.op is not None:
            data["op"] = self.op
        if self.path is not None:
            data["path"] = self.path
        if self.code is not None:
            data["code"] = self.code
        if self.reason is not None:
            data["reason"] = self.reason
        if self.message is not None:
            data["message"] = self.message
        if self.patch_index is not None:
            data["patchIndex"] = self.patch_index
        if values:
            if self.before:
                data["before"] = self.before[0]
            if self.after:
                data["after"] = self.after[0]
            if self.key:
                data["key"] = self.key[0]
        return data


@dataclass(slots=True)
class Noted:
    """Outcomes found while reading a reply (ignored commands, possible commands), capped."""

    ignored: list[CommandOutcome] = field(default_factory=list)
    ignored_total: int = 0
    possible: list[CommandOutcome] = field(default_factory=list)
    possible_total: int = 0

    def ignore(self, text: str, start: int, end: int, reason: str, message: str, *, command: str | None = None,
               op: str | None = None, patch_index: int | None = None,
               path: Callable[[], str | None] | None = None) -> None:
        """Note an ignored command at ``text[start:end]`` (``command``: its own text instead;
        ``path``: the JSON pointer it names, asked only of a command that is listed)."""
        self.ignored_total += 1
        if len(self.ignored) < MAX_IGNORED:
            shown = command if command is not None else text[start : min(end, start + MAX_OUTCOME_TEXT)]
            self.ignored.append(CommandOutcome("ignored", clipped(shown), start, end, op=op,
                                               path=path() if path is not None else None, reason=reason,
                                               message=clipped(message), patch_index=patch_index))

    def maybe(self, text: str, start: int, end: int, message: str) -> None:
        self.possible_total += 1
        if len(self.possible) < MAX_POSSIBLE:
            shown = text[start : min(end, start + MAX_OUTCOME_TEXT)]
            self.possible.append(CommandOutcome("possible", clipped(shown), start, end,
                                                reason=LOOKS_LIKE_COMMAND, message=clipped(message)))

    def frozen(self) -> ReplyNotes:
        return ReplyNotes(tuple(sorted(self.ignored, key=_place)), self.ignored_total,
                          tuple(sorted(self.possible, key=_place)), self.possible_total)


def _place(outcome: CommandOutcome) -> tuple[int, int]:
    return outcome.start, outcome.patch_index or 0


@dataclass(frozen=True, slots=True)
class ReplyNotes:
    """What reading a reply noted besides its commands: what it ignored and its near-misses."""

    ignored: tuple[CommandOutcome, ...] = ()
    ignored_total: int = 0
    possible: tuple[CommandOutcome, ...] = ()
    possible_total: int = 0


EMPTY_NOTES = ReplyNotes()
