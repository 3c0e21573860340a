"""A dictionary that forgets its least recently used entries beyond a size (the service's caches).

Everything the service caches can be read or checked again (definitions by hash, session logs,
what was verified, how far ingest got, the text of a record), so forgetting costs time, never
correctness.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
M = TypeVar("M")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most ``capacity`` entries, or, with ``weigh``, entries weighing at most ``capacity`` in
    all (an entry heavier than that alone is not kept) and, with ``max_entries``, no more entries
    than that either."""

    def __init__(self, capacity: int, *, weigh: Callable[[V], int] | None = None,
                 max_entries: int | None = None) -> None:
        self._capacity = capacity
        self._weigh = weigh
        self._max_entries = max_entries
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: K, value: V) -> None:
        items = self._items
        old = items.pop(key, None)  # pop(), inline: a put is on every turn's path
        if old is not None:
            self._weight -= old[1]
        weight = self._weigh(value) if self._weigh is not None else 1
        if weight > self._capacity:
            return  # it would push out everything else, and then itself
        items[key] = (value, weight)
        self._weight += weight
        while self._weight > self._capacity or (self._max_entries is not None
                                                and len(items) > self._max_entries):
            _, (_, dropped) = items.popitem(last=False)
            self._weight -= dropped

    @property
    def weight(self) -> int:
        """What the entries kept weigh in all (their number, without ``weigh``)."""
        return self._weight

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[K]:
        """The keys kept, the least recently used first."""
        return list(self._items)

    def pop(self, key: K) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self._weight -= item[1]


class KeptBy(Generic[K, M, V]):
    """Values kept under a key with what they were made of (a :class:`BoundedCache`, weighed by
    ``weigh``): :meth:`get` answers only when what the caller would make the value of now is the
    same, so a value whose sources moved is never given out; one value per key, so a key's
    older values are not kept beside it."""

    def __init__(self, capacity: int, *, weigh: Callable[[V], int], max_entries: int | None = None) -> None:
        self._kept: BoundedCache[K, tuple[M, V]] = BoundedCache(
            capacity, weigh=lambda kept: weigh(kept[1]), max_entries=max_entries)

    def get(self, key: K, made_of: M) -> V | None:
        kept = self._kept.get(key)
        return kept[1] if kept is not None and kept[0] == made_of else None

    def put(self, key: K, made_of: M, value: V) -> None:
        self._kept.put(key, (made_of, value))

    def __len__(self) -> int:
        return len(self._kept)


class Generations(Generic[K]):
    """A generation per key, for at most ``capacity`` keys (the least recently used beyond are
    forgotten): every :meth:`bump` issues a new one, so a generation read before a change never
    matches again. A key never bumped, or forgotten, has the current *floor* (zero or below,
    never an issued generation), which moves down whenever a key is forgotten: a generation read
    before a bump still never matches once that bump is forgotten. Forgetting costs a false
    "changed", never a false "unchanged"."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._next = 0
        self._floor = 0
        # A plain ordered map rather than a BoundedCache: a store host bumps and reads a session's
        # generation several times a turn, and each entry weighs one.
        self._generations: OrderedDict[K, int] = OrderedDict()

    def bump(self, key: K) -> None:
        generations = self._generations
        self._next += 1
        generations[key] = self._next
        generations.move_to_end(key)
        if len(generations) > self._capacity:
            generations.popitem(last=False)
            self._floor -= 1  # the key just forgotten now reads as the floor, below its generation

    def generation(self, key: K) -> int:
        generations = self._generations
        found = generations.get(key)
        if found is None:
            return self._floor
        generations.move_to_end(key)
        return found

    def __len__(self) -> int:
        return len(self._generations)
