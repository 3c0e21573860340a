"""Object literals that define getters: ``{ name: z.string(), get children() { ... } }``.

Zod 4 writes recursive objects this way: the getter runs when the shape is read, after the
constant it names exists. Plain objects are Python dicts, which cannot hold a getter, so a
literal with one becomes a :class:`GetterObject`: reading a getter's key calls it each time
(with the reader's budget, as JavaScript calls it on every read), other keys read as data.
Readers that have no budget to run a getter with (library helpers) refuse its key by name
rather than answer with the function itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from mvu_store.errors import Code, MvuError
from mvu_store.js.members import guard
from mvu_store.js.values import UNDEFINED, Budget, Opaque


class Getter(Protocol):
    """A declaration's function called with a receiver (runtime.JsFunction, defined above the
    library this module serves, so named here by what it does)."""

    def call(self, budget: Budget, args: list[Any], this: Any = ...) -> Any: ...


class GetterObject(Opaque):
    """A declaration's object with getters: ``entries`` in JavaScript's key order, where each
    key of ``getters`` holds the function its getter runs (called with the object as ``this``)."""

    __slots__ = ("entries", "getters")

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}
        self.getters: set[str] = set()

    def put(self, key: str, value: Any) -> None:
        """``key: value`` in the literal: a later entry of the same key replaces an earlier one."""
        self.entries[key] = value
        self.getters.discard(key)

    def define_getter(self, key: str, getter: Getter) -> None:
        self.entries[key] = getter
        self.getters.add(key)

    def read(self, budget: Budget, key: str) -> Any:
        """``obj[key]``: a getter runs now, an absent key is ``undefined``."""
        if key in self.getters:
            getter: Getter = self.entries[key]
            return getter.call(budget, [], self)
        return self.entries.get(guard(key), UNDEFINED)

    def values(self, budget: Budget) -> dict[str, Any]:
        """The own entries, every getter run once in key order (what ``{...obj}`` copies)."""
        return {key: self.read(budget, key) for key in self.entries}

    def get(self, key: str) -> Any:
        if key in self.getters:
            raise MvuError(Code.UNSUPPORTED, f"the getter `{key}` can only be read as `object.{key}` here",
                           member=key)
        return self.entries.get(guard(key), UNDEFINED)

    def set(self, budget: Budget, key: str, value: Any) -> None:
        raise MvuError(Code.UNSUPPORTED, "an object with getters is read-only here", member=key)

    def refs(self) -> Iterator[Any]:
        yield from self.entries.values()

    def describe(self) -> str:
        return "an object with getters"
