"""``async`` functions and their promises, settled as soon as they are made.

Bundled card scripts wrap host work in async functions beside their registration
(``$(() => { register(Schema); (async () => { await waitGlobalInitialized('Mvu'); eventOn(...) })() })``).
A declaration rebuilt in the store has no event loop to wait on, so an async function runs its
body at once and its promise is already settled: ``await`` of a promise reads its value or
throws its reason, ``await`` of anything else is that value. What JavaScript makes observable and
this does not: the order in which code after an ``await`` runs relative to the caller. As in
JavaScript, an error inside an async function does not reach its caller: it rejects the promise,
and only code that awaits it or passes a ``catch`` handler sees it.
"""

from __future__ import annotations

from typing import Any

from mvu_store.js.values import UNDEFINED, Budget, Builtin, JsCallable, Opaque, ScriptError, arg, thrown
from mvu_store.schema.runtime import JsFunction


class JsPromise(Opaque):
    """A settled promise: ``value`` when fulfilled, else ``reason`` (what was thrown)."""

    __slots__ = ("fulfilled", "reason", "value")

    def __init__(self, fulfilled: bool, value: Any = UNDEFINED, reason: Any = UNDEFINED) -> None:
        self.fulfilled = fulfilled
        self.value = value
        self.reason = reason

    def get(self, key: str) -> Any:
        if key == "then":
            return Builtin("then", self._then)
        if key == "catch":
            return Builtin("catch", lambda budget, args: self._then(budget, [UNDEFINED, arg(args, 0)]))
        if key == "finally":
            return Builtin("finally", self._finally)
        return super().get(key)

    def describe(self) -> str:
        return "Promise"

    def _then(self, budget: Budget, args: list[Any]) -> JsPromise:
        handler = arg(args, 0 if self.fulfilled else 1)
        if not isinstance(handler, JsCallable):
            return self  # no handler for this outcome: the promise passes through
        return settle(handler, budget, [self.value if self.fulfilled else self.reason])

    def _finally(self, budget: Budget, args: list[Any]) -> JsPromise:
        handler = arg(args, 0)
        if isinstance(handler, JsCallable):
            after = settle(handler, budget, [])
            if not after.fulfilled:
                return after
        return self


def resolved(value: Any) -> JsPromise:
    """``Promise.resolve(value)``: a promise stays itself (it is already settled)."""
    return value if isinstance(value, JsPromise) else JsPromise(True, value)


def settle(fn: JsCallable, budget: Budget, args: list[Any]) -> JsPromise:
    """Call ``fn``; what it returns fulfils the promise, a JavaScript exception rejects it.
    Refusals (budgets, isolation) are not exceptions of the declaration and still end the run."""
    depth = budget.depth
    try:
        return resolved(fn.call(budget, args))
    except ScriptError as error:
        budget.depth = depth  # as s_try does: the failed call did not unwind its depth
        return JsPromise(False, reason=error.value)


def awaited(value: Any) -> Any:
    """``await value``: a fulfilled promise's value, a rejected one's reason thrown again."""
    if not isinstance(value, JsPromise):
        return value
    if value.fulfilled:
        return value.value
    raise thrown(value.reason)


class AsyncFunction(JsFunction):
    """An ``async`` arrow or function: its call runs the body and returns a settled promise."""

    __slots__ = ()

    def call(self, budget: Budget, args: list[Any], this: Any = UNDEFINED) -> Any:
        return settle(_Body(self, this), budget, args)


class _Body(JsCallable):
    """An async function's body called as a plain function, for :func:`settle`."""

    __slots__ = ("fn", "this")

    def __init__(self, fn: AsyncFunction, this: Any) -> None:
        self.fn = fn
        self.this = this

    def call(self, budget: Budget, args: list[Any]) -> Any:
        return JsFunction.call(self.fn, budget, args, self.this)
