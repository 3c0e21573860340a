"""The interpreter's runtime: scopes, declaration functions and property access.

:func:`get_member` reads with the isolation rules of S-7 (own properties only, no prototype
names however they are spelled): the guards themselves, and the writes, are the JavaScript
core's (``mvu_store.js.members``); this module adds the methods of arrays, strings and numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.members import (
    NOT_OWN,
    guard,
    own_member,
    property_key,
)
from mvu_store.js.values import (
    MAX_CALL_DEPTH,
    UNDEFINED,
    Budget,
    FunctionObject,
    Opaque,
    fail,
    to_string,
    typeof,
)
from mvu_store.jsonvalue import UNSAFE_KEYS
from mvu_store.schema import builtins, methods, regex

_ABSENT = object()

Eval = Callable[["Frame"], Any]
Exec = Callable[["Frame"], Any]  # returns None, BREAK, CONTINUE, a Jump or a Return
Param = tuple[tuple[Any, ...], Eval | None]  # (binding pattern, default value)


class Frame:
    """One lexical scope: its bindings, which of them are constants, and the running budget."""

    __slots__ = ("budget", "consts", "parent", "sealed", "vars")

    def __init__(self, parent: Frame | None, budget: Budget, bindings: dict[str, Any] | None = None) -> None:
        self.vars: dict[str, Any] = {} if bindings is None else bindings
        self.consts: set[str] | None = None  # created on the first `const`: most call frames have none
        self.parent = parent
        self.budget = budget
        # Set on the declaration's own scopes once it is compiled: validations share them, so
        # none may reassign a top-level `let` (every validation must start from the same state).
        self.sealed = False

    def lookup(self, name: str) -> Any:
        frame: Frame | None = self
        while frame is not None:
            value = frame.vars.get(name, _ABSENT)
            if value is not _ABSENT:
                return value
            frame = frame.parent
        raise fail(f"{name} is not defined")

    def assign(self, name: str, value: Any) -> None:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.vars:
                if frame.consts is not None and name in frame.consts:
                    raise fail(f"assignment to constant `{name}`")
                if frame.sealed:
                    raise MvuError(Code.SCHEMA, f"`{name}` belongs to the declaration and is read-only here")
                frame.vars[name] = value
                return
            frame = frame.parent
        raise fail(f"{name} is not defined")


class Return:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


BREAK = object()
CONTINUE = object()


class Jump:
    """``break label`` / ``continue label``: the completion travels out through every statement
    until the labelled statement (or loop) it names."""

    __slots__ = ("breaks", "label")

    def __init__(self, label: str, *, breaks: bool) -> None:
        self.label = label
        self.breaks = breaks

class JsFunction(FunctionObject):
    """A declaration's arrow or function expression, closed over its defining frame."""

    __slots__ = ("binds_this", "body", "closure", "cost", "expression", "names", "node", "params", "picks")

    def __init__(self, params: list[Param], body: Exec, closure: Frame, cost: int, expression: bool,
                 node: Any, binds_this: bool = False) -> None:
        super().__init__()  # its properties (bundlers' `getter.a`): empty for nearly every function
        self.params = params
        self.body = body
        self.closure = closure
        self.cost = cost
        self.expression = expression  # `x => expr`: the body is an Eval, no Return to unwrap
        # The syntax node it was compiled from: the fast path reads it to decide purity (native.py).
        self.node = node
        # Plain `(a, b) => ...` parameters (most transforms) bind with one dict: the hot path.
        # A function that reads `this` binds it in its frame: only the general path below does.
        self.binds_this = binds_this
        simple = not binds_this and all(pattern[0] == "name" and default is None for pattern, default in params)
        self.names = [pattern[1] for pattern, _ in params] if simple else None
        # `({count}) => ...` (lodash predicates): one object pattern of plain names and no
        # defaults binds its names straight from the argument, without the general walk.
        self.picks: list[tuple[Any, str]] | None = None
        if not simple and not binds_this and len(params) == 1 and params[0][1] is None and params[0][0][0] == "object":
            entries = params[0][0][1]
            if all(key is not None and target[0] == "name" and default is None for key, target, default in entries):
                self.picks = [(key, target[1]) for key, target, _ in entries]

    def call(self, budget: Budget, args: list[Any], this: Any = UNDEFINED) -> Any:
        """Run the function; ``this`` is the receiver of ``obj.m()`` or of a getter's read."""
        budget.fuel -= self.cost  # Budget.charge inlined: this is the hottest call of all
        if budget.fuel < 0:
            budget.charge(0)
        if budget.depth >= MAX_CALL_DEPTH:
            raise MvuError(Code.LIMIT, f"calls nested deeper than {MAX_CALL_DEPTH}",
                           limit=MAX_CALL_DEPTH, kind="call_depth")
        names = self.names
        if names is not None:
            if len(names) == 1:  # `v => ...`
                frame = Frame(self.closure, budget, {names[0]: args[0] if args else UNDEFINED})
            else:
                if len(args) < len(names):
                    args = [*args, *[UNDEFINED] * (len(names) - len(args))]
                frame = Frame(self.closure, budget, dict(zip(names, args, strict=False)))
        elif self.picks is not None and args and args[0] is not None and args[0] is not UNDEFINED:
            value = args[0]  # as destructure() reads it: own members, S-7's rules
            frame = Frame(self.closure, budget, {name: get_member(value, key) for key, name in self.picks})
        else:
            frame = Frame(self.closure, budget, {THIS: this} if self.binds_this else None)
            for index, (pattern, default) in enumerate(self.params):
                if pattern[0] == "rest":  # `(a, ...more)`: the arguments after the named ones
                    bind(frame, pattern[1], list(args[index:]), const=False)
                    break
                value = args[index] if index < len(args) else UNDEFINED
                if value is UNDEFINED and default is not None:
                    value = default(frame)
                bind(frame, pattern, value, const=False)
        # No try/finally here (it costs on every call): a failing call ends the run, unless a
        # declaration's catch handles it, and s_try restores the depth it started with.
        budget.depth += 1
        result = self.body(frame)
        budget.depth -= 1
        if self.expression:
            return result
        return result.value if type(result) is Return else UNDEFINED

    def get(self, key: str) -> Any:
        if key in {"call", "apply", "bind"}:
            return super().get(key)
        return self.members.get(key, UNDEFINED)

    def frames(self) -> Iterator[Frame]:
        frame: Frame | None = self.closure
        while frame is not None:
            yield frame
            frame = frame.parent

    def refs(self) -> Iterator[Any]:
        yield from self.members.values()
        for frame in self.frames():
            yield from frame.vars.values()


THIS = "this"
"""The frame variable a receiver is bound to: a reserved word, so no declared name meets it."""


def receiver(frame: Frame) -> Any:
    """``this``: the receiver bound by the innermost non-arrow function that reads it (arrows
    see their enclosing one's), ``undefined`` at the top level as in a module."""
    scope: Frame | None = frame
    while scope is not None:
        value = scope.vars.get(THIS, _ABSENT)
        if value is not _ABSENT:
            return value
        scope = scope.parent
    return UNDEFINED


def bind(frame: Frame, pattern: tuple[Any, ...], value: Any, *, const: bool) -> None:
    """Declare the names of a (compiled) pattern in ``frame``; defaults are closures."""
    def declare(name: str, item: Any) -> None:
        frame.vars[name] = item
        if const:
            if frame.consts is None:
                frame.consts = set()
            frame.consts.add(name)

    destructure(frame, pattern, value, declare)


def destructure(frame: Frame, pattern: tuple[Any, ...], value: Any, store: Callable[[str, Any], None]) -> None:
    """Walk a pattern over ``value``, handing each name and its value to ``store`` (a
    declaration binds, an assignment writes an existing variable)."""
    shape = pattern[0]
    if shape == "name":
        store(pattern[1], value)
        return
    if value is None or value is UNDEFINED:
        raise fail(f"cannot destructure {to_string(value)}")
    if shape == "object":
        for key, target, default in pattern[1]:
            if key is None:  # `...rest`: the own entries no earlier key of the pattern named
                named = {entry[0] for entry in pattern[1]}
                frame.budget.charge(len(value) if isinstance(value, (dict, list, str)) else 1)
                entries = builtins.spread_entries(value)
                store(target[1], {name: item for name, item in entries.items() if name not in named})
                continue
            item = get_member(value, key)
            destructure(frame, target, default(frame) if item is UNDEFINED and default is not None else item, store)
        return
    if type(value) is not list and type(value) is not str:
        raise fail(f"a {typeof(value)} cannot be destructured as an array")
    for index, element in enumerate(pattern[1]):
        if element is not None:
            target, default = element
            if target[0] == "rest":  # `[a, ...rest]`: the items after the named ones
                frame.budget.charge(len(value))
                destructure(frame, target[1], [get_member(value, at) for at in range(index, len(value))], store)
                return
            item = get_member(value, index)
            destructure(frame, target, default(frame) if item is UNDEFINED and default is not None else item, store)


def get_member(obj: Any, key: Any) -> Any:
    """``obj[key]`` with S-7's rules: own data only, prototype names refused."""
    kind = type(obj)
    if kind is dict:  # inlined own_member: the hottest read of all
        name = key if type(key) is str else property_key(key)
        if name in UNSAFE_KEYS:
            raise MvuError(Code.SCHEMA, f"access to `{name}` is not allowed", key=name)
        return obj.get(name, UNDEFINED)
    if kind is list or kind is str:
        value = own_member(obj, key)
        if value is not NOT_OWN:
            return value
        name = property_key(key)
        if kind is list and name in regex.MATCH_FIELDS and (field := regex.match_field(obj, name)) is not None:
            return field
        return methods.method_of(obj, name)
    if isinstance(obj, Opaque):
        name = property_key(key)
        # `Object.prototype.hasOwnProperty.call(data, key)` is S-8's one explicit primitive.
        if not (obj is builtins.OBJECT and name == "prototype"):
            guard(name)
        return obj.get(name)
    if obj is None or obj is UNDEFINED:
        raise fail(f"cannot read property `{to_string(key)}` of {to_string(obj)}")
    return methods.method_of(obj, guard(property_key(key)))
