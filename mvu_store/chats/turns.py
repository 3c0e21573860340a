"""A chat's messages as a host session's events: turns from the message order.

A user's message opens a turn; the character's message that follows is that turn's reply and
ends it. A character's message with no user's message before it (the greeting, a second reply
in a row, a hidden narration) is a turn of its own. A user's message with no reply ends its turn
when the next message comes. Every turn ends ``completed`` at the message's ``send_date`` when
it names one (the clock a card's declaration reads). Message ids are ``st-<index>`` (the
message's place in the file, from 0), a swipe's ``st-<index>-s<swipe>``.
"""

from __future__ import annotations

from typing import Any

from mvu_store.chats.reader import ChatMessage

Event = tuple[str, dict[str, Any]]


def message_id(index: int, swipe: int | None = None) -> str:
    return f"st-{index}" if swipe is None else f"st-{index}-s{swipe}"


def user_event(turn: int, text: str) -> Event:
    return "user/message", {"turn": turn, "message": {"source": {"kind": "user"},
                                                      "content": [{"type": "text", "text": text}]}}


def reply_event(turn: int, text: str, message: str) -> Event:
    return "assistant/message", {"turn": turn, "message": {"id": message, "content": [{"type": "text", "text": text}]}}


def end_event(turn: int, at: int | None) -> Event:
    data: dict[str, Any] = {"turn": turn, "reason": {"kind": "completed"}}
    if at is not None:
        data["at"] = at
    return "turn/end", data


class Turns:
    """Numbers turns and events as messages come; :meth:`add` gives a message's events."""

    def __init__(self) -> None:
        self.turn = -1
        self._open: tuple[str, int | None] | None = None
        """The text and time of the user's message of the running turn (None: no turn runs);
        not the message, whose states a long line of a reply should not find still held."""

    def add(self, message: ChatMessage) -> list[Event]:
        events: list[Event] = []
        if message.is_user:
            events += self.close()
            self.turn += 1
            self._open = message.text, message.sent_at
            return [*events, ("turn/start", {"turn": self.turn}), user_event(self.turn, message.text)]
        if self._open is None:
            self.turn += 1
            events.append(("turn/start", {"turn": self.turn}))
        self._open = None
        return [*events, reply_event(self.turn, message.text, message_id(message.index)),
                end_event(self.turn, message.sent_at)]

    def close(self) -> list[Event]:
        """The end of a turn whose user's message got no reply (before the next message, or at
        the end of the file)."""
        if self._open is None:
            return []
        (_, at), self._open = self._open, None
        return [end_event(self.turn, at)]

    @property
    def user_of_turn(self) -> str | None:
        """The text of the running turn's user's message."""
        return self._open[0] if self._open is not None else None
