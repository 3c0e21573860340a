"""Commands under a card's declaration (interpreter v2), as the ``mvu_zod`` helper runs them.

Most published cards register their Zod schema through StageDog's ``mvu_zod`` helper; in
SillyTavern that helper, not MagVarUpdate, then executes the reply's commands. Its rules, which
these executors follow (DIGEST U-6 where it speaks, the helper where it is silent):

* Each command builds a candidate from the current ``stat_data`` and the schema parses it
  (``parse``); a refusal drops that command only. The parsed result is merged **shallowly at the
  top level** (``{**stat_data, **parsed}``), so a top-level key that a stripping root drops
  survives; a path the command deleted is removed first.
* Paths: quotes trimmed, a leading ``stat_data.`` or ``status_current_variables.`` dropped; a
  path with a segment starting with ``_`` is read-only and the command is ignored silently.
* Values are read without arithmetic: ``120+30``, ``2025-06-02`` and ``10:30`` stay text and the
  schema decides. ``set`` and ``insert`` create missing paths (lodash ``_.set``; arrays stay
  dense); ``insert`` on a missing path tries an object first, then an array.
* ``add`` needs an existing number and adds ``Number(delta)`` (``'15'``, ``'+5'``, ``true`` work).
* ``delete`` joins its arguments with ``.`` into one path; under an array the last segment is an
  index, so deleting "by value" deletes nothing.
* JSON Patch ``move`` is a delete then a set, each parsed by the schema.

The native ``$meta`` schema plays no part. States are persistent (see :mod:`mvu_store.lang.apply`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from contextlib import suppress

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import is_number, to_string
from mvu_store.jsonvalue import UNSAFE_KEYS, JsonValue, json_pointer
from mvu_store.lang.commands import Command
from mvu_store.lang.creation import written
from mvu_store.lang.executors import Run, is_undefined
from mvu_store.lang.literals import parse_value, to_number
from mvu_store.lang.paths import Path, format_path, lodash_path, lookup, parse_path, parse_pointer, trim_quotes

Parse = Callable[[JsonValue], JsonValue]
"""The declaration: returns the parsed candidate, raises ``MvuError`` (``MVU_SCHEMA``) to refuse it."""

_PREFIX = re.compile(r"(?:stat_data|status_current_variables)\.")
_PREFIX_KEYS = frozenset({"stat_data", "status_current_variables"})


class _Ignored(Exception):
    """The helper drops the command without a word (a read-only ``_`` path, ``add`` on the root):
    no diagnostic either."""


def _refused(message: str) -> MvuError:
    return MvuError(Code.SCHEMA, message)


def _text_path(raw: str) -> str:
    """The helper's path text: quotes trimmed, then one leading prefix dropped."""
    text = trim_quotes(raw.strip())
    found = _PREFIX.match(text)
    return text[found.end() :] if found else text


def _pointer_path(path: Path) -> Path:
    """A JSON Patch path with the prefix dropped (``/stat_data/hp`` becomes ``hp``)."""
    return path[1:] if len(path) > 1 and path[0] in _PREFIX_KEYS else path


def _command_path(run: Run, command: Command) -> Path:
    if command.source == "json_patch":
        return _pointer_path(command.path)
    return lodash_path(_text_path(command.args[0]), run.stat_data)


def _writable(path: Path) -> Path:
    if any(segment.startswith("_") for segment in path):
        raise _Ignored
    return path


def _value(run: Run, raw: str) -> JsonValue:
    return parse_value(raw, run.budget, arithmetic=False)


def _with(root: JsonValue, path: Path, value: JsonValue, undefined: bool = False) -> JsonValue:
    """``root`` with ``value`` at ``path`` (the root itself for ``()``), creating what is missing."""
    if not path:
        return value
    return written(root, path, value, drop=undefined and value is None)


def _merged(run: Run, parsed: JsonValue, removed: tuple[Path, ...] = ()) -> None:
    """The helper's commit: removed paths unset, then the parsed state merged at the top level."""
    if not isinstance(parsed, dict):
        raise _refused("stat_data must stay an object")
    base = run.stat_data
    for path in removed:
        if path and not lookup(parsed, path)[0]:
            base = _without(base, path)
    run.stat_data = {**base, **parsed}


def _without(root: JsonValue, path: Path) -> JsonValue:
    """``root`` without the object key at ``path`` (unchanged if there is none)."""
    found, parent = lookup(root, path[:-1])
    if not found or not isinstance(parent, dict) or path[-1] not in parent:
        return root
    rest = {key: value for key, value in parent.items() if key != path[-1]}
    return written(root, path[:-1], rest) if len(path) > 1 else rest


def _settled(run: Run, command: Command, path: Path, **facts: JsonValue) -> None:
    """Record the change with the value the state ended with (after the schema's transform)."""
    found, final = lookup(run.stat_data, path)
    run.record(command, path, **facts, **({"value": final} if found else {}))


def execute_set(run: Run, command: Command, parse: Parse) -> None:
    path = _writable(_command_path(run, command))
    # With three arguments the middle one (the old value) is ignored; with four the second counts.
    raw = command.args[2] if len(command.args) == 3 else command.args[1]
    found, old = lookup(run.stat_data, path)
    undefined = is_undefined(raw)
    # JavaScript's undefined leaves no key in JSON: the merge must not bring the old one back.
    _merged(run, parse(_with(run.stat_data, path, _value(run, raw), undefined)), (path,) if undefined else ())
    _settled(run, command, path, **({"previous": old} if found else {}))


def execute_add(run: Run, command: Command, parse: Parse) -> None:
    path = _writable(_command_path(run, command))
    if not path:
        raise _Ignored
    found, old = lookup(run.stat_data, path)
    if not found:
        raise MvuError(Code.PATH_MISSING, f"path {format_path(path)!r} does not exist")
    if not is_number(old):
        raise _refused(f"{format_path(path)!r} is not a number")
    delta = to_number(_value(run, command.args[1]))  # JavaScript's Number(delta)
    if delta is None:
        raise _refused(f"the delta {command.args[1]!r} is not a number")
    total = old + delta
    if not math.isfinite(total):
        raise _refused("the sum is not finite")
    _merged(run, parse(written(run.stat_data, path, total)))
    _settled(run, command, path, previous=old)


def _splice_at(items: list[JsonValue], key: JsonValue) -> int:
    """``Array.prototype.splice``'s start: ``'-'`` is the end, a non-number 0, negatives from the end."""
    if key == "-":
        return len(items)
    number = to_number(key)
    start = 0 if number is None else math.trunc(number)
    return max(len(items) + start, 0) if start < 0 else min(start, len(items))


def _inserted(container: JsonValue, key: JsonValue, value: JsonValue, keyed: bool, undefined: bool) -> JsonValue:
    if isinstance(container, list):
        index = _splice_at(container, key) if keyed else len(container)
        return [*container[:index], value, *container[index:]]
    if keyed:
        updated = {**container, to_string(key): value}
        if undefined:
            del updated[to_string(key)]  # obj[key] = undefined: JSON keeps no such key
        return updated
    # lodash's _.assign: an object's keys, or a string's or array's indexes; anything else adds nothing.
    if isinstance(value, dict):
        return {**container, **value}
    if isinstance(value, str | list):
        return {**container, **{str(index): item for index, item in enumerate(value)}}
    return container


def execute_insert(run: Run, command: Command, parse: Parse) -> None:
    path = _writable(_command_path(run, command))
    keyed = len(command.args) >= 3
    key = _value(run, command.args[1])
    if keyed and to_string(key) in UNSAFE_KEYS:
        raise MvuError(Code.PATH, f"the key {to_string(key)!r} under {format_path(path)!r} is refused")
    value = _value(run, command.args[-1])
    undefined = is_undefined(command.args[-1])
    found, existing = lookup(run.stat_data, path)
    if found and existing is not None and not isinstance(existing, dict | list):
        raise _refused(f"{format_path(path)!r} holds a {type(existing).__name__}, not a container")
    if found and existing is not None:
        parsed = parse(_with(run.stat_data, path, _inserted(existing, key, value, keyed, undefined)))
    else:
        parsed = _created(run, path, key, value, keyed, undefined, parse)
    _merged(run, parsed)
    # An object's new key is recorded with the value the state ended with; an array's element
    # has no fixed place to read it back from, so the inserted value is recorded.
    if keyed and isinstance(lookup(run.stat_data, path)[1], dict):
        found, final = lookup(run.stat_data, (*path, to_string(key)))
        value = final if found else value
    run.record(command, path, value=value, **({"key": key} if keyed else {}))


def _created(
    run: Run, path: Path, key: JsonValue, value: JsonValue, keyed: bool, undefined: bool, parse: Parse
) -> JsonValue:
    """A missing container: an object if the schema accepts it, else an array (DIGEST U-6)."""
    try:
        return parse(_with(run.stat_data, path, _inserted({}, key, value, keyed, undefined)))
    except MvuError as error:
        if error.code != Code.SCHEMA:
            raise
    return parse(_with(run.stat_data, path, _inserted([], key, value, keyed, undefined)))


def _deleted(root: JsonValue, path: Path) -> tuple[JsonValue, JsonValue]:
    """``(new root, removed value)``; under an array the last segment is an index (lodash pullAt)."""
    if not path:
        raise _refused("cannot delete stat_data itself")
    found, parent = lookup(root, path[:-1])
    if found and isinstance(parent, list):
        index = to_number(path[-1])
        if index is None or not float(index).is_integer() or not 0 <= index < len(parent):
            raise MvuError(Code.PATH_MISSING, f"{path[-1]!r} is not an index of {format_path(path[:-1])!r}")
        position = int(index)
        return _with(root, path[:-1], [*parent[:position], *parent[position + 1 :]]), parent[position]
    present, removed = lookup(root, path)
    if not present:
        raise MvuError(Code.PATH_MISSING, f"path {format_path(path)!r} does not exist")
    return _without(root, path), removed


def execute_delete(run: Run, command: Command, parse: Parse) -> None:
    if command.source == "json_patch":
        path = _pointer_path(command.path)
    else:
        path = parse_path(".".join(_text_path(argument) for argument in command.args))
    state, removed = _deleted(run.stat_data, _writable(path))
    _merged(run, parse(state), (path,))
    run.record(command, path, previous=removed)


def execute_move(run: Run, command: Command, parse: Parse) -> None:
    source = _pointer_path(parse_pointer(command.args[0]))
    target = _pointer_path(parse_pointer(command.args[1]))
    found, value = lookup(run.stat_data, source)
    if not found:
        raise MvuError(Code.PATH_MISSING, f"the move's source {format_path(source)!r} does not exist")
    try:
        state = parse(_deleted(run.stat_data, _writable(source))[0])
        # A moved text is read again like a command value ("123" becomes 123).
        moved = _value(run, value) if isinstance(value, str) else value
        state = parse(_with(state, _writable(target), moved))
    except _Ignored:
        raise _refused("a move cannot touch a read-only ('_') path") from None
    _merged(run, state, (source,))
    _settled(run, command, target, **{"from": json_pointer(list(source))})


DECLARED_EXECUTORS: dict[str, Callable[[Run, Command, Parse], None]] = {
    "set": execute_set,
    "add": execute_add,
    "insert": execute_insert,
    "delete": execute_delete,
    "move": execute_move,
}


def execute_declared(run: Run, command: Command, parse: Parse) -> None:
    """Run one command the helper's way; a read-only path leaves no trace at all."""
    with suppress(_Ignored):
        DECLARED_EXECUTORS[command.type](run, command, parse)
