"""The URLs a card script imports, found in one linear pass.

A script imports a URL as ``import 'https://…'``, ``import('https://…')`` or
``import { a, b } from "https://…"``. The matches are exactly those of the regular expression

    \\bimport\\s*(?:\\(\\s*|[\\w$*{}\\s,]+?\\sfrom\\s*)?(['"`])(https?://[^'"`\\s]+)\\1

searched left to right without overlap, which the package used until a card of repeated
``import `` made it rescan to the end from every ``import`` (40 KB of script: 8 s). Here every
``\\sfrom <url>`` tail that can end a match is found once, in one pass; each ``import`` then
asks for the first such tail inside its run of specifier characters (a binary search), and that
run's end is shared by every ``import`` inside it, and the imports of a run that has no tail
left are skipped to its end, so no character is looked at more than a bounded number of
times.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

_IMPORT = re.compile(r"\bimport")
_SPACES = re.compile(r"\s*")
_URL = re.compile(r"https?://[^'\"`\s]+")
_NOT_SPECIFIER = re.compile(r"[^\w$*{}\s,]")  # the end of an `{ a, b as c } ` run
_FROM = re.compile(r"(?<=\s)from")
_QUOTES = "'\"`"


@dataclass(frozen=True, slots=True)
class ImportedUrl:
    start: int
    end: int
    url: str


def imported_urls(text: str) -> Iterator[ImportedUrl]:
    """Every imported URL of ``text`` in order (the regular expression's matches)."""
    tails = _from_tails(text)
    tail_starts = [start for start, _, _ in tails]
    run_start, run_end = -1, -1  # the last specifier run measured: every position in it ends at run_end
    position = 0
    while (found := _IMPORT.search(text, position)) is not None:
        after = found.end()
        spaced = _SPACES.match(text, after).end()  # type: ignore[union-attr]  # \s* always matches
        if not run_start <= spaced < run_end:
            run_start = spaced
            end = _NOT_SPECIFIER.search(text, spaced)
            run_end = len(text) if end is None else end.start()
        match = _at(text, spaced, after, run_end, tails, tail_starts)
        if match is None:
            position = found.start() + 1
            if spaced < run_end:
                # No tail lies between here and the run's end, so every later ``import`` whose spaces
                # end inside the run fails too: only one whose spaces reach the run's end (and the
                # quote or parenthesis there) can match, and it ends in the spaces before that end.
                spaces_start = run_end
                while spaces_start > spaced and text[spaces_start - 1].isspace():  # `\s` is str.isspace
                    spaces_start -= 1
                position = max(position, spaces_start - len("import"))
            continue
        yield ImportedUrl(found.start(), match[0], match[1])
        position = match[0]


def _at(text: str, spaced: int, after: int, run_end: int, tails: list[tuple[int, int, str]],
        tail_starts: list[int]) -> tuple[int, str] | None:
    """The match of an ``import`` whose spaces end at ``spaced``, in the expression's order:
    ``(`` then the URL, a specifier run then ``\\sfrom`` then the URL, the URL itself, and last a
    shorter run of the spaces ending in the ``\\s`` before a ``from`` right after them."""
    if text.startswith("(", spaced):
        quoted = _quoted(text, _SPACES.match(text, spaced + 1).end())  # type: ignore[union-attr]
        if quoted is not None:
            return quoted
    index = bisect.bisect_left(tail_starts, spaced + 1)
    if index < len(tails) and tails[index][0] < run_end:
        return tails[index][1], tails[index][2]
    quoted = _quoted(text, spaced)
    if quoted is not None:
        return quoted
    if spaced - after >= 2:
        index = bisect.bisect_left(tail_starts, spaced - 1)
        if index < len(tails) and tails[index][0] == spaced - 1:
            return tails[index][1], tails[index][2]
    return None


def _from_tails(text: str) -> list[tuple[int, int, str]]:
    """(position of the ``\\s`` before ``from``, end of the closing quote, URL) of every ``\\sfrom``
    followed by spaces and a quoted URL, in order."""
    tails: list[tuple[int, int, str]] = []
    for found in _FROM.finditer(text):
        quoted = _quoted(text, _SPACES.match(text, found.end()).end())  # type: ignore[union-attr]
        if quoted is not None:
            tails.append((found.start() - 1, *quoted))
    return tails


def _quoted(text: str, position: int) -> tuple[int, str] | None:
    """(end of the closing quote, URL) of a quoted URL at ``position``, else ``None``."""
    if position >= len(text) or text[position] not in _QUOTES:
        return None
    url = _URL.match(text, position + 1)
    if url is None or not text.startswith(text[position], url.end()):
        return None
    return url.end() + 1, url.group()
