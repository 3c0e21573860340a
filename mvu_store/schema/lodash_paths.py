"""lodash's writers by path: ``set``, ``setWith``, ``update``, ``updateWith``, ``unset`` and
``zipObjectDeep``.

They follow lodash (a container created along the path is an array where the next key is an
index, an object otherwise; a prototype key anywhere stops the write) within S-7's member
rules: an array stays dense, so writing past its end fills the gap with ``undefined`` (what a
hole reads as) and deleting an item leaves ``undefined`` in its place; writing its ``length``
shortens it or pads it the same way; a named key on an array is refused (``MVU_SCHEMA``), as the
interpreter refuses ``array.name = value``.
"""

from __future__ import annotations

from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.members import check_writable, data_member, delete_own, set_own
from mvu_store.js.values import UNDEFINED, Budget, Builtin, JsCallable, arg, is_number
from mvu_store.schema.arrays import size_limit
from mvu_store.schema.builtins import call_fn, item_string, lodash_array, path_parts, read_path
from mvu_store.schema.numeric import range_error, to_num

_PROTOTYPE_KEYS = frozenset({"__proto__", "constructor", "prototype"})
_MAX_SAFE = 2**53 - 1


def index_of(key: Any) -> int | None:
    """lodash's ``isIndex`` without a length: a safe non-negative integer, or a value whose text
    is one's canonical digits (``'3'``, ``[3]``), as an ``int``; ``None`` for anything else."""
    if is_number(key):
        valid = key == key and key >= 0 and key % 1 == 0 and key < _MAX_SAFE
        return int(key) if valid else None
    if type(key) is dict or not (type(key) in (str, list, bool) or key is None or key is UNDEFINED):
        return None
    text = item_string(key)
    if text.isascii() and text.isdigit() and (text == "0" or text[0] != "0") and int(text) < _MAX_SAFE:
        return int(text)
    return None


def write(budget: Budget, node: Any, key: str, value: Any) -> None:
    """``node[key] = value`` as JavaScript would, on a container the declaration may write."""
    check_writable(budget, node)
    if type(node) is list:
        if key == "length":
            _resize(budget, node, value)
            return
        index = index_of(key)
        if index is None:
            raise MvuError(Code.SCHEMA, f"an array holds no named keys: `{key}` cannot be written (S-7)", key=key)
        if index > len(node):
            size_limit(budget, index + 1)
            node.extend([UNDEFINED] * (index - len(node)))
    set_own(budget, node, key, value)


def _resize(budget: Budget, items: list[Any], value: Any) -> None:
    number = to_num(value)
    if not (number == number and 0 <= number < 2**32 and number % 1 == 0):
        raise range_error("Invalid array length")
    length = int(number)
    size_limit(budget, length)
    if length < len(items):
        del items[length:]
    else:
        items.extend([UNDEFINED] * (length - len(items)))


def set_with(budget: Budget, target: Any, path: Any, value: Any, customizer: Any = UNDEFINED) -> Any:
    """lodash's ``baseSet``; ``customizer(current, key, node)`` may choose the container of each
    step before the last (``undefined``: lodash's default)."""
    if type(target) is not dict and type(target) is not list:
        return target
    parts = path_parts(path, target)
    budget.charge(len(parts))
    node = target
    for position, part in enumerate(parts):
        key = item_string(part)
        if key in _PROTOTYPE_KEYS:
            return target
        child = value
        if position < len(parts) - 1:
            current = data_member(node, key)
            child = UNDEFINED
            if isinstance(customizer, JsCallable):
                child = customizer.call(budget, [current, key, node])
            if child is UNDEFINED:
                container = type(current) is dict or type(current) is list
                child = current if container else [] if index_of(parts[position + 1]) is not None else {}
        write(budget, node, key, child)
        if type(child) is not dict and type(child) is not list:
            return target  # a step that is no container takes no further key
        node = child
    return target


def _update_with(budget: Budget, args: list[Any]) -> Any:
    """``_.update(object, path, updater)`` / ``_.updateWith(..., customizer)``."""
    old = read_path(arg(args, 0), path_parts(arg(args, 1), arg(args, 0)))
    return set_with(budget, arg(args, 0), arg(args, 1), call_fn(budget, arg(args, 2), old), arg(args, 3))


def _unset(budget: Budget, args: list[Any]) -> bool:
    """lodash's ``baseUnset``: delete the last key from the value the rest of the path reads
    (an array's item becomes ``undefined``; its ``length`` cannot be deleted)."""
    target = arg(args, 0)
    parts = path_parts(arg(args, 1), target)
    budget.charge(len(parts))
    parent = read_path(target, parts[:-1])
    key = item_string(parts[-1]) if parts else "undefined"
    if type(parent) is dict:
        delete_own(budget, parent, key)
    elif type(parent) is list:
        if key == "length":
            return False
        index = index_of(key)
        if index is not None and index < len(parent):
            check_writable(budget, parent)
            parent[index] = UNDEFINED
    return True


def _zip_object_deep(budget: Budget, args: list[Any]) -> Any:
    """``zipObjectDeep``: ``_.set`` of each path to the value at its index."""
    names, items = lodash_array(budget, arg(args, 0)), lodash_array(budget, arg(args, 1))
    result: dict[str, Any] = {}
    for index, name in enumerate(names):
        set_with(budget, result, name, items[index] if index < len(items) else UNDEFINED)
    return result


PATH_HELPERS: dict[str, Builtin] = {
    "set": Builtin("set", lambda budget, args: set_with(budget, arg(args, 0), arg(args, 1), arg(args, 2))),
    "setWith": Builtin("setWith", lambda budget, args: set_with(
        budget, arg(args, 0), arg(args, 1), arg(args, 2), arg(args, 3))),
    "update": Builtin("update", _update_with),
    "updateWith": Builtin("updateWith", _update_with),
    "unset": Builtin("unset", _unset),
    "zipObjectDeep": Builtin("zipObjectDeep", _zip_object_deep),
}
