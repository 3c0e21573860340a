"""One request's allowance: the fuel every validation of a reply, a greeting or a card shares.

A :class:`~mvu_store.js.values.Budget` bounds one compile or one validation; a reply
validates after each of its up to 1,000 commands, so its total would be bounded only by
1,000 budgets. An :class:`Allowance` is the request's own budget: each validation run under it
gets at most what is left (never more than one validation's fuel), spends it, and gives back
what it did not use; once the allowance is spent, or its wall-clock deadline has passed (a
backstop for a machine much slower than the fuel assumes), the next validation is refused with
``MVU_LIMIT`` (``kind`` ``request_fuel`` or ``request_time``). The deadline runs from the first
validation and is checked between validations: within one, the fuel alone bounds the work.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import FUEL, Budget

REQUEST_FUEL = 8 * FUEL
"""What all the declaration work of one request may spend: eight validations at their limit."""
REQUEST_SECONDS = 3.0
"""The wall-clock backstop of one request's declaration work."""


class Allowance:
    """The fuel left to one request and its deadline; safe to share between threads."""

    __slots__ = ("_deadline", "_lock", "_seconds", "fuel", "what")

    def __init__(self, what: str, *, fuel: int | None = None, seconds: float | None = None) -> None:
        self.what = what
        self.fuel = REQUEST_FUEL if fuel is None else fuel
        self._seconds = REQUEST_SECONDS if seconds is None else seconds
        # Counted from the first validation, not from here: a request that waited for a worker
        # thread behind others' work has not spent its time, and a reply refused for that
        # wait would keep its failed receipt.
        self._deadline: float | None = None
        self._lock = threading.Lock()

    def grant(self) -> int:
        """The fuel of the next validation (at most one validation's); refuses once none is left."""
        with self._lock:
            if self.fuel <= 0:
                raise self._spent("request_fuel", REQUEST_FUEL)
            now = time.monotonic()
            if self._deadline is None:
                self._deadline = now + self._seconds
            elif now > self._deadline:
                raise self._spent("request_time", self._seconds)
            return min(FUEL, self.fuel)

    def settle(self, granted: int, left: int) -> None:
        """A validation granted ``granted`` ended with ``left`` (below 0 when it ran out)."""
        with self._lock:
            self.fuel -= granted - left

    def refusal(self, error: MvuError, granted: int) -> MvuError:
        """``error`` as the request sees it: a validation that ran out of a grant smaller than a
        validation's own fuel ran out of the request's."""
        if error.code == Code.LIMIT.value and error.details.get("kind") == "fuel" and granted < FUEL:
            return self._spent("request_fuel", REQUEST_FUEL)
        return error

    def _spent(self, kind: str, limit: float) -> MvuError:
        return MvuError(Code.LIMIT, f"{self.what} ran out of its computation budget", limit=limit, kind=kind)


@contextmanager
def metered(allowance: Allowance | None, now_ms: int | None,
            frozen: frozenset[int]) -> Iterator[Callable[[], Budget]]:
    """Budgets for one validation's runs (the fast path, then maybe the interpreter), charged to
    ``allowance`` when the validation ends; without one, each run gets a validation's fuel."""
    if allowance is None:
        yield lambda: Budget(now_ms, frozen=frozen)
        return
    running: list[tuple[int, Budget]] = []  # the run under way: settled before the next is granted

    def settle() -> None:
        while running:
            fuel, made = running.pop()
            allowance.settle(fuel, made.fuel)

    def budget() -> Budget:
        settle()
        fuel = allowance.grant()
        running.append((fuel, Budget(now_ms, fuel=fuel, frozen=frozen)))
        return running[-1][1]

    try:
        yield budget
    except MvuError as error:
        raise allowance.refusal(error, running[-1][0] if running else FUEL) from None
    finally:
        settle()
