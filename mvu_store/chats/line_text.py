"""A message line's JSON text, in parts, as ``JSON.stringify`` writes it.

SillyTavern writes each line with ``JSON.stringify``: compact, members in their order. Such a
line is its parsed value written again by :func:`mvu_store.jsonvalue.js_json`, and that says
two things at the cost of one encoding, which the import pays anyway for the states it stores:

* the line names no key twice, at any depth: a value written again names each key once, so a
  text equal to it does too (a line that differs, written by another tool or naming a key
  twice, is parsed again with a check per object: :func:`mvu_store.chats.reader.parse_line`);
* each ``variables`` element's text is known, and so is the text of the element without its
  ``schema``: a recorded state is stored without being encoded again, and the line kept without
  its states is put together from the parts (:meth:`MessageText.line`).

An object is encoded in three parts around the one member that may be cut out (``variables`` of
a message, ``schema`` of an element): a few encoder calls per line, not one per member.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
"""``JSON.stringify`` of parsed JSON (no lone surrogate in a line that matched: see above)."""

_WHITESPACE = " \t\r\n"


def joined(*objects: str) -> str:
    """The text of one object with the members of the objects whose texts are given, in order."""
    return "{" + ",".join(text[1:-1] for text in objects if text != "{}") + "}"


def member(key: str, text: str) -> str:
    """The text of an object with one member whose value's text is ``text``."""
    return f"{{{_encode(key)}:{text}}}"


@dataclass(frozen=True, slots=True)
class Around:
    """An object's text around one member: the members before it and after it (each as an
    object's text) and the member's value text (None: the object has no such member). Two are
    equal when their objects' texts are."""

    before: str
    value: str | None
    after: str
    key: str

    @classmethod
    def of(cls, value: dict[str, Any], key: str, *, inner: bool = True) -> Around:
        """``inner``: whether to encode the member's value (else its text is given to
        :meth:`pieces`)."""
        if key not in value:
            return cls(_encode(value), None, "{}", key)
        keys = list(value)
        place = keys.index(key)
        before = _encode({name: value[name] for name in keys[:place]}) if place else "{}"
        after = _encode({name: value[name] for name in keys[place + 1:]}) if place + 1 < len(keys) else "{}"
        return cls(before, _encode(value[key]) if inner else "", after, key)

    def text(self) -> str:
        return "".join(self.pieces())

    def holds(self, texts: Iterable[str]) -> bool:
        """Whether any of ``texts`` is in the object's text."""
        return any(text in part for text in texts for part in (self.before, self.value or "", self.after))

    def without(self) -> str:
        """The object's text without the member."""
        return joined(self.before, self.after)

    def pieces(self, value: Iterable[str] | None = None) -> Iterator[str]:
        """The object's text in pieces (none bigger than a part), with the pieces ``value`` as
        the member's value text when given."""
        if value is None:
            if self.value is None:
                yield self.before
                return
            value = (self.value,)
        yield "{"
        if self.before != "{}":
            yield self.before[1:-1]
            yield ","
        yield f"{_encode(self.key)}:"
        yield from value
        if self.after != "{}":
            yield ","
            yield self.after[1:-1]
        yield "}"


@dataclass(frozen=True, slots=True)
class MessageText:
    """A message line in parts: its text around ``variables``, and each element's text around
    its ``schema`` (by the element's place in the list, or its key in the older object form)."""

    line_parts: Around
    elements: dict[int | str, Around] | None
    """``variables``' elements when it is a list or object of objects, else None (its text is
    then in :attr:`line_parts`)."""
    listed: bool
    """Whether ``variables`` is a list (else the object form)."""

    def line(self, dropped: Iterable[int | str] = ()) -> str:
        """The line's text, ``null`` in place of the ``variables`` elements ``dropped``."""
        return "".join(self.pieces(dropped))

    def pieces(self, dropped: Iterable[int | str] = ()) -> Iterator[str]:
        """:meth:`line` in pieces (none bigger than a part of an element)."""
        if self.elements is None:
            return self.line_parts.pieces()
        return self.line_parts.pieces(self._variables(self.elements, set(dropped)))

    def _variables(self, elements: dict[int | str, Around], dropped: set[int | str]) -> Iterator[str]:
        yield "[" if self.listed else "{"
        for count, (slot, element) in enumerate(elements.items()):
            if count:
                yield ","
            if not self.listed:
                yield f"{_encode(slot)}:"
            yield from ("null",) if slot in dropped else element.pieces()
        yield "]" if self.listed else "}"

    def matches(self, text: str) -> bool:
        """Whether ``text`` (around whitespace) is the line's text, compared piece by piece:
        no copy of the line is made."""
        start, end = 0, len(text)
        while start < end and text[start] in _WHITESPACE:
            start += 1
        while end > start and text[end - 1] in _WHITESPACE:
            end -= 1
        place = start
        for piece in self.pieces():
            if not text.startswith(piece, place):
                return False
            place += len(piece)
        return place == end


def message_text(value: dict[str, Any]) -> MessageText:
    """``value``'s text in parts (``value``: a parsed line's object)."""
    variables = value.get("variables")
    elements: dict[int | str, Around] | None = None
    if isinstance(variables, list) and all(type(element) is dict for element in variables):
        elements = {slot: Around.of(element, "schema") for slot, element in enumerate(variables)}
    elif isinstance(variables, dict) and all(type(element) is dict for element in variables.values()):
        elements = {slot: Around.of(element, "schema") for slot, element in variables.items()}
    return MessageText(Around.of(value, "variables", inner=elements is None), elements, isinstance(variables, list))


def written_as(value: Any, text: str) -> MessageText | None:
    """``value``'s text in parts when ``text`` (the line it was parsed from) is exactly what
    ``JSON.stringify`` writes for it, else None."""
    if type(value) is not dict:
        return None
    parts = message_text(value)
    return parts if parts.matches(text) else None
