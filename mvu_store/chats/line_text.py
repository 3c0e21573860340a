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
from dataclasses import dataclass, field
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


Written = tuple[dict[str, Any], str]
"""An object value and its text."""

_KNOWN_OWN = 4
"""Object values an element's :class:`Known` remembers of its own (besides those carried from
the line before): each value is compared with at most this many more, so a hostile element of
many objects costs comparisons in proportion to its size, not its square."""


class Known:
    """Texts of object values written before: those of the state the line before showed (a
    user's message repeats it), and this element's own (``display_data`` is often ``stat_data``
    again). A value equal to one (``==``, at C speed: a tenth of writing it) is given its text.
    ``==`` is coarser than JSON (``1 == True``, any key order), so the line's match decides, and a
    line that does not match after a text was reused is written again, each value on its own."""

    __slots__ = ("_room", "_seen", "reuse", "reused")

    def __init__(self, carried: Iterable[Written] = (), *, reuse: bool = True) -> None:
        self._seen = list(carried) if reuse else []
        self._room = _KNOWN_OWN
        self.reuse = reuse
        self.reused = False

    def text(self, value: Any) -> str:
        if type(value) is not dict or not value or not self.reuse:
            return _encode(value)
        for seen, text in self._seen:
            if seen is value or seen == value:
                self.reused = True
                return text
        text = _encode(value)
        if self._room:
            self._room -= 1
            self._seen.append((value, text))
        return text


def _members(value: dict[str, Any], names: list[str],
             known: Known | None) -> tuple[str, tuple[tuple[dict[str, Any], int, int], ...]]:
    """The text of the object of ``value``'s members ``names``, and its object values with where
    their texts are in it (with ``known`` only: else it is written whole, in one call)."""
    if known is None:
        return (_encode({name: value[name] for name in names}) if names else "{}"), ()
    pieces: list[str] = []
    objects: list[tuple[dict[str, Any], int, int]] = []
    place = 1  # after the "{"
    for count, name in enumerate(names):
        member = value[name]
        head = f"{',' if count else ''}{_encode(name)}:"
        text = known.text(member)
        place += len(head)
        if type(member) is dict:
            objects.append((member, place, place + len(text)))
        pieces += (head, text)
        place += len(text)
    return "{" + "".join(pieces) + "}", tuple(objects)


@dataclass(frozen=True, slots=True)
class Around:
    """An object's text around one member: the members before it and after it (each as an
    object's text) and the member's value text (None: the object has no such member). Two are
    equal when their objects' texts are."""

    before: str
    value: str | None
    after: str
    key: str
    objects: tuple[tuple[dict[str, Any], int, int], ...] = field(default=(), compare=False, repr=False)
    """The object values among the members in :attr:`before`, with where their texts are in it
    (when written with a :class:`Known`)."""

    @classmethod
    def of(cls, value: dict[str, Any], key: str, *, inner: bool = True, known: Known | None = None) -> Around:
        """``inner``: whether to encode the member's value (else its text is given to
        :meth:`pieces`); ``known``: texts of values written before, which the members may reuse."""
        keys = list(value)
        if key not in value:
            if known is None:
                return cls(_encode(value), None, "{}", key)
            whole, objects = _members(value, keys, known)
            return cls(whole, None, "{}", key, objects)
        place = keys.index(key)
        before, objects = _members(value, keys[:place], known)
        after, _ = _members(value, keys[place + 1:], known)
        return cls(before, (known.text(value[key]) if known else _encode(value[key])) if inner else "", after, key,
                   objects)

    def written(self) -> tuple[Written, ...]:
        """The object values in :attr:`before` with their texts (for the next line's :class:`Known`)."""
        return tuple((value, self.before[start:end]) for value, start, end in self.objects)

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


def _elements(variables: Any) -> dict[int | str, dict[str, Any]] | None:
    """``variables``' elements by slot, when it is a list or object of objects."""
    if isinstance(variables, list) and all(type(element) is dict for element in variables):
        return dict(enumerate(variables))
    if isinstance(variables, dict) and all(type(element) is dict for element in variables.values()):
        return dict(variables)
    return None


def _element_text(element: dict[str, Any], carried: tuple[Written, ...]) -> tuple[Around, bool]:
    """An element's parts, and whether a text was reused for it (its :class:`Known` is not held
    past it: it holds the texts it wrote)."""
    known = Known(carried)
    return Around.of(element, "schema", known=known), known.reused


def written_as(value: Any, text: str, shown: Iterable[Written] = ()) -> MessageText | None:
    """``value``'s text in parts when ``text`` (the line it was parsed from) is exactly what
    ``JSON.stringify`` writes for it, else None.

    ``shown``: the object values of the state the line before showed, with their texts
    (:meth:`Around.written`), which this line's elements may hold again (:class:`Known`). A
    line that matches with a text reused is its value written again all the same: each text
    reused is that of a value written (its line matched, or it was written here), so the line is
    what the encoder writes for some value, which names no key twice, and which parses (as the
    line did) to this value: the parts are the line's own."""
    if type(value) is not dict:
        return None
    variables = value.get("variables")
    elements = _elements(variables)
    line_parts = Around.of(value, "variables", inner=elements is None)
    listed = isinstance(variables, list)
    if elements is None:
        whole = MessageText(line_parts, None, listed)
        return whole if whole.matches(text) else None
    carried = tuple(shown)
    arounds = {slot: _element_text(element, carried) for slot, element in elements.items()}
    parts = MessageText(line_parts, {slot: around for slot, (around, _) in arounds.items()}, listed)
    reused = any(used for _, used in arounds.values())
    if parts.matches(text):
        return parts
    if not reused:
        return None
    parts = MessageText(line_parts, {slot: Around.of(element, "schema", known=Known(reuse=False))
                                     for slot, element in elements.items()}, listed)
    return parts if parts.matches(text) else None
