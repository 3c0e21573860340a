"""A turn's reply read for the inspector (``mvu_store.service.turn_replies``): the text its
commands were read from, with the session's names put in, and where each command stands."""

from __future__ import annotations

from typing import Any

from mvu_store.host import SessionEvent, SessionHeader, SessionSnapshot, turn_events
from mvu_store.service import turn_reply


def session(*turns: tuple[int, str], names: dict[str, str] | None = None) -> SessionSnapshot:
    pairs: list[tuple[str, dict[str, Any]]] = [("session/names", names)] if names else []
    for turn, reply in turns:
        request, answer = turn_events(turn=turn, user="go", reply=reply, message_id=f"m{turn}-{len(pairs)}")
        pairs += request + answer
    events = tuple(SessionEvent(seq, kind, data) for seq, (kind, data) in enumerate(pairs))
    return SessionSnapshot(SessionHeader("s1", 4, 1767225600000), events)


def test_each_command_is_placed_in_the_text_the_turn_read() -> None:
    text = "{{char}} falls. _.set('hp', 40);//ouch\n<JSONPatch>[{\"op\":\"remove\",\"path\":\"/bag/0\"}]</JSONPatch>"
    read = turn_reply(session((1, text), names={"char": "艾莉"}), 1)
    assert read is not None and read.error is None
    assert read.text.startswith("艾莉 falls. ")
    assert [(c["op"], c["path"], read.text[c["start"]:c["end"]].startswith(str(c["command"])))
            for c in read.commands] == [("set", "/hp", True), ("delete", "/bag/0", False)]
    assert read.commands[1]["patchIndex"] == 0 and "patchIndex" not in read.commands[0]
    assert read.to_json()["messageSeq"] == read.message_seq


def test_a_retried_turn_reads_its_last_reply_and_a_turn_without_one_reads_none() -> None:
    snapshot = session((1, "first _.set('a', 1);"), (1, "second _.set('b', 2);"))
    read = turn_reply(snapshot, 1)
    assert read is not None and read.text == "second _.set('b', 2);" and read.commands[0]["path"] == "/b"
    assert turn_reply(snapshot, 2) is None


def test_a_reply_that_cannot_be_read_says_why_and_lists_no_command() -> None:
    read = turn_reply(session((1, "_.set('x', 1);" * 1001)), 1)
    assert read is not None and read.commands == () and read.error == "MVU_LIMIT"
