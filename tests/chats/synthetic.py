"""Synthetic SillyTavern chat files with MagVarUpdate variables, for tests and the benchmark.

Every chat is made up here (never a real player's): a greeting, then user and character turns
whose replies carry ``_.set``/``_.add`` commands, and after each message the state MagVarUpdate
would record (the generator applies its own commands, so verification has something to agree
with). Options add what real chats have: swipes with their own states, hidden messages
(``is_system``), a gap of messages from before MagVarUpdate was enabled, the placeholder string a
Zod-governed chat keeps as ``schema``, a chat-level copy in ``chat_metadata.variables``, and
recorded states a player edited by hand (a transition no reply explains).

Lines are written as SillyTavern writes them: ``JSON.stringify`` of each object, one a line.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mvu_store.jsonvalue import js_json

ZOD_PLACEHOLDER = "由 Zod 模式定义"
_WORDS = {
    "zh": ("旅人", "艾琳", "你走进酒馆，{n}号桌空着。", "我坐下，点一杯酒。", "她笑了笑，递来一杯麦酒。",
           "好感度", "金币"),
    "en": ("Traveller", "Erin", "You step into the tavern; table {n} is free.", "I sit down and order a drink.",
           "She smiles and slides you an ale.", "affection", "gold"),
}


@dataclass(slots=True)
class ChatSpec:
    language: str = "zh"
    turns: int = 6
    swipes: int = 2
    """Swipes of every other reply (1: none)."""
    hidden: tuple[int, ...] = (3,)
    """Turns whose reply is hidden (``is_system``)."""
    gap: int = 1
    """Turns at the start from before MagVarUpdate was enabled: no variables."""
    placeholder_schema: bool = True
    metadata_variables: bool = True
    edited: tuple[int, ...] = ()
    """Turns whose recorded state the player edited: it differs from what the reply says."""
    padding: int = 0
    """Extra items in the state, to make lines (and files) as large as a benchmark wants."""
    extra_keys: dict[str, Any] = field(default_factory=lambda: {"initialized_lorebooks": {"世界书": []}})


def _initial(spec: ChatSpec) -> dict[str, Any]:
    words = _WORDS[spec.language]
    stat = {words[1]: {words[5]: [10, "0 到 100"], words[6]: 5}, "turn": 0}
    if spec.padding:
        stat["items"] = {f"item{i}": {"count": i, "note": f"{words[4]} #{i}"} for i in range(spec.padding)}
    return stat


def _element(spec: ChatSpec, stat: dict[str, Any], changes: list[str]) -> dict[str, Any]:
    element: dict[str, Any] = {"stat_data": copy.deepcopy(stat), "display_data": copy.deepcopy(stat),
                               "delta_data": {"changes": changes}}
    element["schema"] = ZOD_PLACEHOLDER if spec.placeholder_schema else {"type": "object", "properties": {}}
    element.update(copy.deepcopy(spec.extra_keys))
    return element


def _reply(spec: ChatSpec, stat: dict[str, Any], turn: int, swipe: int) -> tuple[str, dict[str, Any]]:
    """A reply text with its commands, and the state they give."""
    words = _WORDS[spec.language]
    who, affection, gold = words[1], words[5], words[6]
    after = copy.deepcopy(stat)
    delta = 1 + turn % 3 + swipe
    after[who][affection][0] += delta
    after[who][gold] += swipe
    after["turn"] = turn
    text = (f"{words[4]} ({swipe})\n<UpdateVariable>\n"
            f"_.add('{who}.{affection}[0]', {delta});//{words[4][:4]}\n"
            f"_.set('{who}.{gold}', {stat[who][gold]}, {after[who][gold]});\n"
            f"_.set('turn', {stat['turn']}, {turn});\n</UpdateVariable>")
    return text, after


def _header(spec: ChatSpec) -> dict[str, Any]:
    words = _WORDS[spec.language]
    return {"user_name": words[0], "character_name": words[1], "create_date": "2024-05-01T10:00:00.000Z",
            "chat_metadata": {"note_prompt": ""}}


def messages(spec: ChatSpec, last: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """The chat's messages, one at a time (a benchmark writes a large chat without holding it);
    ``last``, when given, holds the final ``stat_data`` once they are all out."""
    words = _WORDS[spec.language]
    stat = _initial(spec)
    greeting = words[2].format(n=7)
    message: dict[str, Any] = {"name": words[1], "is_user": False, "is_system": False,
                               "send_date": "2024-05-01T10:00:01.000Z", "mes": greeting, "swipes": [greeting],
                               "swipe_id": 0, "swipe_info": [{}], "extra": {}}
    if spec.gap == 0:
        message["variables"] = [_element(spec, stat, [])]
    yield message
    for turn in range(1, spec.turns + 1):
        tracked = turn > spec.gap
        minute = f"2024-05-01T10:{turn % 60:02d}:00.000Z"
        user: dict[str, Any] = {"name": words[0], "is_user": True, "is_system": False, "send_date": minute,
                                "mes": words[3], "extra": {}}
        if tracked:
            user["variables"] = [_element(spec, stat, [])]
        yield user
        count = spec.swipes if turn % 2 == 0 else 1
        texts, states = [], []
        for swipe in range(count):
            text, after = _reply(spec, stat, turn, swipe)
            texts.append(text)
            states.append(after)
        chosen = count - 1
        if turn in spec.edited:
            states[chosen][words[1]][words[6]] += 100  # the player's own edit
        reply: dict[str, Any] = {"name": words[1], "is_user": False, "is_system": turn in spec.hidden,
                                 "send_date": minute.replace(":00.000Z", ":30.000Z"), "mes": texts[chosen],
                                 "swipes": texts, "swipe_id": chosen, "swipe_info": [{} for _ in texts],
                                 "extra": {"model": "synthetic"}}
        if tracked:
            reply["variables"] = [_element(spec, state, [f"turn {turn}"]) for state in states]
        yield reply
        stat = states[chosen]
    if last is not None:
        last.update(stat)


def chat_lines(spec: ChatSpec) -> list[dict[str, Any]]:
    """The chat's lines as objects: the header, then the messages."""
    header = _header(spec)
    last: dict[str, Any] = {}
    lines = [header, *messages(spec, last)]
    if spec.metadata_variables:
        header["chat_metadata"]["variables"] = {"stat_data": last}
    return lines


def chat_text(lines: list[dict[str, Any]]) -> bytes:
    """The file's bytes, as SillyTavern writes them."""
    return "".join(js_json(line) + "\n" for line in lines).encode()


def write_chat(path: Path, spec: ChatSpec) -> Path:
    path.write_bytes(chat_text(chat_lines(spec)))
    return path


def write_large_chat(path: Path, spec: ChatSpec) -> int:
    """Write a chat a message at a time (no ``chat_metadata.variables``: the header comes first);
    returns its size in bytes."""
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(js_json(_header(spec)) + "\n")
        for message in messages(spec):
            out.write(js_json(message) + "\n")
    return path.stat().st_size


def write_long_line_chat(path: Path, line_bytes: int, swipes: int = 5) -> int:
    """A short chat whose longest line, a reply of ``swipes`` swipes each with a state of
    about a ``swipes``-th of it, is at most ``line_bytes`` long; returns that line's size."""
    def longest(spec: ChatSpec) -> int:
        write_large_chat(path, spec)
        with path.open("rb") as lines:
            return max(len(line) for line in lines)

    spec = ChatSpec(turns=2, swipes=swipes, gap=0, padding=1000, metadata_variables=False)
    spec.padding = int(1000 * line_bytes / longest(spec))
    while (size := longest(spec)) > line_bytes:
        spec.padding = spec.padding * 95 // 100
    return size
