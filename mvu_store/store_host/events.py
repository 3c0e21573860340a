"""Events on their way into the store: checked, bounded and cut down to what the service reads.

A host sends each event as ``{seq, type, data}`` (docs/host-protocol.md). The store keeps only the
fields the service consumes (DIGEST P-5): event coordinates, how a turn ended, who spoke, the
assistant's text with its tool-call and interrupt flags, message ids; the user's text only as far
as the command processor's gate reads it (DIGEST C-3: at most 65,536 UTF-16 code units; a longer
text is kept as its length and fingerprint, so it grants nothing and is never truncated into
something it was not); of a request assembly, the evidence that the state reached the model
(``mvu_store.prompt.observed``). Providers, media, messages and unknown fields stay with the host.
Everything refused is an ``MvuError`` naming the event and field, before anything is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionEvent
from mvu_store.js.values import MAX_SAFE_INTEGER
from mvu_store.jsonvalue import JsonValue, dumps, normalize, sha256_hex, utf8
from mvu_store.lang.macros import Names
from mvu_store.prompt.observed import evidence

MAX_REPLY_BYTES = 1024 * 1024
"""An assistant message's text, as UTF-8."""
MAX_USER_TEXT_UNITS = 65_536
"""The user text the command processor's gate may read (UTF-16 code units, DIGEST C-3)."""
MAX_MESSAGE_ID = 200
MAX_KIND = 64
MAX_BATCH_EVENTS = 4096
MAX_SETTING_BYTES = 4096
"""A configuration event's data (model selection, title, presets), as canonical JSON."""

SETTING_TYPES = ("permission/preset", "sandbox/mode", "approval/policy", "model/selection", "session/title")
"""Configuration events a host writes before or between turns: kept as sent (bounded), since a
session's opening rules read them (docs/host-protocol.md)."""


def _where(seq: Any, field: str) -> str:
    return f"event {seq}: {field}"


def _refuse(seq: Any, field: str, message: str, code: Code = Code.OPERATION) -> MvuError:
    return MvuError(code, f"{_where(seq, field)} {message}", seq=seq if isinstance(seq, int) else None,
                    field=field)


def _count(seq: int, data: Mapping[str, Any], field: str, *, required: bool) -> int | None:
    value = data.get(field)
    if value is None and not required:
        return None
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        raise _refuse(seq, f"data.{field}", "must be a non-negative integer")
    return value


def _text(seq: int, value: Any, field: str, limit: int, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > limit:
        raise _refuse(seq, field, f"must be a string of 1 to {limit} characters")
    return value


def _object(seq: int, value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _refuse(seq, field, "must be an object")
    return value


def _content_text(seq: int, content: Any) -> tuple[str, bool]:
    """A message's text (its text blocks joined with ``\\n``, as the service reads it) and
    whether it holds a tool call. Other blocks (images, files, reasoning) are dropped."""
    if isinstance(content, str):
        return content, False
    if content is None:
        return "", False
    if not isinstance(content, list):
        raise _refuse(seq, "data.message.content", "must be a string or a list of blocks")
    texts: list[str] = []
    tool_call = False
    for index, block in enumerate(content):
        block = _object(seq, block, f"data.message.content[{index}]")
        kind = block.get("type")
        if kind == "text":
            text = block.get("text", "")
            if not isinstance(text, str):
                raise _refuse(seq, f"data.message.content[{index}].text", "must be a string")
            texts.append(text)
        elif kind == "tool-call":
            tool_call = True
        elif not isinstance(kind, str):
            raise _refuse(seq, f"data.message.content[{index}].type", "must be a string")
    return "\n".join(texts), tool_call


def _turn(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    return {"turn": _count(seq, data, "turn", required=True)}


def _assembly(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    return {**_turn(seq, data), **evidence(data).to_json()}


def _turn_only(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    """Coordinates an event may leave out: its ``turn`` when it has one."""
    turn = _count(seq, data, "turn", required=False)
    return {} if turn is None else {"turn": turn}


def _turn_step(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    kept = _turn_only(seq, data)
    step = _count(seq, data, "step", required=False)
    if step is not None:
        kept["step"] = step
    return kept


def _user_message(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    message = _object(seq, data.get("message"), "data.message")
    source = message.get("source", data.get("source"))
    kind = _text(seq, _object(seq, source, "data.message.source").get("kind"), "data.message.source.kind", MAX_KIND)
    text, _ = _content_text(seq, message.get("content"))
    utf8(text)  # a lone surrogate has no UTF-8: refused (MVU_JSON), never stored
    units = len(text.encode("utf-16-le")) // 2
    kept: dict[str, JsonValue] = {"source": {"kind": kind}}
    if units <= MAX_USER_TEXT_UNITS:
        kept["content"] = [{"type": "text", "text": text}]
    else:
        # Over the gate's bound the text grants nothing: keep only what proves what it was.
        kept["content"] = []
        kept["textUnits"] = units
        kept["textSha256"] = sha256_hex(text)
    return {"turn": _count(seq, data, "turn", required=True), "message": kept}


def _assistant_message(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    message = _object(seq, data.get("message"), "data.message")
    text, tool_call = _content_text(seq, message.get("content"))
    size = len(utf8(text))
    if size > MAX_REPLY_BYTES:
        raise MvuError(Code.LIMIT, f"{_where(seq, 'data.message.content')} is {size} bytes of text, over the "
                                   f"{MAX_REPLY_BYTES}-byte limit of a reply", seq=seq, limit=MAX_REPLY_BYTES,
                       requested=size, kind="bytes")
    content: list[JsonValue] = [{"type": "text", "text": text}]
    if tool_call:
        content.append({"type": "tool-call"})
    kept: dict[str, JsonValue] = {"content": content}
    # The message id is part of the reply's identity (docs/host-events.md): without it the reply
    # could never be told apart, so it is required.
    kept["id"] = _text(seq, message.get("id"), "data.message.id", MAX_MESSAGE_ID)
    out: dict[str, JsonValue] = {"turn": _count(seq, data, "turn", required=True), "message": kept}
    step = _count(seq, data, "step", required=False)
    if step is not None:
        out["step"] = step
    interrupted = data.get("interrupted")
    if interrupted is not None:
        if not isinstance(interrupted, bool):
            raise _refuse(seq, "data.interrupted", "must be true or false")
        out["interrupted"] = interrupted
    return out


def _turn_end(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    reason = _object(seq, data.get("reason"), "data.reason")
    kind = _text(seq, reason.get("kind"), "data.reason.kind", MAX_KIND)
    kept: dict[str, JsonValue] = {"turn": _count(seq, data, "turn", required=True), "reason": {"kind": kind}}
    at = _count(seq, data, "at", required=False)  # the turn's time: the clock its declaration reads
    if at is not None:
        kept["at"] = at
    return kept


def _names(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    """``session/names``: the names the session's macros stand for from here on (each such event
    replaces the last; a name left out keeps its macro as written)."""
    try:
        names = Names.of(data)
    except MvuError as error:
        raise _refuse(seq, str(error.details.get("field", "names")).replace("names", "data", 1),
                      "must be a string of 1 to 200 characters (an object of `user` and `char`)") from None
    return dict(names.to_json())


def _end_seed(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    if data:
        raise _refuse(seq, "data", "of a session/end-seed must be {}")
    return {}


def _setting(seq: int, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    value = dict(data)
    size = len(utf8(dumps(value)))
    if size > MAX_SETTING_BYTES:
        raise MvuError(Code.LIMIT, f"{_where(seq, 'data')} is {size} bytes, over the {MAX_SETTING_BYTES}-byte "
                                   "limit of a configuration event", seq=seq, limit=MAX_SETTING_BYTES)
    return value


_KEEP: dict[str, Callable[[int, Mapping[str, Any]], dict[str, JsonValue]]] = {
    "turn/start": _turn,
    "user/message": _user_message,
    "assistant/message": _assistant_message,
    "turn/end": _turn_end,
    "session/end-seed": _end_seed,
    "session/names": _names,
    # What was sent to the model stays with the host (P-5): its coordinates are kept, and the
    # evidence that the state reached it (the messages' digest, the state blocks a node carries).
    "request/assembly": _assembly,
    # Request preparation a host logs (a prompt read's lease tolerates them, docs/prompt.md):
    # coordinates only; a system message's text, like the model request, stays with the host.
    "request/context": _turn_only,
    "system/message": _turn_step,
    "step/start": _turn_step,
    "request/header": _setting,
    **{kind: _setting for kind in SETTING_TYPES},
}
EVENT_TYPES = tuple(_KEEP)
_ENVELOPE = frozenset({"seq", "type", "data"})


@dataclass(frozen=True, slots=True)
class Kept:
    """An event as the store keeps it, with its canonical data text."""

    event: SessionEvent
    text: str


def keep(raw: Any) -> Kept:
    """One event as sent, checked and cut down to what the store keeps (``MvuError`` otherwise)."""
    if not isinstance(raw, Mapping):
        raise MvuError(Code.OPERATION, "each event must be an object {seq, type, data}")
    seq = raw.get("seq")
    unknown = sorted(str(key)[:64] for key in raw if key not in _ENVELOPE)
    if unknown:
        raise _refuse(seq, unknown[0], "is not an event field (an event is {seq, type, data})")
    if type(seq) is not int or not 0 <= seq <= MAX_SAFE_INTEGER:
        raise MvuError(Code.OPERATION, "an event's seq must be a non-negative integer", field="seq")
    kind = raw.get("type")
    rule = _KEEP.get(kind) if isinstance(kind, str) else None
    if rule is None or not isinstance(kind, str):
        raise _refuse(seq, "type", f"must be one of {', '.join(EVENT_TYPES)}")
    # Normalised first: bounded in nodes and depth, and 1.0 read as the 1 a JavaScript host meant.
    data, _, _ = normalize(_object(seq, raw.get("data", {}), "data"))
    assert isinstance(data, dict)
    kept = rule(seq, data)
    normalized, _, _ = normalize(kept)
    assert isinstance(normalized, dict)
    text = dumps(normalized)
    utf8(text)  # a lone surrogate anywhere (an id, a kind) has no UTF-8: MVU_JSON, never stored
    return Kept(SessionEvent(seq, kind, normalized), text)


def keep_batch(raw: Any) -> list[Kept]:
    """A batch: a non-empty list of at most ``MAX_BATCH_EVENTS`` events with consecutive seqs."""
    if not isinstance(raw, list) or not raw:
        raise MvuError(Code.OPERATION, "events must be a non-empty list", field="events")
    if len(raw) > MAX_BATCH_EVENTS:
        raise MvuError(Code.LIMIT, f"a batch holds at most {MAX_BATCH_EVENTS} events", limit=MAX_BATCH_EVENTS,
                       field="events")
    batch = [keep(event) for event in raw]
    first = batch[0].event.seq
    for offset, kept in enumerate(batch):
        if kept.event.seq != first + offset:
            raise MvuError(Code.OPERATION, f"event seqs in a batch must be consecutive: {first + offset} expected, "
                                           f"{kept.event.seq} sent", field="events")
    return batch
