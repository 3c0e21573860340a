"""A turn's reply as the store read it, for the inspector: the text with the session's names put
in (the text every outcome's ``start``/``end`` points into) and the commands found in it.

A version keeps the outcome of each command that did not apply (``update_diagnostics``) and the
changes of those that did (``delta_data``), but not where an applied command stands in the
reply. Reading the reply again with the very reader the turn used gives those places; the page
joins them to the version's outcomes. Pure (no I/O); reading is bounded as a turn's is (a
megabyte of text, 1,000 commands), so callers run it off the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from mvu_store.errors import MvuError
from mvu_store.host import SessionSnapshot
from mvu_store.jsonvalue import JsonValue, json_pointer
from mvu_store.lang.commands import scan_commands
from mvu_store.lang.macros import substitute
from mvu_store.service.session_replies import Reply, ReplyParser, seed_boundary


@dataclass(frozen=True, slots=True)
class TurnReply:
    """The reply a turn ended with, read: ``commands`` as :meth:`to_json` lists them, ``error``
    the code of a reply that could not be read (its commands are then none)."""

    turn: int
    message_seq: int
    message_id: JsonValue
    text: str
    commands: tuple[dict[str, JsonValue], ...]
    error: str | None = None

    def to_json(self) -> dict[str, JsonValue]:
        return {"turn": self.turn, "messageSeq": self.message_seq, "messageId": self.message_id,
                "text": self.text, "commands": list(self.commands), "error": self.error}


def _reply_of(snapshot: SessionSnapshot, turn: int) -> Reply | None:
    parser = ReplyParser(snapshot.header, seed_boundary(snapshot))
    found = None
    for event in snapshot.events:
        reply = parser.feed(event)
        if reply is not None and reply.turn == turn:
            found = reply  # a turn ended again (a retry) reads its last reply
    return found


def turn_reply(snapshot: SessionSnapshot, turn: int) -> TurnReply | None:
    """The reply that ended ``turn`` in ``snapshot``, read; None when the turn has none (it has
    not ended, or ended without a usable reply)."""
    reply = _reply_of(snapshot, turn)
    if reply is None:
        return None
    text = reply.text
    try:
        text = substitute(reply.text, reply.names)
        commands = scan_commands(text).commands
    except MvuError as error:
        return TurnReply(turn, reply.message.seq, reply.source.get("messageId"), text, (), error.code)
    listed = []
    for command in commands:
        item: dict[str, JsonValue] = {"command": command.full_match, "start": command.start, "end": command.end,
                                      "op": command.type, "path": json_pointer(list(command.path))}
        if command.patch_index is not None:
            item["patchIndex"] = command.patch_index
        listed.append(item)
    return TurnReply(turn, reply.message.seq, reply.source.get("messageId"), text, tuple(listed))
