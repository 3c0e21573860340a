"""The four command executors: set, add, insert and delete (plus the no-op move).

Each executor checks everything first and writes once at the end, so a refused command leaves
the state as it was. Refusals raise :class:`MvuError` with a diagnostic code (see
:mod:`mvu_store.lang.apply`). Rules and quirks follow MagVarUpdate as observed (docs/compatibility.md);
the comments name the quirk where the code would otherwise look wrong.

States are persistent: a write copies the containers from the root to the changed place and
shares everything else, so a state object, once built, is never mutated (the undo of a refused
command keeps the previous state by reference, and ``check`` may remember what it saw).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.dates import fields_of, iso_text, parse_date, time_clip
from mvu_store.js.members import own_keys
from mvu_store.js.values import is_number, to_string, truthy
from mvu_store.jsonvalue import UNSAFE_KEYS, JsonValue, json_pointer
from mvu_store.lang.arith import round12
from mvu_store.lang.commands import Command
from mvu_store.lang.jsvalues import same
from mvu_store.lang.literals import parse_value, to_number
from mvu_store.lang.merge import merged
from mvu_store.lang.meta import (
    Schema,
    apply_template,
    clean_metadata,
    has_metadata,
    merge_schema,
    properties_of,
    schema_at,
)
from mvu_store.lang.paths import Path, assigned, format_path, is_index, lodash_path, lookup, trim_quotes
from mvu_store.lang.slowparse import ParseBudget


class Run:
    """The private, mutable state of one update."""

    def __init__(self, stat_data: dict[str, Any], schema: Schema | None) -> None:
        self.stat_data: Any = stat_data
        self.schema = schema
        flags = schema or {}
        self.strict_set = flags.get("strictSet") is True
        self.strict_template = flags.get("strictTemplate") is True
        self.concat_arrays = flags.get("concatTemplateArray") is not False
        self.changes: list[dict[str, Any]] = []
        self.budget = ParseBudget()
        self.declared = False
        """A card's declaration governs the state: it, not the native schema, refuses values."""

    def record(self, command: Command, path: Path, **facts: JsonValue) -> None:
        # The facts are parts of states (or fresh values), which nothing mutates: no copy.
        self.changes.append({"op": command.type, "path": json_pointer(list(path)), "reason": command.reason, **facts})

    def template_of(self, node: Schema | None, *kinds: str) -> JsonValue:
        return node.get("template") if node is not None and node.get("type") in kinds else None

    def fill(self, value: JsonValue, template: JsonValue) -> JsonValue:
        return apply_template(value, template, strict=self.strict_template, concat_arrays=self.concat_arrays)


def _missing(path: Path, what: str = "does not exist") -> MvuError:
    return MvuError(Code.PATH_MISSING, f"path {format_path(path)!r} {what}")


def _refused(message: str) -> MvuError:
    return MvuError(Code.SCHEMA, message)


def _is_vwd(value: JsonValue) -> bool:
    """A value-with-description pair ``[value, "description"]`` (two strings count too)."""
    return isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)


def _is_digits(segment: str) -> bool:
    """lodash's ``/^\\d+$/`` test on a path segment (leading zeros allowed, ASCII only)."""
    return segment.isascii() and segment.isdigit()


def _write(run: Run, path: Path, value: JsonValue) -> None:
    if path:
        run.stat_data = assigned(run.stat_data, path, value)
    else:
        run.stat_data = value


def is_undefined(raw: str) -> bool:
    """The literal ``undefined``, which :func:`parse_value` reads as ``null``.

    MagVarUpdate stores JavaScript's ``undefined`` there, and the saved JSON then has no such
    key (an array element becomes ``null``). Callers use this to drop the key instead.
    """
    return raw.strip() == "undefined"


def _write_or_drop(run: Run, path: Path, value: JsonValue, undefined: bool) -> bool:
    """Write ``value``, or drop the key if it stands for ``undefined``; True if dropped."""
    parent = lookup(run.stat_data, path[:-1])[1] if path else None
    if undefined and value is None and isinstance(parent, dict):
        _write(run, path[:-1], {k: v for k, v in parent.items() if k != path[-1]})
        return True
    _write(run, path, value)
    return False


def _target(run: Run, command: Command) -> Path:
    """The command's path, read as lodash reads it (a whole top-level key wins; see lodash_path)."""
    return lodash_path(command.args[0], run.stat_data) if command.source == "function" else command.path


def execute_set(run: Run, command: Command) -> None:
    path = _target(run, command)
    value = parse_value(command.args[-1], run.budget)  # the middle "old value" argument is ignored
    found, old = lookup(run.stat_data, path)
    if not found:
        raise _missing(path)
    if not path and not isinstance(value, dict):
        raise _refused("stat_data must stay an object")
    new = value
    if not run.strict_set and _is_vwd(old) and not isinstance(old[0], list):
        # Only the value half of [value, "description"] changes; a number stays a number.
        first = to_number(value) if is_number(old[0]) and value is not None else value
        new = [first, old[1]]
    elif is_number(old) and isinstance(value, str):
        new = to_number(value)
    if _write_or_drop(run, path, new, is_undefined(command.args[-1])):
        run.record(command, path, previous=old)  # no value: the key is gone
    else:
        run.record(command, path, previous=old, value=new)


def execute_add(run: Run, command: Command) -> None:
    path = _target(run, command)
    found, old = lookup(run.stat_data, path)
    if not found:
        raise _missing(path)
    delta = parse_value(command.args[1], run.budget)
    vwd = _is_vwd(old) and old[0] is not None and not isinstance(old[0], dict | list)
    operand = old[0] if vwd else old
    # MagVarUpdate adds milliseconds to a text JavaScript's `new Date` reads as a date (and that is
    # no plain number), storing toISOString()'s form; the store has no time zone, so one without
    # an offset is UTC.
    moment = parse_date(operand) if isinstance(operand, str) and to_number(operand) is None else math.nan
    if math.isnan(moment) and not is_number(operand):
        raise _refused(f"{format_path(path)!r} is neither a number nor a date")
    if not is_number(delta):
        raise _refused(f"the delta {command.args[1]!r} is not a number")
    total = round12(operand + delta) if math.isnan(moment) else _moved(int(moment), delta)
    if total is None:
        raise _refused("the sum is not finite" if math.isnan(moment) else "the date is out of range")
    new = [total, old[1]] if vwd else total
    _write(run, path, new)
    run.record(command, path, previous=old, value=new)


def _moved(moment: int, delta: float) -> str | None:
    if not math.isfinite(delta):
        return None
    moved = time_clip(moment + math.trunc(delta))
    # Years 1 to 9999 only: beyond them toISOString writes signed six-digit years no reader expects.
    if math.isnan(moved) or not 1 <= fields_of(int(moved))[0] <= 9999:
        return None
    return iso_text(int(moved))


def _check_insert_schema(run: Run, node: Schema | None, path: Path, key: JsonValue, keyed: bool) -> None:
    if run.declared:
        return  # the declaration validates the whole result instead (the original service's rule)
    if node is not None:
        if node.get("type") == "object" and node.get("extensible") is False:
            if not keyed:
                raise _refused(f"{format_path(path)!r} is not extensible")
            if to_string(key) not in properties_of(node):
                raise _refused(f"{format_path(path)!r} is not extensible (no key {to_string(key)!r})")
        elif node.get("type") == "array" and node.get("extensible") is not True:
            raise _refused(f"array {format_path(path)!r} is not extensible")
        return
    # No schema node: MagVarUpdate requires a truthy parent, and a top-level path's parent
    # (lodash's _.get(data, '')) is undefined, so a top-level insert fails without a schema.
    if path:
        parent = lookup(run.stat_data, path[:-1])[1] if len(path) > 1 else None
        if not truthy(parent):
            raise _missing(path, "has no parent")


def _spliced(items: list[JsonValue], key: JsonValue, value: JsonValue) -> list[JsonValue]:
    """``Array.prototype.splice(key, 0, value)``: negatives count from the end, past-the-end appends."""
    index = len(items) if key == "-" else int(key)
    if index < 0:
        index = max(len(items) + index, 0)
    return [*items[:index], value, *items[index:]]


def _keyed(container: JsonValue, key: JsonValue, value: JsonValue) -> JsonValue:
    if isinstance(container, list):
        if is_number(key) or key == "-":
            return _spliced(container, key, value)
        name = to_string(key)
        # arr['1'] = v overwrites index 1 in JavaScript; other names would vanish from JSON.
        if not is_index(name) or int(name) > len(container):
            raise _refused(f"an array has no key {name!r}")
        return [*container[: int(name)], value, *container[int(name) + 1 :]]
    updated = dict(container) if isinstance(container, dict) else {}
    updated[to_string(key)] = value
    return updated


def execute_insert(run: Run, command: Command) -> None:
    path = command.path
    keyed = len(command.args) >= 3
    found, existing = lookup(run.stat_data, path)
    if found and existing is not None and not isinstance(existing, dict | list):
        raise _refused(f"{format_path(path)!r} holds a {type(existing).__name__}, not a container")
    key = parse_value(command.args[1], run.budget) if keyed else None
    if keyed and to_string(key) in UNSAFE_KEYS:
        raise MvuError(Code.PATH, f"the key {to_string(key)!r} under {format_path(path)!r} is refused")
    value = parse_value(command.args[2] if keyed else command.args[1], run.budget)
    if not found:
        # undefined counts as a primitive target in MagVarUpdate, in both forms: an insert never
        # creates its target (`_.assign('list[0]', {...})` on an empty list leaves it empty).
        raise _missing(path)
    node = schema_at(run.schema, path) if run.schema is not None else None
    _check_insert_schema(run, node, path, key, keyed)
    if has_metadata(existing):
        # The cleaning below works in place on the new container, which shares the current
        # one's children: they must be private copies if the cleaning would touch them.
        existing = copy.deepcopy(existing)
    if keyed:
        filled = run.fill(value, run.template_of(node, "array", "object"))
        updated = _keyed(existing, key, filled)
        if isinstance(updated, dict) and filled is None and is_undefined(command.args[2]):
            del updated[to_string(key)]  # obj[key] = undefined: JSON keeps no such key
    else:
        container = existing if isinstance(existing, dict | list) else ([] if isinstance(value, list) else {})
        if isinstance(container, list):
            # The value is pushed as one element, even when it is itself an array.
            filled = run.fill(value, run.template_of(node, "array"))
            updated = [*container, filled]
        elif isinstance(value, dict):
            filled = value
            updated = merged(container, value)  # lodash's deep merge (v2 assigns shallowly: declared.py)
        else:
            raise _refused(f"only an object can be merged into object {format_path(path)!r}")
    schema = run.schema
    if schema is not None and node is not None:
        schema = merge_schema(schema, path, updated)  # before cleaning: the value's $meta counts
    clean_metadata(updated)
    _write(run, path, updated)
    run.schema = schema
    run.record(command, path, value=filled, **({"key": key} if keyed else {}))


def _check_delete_schema(run: Run, container_path: Path, key: JsonValue) -> None:
    node = schema_at(run.schema, container_path) if run.schema is not None else None
    if node is None:
        return
    if node.get("type") == "array" and node.get("extensible") is not True:
        raise _refused(f"array {format_path(container_path)!r} is not extensible")
    if node.get("type") == "object":
        child = properties_of(node).get(to_string(key))
        if isinstance(child, dict) and child.get("required") is True:
            raise _refused(f"{to_string(key)!r} is required in {format_path(container_path)!r}")


def _remove_from(collection: JsonValue, target: JsonValue, path: Path) -> JsonValue:
    if isinstance(collection, list):
        if is_number(target):
            index = int(target)
        else:
            index = next((i for i, item in enumerate(collection) if same(item, target)), -1)
        if not 0 <= index < len(collection):
            raise _refused(f"nothing to remove from {format_path(path)!r}")
        return [*collection[:index], *collection[index + 1 :]]
    if isinstance(collection, dict):
        if is_number(target):
            keys = own_keys(collection)  # the Nth key in JavaScript's key order
            if not (float(target).is_integer() and 0 <= target < len(keys)):
                raise _refused(f"object {format_path(path)!r} has no entry {target}")
            name = keys[int(target)]
        else:
            name = to_string(target)
            if name not in collection:
                raise _refused(f"object {format_path(path)!r} has no key {name!r}")
        return {k: v for k, v in collection.items() if k != name}
    raise _refused(f"{format_path(path)!r} is not a container")


def execute_delete(run: Run, command: Command) -> None:
    path = command.path
    if len(command.args) == 1 and path and _is_digits(path[-1]):
        # MagVarUpdate's fast path: an index into an array is spliced with no schema check.
        found, container = lookup(run.stat_data, path[:-1])
        if found and isinstance(container, list) and int(path[-1]) < len(container):
            removed = container[int(path[-1])]
            _write(run, path[:-1], [*container[: int(path[-1])], *container[int(path[-1]) + 1 :]])
            run.record(command, path, previous=removed)
            return
    found, current = lookup(run.stat_data, path)
    if not found:
        raise _missing(path)
    if len(command.args) > 1:
        if is_undefined(command.args[1]):
            raise _refused("undefined names nothing to remove")  # MagVarUpdate refuses it too
        target = parse_value(command.args[1], run.budget)
        key = trim_quotes(target) if isinstance(target, str) else target
        _check_delete_schema(run, path, key)
        _write(run, path, _remove_from(current, target, path))
        run.record(command, path, previous=target)
        return
    if not path:
        raise _refused("cannot delete stat_data itself")
    _check_delete_schema(run, path[:-1], int(path[-1]) if _is_digits(path[-1]) else path[-1])
    parent = lookup(run.stat_data, path[:-1])[1]
    if isinstance(parent, dict):
        _write(run, path[:-1], {k: v for k, v in parent.items() if k != path[-1]})
    else:
        raise _missing(path)
    run.record(command, path, previous=current)


def execute_move(run: Run, command: Command) -> None:
    # MagVarUpdate parses JSON Patch "move" but has no executor: state is left as it was.
    raise MvuError(Code.UNSUPPORTED, "JSON Patch 'move' is not applied (as in MagVarUpdate)")


EXECUTORS: dict[str, Callable[[Run, Command], None]] = {
    "set": execute_set,
    "add": execute_add,
    "insert": execute_insert,
    "delete": execute_delete,
    "move": execute_move,
}
