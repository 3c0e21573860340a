"""``<JSONPatch>`` / ``<json_patch>`` blocks and their translation into MVU commands.

Block finding reproduces MagVarUpdate's pattern without its backtracking: tag names are
case-insensitive, the opening and closing names must match, the *last* opening tag before a
close is the one used (a block never contains another opening tag), an optional code fence
after the opening tag and before the closing one is dropped. The body is read as JSON, then
JSON5, then a repair of the usual model mistakes (:mod:`mvu_store.lang.jsonrepair`; MagVarUpdate
runs the whole of jsonrepair), then restricted YAML. It must be an array of objects
with a string ``op`` and ``path``; anything else makes MagVarUpdate ignore the whole block, and
so do we.

Op translation (MagVarUpdate's): ``replace`` -> set, ``delta`` -> add, ``add``/``insert`` ->
insert into the parent container, ``remove`` -> delete, ``move`` -> a no-op command;
``copy``/``test`` and unknown ops are dropped. Unlike MagVarUpdate, paths are real JSON pointers:
``~1``/``~0`` are decoded and dots inside a key stay inside the key.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from functools import partial

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue, json_pointer
from mvu_store.lang.jsonrepair import repair_json
from mvu_store.lang.outcomes import THINKING, UNCLOSED_BLOCK, UNKNOWN_OP, UNREADABLE_BLOCK, Noted
from mvu_store.lang.paths import Path, format_path, parse_pointer
from mvu_store.lang.restricted_yaml import MAX_YAML_BYTES
from mvu_store.lang.slowparse import ParseBudget, Unreadable, read_json5, read_yaml

PATCH_TAG = re.compile(r"<(/?)(json_?patch)>", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"\s*```")
_LINE_END = re.compile(r"[\n\r\u2028\u2029]")
_FENCE_CLOSE = re.compile(r"```\s*\Z")


@dataclass(frozen=True, slots=True)
class PatchOp:
    """One translated JSON Patch operation."""

    type: str
    name: str
    args: tuple[str, ...]
    path: Path
    index: int = 0
    """The operation's place in its block (counting every entry, dropped ones too)."""
    text: str = ""
    """The operation as compact JSON text, which names it in a diagnostic."""


@dataclass(frozen=True, slots=True)
class PatchBlock:
    start: int
    end: int
    ops: tuple[PatchOp, ...]


def _body(text: str, open_end: int, close_start: int) -> str:
    # Searches stop at the closing tag so that many blocks on one line stay linear.
    fence = _FENCE_OPEN.match(text, open_end, close_start)
    start = open_end
    if fence:
        line_end = _LINE_END.search(text, fence.end(), close_start)
        if line_end is None:
            return ""  # a one-line fenced block: MagVarUpdate's pattern captures nothing
        start = line_end.start()
    return _FENCE_CLOSE.sub("", text[start:close_start]).strip()


def _read(body: str, budget: ParseBudget) -> JsonValue:
    # strict=False lets raw newlines and tabs stand inside strings, as jsonrepair does.
    try:
        return json.loads(body, strict=False)
    except (ValueError, RecursionError):
        pass
    with suppress(Unreadable):
        return read_json5(body, budget)
    repaired = repair_json(body) if body[:1] in ("[", "{") else None
    if repaired is not None:
        try:
            return json.loads(repaired, strict=False)
        except (ValueError, RecursionError):
            pass
    return read_yaml(body, budget, max_bytes=MAX_YAML_BYTES)


def _is_patch(value: JsonValue) -> bool:
    if not isinstance(value, list):
        return False
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("op"), str):
            return False
        if not isinstance(item.get("path"), str) and not (item["op"] == "move" and isinstance(item.get("to"), str)):
            return False
    return True


def _dumps(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _named_path(item: dict[str, JsonValue]) -> Path:
    """The path a dropped operation names, when it is a pointer the store would take (its
    outcome names it); else none."""
    try:
        return parse_pointer(str(item["path"]))
    except MvuError:
        return ()


def _translate(item: dict[str, JsonValue]) -> PatchOp | None:
    op = item["op"]
    if op == "move":
        target = item.get("path", item.get("to"))
        return PatchOp("move", op, (str(item.get("from", "")), str(target)), ())
    if op not in ("replace", "delta", "add", "insert", "remove"):
        return None
    path = parse_pointer(str(item["path"]))
    dotted = format_path(path)
    if op == "remove":
        return PatchOp("delete", op, (dotted,), path)
    # MagVarUpdate passes JSON.stringify(undefined) on; the value then reads as undefined, which
    # removes a key (see executors) and is null in an array.
    value = _dumps(item["value"]) if "value" in item else "undefined"
    if op == "replace":
        return PatchOp("set", op, (dotted, value), path)
    if op == "delta":
        return PatchOp("add", op, (dotted, value), path)
    if not path:
        return None  # inserting "at the root" names no key
    key = path[-1]
    # All-digit keys go bare, so they are read as numbers and splice into arrays (as in
    # MagVarUpdate, "01" is 1); any other key (and '-', append) is an exact JSON string.
    key_text = key if key.isascii() and key.isdigit() else _dumps(key)
    return PatchOp("insert", op, (format_path(path[:-1]), key_text, value), path[:-1])


def _ops(body: str, budget: ParseBudget) -> tuple[PatchOp, ...] | str:
    """The block's operations, or why the block is ignored as a whole."""
    if not body:
        return "the block is empty"
    try:
        value = _read(body, budget)
    except (MvuError, Unreadable):
        return "the block is neither JSON, JSON5 nor YAML"
    if not _is_patch(value):
        return "the block is not an array of operations, each with a string op and path"
    try:
        translated = [(index, item, _translate(item)) for index, item in enumerate(value)]
        return tuple(
            dataclasses.replace(op, index=index, text=_compact(item)) if op is not None
            # An operation MagVarUpdate drops: no type, kept only to be accounted for.
            else PatchOp("", str(item["op"]), (), _named_path(item), index, _compact(item))
            for index, item, op in translated
        )
    except (ValueError, TypeError):
        return "the block holds a value JSON cannot carry"  # NaN from JSON5


def _compact(item: JsonValue) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def _runnable(ops: tuple[PatchOp, ...] | str, start: int, end: int, notes: Noted | None) -> tuple[PatchOp, ...]:
    """The operations that run; the rest (an unknown op, a whole unreadable block) noted."""
    if isinstance(ops, str):
        if notes is not None:
            notes.ignore("", start, end, UNREADABLE_BLOCK, ops, command=f"<JSONPatch> block at {start}")
        return ()
    if all(op.type for op in ops):
        return ops
    if notes is not None:
        for op in ops:
            if not op.type:
                notes.ignore("", start, end, UNKNOWN_OP, f"JSON Patch op {op.name!r} is not run",
                             command=op.text, op=op.name, patch_index=op.index,
                             path=partial(json_pointer, list(op.path)))
    return tuple(op for op in ops if op.type)


def find_patch_blocks(text: str, hidden: Callable[[int], bool], notes: Noted | None = None) -> list[PatchBlock]:
    """Every JSON Patch block of ``text`` in order, with its translated operations.

    Blocks starting where ``hidden`` says so (inside a model's thinking) are not even read.
    ``notes``, when given, hears of every block or operation that does not run, and why.
    """
    blocks: list[PatchBlock] = []
    budget = ParseBudget()
    last_open: re.Match[str] | None = None
    for tag in PATCH_TAG.finditer(text):
        if not tag.group(1):
            if last_open is not None and notes is not None:
                _unclosed(text, last_open, notes, "a later opening tag replaces it")
            last_open = tag
        elif last_open is not None and last_open.group(2).lower() == tag.group(2).lower():
            if hidden(last_open.start()):
                if notes is not None:
                    notes.ignore(text, last_open.start(), tag.end(), THINKING, "inside the model's thinking")
            else:
                found = _ops(_body(text, last_open.end(), tag.start()), budget)
                ops = _runnable(found, last_open.start(), tag.end(), notes)
                if ops:
                    blocks.append(PatchBlock(last_open.start(), tag.end(), ops))
            last_open = None
    if last_open is not None and notes is not None:
        _unclosed(text, last_open, notes, "no closing tag follows")
    return blocks


def _unclosed(text: str, tag: re.Match[str], notes: Noted, why: str) -> None:
    notes.ignore(text, tag.start(), tag.end(), UNCLOSED_BLOCK,
                 f"{tag.group(0)} is not closed by </{tag.group(2)}> ({why}): its operations are not run")
