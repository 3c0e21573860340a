"""Openings: the greeting a session starts with, and the state it gives (docs/cards.md).

A card's greetings (its first message, then its alternates) may carry explicit update blocks
(``<UpdateVariable>``, ``<JSONPatch>``, ``<initvar>``). The greeting a session opens with is
applied once, when its instance is created at the session's selection, on the card's initial
envelope (the ``[initvar]`` entries and the declaration): the session's names go into the
envelope and the greeting's text first, then :func:`mvu_store.lang.apply_greeting` runs the
blocks, then the declaration parses the result. It is not a turn: no version, no fact. What it
changed is written with the instance, as the ``changes`` rows of its creation (actor ``opening``,
:func:`~mvu_store.service.change_rows.opening_rows`), so "what set this value" finds the opening.

Each greeting keeps its own copy. Greeting 0 is the card's own template (so instances made
before openings were applied keep their ids); greeting *n* is a *greeting template*, the card's
template with ``greetingIndex: n`` and that greeting's text, stored under
``<card template id>.greeting-<n>``. Selecting it is selecting that template, so switching
greetings before the first send switches the instance, and switching back finds the first one
again, exactly as switching characters does.

One copy per card is live: the copies a session did not choose are private drafts, kept for
switching back but never listed, given to a prompt, forked or fed replies (:func:`drafts`).
"""

from __future__ import annotations

import bisect
import copy
import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionSnapshot
from mvu_store.lang import apply_greeting
from mvu_store.lang.macros import Names, substitute
from mvu_store.ledger.records import ChangeRow
from mvu_store.schema.allowance import Allowance
from mvu_store.service.change_rows import opening_rows
from mvu_store.service.initial import DeclaredSchema, with_declaration, with_names

MAX_GREETING_BYTES = 1024 * 1024
"""A greeting's text as UTF-8: a longer one is refused (``MVU_LIMIT``) before it is read."""

GREETING_SUFFIX = ".greeting-"
_INITVAR = re.compile(r"<initvar>", re.IGNORECASE)
_UPDATE_TAG = re.compile(r"<(/?)(UpdateVariable|JSONPatch|json_patch|initvar)>", re.IGNORECASE)


_BLOCK_OPEN = re.compile("<UpdateVariable>", re.IGNORECASE)
_BLOCK_CLOSE = re.compile("</UpdateVariable>", re.IGNORECASE)
_JSON_WORD = re.compile("json", re.IGNORECASE)
_SPACES = re.compile(r"\s*")
_FENCE = "```"


def _array_blocks_as_patches(text: str) -> str:
    """An ``<UpdateVariable>`` block whose whole body is a JSON array (in a ```json fence or not)
    is a JSON Patch, as the original reads an opening's blocks."""
    parts: list[str] = []
    copied = 0
    for start, body_start, body_end, end in _array_blocks(text):
        body = text[body_start:body_end]
        try:
            is_array = isinstance(json.loads(body), list)
        except ValueError:
            is_array = False
        if is_array:
            head, tail = text[start:start + len("<UpdateVariable>")], text[end - len("</UpdateVariable>"):end]
            parts.extend((text[copied:start], f"{head}<JSONPatch>{body}</JSONPatch>{tail}"))
            copied = end
    parts.append(text[copied:])
    return "".join(parts)


def _array_blocks(text: str) -> list[tuple[int, int, int, int]]:
    """(start, body start, body end, end) of each block the regular expression
    ``(<UpdateVariable>)\\s*(?:```(?:json)?\\s*)?(\\[.*?\\])\\s*(?:```\\s*)?(</UpdateVariable>)``
    (case-insensitive, dot matching all) matches, left to right. The regex searched from each
    opening tag to the text's end for a ``]`` (a greeting of 80 KB: 3 s); here every ``]`` that
    can end a block is found once, and each opening tag takes the first one after its ``[``."""
    ends = [found.start() for found in re.finditer(r"\]", text) if _block_end(text, found.start() + 1) != -1]
    blocks: list[tuple[int, int, int, int]] = []
    position = 0
    while (opening := _BLOCK_OPEN.search(text, position)) is not None:
        body_start = _body_start(text, opening.end())
        index = bisect.bisect_left(ends, body_start + 1) if body_start != -1 else len(ends)
        if index == len(ends):
            position = opening.start() + 1
            continue
        end = _block_end(text, ends[index] + 1)
        blocks.append((opening.start(), body_start, ends[index] + 1, end))
        position = end
    return blocks


def _body_start(text: str, position: int) -> int:
    """Where the ``[`` of a block's body is, after the spaces and an optional ```json fence."""
    position = _spaces_end(text, position)
    if text.startswith(_FENCE, position):
        position += len(_FENCE)
        word = _JSON_WORD.match(text, position)
        position = _spaces_end(text, position if word is None else word.end())
    return position if text.startswith("[", position) else -1


def _block_end(text: str, position: int) -> int:
    """The end of the closing tag after a body ending before ``position``, or -1."""
    position = _spaces_end(text, position)
    if text.startswith(_FENCE, position):
        position = _spaces_end(text, position + len(_FENCE))
    closing = _BLOCK_CLOSE.match(text, position)
    return -1 if closing is None else closing.end()


def _spaces_end(text: str, position: int) -> int:
    return _SPACES.match(text, position).end()  # type: ignore[union-attr]  # \s* always matches


def check_blocks(text: str) -> None:
    """A greeting's update tags must nest and close (``MVU_INITIALIZATION_INVALID``): an opening
    that cannot be read whole is refused, never applied in part."""
    opened: list[str] = []
    for found in _UPDATE_TAG.finditer(text):
        name = found.group(2).lower().replace("json_patch", "jsonpatch")
        if not found.group(1):
            opened.append(name)
        elif not opened or opened.pop() != name:
            raise MvuError(Code.INITIALIZATION_INVALID, f"the greeting closes <{found.group(2)}> it did not open",
                           offset=found.start())
    if opened:
        raise MvuError(Code.INITIALIZATION_INVALID, f"the greeting leaves <{opened[-1]}> unclosed")


def greeting_template_id(card_template_id: str, index: int) -> str:
    return card_template_id if index == 0 else f"{card_template_id}{GREETING_SUFFIX}{index}"


def card_template_id_of(template_id: str) -> str:
    """The card template a greeting template belongs to (itself for any other template: a
    configured id may hold the suffix's text)."""
    if not template_id.startswith("mvu:character-"):
        return template_id
    return template_id.split(GREETING_SUFFIX, 1)[0]


def _index_in(template_id: str) -> int:
    """The greeting a template id names (0 for a card's own template)."""
    _, _, suffix = template_id.partition(GREETING_SUFFIX)
    return int(suffix) if suffix.isdigit() else 0


def drafts(template_ids: Iterable[str | None], chosen: str | None,
           played: Collection[str] = frozenset()) -> set[str]:
    """Of a session's instance templates, those whose copy is a private draft. Each card has one
    live copy (:func:`live_copy`); ``played``: the templates whose copy took a turn. Before the
    first send a host may flip greetings any number of times: the copies it left stay as
    drafts, so switching back finds them as they were."""
    cards: dict[str, list[str]] = {}
    for template_id in template_ids:
        if template_id is not None:
            cards.setdefault(card_template_id_of(template_id), []).append(template_id)
    found: set[str] = set()
    for card, copies in cards.items():
        live = live_copy(card, copies, chosen, played)
        found.update(copy_id for copy_id in copies if copy_id != live)
    return found


def live_copy(card_template_id: str, copies: Collection[str], chosen: str | None,
              played: Collection[str] = frozenset()) -> str:
    """The template of a card's live copy among ``copies`` (its greeting templates with an
    instance in the session): the chosen one while the card is selected; else the one played
    (a turn fixed it), else the lowest greeting's."""
    if chosen is not None and card_template_id_of(chosen) == card_template_id:
        return chosen
    return min([copy_id for copy_id in copies if copy_id in played] or copies, key=_index_in)


def greeting_index_of(template: dict[str, Any]) -> int:
    index = template.get("greetingIndex")
    return index if isinstance(index, int) and not isinstance(index, bool) else 0


def check_greeting_index(index: Any) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 1000:
        raise MvuError(Code.SCOPE, "greeting_index is an integer from 0 (the first message) to 999",
                       field="greetingIndex")
    return index


def greeting_template(card: dict[str, Any], index: int) -> dict[str, Any]:
    """The template selecting greeting ``index`` of ``card`` (a stored card template) means;
    ``MVU_MISSING`` when the card has no such greeting (greeting 0 always exists: a card without
    greetings opens with nothing to apply)."""
    greetings = card.get("greetings")
    texts = [text for text in greetings if isinstance(text, str)] if isinstance(greetings, list) else []
    if index == 0:
        return card
    if index >= len(texts):
        raise MvuError(Code.MISSING, f"the card has no greeting {index} ({len(texts)} greetings)",
                       id=card.get("id"), greeting_index=index)
    derived = {key: copy.deepcopy(value) for key, value in card.items() if key != "greetings"}
    derived.update(id=greeting_template_id(str(card["id"]), index), greetingIndex=index, greeting=texts[index])
    return derived


def opening_text(template: dict[str, Any]) -> str | None:
    """The greeting a template's instances open with, or None."""
    text = template.get("greeting")
    if isinstance(text, str):
        return text
    greetings = template.get("greetings")
    if isinstance(greetings, list) and greetings and isinstance(greetings[0], str):
        return str(greetings[0])
    return None


@dataclass(frozen=True, slots=True)
class Opening:
    """A new instance's initial content, and what its greeting changed (the rows of its creation)."""

    initial: dict[str, Any]
    changes: tuple[ChangeRow, ...] = ()


def opening_envelope(template: dict[str, Any], names: Names, allowance: Allowance | None = None) -> Opening:
    """A new instance's initial content: the template's envelope with the session's names, its
    opening greeting applied. ``MVU_INITIALIZATION_INVALID`` (``MVU_LIMIT`` for a greeting over
    1 MiB, or one whose declaration work spends ``allowance``) refuses the opening; nothing of it
    is kept."""
    envelope = with_names(template["initial"], names)
    text = opening_text(template) if template.get("discovered") is True else None
    if not text or "sourceError" in template:
        return Opening(envelope)
    if len(text.encode("utf-8", "surrogatepass")) > MAX_GREETING_BYTES:
        raise MvuError(Code.LIMIT, f"a greeting is at most {MAX_GREETING_BYTES} bytes", limit=MAX_GREETING_BYTES)
    check_blocks(text)
    declared = DeclaredSchema.of(envelope, None, allowance=allowance)
    result = apply_greeting(envelope, _array_blocks_as_patches(substitute(text, names)), validator=declared,
                            check=declared.check if declared is not None else None)
    variables: dict[str, Any] = dict(result.variables)
    if declared is not None and _INITVAR.search(text):
        # An <initvar> block replaces the data unparsed: the declaration parses it as it parsed
        # the card's (a command after it was checked on the replaced data; parsing the result
        # again is what the card's own helper does on load).
        variables = with_declaration(variables, declared.descriptor, now_ms=None, allowance=allowance)
    # Only what the greeting changed: the template's own data is the template's, not the opening's.
    return Opening(variables, opening_rows(envelope.get("stat_data", {}), variables.get("stat_data", {}),
                                           result.outcomes))


def first_send(snapshot: SessionSnapshot) -> bool:
    """Whether the session has started a turn: its opening is fixed from then on."""
    return any(event.type == "turn/start" for event in snapshot.events)
