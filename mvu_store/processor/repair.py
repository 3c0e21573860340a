"""The two narrow repairs a card's processor may make, for a reply whose commands did not parse.

A reply with no command at all may still carry one of two well-known broken shapes, which a
card's Helper script repairs in MagVarUpdate by pushing the commands back itself:

1. exactly one ``<JSONPatch>`` (or ``<json_patch>``) block whose operations lack their value key,
   ``{"op":"replace","path":"/hp":{"n":1}}``: the ``:`` before an object or array value is
   read as ``,"value":``. A scalar after the colon is not repaired (it is too ambiguous);
2. no JSON Patch tag at all and exactly one ``<UpdateVariable>`` whose body (no ``<`` or ``>``
   in it) is a JSON Patch array.

Either way the body (an optional ```` ```json ```` fence stripped) must be a non-empty array of
``add`` / ``replace`` / ``remove`` operations with exactly the keys ``op, path, value`` (``op,
path`` for ``remove``). Each repaired operation is a :class:`Repair`: the command it becomes, and
the one command view (``type``, ``args``, ``full_match``) a script must push to have it run.
Nothing else is ever added (see :mod:`mvu_store.processor.adapter`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue, js_json
from mvu_store.lang import Command, parse_commands
from mvu_store.lang.commands import MAX_COMMANDS
from mvu_store.lang.jsonpatch import PATCH_TAG

_WRAPPER = re.compile(r"<(/?)UpdateVariable>", re.IGNORECASE)
_FENCE_START = re.compile(r"\A```(?:json)?\s*", re.IGNORECASE)
# An add/replace operation's opening up to the colon that should have been `,"value":`.
_MISSING_VALUE = re.compile(r'\{\s*"op"\s*:\s*"(?:add|replace)"\s*,\s*"path"\s*:\s*"(?:\\.|[^"\\])*"\s*(:)(?=\s*[\[{])')
_KEYS = {"add": {"op", "path", "value"}, "replace": {"op", "path", "value"}, "remove": {"op", "path"}}
_DIGITS = re.compile(r"[0-9]+", re.ASCII)


@dataclass(frozen=True, slots=True)
class Repair:
    command: Command
    type: str
    args: tuple[str, ...]
    full_match: str


def repairs(text: str) -> tuple[Repair, ...]:
    """The repaired operations of a reply that had no command (empty: nothing to repair)."""
    found = _body(text)
    if found is None:
        return ()
    body, patch = found
    body = _FENCE_START.sub("", body.strip())
    # The closing fence and the spaces before it (`\s` is str.isspace), without the regex `\s*```\Z`
    # that tried every start in a run of spaces (20,000 spaces: 1.5 s).
    body = (body[:-3] if body.endswith("```") else body).strip()
    fixed = _with_values(body) if patch else body
    if fixed is None:
        return ()
    try:
        operations = json.loads(fixed)
    except (ValueError, RecursionError):
        return ()
    if not isinstance(operations, list) or not operations or len(operations) > MAX_COMMANDS or not all(
            isinstance(op, dict) and set(op) == _KEYS.get(str(op.get("op")), set()) and isinstance(op["path"], str)
            for op in operations):
        return ()
    try:
        commands = parse_commands(f"<JSONPatch>{js_json(operations)}</JSONPatch>")
    except MvuError:
        return ()
    if len(commands) != len(operations):
        return ()
    return tuple(_repair(command, operation) for command, operation in zip(commands, operations, strict=True))


def _body(text: str) -> tuple[str, bool] | None:
    """The one JSON Patch block's body (``True``) or the one ``<UpdateVariable>``'s (``False``)."""
    tags = list(PATCH_TAG.finditer(text))
    if tags:
        if len(tags) != 2 or tags[0].group(1) or not tags[1].group(1) \
                or tags[0].group(2).lower() != tags[1].group(2).lower():
            return None
        return text[tags[0].end():tags[1].start()], True
    wrappers = list(_WRAPPER.finditer(text))
    if len(wrappers) != 2 or wrappers[0].group(1) or not wrappers[1].group(1):
        return None
    body = text[wrappers[0].end():wrappers[1].start()]
    return (None if "<" in body or ">" in body else (body, False))


def _with_values(body: str) -> str | None:
    """``body`` with each top-level operation's missing ``"value"`` key put back (``None``: no
    such operation, or brackets that do not balance)."""
    if not body.startswith("["):
        return None
    edits: list[int] = []
    stack: list[str] = []
    quoted = escaped = False
    for index, char in enumerate(body):
        if quoted:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char in "[{":
            if char == "{" and stack == ["["]:
                match = _MISSING_VALUE.match(body, index)
                if match is not None:
                    edits.append(match.start(1))
            stack.append(char)
        elif char in "]}" and (not stack or stack.pop() != ("[" if char == "]" else "{")):
            return None
    if quoted or stack or not edits:
        return None
    # Joined once: splicing each edit into the whole body copied it once per operation (a patch
    # of 20,000 operations took seconds).
    starts = [0, *(at + 1 for at in edits)]
    return ',"value":'.join(body[start:end] for start, end in zip(starts, [*edits, len(body)], strict=True))


def _repair(command: Command, operation: dict[str, JsonValue]) -> Repair:
    """The exact view a script pushes for this operation (MagVarUpdate's command factory shape:
    the pointer's slashes as dots, values as ``JSON.stringify`` writes them)."""
    op, raw = operation["op"], str(operation["path"])[1:].replace("/", ".")
    args: tuple[str, ...]
    if op == "replace":
        kind, args = "set", (raw, js_json(operation["value"]))
    elif op == "remove":
        kind, args = "delete", (raw,)
    else:
        parent, _, key = raw.rpartition(".")
        kind, args = "insert", (parent, key if _DIGITS.fullmatch(key) else f"'{key}'", js_json(operation["value"]))
    return Repair(command, kind, args, js_json(operation))
