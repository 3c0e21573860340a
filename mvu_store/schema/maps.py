"""``new Map(entries)``: the deterministic part of JavaScript's Map.

Keys compare as ``Map`` compares them (SameValueZero: ``NaN`` is one key, ``0`` and ``-0`` are
one; objects by identity) and entries keep insertion order. ``get``, ``set``, ``has``,
``delete``, ``clear``, ``size``, ``forEach``, and ``keys``/``values``/``entries``, which give
arrays here (what spreading or ``for...of`` reads from the iterators JavaScript gives). A Map is
no JSON value: it cannot be a validation's output, as in ``JSON.stringify`` (``{}``) it loses its
entries.
"""

from __future__ import annotations

from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import UNDEFINED, Budget, Builtin, JsCallable, Opaque, arg, fail, same_value_key


def _identity(key: Any) -> Any:
    if type(key) is dict or type(key) is list or isinstance(key, Opaque):
        return ("object", id(key))
    return same_value_key(key)


class JsMap(Opaque):
    """A Map's entries by key identity, in insertion order."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[Any, tuple[Any, Any]] = {}

    @classmethod
    def of(cls, budget: Budget, items: list[Any]) -> JsMap:
        """``new Map(iterable)``: each item an ``[key, value]`` array."""
        made = cls()
        budget.charge(len(items))
        for item in items:
            if type(item) is not list:
                raise fail("a Map is made of [key, value] entries")
            made.put(arg(item, 0), arg(item, 1))
        return made

    def put(self, key: Any, value: Any) -> None:
        if type(key) is float and key == 0:
            key = 0  # -0 is stored as 0, as Map does
        identity = _identity(key)
        old = self.entries.get(identity)
        self.entries[identity] = (old[0] if old else key, value)

    def pairs(self) -> list[list[Any]]:
        return [[key, value] for key, value in self.entries.values()]

    def _writable(self, budget: Budget) -> None:
        if id(self) in budget.frozen:
            raise MvuError(Code.SCHEMA, "the declaration's constants are read-only")

    def _set(self, budget: Budget, args: list[Any]) -> JsMap:
        self._writable(budget)
        self.put(arg(args, 0), arg(args, 1))
        return self

    def _delete(self, budget: Budget, args: list[Any]) -> bool:
        self._writable(budget)
        return self.entries.pop(_identity(arg(args, 0)), None) is not None

    def _clear(self, budget: Budget, args: list[Any]) -> Any:
        self._writable(budget)
        self.entries.clear()
        return UNDEFINED

    def _for_each(self, budget: Budget, args: list[Any]) -> Any:
        fn = arg(args, 0)
        if not isinstance(fn, JsCallable):
            raise fail("Map.prototype.forEach needs a function")
        for key, value in list(self.entries.values()):
            fn.call(budget, [value, key, self])
        return UNDEFINED

    def get(self, key: str) -> Any:
        if key == "size":
            return len(self.entries)
        method = _METHODS.get(key)
        if method is None:
            return super().get(key)
        return Builtin(key, lambda budget, args: method(self, budget, args))

    def describe(self) -> str:
        return "Map"


def _found(owner: JsMap, key: Any) -> tuple[Any, Any] | None:
    return owner.entries.get(_identity(key))


_METHODS: dict[str, Any] = {
    "get": lambda owner, budget, args: (_found(owner, arg(args, 0)) or (UNDEFINED, UNDEFINED))[1],
    "has": lambda owner, budget, args: _found(owner, arg(args, 0)) is not None,
    "set": JsMap._set,
    "delete": JsMap._delete,
    "clear": JsMap._clear,
    "forEach": JsMap._for_each,
    "keys": lambda owner, budget, args: [key for key, _ in owner.entries.values()],
    "values": lambda owner, budget, args: [value for _, value in owner.entries.values()],
    "entries": lambda owner, budget, args: owner.pairs(),
}
