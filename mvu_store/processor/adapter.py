"""Between the reply's commands and a script's listeners: command views out, commands back.

A listener sees each command as a view ``{type, args, full_match, reason}`` (MagVarUpdate's
shape, in text order). What the listeners leave in the array is read back strictly: each entry
must be a view of one of the offered commands, found after the previous entry's (so only
*filtering* passes: dropping commands, never reordering, duplicating, changing an argument or
inventing one), or the exact view of one repaired operation (:mod:`mvu_store.processor.repair`).
A view's ``full_match`` is the call's own text (no ``;``, no ``//reason``). Its first argument
is the command's path, parts joined by dots, a part holding ``.``,
``[``, ``]``, a quote or a backslash written as ``["part"]`` (a JSON string); the other
arguments are the command's own texts (``move`` keeps its two JSON pointers). A view is matched
by its ``type`` (an alias such as ``assign`` or ``unset`` names its canonical type) and its
``args``, text for text; its ``full_match`` and ``reason`` are the script's to change and are
not used. Anything else is ``MVU_COMMAND_HOOK_OUTPUT``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang import Command
from mvu_store.lang.commands import ALIASES, MAX_COMMANDS
from mvu_store.lang.paths import Path
from mvu_store.lang.scanner import find_closes
from mvu_store.processor.repair import Repair

_TYPES = {**ALIASES, "move": "move"}
_PLAIN_PART = re.compile(r"[^.\[\]\"'\\]+")


def _shown_path(path: Path) -> str:
    text = ""
    for part in path:
        if not _PLAIN_PART.fullmatch(part):
            text += f"[{json.dumps(part, ensure_ascii=False)}]"
        else:
            text += f".{part}" if text else part
    return text


def view_args(command: Command) -> tuple[str, ...]:
    if command.type == "move":
        return command.args
    return (_shown_path(command.path), *command.args[1:])


def _call_text(command: Command) -> str:
    """What a view shows as ``full_match``: a call's own text, without the ``;`` and the
    ``//reason`` after it (the original's view); a JSON Patch operation's own text."""
    if command.source != "function":
        return command.full_match
    text = command.full_match
    open_at = text.find("(")
    close_at = find_closes(text, [open_at]).get(open_at) if open_at >= 0 else None
    return text[: close_at + 1] if close_at is not None else text


def views(commands: Sequence[Command]) -> list[JsonValue]:
    return [{"type": command.type, "args": list(view_args(command)), "full_match": _call_text(command),
             "reason": command.reason} for command in commands]


def _refused(message: str) -> MvuError:
    return MvuError(Code.COMMAND_HOOK_OUTPUT, message)


def commands_back(result: Any, offered: Sequence[Command], repairs: Sequence[Repair]) -> list[Command]:
    """The commands the listeners' array stands for (see the module's rules)."""
    if not isinstance(result, list) or len(result) > MAX_COMMANDS:
        raise _refused(f"the listeners must leave an array of at most {MAX_COMMANDS} commands")
    by_text = {repair.full_match: repair for repair in repairs}
    keys = [(command.type, view_args(command)) for command in offered]
    chosen: list[Command] = []
    cursor = 0
    for view in result:
        if not isinstance(view, dict) or not isinstance(view.get("type"), str) or not isinstance(
                view.get("args"), list) or not all(isinstance(arg, str) for arg in view["args"]):
            raise _refused("a command left by the listeners is not {type: string, args: string[]}")
        kind, args = _TYPES.get(view["type"]), tuple(view["args"])
        repair = by_text.get(view["full_match"]) if isinstance(view.get("full_match"), str) else None
        if repair is not None:
            if (view["type"], args) != (repair.type, repair.args):
                raise _refused("a listener changed the recovered patch")
            chosen.append(repair.command)
            continue
        if kind is None:
            raise _refused(f"unsupported command type {view['type'][:40]!r}")
        while cursor < len(offered) and keys[cursor] != (kind, args):
            cursor += 1
        if cursor == len(offered):
            raise _refused("a listener changed, reordered or added a command: it may only filter them")
        chosen.append(offered[cursor])
        cursor += 1
    return chosen
