"""S-7's member guards on JSON containers: own data only, no prototype names however they are
spelled, arrays stay dense, and a validation never writes the declaration's own constants.

Every reader and writer of a declaration's objects (the interpreter's ``obj[key]``, ``_.get``,
``_.set``, ``Object.defineProperty``) goes through these, so the rules live in one place below
all the library code that needs them.
"""

from __future__ import annotations

from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.strings import units
from mvu_store.js.values import UNDEFINED, Budget, FunctionObject, Opaque, fail, js_length, to_string, typeof
from mvu_store.jsonvalue import UNSAFE_KEYS

NOT_OWN: Any = object()
"""What :func:`own_member` returns for a name that is no own data (a method name, say)."""


def property_key(key: Any) -> str:
    kind = type(key)
    if kind is str:
        return key  # type: ignore[no-any-return]
    if kind is int or kind is float or kind is bool or key is None or key is UNDEFINED:
        return to_string(key)
    raise fail(f"a {typeof(key)} cannot be a property key")


def array_index(key: Any) -> int | None:
    if type(key) is int:
        return int(key)
    if type(key) is float and key.is_integer():
        return int(key)
    if type(key) is str and key.isdigit() and key.isascii() and (key == "0" or key[0] != "0"):
        return int(key)
    return None


def guard(name: str, what: str = "access to") -> str:
    """``name``, or ``MVU_SCHEMA`` when it names prototype machinery (S-7)."""
    if name in UNSAFE_KEYS:
        raise MvuError(Code.SCHEMA, f"{what} `{name}` is not allowed", key=name)
    return name


def safe_key(name: str) -> str:
    """``name`` as a key a declaration may create (``Object.fromEntries``, ``_.keyBy``...)."""
    return guard(name, "the key")


def own_member(obj: Any, key: Any) -> Any:
    """``obj[key]`` for a dict, a list or a string: its own data, ``undefined`` for a missing
    key, or :data:`NOT_OWN` when a list or string has no such data (the caller looks for a method)."""
    kind = type(obj)
    if kind is dict:
        return obj.get(guard(key if type(key) is str else property_key(key)), UNDEFINED)
    index = array_index(key)
    if index is not None:
        if kind is str:
            obj = units(obj)  # a string's indexes are UTF-16 code units
        return obj[index] if 0 <= index < len(obj) else UNDEFINED
    name = guard(property_key(key))
    if name == "length":
        return len(obj) if kind is list else js_length(obj)
    return NOT_OWN


def data_member(obj: Any, key: Any) -> Any:
    """:func:`own_member` for lodash's paths: a list's method name is no data (``undefined``)."""
    value = own_member(obj, key)
    return UNDEFINED if value is NOT_OWN else value


def check_writable(budget: Budget, obj: Any) -> None:
    """Refuse writes to anything but a JSON container created outside the declaration's constants."""
    if type(obj) is not dict and type(obj) is not list:
        raise fail(f"cannot modify a {typeof(obj)}")
    if id(obj) in budget.frozen:
        raise MvuError(Code.SCHEMA, "the declaration's constants are read-only")


def set_member(budget: Budget, obj: Any, key: Any, value: Any) -> None:
    """``obj[key] = value`` on a container the declaration may write.

    Objects may hold functions and schemas while the declaration builds itself (bundlers keep
    their runtime in one); a parsed value that still holds one is refused when it is output.
    """
    if isinstance(obj, FunctionObject):
        if id(obj) in budget.frozen:
            raise MvuError(Code.SCHEMA, "the declaration's constants are read-only")
        set_own(budget, obj.members, key, value)
        return
    if isinstance(obj, Opaque):
        obj.set(budget, property_key(key), value)
        return
    check_writable(budget, obj)
    set_own(budget, obj, key, value)


def set_own(budget: Budget, target: Any, key: Any, value: Any) -> None:
    """``target[key] = value`` on a container already checked writable: arrays stay dense."""
    if type(target) is dict:
        target[guard(property_key(key), "writing")] = value
        return
    index = array_index(key)
    if property_key(key) == "length":
        raise MvuError(Code.SCHEMA, "writing an array's `length` is not allowed")
    if index is None or index > len(target):
        raise MvuError(Code.SCHEMA, "arrays stay dense: only existing indexes or the next one can be written")
    budget.charge(1)
    if index == len(target):
        target.append(value)
    else:
        target[index] = value


def delete_own(budget: Budget, obj: Any, key: Any) -> bool:
    """``delete obj[key]`` on an object the declaration may change; arrays stay dense."""
    if type(obj) is not dict:
        raise MvuError(Code.SCHEMA, "only object fields can be deleted (arrays stay dense)")
    check_writable(budget, obj)
    obj.pop(guard(property_key(key), "deleting"), None)
    return True


def _integer_like(key: str) -> bool:
    """An array index as a key (up to 2**32 - 2): the keys objects list first."""
    return key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and len(key) <= 10 \
        and int(key) < 4_294_967_295


def own_keys(obj: dict[str, Any]) -> list[str]:
    """An object's keys in JavaScript's order: integer-like keys first, ascending, then the
    rest in insertion order (``Object.keys({b: 1, 2: 1, 1: 1})`` is ``['1', '2', 'b']``)."""
    numeric = [key for key in obj if _integer_like(key)]
    if not numeric:
        return list(obj)
    numeric.sort(key=int)
    return numeric + [key for key in obj if not _integer_like(key)]
