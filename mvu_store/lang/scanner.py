"""Linear-time location of MagVarUpdate's closing parentheses.

MagVarUpdate finds the end of ``_.set(`` by counting parentheses from the ``(``, with quote
state toggled by ``"``, ``'`` or `````` (when the previous character is not ``\\``); if no
close is found it resumes right after the ``(``. Run naively, thousands of unclosed
``_.set(`` prefixes cost quadratic time. We compute every candidate's close in one pass.

Why one pass is enough: each character maps the quote state (none, ``"``, ``'``, `````) to a
new state by a *permutation* (a quote character swaps "none" with itself; anything else is the
identity). So scans started at different places never merge or split: at any position there
are at most four "tracks", one per state, and a scan is always on exactly one of them. Each
track keeps a parenthesis balance, and the scans on it wait for the balance to come back to
where they started.

Most calls are short and hold no nested parenthesis: :func:`simple_close` finds their close
with one bounded, non-backtracking regular expression, and the track scan runs only for the
rest.
"""

from __future__ import annotations

import re

_INTERESTING = re.compile(r"[()\"'`]")
# "(", then plain characters, escaped quotes and whole quoted runs, then ")". A quote preceded
# by a backslash toggles nothing (the lookbehinds); inside a quoted run only its own unescaped
# quote ends it. The possessive loops never backtrack, so a failure costs the window at most.
_SIMPLE_CALL = re.compile(
    r"""\((?:[^()"'`]++|(?<=\\)["'`]|"(?:[^"]++|(?<=\\)")*+"|'(?:[^']++|(?<=\\)')*+'|`(?:[^`]++|(?<=\\)`)*+`)*+\)"""
)
SIMPLE_WINDOW = 1024
"""The characters :func:`simple_close` looks at after a ``(``."""


class _Track:
    __slots__ = ("balance", "levels", "starts")

    def __init__(self) -> None:
        self.balance = 0
        # Parallel stacks, levels ascending: a candidate closes when the balance drops back to
        # its level, and only the top one can be next.
        self.levels: list[int] = []
        self.starts: list[int] = []


def simple_close(text: str, open_at: int) -> int | None:
    """The close of the ``(`` at ``open_at`` if no other ``(`` lies outside quotes before it.

    ``None`` means "unknown" (a nested or unquoted ``(``, an unclosed quote, or no close within
    :data:`SIMPLE_WINDOW` characters): ask :func:`find_closes`. A found close is the exact one.
    """
    match = _SIMPLE_CALL.match(text, open_at, open_at + SIMPLE_WINDOW)
    return match.end() - 1 if match else None


def find_closes(text: str, opens: list[int]) -> dict[int, int]:
    """For each ``(`` position in ``opens`` (ascending), the position of its matching ``)``.

    Candidates with no matching ``)`` are absent from the result.
    """
    closes: dict[int, int] = {}
    if not opens:
        return closes
    # tracks[state] is the track currently in that quote state ("" = outside quotes).
    tracks: dict[str, _Track] = {}
    pending = 0  # next candidate in ``opens`` not yet started
    open_count = 0
    position = opens[0]
    while True:
        if open_count == 0:
            if pending == len(opens):
                break
            # No scan is running: the quote state of the text before this point is irrelevant.
            tracks = {"": _Track(), '"': _Track(), "'": _Track(), "`": _Track()}
            position = opens[pending]
        match = _INTERESTING.search(text, position)
        next_start = opens[pending] if pending < len(opens) else len(text)
        if match is None or match.start() > next_start:
            if pending == len(opens):
                break
            at = next_start
        else:
            at = match.start()
        char = text[at]
        position = at + 1
        if char in "\"'`":
            if at > 0 and text[at - 1] == "\\":
                continue
            tracks[""], tracks[char] = tracks[char], tracks[""]
            continue
        outside = tracks[""]
        if char == "(":
            if pending < len(opens) and opens[pending] == at:
                outside.levels.append(outside.balance)
                outside.starts.append(at)
                pending += 1
                open_count += 1
            outside.balance += 1
        else:
            outside.balance -= 1
            if outside.levels and outside.levels[-1] == outside.balance:
                outside.levels.pop()
                closes[outside.starts.pop()] = at
                open_count -= 1
    return closes
