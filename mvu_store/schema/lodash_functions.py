"""lodash's function helpers: the ones that build a function of functions (``flow``, ``partial``,
``ary``, ``over``, ``negate``, ``memoize``, ``once``...) and the ones that call a function found
by path (``invoke``, ``invokeMap``, ``method``) or hand a value through one (``tap``).

The functions they return are plain builtins. The three that remember (``memoize``, ``once``,
``before``/``after``) remember for one validation only: a declaration builds them once, at
compile time, and every validation must start as the first did, so their memory is kept per
budget (each compile and each validation has its own) and starts empty with a new one.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    Opaque,
    arg,
    fail,
    same_value_key,
    to_string,
    truthy,
)
from mvu_store.schema.arrays import size_limit
from mvu_store.schema.builtins import call_fn, lodash_array, path_parts, read_path
from mvu_store.schema.methods import method_of
from mvu_store.schema.numeric import to_integer

Fn = Callable[[Budget, list[Any]], Any]


def _function(value: Any, helper: str) -> JsCallable:
    if not isinstance(value, JsCallable):
        raise fail(f"_.{helper}: expected a function")
    return value


def _functions(args: list[Any], helper: str) -> list[JsCallable]:
    """The functions of ``args``, listed or spread (lodash flattens one level)."""
    return [_function(item, helper) for part in args for item in (part if type(part) is list else [part])]


class _PerRun:
    """A helper's memory for one budget: forgotten when a new budget (a new run) calls."""

    __slots__ = ("owner", "state")

    def __init__(self) -> None:
        self.owner: weakref.ref[Budget] | None = None
        self.state: dict[Any, Any] = {}

    def of(self, budget: Budget) -> dict[Any, Any]:
        if self.owner is None or self.owner() is not budget:
            self.owner = weakref.ref(budget)
            self.state = {}
        return self.state


def _memo_key(value: Any) -> Any:
    """SameValueZero for primitives, identity for objects (lodash's Map cache)."""
    if type(value) in (dict, list) or isinstance(value, Opaque):
        return ("object", id(value))
    return same_value_key(value)


def _memoize(budget: Budget, args: list[Any]) -> Builtin:
    fn, resolver = _function(arg(args, 0), "memoize"), arg(args, 1)
    memory = _PerRun()

    def memoized(run: Budget, call_args: list[Any]) -> Any:
        cache = memory.of(run)
        key = _memo_key(resolver.call(run, call_args) if isinstance(resolver, JsCallable) else arg(call_args, 0))
        if key not in cache:
            size_limit(run, len(cache) + 1)
            cache[key] = fn.call(run, call_args)
        return cache[key]

    return Builtin("memoized", memoized)


def _before(budget: Budget, args: list[Any], *, after: bool = False) -> Builtin:
    """``_.before(n, fn)``: calls ``fn`` while fewer than ``n - 1`` calls were made, then keeps
    giving the last result; ``_.after(n, fn)``: calls it from the ``n``-th call on."""
    count, fn = to_integer(arg(args, 0)), _function(arg(args, 1), "after" if after else "before")
    memory = _PerRun()

    def limited(run: Budget, call_args: list[Any]) -> Any:
        state = memory.of(run)
        calls = state["calls"] = state.get("calls", 0) + 1
        if after:
            return fn.call(run, call_args) if calls >= count else UNDEFINED
        if calls < count:
            state["result"] = fn.call(run, call_args)
        return state.get("result", UNDEFINED)

    return Builtin("after" if after else "before", limited)


def _flow(backwards: bool) -> Fn:
    def flow(budget: Budget, args: list[Any]) -> Builtin:
        fns = _functions(list(args), "flowRight" if backwards else "flow")
        if backwards:
            fns.reverse()

        def run(inner: Budget, call_args: list[Any]) -> Any:
            if not fns:
                return arg(call_args, 0)
            result = fns[0].call(inner, call_args)
            for fn in fns[1:]:
                result = fn.call(inner, [result])
            return result

        return Builtin("flow", run)

    return flow


def _placeholder(value: Any) -> bool:
    return isinstance(value, Builtin) and value.name == "_"  # `_` itself marks a hole in partial's list


def _partial(right: bool) -> Fn:
    def partial(budget: Budget, args: list[Any]) -> Builtin:
        fn, bound = _function(arg(args, 0), "partialRight" if right else "partial"), list(args[1:])

        def run(inner: Budget, call_args: list[Any]) -> Any:
            rest = list(call_args)
            if right:
                holes = sum(1 for item in bound if _placeholder(item))
                head, tail = rest[:max(0, len(rest) - holes)], rest[max(0, len(rest) - holes):]
                filled = [tail.pop(0) if _placeholder(item) and tail else item for item in bound]
                return fn.call(inner, head + filled)
            filled = [rest.pop(0) if _placeholder(item) and rest else item for item in bound]
            return fn.call(inner, filled + rest)

        return Builtin("partial", run)

    return partial


def _over(mode: str) -> Fn:
    def over(budget: Budget, args: list[Any]) -> Builtin:
        fns = _functions(list(args), mode)

        def run(inner: Budget, call_args: list[Any]) -> Any:
            if mode == "over":
                return [fn.call(inner, call_args) for fn in fns]
            test = (truthy(fn.call(inner, call_args)) for fn in fns)
            return all(test) if mode == "overEvery" else any(test)

        return Builtin(mode, run)

    return over


def _wrapped(name: str, shape: Callable[[list[Any], list[Any]], list[Any]]) -> Fn:
    """A helper that calls ``fn`` with its arguments reshaped (``ary``, ``rearg``, ``flip``...)."""
    def make(budget: Budget, args: list[Any]) -> Builtin:
        fn, options = _function(arg(args, 0), name), list(args[1:])
        return Builtin(name, lambda inner, call_args: fn.call(inner, shape(options, call_args)))

    return make


def _ary(options: list[Any], call_args: list[Any]) -> list[Any]:
    count = arg(options, 0)
    return call_args if count is UNDEFINED or count is None else call_args[:max(0, to_integer(count))]


def _rearg(options: list[Any], call_args: list[Any]) -> list[Any]:
    order = [to_integer(index) for part in options for index in (part if type(part) is list else [part])]
    picked = [arg(call_args, index) if 0 <= index < len(call_args) else UNDEFINED for index in order]
    return picked + call_args[len(picked):]


def _rest(options: list[Any], call_args: list[Any]) -> list[Any]:
    start = 0 if arg(options, 0) is UNDEFINED else max(0, to_integer(arg(options, 0)))
    return [*(arg(call_args, index) for index in range(start)), call_args[start:]]


def _spread(options: list[Any], call_args: list[Any]) -> list[Any]:
    start = 0 if arg(options, 0) is UNDEFINED else max(0, to_integer(arg(options, 0)))
    spread = arg(call_args, start)
    return call_args[:start] + (list(spread) if type(spread) is list else [])


def _nth_arg(budget: Budget, args: list[Any]) -> Builtin:
    index = 0 if arg(args, 0) is UNDEFINED else to_integer(arg(args, 0))

    def pick(inner: Budget, call_args: list[Any]) -> Any:
        position = index + len(call_args) if index < 0 else index
        return call_args[position] if 0 <= position < len(call_args) else UNDEFINED

    return Builtin("nthArg", pick)


def invoke_at(budget: Budget, target: Any, path: Any, call_args: list[Any]) -> Any:
    """``_.invoke``: the function at ``path`` called on its parent (a string's or an array's
    method too); ``undefined`` where there is no function."""
    parts = path_parts(path, target)
    if not parts:
        return UNDEFINED
    parent = read_path(target, parts[:-1])
    name = to_string(parts[-1])
    if type(parent) in (list, str, int, float, bool):
        member = read_path(parent, [name]) if type(parent) in (list, str) else UNDEFINED
        if member is UNDEFINED:
            member = method_of(parent, name)
    else:
        member = read_path(parent, [name])
    return member.call(budget, call_args) if isinstance(member, JsCallable) else UNDEFINED


def _invoke_map(budget: Budget, args: list[Any]) -> list[Any]:
    target, path, call_args = arg(args, 0), arg(args, 1), list(args[2:])
    items = [item for item in lodash_array(budget, target)] if type(target) in (list, str) else \
        list(target.values()) if type(target) is dict else []
    if isinstance(path, JsCallable):
        raise fail("_.invokeMap with a function calls it with `this`, which declarations do not have")
    return [invoke_at(budget, item, path, call_args) for item in items]


def _cond(budget: Budget, args: list[Any]) -> Builtin:
    pairs = [pair for pair in (arg(args, 0) if type(arg(args, 0)) is list else [])]
    checked = [(_function(arg(pair, 0), "cond"), _function(arg(pair, 1), "cond")) for pair in pairs]

    def run(inner: Budget, call_args: list[Any]) -> Any:
        for test, then in checked:
            if truthy(test.call(inner, call_args)):
                return then.call(inner, call_args)
        return UNDEFINED

    return Builtin("cond", run)


FUNCTION_HELPERS: dict[str, Builtin] = {
    "flow": Builtin("flow", _flow(backwards=False)),
    "flowRight": Builtin("flowRight", _flow(backwards=True)),
    "partial": Builtin("partial", _partial(right=False)),
    "partialRight": Builtin("partialRight", _partial(right=True)),
    "over": Builtin("over", _over("over")),
    "overEvery": Builtin("overEvery", _over("overEvery")),
    "overSome": Builtin("overSome", _over("overSome")),
    "ary": Builtin("ary", _wrapped("ary", _ary)),
    "unary": Builtin("unary", _wrapped("unary", lambda options, call_args: call_args[:1])),
    "flip": Builtin("flip", _wrapped("flip", lambda options, call_args: call_args[::-1])),
    "rearg": Builtin("rearg", _wrapped("rearg", _rearg)),
    "rest": Builtin("rest", _wrapped("rest", _rest)),
    "spread": Builtin("spread", _wrapped("spread", _spread)),
    "negate": Builtin("negate", lambda budget, args: Builtin("negate", lambda inner, call_args: not truthy(
        _function(arg(args, 0), "negate").call(inner, call_args)))),
    "wrap": Builtin("wrap", lambda budget, args: Builtin("wrap", lambda inner, call_args: call_fn(
        inner, arg(args, 1), arg(args, 0), *call_args))),
    "nthArg": Builtin("nthArg", _nth_arg),
    "memoize": Builtin("memoize", _memoize),
    "once": Builtin("once", lambda budget, args: _before(budget, [2, arg(args, 0)])),
    "before": Builtin("before", _before),
    "after": Builtin("after", lambda budget, args: _before(budget, args, after=True)),
    "invoke": Builtin("invoke", lambda budget, args: invoke_at(budget, arg(args, 0), arg(args, 1), list(args[2:]))),
    "invokeMap": Builtin("invokeMap", _invoke_map),
    "method": Builtin("method", lambda budget, args: Builtin("method", lambda inner, call_args: invoke_at(
        inner, arg(call_args, 0), arg(args, 0), list(args[1:])))),
    "methodOf": Builtin("methodOf", lambda budget, args: Builtin("methodOf", lambda inner, call_args: invoke_at(
        inner, arg(args, 0), arg(call_args, 0), list(args[1:])))),
    "propertyOf": Builtin("propertyOf", lambda budget, args: Builtin("propertyOf", lambda inner, call_args: read_path(
        arg(args, 0), path_parts(arg(call_args, 0), arg(args, 0))))),
    "tap": Builtin("tap", lambda budget, args: (call_fn(budget, arg(args, 1), arg(args, 0)), arg(args, 0))[1]),
    "cond": Builtin("cond", _cond),
}
