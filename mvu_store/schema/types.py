"""Schema nodes with Zod v4's parse semantics: the base and the wrappers (optional, default, pipe...).

A schema is immutable; each DSL method (``m_<name>``) returns a new one, as Zod's do. ``run``
parses a value, appends :class:`Issue` values to ``ctx.issues`` (with paths relative to this
schema; parents prefix their key) and returns the output. ``optin`` / ``optout`` are Zod's
absence rungs, which decide how an object treats a missing key.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    Namespace,
    Opaque,
    ScriptError,
    arg,
    fail,
    to_string,
    truthy,
)
from mvu_store.jsonvalue import copy_json
from mvu_store.schema import zod_members
from mvu_store.schema.builtins import deep_copy
from mvu_store.schema.issues import (
    NONOPTIONAL,
    Issue,
    aborted,
    size_issue,
)
from mvu_store.schema.promises import AsyncFunction


class ParseCtx:
    """The running validation: issues found so far and the shared budget."""

    __slots__ = ("budget", "issues", "stopped")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.issues: list[Issue] = []
        # The last pipe that stopped on its input's issues (Zod marks that payload aborted even
        # when every issue would continue); a union asks whether it was its option's own pipe.
        self.stopped: Pipe | None = None


Check = Callable[[Any, ParseCtx], Any]
"""A check sees the parsed value, may append issues and returns the (possibly rewritten) value."""


def custom_message(value: Any) -> str | None:
    """The message a DSL call passes as ``'text'``, ``{message}`` or ``{error}``."""
    if type(value) is str:
        return value
    if type(value) is dict:
        for key in ("message", "error"):
            if type(value.get(key)) is str:
                return value[key]  # type: ignore[no-any-return]
    return None


def as_schema(value: Any, what: str) -> Schema:
    if not isinstance(value, Schema):
        raise MvuError(Code.SCHEMA, f"{what} must be a schema")
    return value


class Containers:
    """The container schemas that every schema's ``.array()``, ``.or()`` and ``.and()`` make.

    They are schemas themselves, so they are defined above this module (in :mod:`composite`),
    which installs them in :data:`CONTAINERS` when it loads: this module names none of them, and
    the two do not import each other. ``mvu_store.schema``'s root loads :mod:`composite` (through
    :mod:`native`), so they are installed before any schema exists.
    """

    array: Callable[[Schema], Schema]
    union: Callable[[list[Schema]], Schema]
    intersection: Callable[[Schema, Schema], Schema]


CONTAINERS = Containers()


class Schema(Opaque):
    """Base of every schema node."""

    optin: str | None = None
    optout: str | None = None
    checks: tuple[Check, ...] = ()
    description: str | None = None
    kind = "schema"

    def describe(self) -> str:
        return f"z.{self.kind}()"

    def run(self, value: Any, ctx: ParseCtx) -> Any:
        if not self.checks:
            return self.parse(value, ctx)
        start = len(ctx.issues)
        value = self.parse(value, ctx)
        return run_checks(self.checks, value, ctx, start)

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        raise NotImplementedError

    def get(self, key: str) -> Any:
        method = getattr(self, "m_" + key, None)
        if method is not None:
            return Builtin(key, method)
        prop = getattr(self, "p_" + key, None)
        if prop is not None:
            return prop()
        if key in zod_members.ANY_KIND and key not in zod_members.BY_KIND.get(self.kind, ()):
            return UNDEFINED  # Zod's own answer: this class has no such member (`.shape` of a prefault)
        raise MvuError(Code.UNSUPPORTED, f"`.{key}` of {self.describe()} is not supported", member=key)

    def refs(self) -> Iterator[Any]:
        """Everything this schema holds (inner schemas, functions, values): for freezing."""
        yield from vars(self).values()

    def clone(self) -> Schema:
        return copy.copy(self)

    def with_check(self, check: Check) -> Schema:
        result = self.clone()
        result.checks = (*self.checks, check)
        return result

    # -- the DSL methods every schema has ----------------------------------------------------

    def m_optional(self, budget: Budget, args: list[Any]) -> Schema:
        return Optional(self)

    def m_nullable(self, budget: Budget, args: list[Any]) -> Schema:
        return Nullable(self)

    def m_exactOptional(self, budget: Budget, args: list[Any]) -> Schema:
        return ExactOptional(self)

    def m_nonoptional(self, budget: Budget, args: list[Any]) -> Schema:
        return NonOptional(self)

    def m_nullish(self, budget: Budget, args: list[Any]) -> Schema:
        return Optional(Nullable(self))

    def m_default(self, budget: Budget, args: list[Any]) -> Schema:
        return Default(self, arg(args, 0), prefault=False)

    def m_prefault(self, budget: Budget, args: list[Any]) -> Schema:
        return Default(self, arg(args, 0), prefault=True)

    def m_catch(self, budget: Budget, args: list[Any]) -> Schema:
        return Catch(self, arg(args, 0))

    def m_transform(self, budget: Budget, args: list[Any]) -> Schema:
        return Pipe(self, Transform(function_arg(arg(args, 0), "transform")))

    def m_pipe(self, budget: Budget, args: list[Any]) -> Schema:
        return Pipe(self, as_schema(arg(args, 0), "pipe()'s argument"))

    def m_refine(self, budget: Budget, args: list[Any]) -> Schema:
        fn = function_arg(arg(args, 0), "refine")
        options = arg(args, 1)
        message = custom_message(options) or "Invalid input"
        path = options.get("path", []) if type(options) is dict else []
        abort = type(options) is dict and truthy(options.get("abort"))
        if type(path) is not list:
            raise MvuError(Code.SCHEMA, "refine's path must be an array")

        def refine(value: Any, ctx: ParseCtx) -> Any:
            if not truthy(fn.call(ctx.budget, [deep_copy(ctx.budget, value)])):
                ctx.issues.append(Issue("custom", list(path), message, continues=not abort, stops=abort))
            return value

        return self.with_check(refine)

    def m_superRefine(self, budget: Budget, args: list[Any]) -> Schema:
        fn = function_arg(arg(args, 0), "superRefine")

        def super_refine(value: Any, ctx: ParseCtx) -> Any:
            # S-8: the refinement sees a copy; it can only report issues, never change the value.
            fn.call(ctx.budget, [deep_copy(ctx.budget, value), IssueSink(ctx, value, continues=True)])
            return value

        return self.with_check(super_refine)

    def m_check(self, budget: Budget, args: list[Any]) -> Schema:
        """Zod 4's ``.check(ctx => ...)``: one argument, ``ctx.value`` and ``ctx.issues.push``."""
        fn = function_arg(arg(args, 0), "check")

        def check(value: Any, ctx: ParseCtx) -> Any:
            fn.call(ctx.budget, [IssueSink(ctx, value, continues=True)])
            return value

        return self.with_check(check)

    def m_describe(self, budget: Budget, args: list[Any]) -> Schema:
        result = self.clone()
        result.description = to_string(arg(args, 0))
        return result

    def m_meta(self, budget: Budget, args: list[Any]) -> Schema:
        return self

    def m_with(self, budget: Budget, args: list[Any]) -> Schema:
        return self.m_check(budget, args)

    def m_apply(self, budget: Budget, args: list[Any]) -> Any:
        """``schema.apply(fn)``: ``fn(schema)``, a helper for composing declarations."""
        return function_arg(arg(args, 0), "apply").call(budget, [self])

    def m_overwrite(self, budget: Budget, args: list[Any]) -> Schema:
        """``.overwrite(fn)``: a check that replaces the value with ``fn(value)`` (its type stays)."""
        fn = function_arg(arg(args, 0), "overwrite")
        return self.with_check(lambda value, ctx: fn.call(ctx.budget, [value]))

    def accepts(self, budget: Budget, value: Any) -> bool:
        ctx = ParseCtx(budget)
        self.run(value, ctx)
        return not ctx.issues

    def m_isOptional(self, budget: Budget, args: list[Any]) -> bool:
        return self.accepts(budget, UNDEFINED)

    def m_isNullable(self, budget: Budget, args: list[Any]) -> bool:
        return self.accepts(budget, None)

    def m_readonly(self, budget: Budget, args: list[Any]) -> Schema:
        return Readonly(self)

    def m_brand(self, budget: Budget, args: list[Any]) -> Schema:
        return self

    def m_array(self, budget: Budget, args: list[Any]) -> Schema:
        return CONTAINERS.array(self)

    def m_or(self, budget: Budget, args: list[Any]) -> Schema:
        return CONTAINERS.union([self, as_schema(arg(args, 0), "or()'s argument")])

    def m_and(self, budget: Budget, args: list[Any]) -> Schema:
        return CONTAINERS.intersection(self, as_schema(arg(args, 0), "and()'s argument"))

    def m_safeParse(self, budget: Budget, args: list[Any]) -> Any:
        """``schema.safeParse(v)`` inside a declaration: ``{success, data}`` or ``{success, error}``."""
        ctx = ParseCtx(budget)
        data = self.run(deep_copy(budget, arg(args, 0)), ctx)
        if ctx.issues:
            return {"success": False, "error": {"issues": [issue.to_dict() for issue in ctx.issues]}}
        return {"success": True, "data": data}

    def m_parse(self, budget: Budget, args: list[Any]) -> Any:
        result = self.m_safeParse(budget, args)
        if not result["success"]:
            raise ScriptError("ZodError", {"name": "ZodError", "message": "validation failed",
                                           "issues": result["error"]["issues"]})
        return result["data"]

    def p_description(self) -> Any:
        return UNDEFINED if self.description is None else self.description

    def p_type(self) -> Any:
        """Zod's ``schema.type``: the name of its definition's type."""
        return _ZOD_TYPES.get(self.kind, self.kind)


_ZOD_TYPES = {"discriminatedUnion": "union", "xor": "union", "templateLiteral": "template_literal",
              "stringbool": "pipe", "json": "lazy"}
"""Our node kinds that Zod's ``.type`` names otherwise."""


def runner(schema: Schema) -> Callable[[Any, ParseCtx], Any]:
    """The fastest entry of ``schema``: its ``parse`` when it has no checks (most fields are so).

    Schemas are immutable, so parents take this once at construction and skip a dispatch per
    value on every validation.
    """
    if schema.checks or type(schema).run is not Schema.run:
        return schema.run
    return schema.parse


class SizeCheck:
    """``min`` / ``max`` / ``length`` of strings and arrays.

    Like Zod's length checks (which carry a ``when``), it runs on any string or array even after
    the type check failed: ``z.string().min(1)`` given ``[]`` reports both issues.
    """

    __slots__ = ("code", "exact", "limit", "message")

    def __init__(self, code: str, limit: int | float, exact: bool, message: str | None) -> None:
        self.code = code
        self.limit = limit
        self.exact = exact
        self.message = message

    def __call__(self, value: Any, ctx: ParseCtx) -> Any:
        size = len(value)  # code points for strings, as Zod 4 counts
        if (size < self.limit) if self.code == "too_small" else (size > self.limit):
            origin = "string" if type(value) is str else "array"
            issue = size_issue(self.code, origin, self.limit, inclusive=True, exact=self.exact)
            if self.message is not None:
                issue.message = self.message
            ctx.issues.append(issue)
        return value


def run_checks(checks: tuple[Check, ...], value: Any, ctx: ParseCtx, start: int) -> Any:
    """Zod's ``runChecks``: checks run in order and stop at an aborting issue, except length
    checks, which run whenever the value has a length."""
    issues = ctx.issues
    stopped = aborted(issues, start)
    halted = stopped and any(issues[index].stops for index in range(start, len(issues)))
    for check in checks:
        if type(check) is SizeCheck:
            if halted or (type(value) is not str and type(value) is not list):
                continue
        elif stopped:
            continue
        before = len(issues)
        value = check(value, ctx)
        if len(issues) > before:
            stopped = stopped or aborted(issues, before)
            halted = halted or any(issues[index].stops for index in range(before, len(issues)))
    return value


def function_arg(value: Any, what: str) -> JsCallable:
    if not isinstance(value, JsCallable):
        raise MvuError(Code.SCHEMA, f"{what} needs a function")
    if isinstance(value, AsyncFunction):
        return _Synchronous(what)
    return value


class _Synchronous(JsCallable):
    """An async callback given to a schema: Zod's synchronous parse throws on the promise it
    returns, so calling it throws (a declaration's own try/catch may handle that, as in Zod)."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def call(self, budget: Budget, args: list[Any]) -> Any:
        raise fail(f"the async function given to {self.what} returned a promise during a synchronous parse")


class IssueSink(Opaque):
    """The ``ctx`` a refinement or transform receives: ``ctx.addIssue(...)`` and ``ctx.value``."""

    __slots__ = ("continues", "ctx", "value")

    def __init__(self, ctx: ParseCtx, value: Any, *, continues: bool) -> None:
        self.ctx = ctx
        self.value = value
        self.continues = continues

    def get(self, key: str) -> Any:
        if key == "addIssue":
            return Builtin("addIssue", self.add_issue)
        if key == "value":
            return deep_copy(self.ctx.budget, self.value)
        if key == "issues":  # `.check()` style: ctx.issues.push({...})
            return Namespace("ctx.issues", {"push": Builtin("push", self.add_issue)})
        return super().get(key)

    def add_issue(self, budget: Budget, args: list[Any]) -> Any:
        spec = arg(args, 0)
        if type(spec) is str:
            spec = {"message": spec}
        if type(spec) is not dict:
            raise MvuError(Code.SCHEMA, "ctx.addIssue needs an issue object")
        path = spec.get("path", [])
        if type(path) is not list or not all(type(part) in (str, int, float) for part in path):
            raise MvuError(Code.SCHEMA, "an issue's path must be an array of keys")
        code = spec.get("code", "custom")
        message = custom_message(spec) or "Invalid input"
        fatal = truthy(spec.get("fatal")) or spec.get("continue") is False
        parts: list[str | int] = [int(part) if type(part) is float else part for part in path]
        self.ctx.issues.append(Issue(to_string(code), parts, message, continues=self.continues and not fatal,
                                     stops=fatal))
        return UNDEFINED


NEVER = Opaque()
"""``z.NEVER``: what a transform returns after reporting an issue."""


# -- wrappers ----------------------------------------------------------------------------------


class Optional(Schema):
    kind = "optional"
    optout = "optional"

    def __init__(self, inner: Schema) -> None:
        self.inner = inner
        self.inner_run = runner(inner)
        self.optin = "defaulted" if inner.optin == "defaulted" else "optional"

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if value is not UNDEFINED:
            return self.inner_run(value, ctx)
        if self.inner.optin != "defaulted":
            return UNDEFINED
        trial = ParseCtx(ctx.budget)
        result = self.inner.run(value, trial)
        return UNDEFINED if trial.issues else result

    def m_unwrap(self, budget: Budget, args: list[Any]) -> Schema:
        return self.inner


class ExactOptional(Optional):
    """``.exactOptional()``: the key may be absent, but a present ``undefined`` is parsed by the
    inner schema (JSON never has one; a transform's result may)."""

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        return self.inner_run(value, ctx)

    def describe(self) -> str:
        return "z.exactOptional()"


class NonOptional(Schema):
    """``.nonoptional()`` and the fields of ``.required()``: whatever the inner schema accepts,
    ``undefined`` is refused (Zod wraps; it does not unwrap an optional)."""

    kind = "nonoptional"
    optout = None

    def __init__(self, inner: Schema) -> None:
        self.inner = inner
        self.inner_run = runner(inner)
        self.optin = "defaulted" if inner.optin == "defaulted" else None

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        start = len(ctx.issues)
        result = self.inner_run(value, ctx)
        if result is UNDEFINED and len(ctx.issues) == start:
            ctx.issues.append(Issue("invalid_type", [], NONOPTIONAL))
        return result

    def m_unwrap(self, budget: Budget, args: list[Any]) -> Schema:
        return self.inner


class Nullable(Schema):
    kind = "nullable"

    def __init__(self, inner: Schema) -> None:
        self.inner = inner
        self.inner_run = runner(inner)
        self.optin = inner.optin
        self.optout = inner.optout

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        return None if value is None else self.inner_run(value, ctx)

    def m_unwrap(self, budget: Budget, args: list[Any]) -> Schema:
        return self.inner


class Readonly(Schema):
    """``.readonly()``: the value passes unchanged (JSON output is never shared), but the node
    is no longer the object it wraps (so a registered root stays as declared, S-2)."""

    kind = "readonly"

    def __init__(self, inner: Schema) -> None:
        self.inner = inner
        self.inner_run = runner(inner)
        self.optin = inner.optin
        self.optout = inner.optout

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        return self.inner_run(value, ctx)

    def m_unwrap(self, budget: Budget, args: list[Any]) -> Schema:
        return self.inner


class Lazy(Schema):
    """``z.lazy(() => schema)``: recursive declarations; the getter runs when a value is parsed,
    within the budget (and the call depth bounds runaway recursion)."""

    kind = "lazy"

    def __init__(self, getter: JsCallable) -> None:
        self.getter = getter

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        return self.m_unwrap(ctx.budget, []).run(value, ctx)

    def m_unwrap(self, budget: Budget, args: list[Any]) -> Schema:
        return as_schema(self.getter.call(budget, []), "z.lazy's getter result")


class Default(Schema):
    """``.default(v)`` (absence gives ``v`` as is) and ``.prefault(v)`` (``v`` is parsed)."""

    optin = "defaulted"

    def __init__(self, inner: Schema, value: Any, *, prefault: bool) -> None:
        if isinstance(value, Opaque) and not isinstance(value, JsCallable):
            raise MvuError(Code.SCHEMA, "a default must be a JSON value or a function")
        self.inner = inner
        self.inner_run = runner(inner)
        self.value = value
        self.prefault = prefault
        self.kind = "prefault" if prefault else "default"  # as Zod names the two classes

    def fallback(self, budget: Budget) -> Any:
        if isinstance(self.value, JsCallable):
            return self.value.call(budget, [])
        return copy_json(self.value)

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if value is UNDEFINED:
            if not self.prefault:
                return self.fallback(ctx.budget)
            value = self.fallback(ctx.budget)
        result = self.inner_run(value, ctx)
        if result is UNDEFINED and not self.prefault:
            return self.fallback(ctx.budget)
        return result

    def m_unwrap(self, budget: Budget, args: list[Any]) -> Schema:
        return self.inner

    def m_removeDefault(self, budget: Budget, args: list[Any]) -> Schema:
        if self.prefault:  # ZodPrefault has no removeDefault
            raise fail("removeDefault is not a function")
        return self.inner


class Catch(Schema):
    kind = "catch"

    def __init__(self, inner: Schema, value: Any) -> None:
        self.inner = inner
        self.value = value
        self.optin = "defaulted" if inner.optin == "defaulted" else "optional"
        self.optout = inner.optout

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        trial = ParseCtx(ctx.budget)
        result = self.inner.run(value, trial)
        if not trial.issues:
            return result
        if isinstance(self.value, JsCallable):
            # Zod hands the catch function its payload: `value` and `input` are both the value
            # the inner schema refused (as node shows, the caller's, even for an object)
            issues = [issue.to_dict() for issue in trial.issues]
            detail = {"value": copy_json(value), "input": copy_json(value), "issues": issues,
                      "error": {"issues": copy_json(issues)}}
            return self.value.call(ctx.budget, [detail])
        return copy_json(self.value)

    def m_unwrap(self, budget: Budget, args: list[Any]) -> Schema:
        return self.inner

    m_removeCatch = m_unwrap


class Transform(Schema):
    kind = "transform"
    optin = "optional"

    def __init__(self, fn: JsCallable, *, raw_input: bool = False) -> None:
        self.fn = fn
        # Most transforms are `v => ...`: only build the issue sink for functions that take a ctx.
        self.wants_ctx = len(getattr(fn, "params", ())) != 1
        # z.preprocess sees the caller's input itself: give it a copy it may change.
        self.raw_input = raw_input

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if self.raw_input:
            value = copy_json(value)
        if not self.wants_ctx:
            return self.fn.call(ctx.budget, [value])
        return self.fn.call(ctx.budget, [value, IssueSink(ctx, value, continues=False)])


class Pipe(Schema):
    """``a.transform(f)``, ``a.pipe(b)`` and ``z.preprocess(f, b)``: ``b`` runs only if ``a`` passed."""

    kind = "pipe"

    def __init__(self, left: Schema, right: Schema) -> None:
        self.left = left
        self.right = right
        self.left_run = runner(left)
        self.right_run = runner(right)
        self.optin = left.optin
        self.optout = right.optout

    def run(self, value: Any, ctx: ParseCtx) -> Any:
        issues = ctx.issues
        start = len(issues)
        middle = self.left_run(value, ctx)
        if len(issues) > start and any(issue.code != "unrecognized_keys" for issue in issues[start:]):
            ctx.stopped = self
            return middle  # Zod marks the pipe aborted: neither the right side nor checks run
        result = self.right_run(middle, ctx)
        return run_checks(self.checks, result, ctx, start) if self.checks else result

    def p_in(self) -> Any:
        return self.left

    def p_out(self) -> Any:
        return self.right


def stopped_itself(schema: Schema, ctx: ParseCtx) -> bool:
    """Whether the pipe that last stopped in ``ctx`` parsed ``schema``'s own value: ``schema`` is
    that pipe, or wraps it without a container in between (wrappers pass Zod's payload on)."""
    stopped = ctx.stopped
    while stopped is not None:
        if schema is stopped:
            return True
        inner = getattr(schema, "inner", None)
        if not isinstance(inner, Schema):
            return False
        schema = inner
    return False
