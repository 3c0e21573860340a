"""Reading a SillyTavern chat file (``.jsonl``) one line at a time (docs/sillytavern.md).

Line 1 is the chat's header, every next line one message. The reader holds one line at a time,
so a file of any size is read in memory bounded by its longest line (:data:`MAX_LINE_BYTES`).
Everything it refuses is an :class:`MvuError` naming the line (``line``, 1-based as an editor
counts): a line that is no JSON, names a key twice or is no UTF-8, a message whose fields have
the wrong type, a ``swipe_id`` outside its swipes, a ``variables`` element that is no object.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from mvu_store.chats.line_text import Around, MessageText, Written, written_as
from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import unique_keys

MAX_LINE_BYTES = 8 * 1024 * 1024
"""One line: a message with its swipes and one state per swipe, four of them at the 2 MiB state
budget. A line is parsed whole, which takes about eight times its size (its text, what it parses
into, its parts as :mod:`~mvu_store.chats.line_text` keeps them): with this bound an import stays
under 200 MB of resident memory, about 85 MB of which the process takes before it reads a line
(``benchmarks/chat_import.py`` measures both; docs/sillytavern.md#limits)."""


def line_error(line: int, message: str, code: Code | str = Code.JSON, **details: Any) -> MvuError:
    return MvuError(code, f"line {line}: {message}", line=line, **details)


@dataclass(frozen=True, slots=True)
class ChatHeader:
    """Line 1: who talks (``user_name``, ``character_name``), when the chat began, its metadata."""

    line: int
    raw: dict[str, Any]
    user_name: str | None
    character_name: str | None
    create_date: str | int | float | None


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message line. ``swipes`` are the message's alternative texts (``[mes]`` when it has
    none), ``selected`` the one shown; ``variables`` the MagVarUpdate data per swipe (None: the
    message has none, as messages from before MagVarUpdate was enabled)."""

    line: int
    index: int
    raw: dict[str, Any]
    is_user: bool
    is_system: bool
    swipes: tuple[str, ...]
    selected: int
    variables: tuple[dict[str, Any], ...] | None
    sent_at: int | None
    """``send_date`` in milliseconds since the epoch, when it is a number or an ISO 8601 time."""
    written: MessageText | None = None
    """The line's text by member, when it is as ``JSON.stringify`` writes it."""

    @property
    def text(self) -> str:
        return self.swipes[self.selected]

    def state_text(self, swipe: int) -> Around | None:
        """The text by member of swipe ``swipe``'s element, when the line's is known."""
        if self.written is None or self.written.elements is None:
            return None
        return self.written.elements.get(swipe if self.written.listed else str(swipe))

    def state(self, swipe: int) -> dict[str, Any] | None:
        """The state recorded after ``swipe`` (an element holding ``stat_data``), if any."""
        if self.variables is None or swipe >= len(self.variables):
            return None
        element = self.variables[swipe]
        return element if "stat_data" in element else None


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _number(text: str) -> int | float:
    """A JSON number with a fraction or exponent as JavaScript holds it: integral ones are
    integers (``5.0`` and ``1e2`` print as ``5`` and ``100``), as the store keeps every value
    (``mvu_store.jsonvalue.normalize``); one out of range is refused."""
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is out of range")
    return int(value) if value.is_integer() else value


def decode_line(data: bytes, line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise line_error(line, f"is not UTF-8 (byte {error.start})") from None


def parse_line(text: str, line: int, *, written: bool = True,
               shown: Iterable[Written] = ()) -> tuple[Any, MessageText | None]:
    """One line's JSON value: strict JSON, no key named twice in an object; and its text in
    parts when the line is as ``JSON.stringify`` writes it (:mod:`mvu_store.chats.line_text`).
    ``written``: whether to try that (the usual case, and the line is parsed once); a line that is
    not so is parsed again with a check of each object's keys. ``shown``: the object values of the
    state the message before showed, with their texts (:func:`~mvu_store.chats.line_text.written_as`)."""
    if written:
        try:
            value = json.loads(text, parse_constant=_refuse_constant, parse_float=_number)
        except (ValueError, RecursionError):
            value = None  # the strict parse below says why
        else:
            pieces = written_as(value, text, shown)
            if pieces is not None:
                return value, pieces
            del value  # not held while the line is parsed again
    try:
        return json.loads(text, object_pairs_hook=unique_keys, parse_constant=_refuse_constant,
                          parse_float=_number), None
    except MvuError as error:
        raise line_error(line, error.message, **error.details) from None
    except (ValueError, RecursionError) as error:
        raise line_error(line, f"is damaged ({error})") from None


def _optional_text(raw: dict[str, Any], key: str, line: int) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise line_error(line, f"{key} must be a string")
    return value


def _flag(raw: dict[str, Any], key: str, line: int) -> bool:
    value = raw.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise line_error(line, f"{key} must be true or false")
    return value


def sent_at(value: Any) -> int | None:
    """A ``send_date`` as milliseconds since the epoch; None for SillyTavern's human-readable
    dates ("January 1, 2024 12:00pm"), which name no time zone."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is not None:
            return int(moment.timestamp() * 1000)
    return None


def read_header(raw: Any, line: int) -> ChatHeader:
    if not isinstance(raw, dict):
        raise line_error(line, "the chat header must be an object")
    metadata = raw.get("chat_metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise line_error(line, "chat_metadata must be an object")
    if isinstance(metadata, dict) and metadata.get("variables") is not None \
            and not isinstance(metadata["variables"], dict):
        raise line_error(line, "chat_metadata.variables must be an object")
    created = raw.get("create_date")
    if created is not None and (isinstance(created, bool) or not isinstance(created, str | int | float)):
        raise line_error(line, "create_date must be a string or a number")
    if "mes" in raw and "chat_metadata" not in raw:
        raise line_error(line, "the first line is a message, not the chat header")
    return ChatHeader(line, raw, _optional_text(raw, "user_name", line), _optional_text(raw, "character_name", line),
                      created)


def _swipes(raw: dict[str, Any], mes: str, line: int) -> tuple[tuple[str, ...], int]:
    swipes = raw.get("swipes")
    swipe_id = raw.get("swipe_id", 0)
    if swipe_id is None:
        swipe_id = 0
    if type(swipe_id) is not int:
        raise line_error(line, "swipe_id must be an integer")
    if swipes is None:
        if swipe_id != 0:
            raise line_error(line, f"swipe_id {swipe_id} is out of range: the message has no swipes",
                             swipe_id=swipe_id)
        return (mes,), 0
    if not isinstance(swipes, list) or not swipes or not all(isinstance(text, str) for text in swipes):
        raise line_error(line, "swipes must be a non-empty list of strings")
    if not 0 <= swipe_id < len(swipes):
        raise line_error(line, f"swipe_id {swipe_id} is out of range: the message has {len(swipes)} swipes",
                         swipe_id=swipe_id)
    return tuple(swipes), swipe_id


def slot(variables: list[Any] | dict[str, Any], swipe: int) -> int | str:
    """Where swipe ``swipe``'s element is in a message's ``variables``: its index in the list, or
    its key in the older object form (``{"0": {...}}``, which Tavern Helper turns into a list the
    next time it writes the message)."""
    return str(swipe) if isinstance(variables, dict) else swipe


def _variables(raw: dict[str, Any], swipes: int, line: int) -> tuple[dict[str, Any], ...] | None:
    variables = raw.get("variables")
    if variables is None:
        return None
    if isinstance(variables, dict):
        keys = {str(swipe) for swipe in range(swipes)}
        stray = next((key for key in variables if key not in keys), None)
        if stray is not None:
            raise line_error(line, f"variables names swipe {stray!r}: the message has {swipes} swipes")
        elements = [variables.get(str(swipe), {}) for swipe in range(swipes)]
    elif isinstance(variables, list):
        if len(variables) > swipes:
            raise line_error(line, f"variables has {len(variables)} elements for {swipes} swipes")
        elements = variables
    else:
        raise line_error(line, "variables must be a list (one element per swipe)")
    for swipe, element in enumerate(elements):
        if not isinstance(element, dict):
            raise line_error(line, f"variables[{swipe}] must be an object", swipe=swipe)
        if "stat_data" in element and not isinstance(element["stat_data"], dict):
            raise line_error(line, f"variables[{swipe}].stat_data must be an object", swipe=swipe)
    return tuple(elements)


def read_message(raw: Any, line: int, index: int, text: MessageText | None = None) -> ChatMessage:
    if not isinstance(raw, dict):
        raise line_error(line, "a message must be an object")
    mes = raw.get("mes", "")
    if not isinstance(mes, str):
        raise line_error(line, "mes must be a string")
    swipes, selected = _swipes(raw, mes, line)
    if "swipes" in raw and swipes[selected] != mes:
        # SillyTavern keeps mes equal to the shown swipe; when they differ, mes is what was shown.
        swipes = (*swipes[:selected], mes, *swipes[selected + 1:])
    return ChatMessage(line, index, raw, _flag(raw, "is_user", line), _flag(raw, "is_system", line), swipes,
                       selected, _variables(raw, len(swipes), line), sent_at(raw.get("send_date")), text)


def read_chat(stream: IO[bytes]) -> Iterator[ChatHeader | ChatMessage]:
    """The header, then each message, as the stream is read. Blank lines are skipped (and
    counted); a line over :data:`MAX_LINE_BYTES` is refused. While a message is imported, no
    text of its line is held here: only what it was parsed into, and the texts of the objects of
    the state it shows (a user's message after it repeats that state: they are tried for it)."""
    index = number = written = 0  # written: lines as JSON.stringify writes them, less lines not
    shown: tuple[Written, ...] = ()
    while data := stream.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(data) > MAX_LINE_BYTES and not data.endswith(b"\n"):
            raise line_error(number, f"is over {MAX_LINE_BYTES} bytes", Code.LIMIT, limit=MAX_LINE_BYTES)
        if data.isspace():
            continue
        text = decode_line(data, number)
        del data
        raw, parts = parse_line(text, number, written=written >= 0, shown=shown)  # a file of the other
        del text  # kind is parsed once
        written += 1 if parts is not None else -1
        if index == 0:
            yield read_header(raw, number)
        else:
            message = read_message(raw, number, index - 1, parts)
            element = message.state_text(message.selected)
            shown = () if element is None else element.written()
            yield message
            del message
        del raw, parts
        index += 1
    if index == 0:
        raise line_error(1, "the file is empty: a chat file starts with its header line")
