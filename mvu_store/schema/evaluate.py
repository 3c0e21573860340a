"""Compile the internal AST to Python closures and run them under the fuel budget.

Each expression becomes ``fn(frame) -> value`` and each statement ``fn(frame) -> completion``
once, at compile time; validations then only call closures (no AST walk per value). Work is
charged where it can repeat: every function call and loop iteration costs the node count of its
body, builtins cost the size of what they touch. Property access goes through
:func:`get_member` / :func:`set_member`, which own the isolation rules of S-7: own properties
only, no prototype names, no ``length`` writes, no writes to declaration constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import UNSAFE_KEYS
from mvu_store.schema import builtins
from mvu_store.schema.regex import compile_regex
from mvu_store.schema.syntax import Node
from mvu_store.schema.values import (
    MAX_CALL_DEPTH,
    UNDEFINED,
    Budget,
    JsCallable,
    Opaque,
    ScriptError,
    fail,
    is_number,
    js_length,
    loose_equals,
    strict_equals,
    to_number,
    to_string,
    truthy,
    typeof,
)

MAX_LOOP_ITEMS = 1_000
_INT_LIMIT = 2**53
_ABSENT = object()


class Frame:
    """One lexical scope: its bindings, which of them are constants, and the running budget."""

    __slots__ = ("budget", "consts", "parent", "vars")

    def __init__(self, parent: Frame | None, budget: Budget, bindings: dict[str, Any] | None = None) -> None:
        self.vars: dict[str, Any] = {} if bindings is None else bindings
        self.consts: set[str] | None = None  # created on the first `const`: most call frames have none
        self.parent = parent
        self.budget = budget

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

Eval = Callable[[Frame], Any]
Exec = Callable[[Frame], Any]  # returns None, BREAK, CONTINUE or a Return
Param = tuple[tuple[Any, ...], Eval | None]  # (binding pattern, default value)


class JsFunction(JsCallable):
    """A declaration's arrow or function expression, closed over its defining frame."""

    __slots__ = ("body", "closure", "cost", "expression", "members", "names", "params")

    def __init__(self, params: list[Param], body: Exec, closure: Frame, cost: int, expression: bool) -> None:
        # Properties set on the function (bundlers' `getter.a`); empty for nearly every function.
        self.members: dict[str, Any] = {}
        self.params = params
        self.body = body
        self.closure = closure
        self.cost = cost
        self.expression = expression  # `x => expr`: the body is an Eval, no Return to unwrap
        # Plain `(a, b) => ...` parameters (most transforms) bind with one dict: the hot path.
        simple = all(pattern[0] == "name" and default is None for pattern, default in params)
        self.names = [pattern[1] for pattern, _ in params] if simple else None

    def call(self, budget: Budget, args: list[Any]) -> Any:
        budget.charge(self.cost)
        if budget.depth >= MAX_CALL_DEPTH:
            raise MvuError(Code.LIMIT, f"calls nested deeper than {MAX_CALL_DEPTH}",
                           limit=MAX_CALL_DEPTH, kind="call_depth")
        names = self.names
        if names is not None:
            if len(args) < len(names):
                args = [*args, *[UNDEFINED] * (len(names) - len(args))]
            frame = Frame(self.closure, budget, dict(zip(names, args, strict=False)))
        else:
            frame = Frame(self.closure, budget)
            for index, (pattern, default) in enumerate(self.params):
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

    def refs(self) -> Iterator[Any]:
        yield from self.members.values()
        frame: Frame | None = self.closure
        while frame is not None:
            yield from frame.vars.values()
            frame = frame.parent


def bind(frame: Frame, pattern: tuple[Any, ...], value: Any, *, const: bool) -> None:
    """Bind a name or a flat destructuring pattern in ``frame``."""
    shape = pattern[0]
    if shape == "name":
        pairs: list[tuple[str, Any]] = [(pattern[1], value)]
    elif shape == "object":
        pairs = [(local, get_member(value, key)) for key, local in pattern[1]]
    else:
        pairs = [(local, get_member(value, index)) for index, local in enumerate(pattern[1])]
    for name, item in pairs:
        frame.vars[name] = item
        if const:
            if frame.consts is None:
                frame.consts = set()
            frame.consts.add(name)


# -- property access -------------------------------------------------------------------------


def property_key(key: Any) -> str:
    kind = type(key)
    if kind is str:
        return key  # type: ignore[no-any-return]
    if kind is int or kind is float or kind is bool or key is None or key is UNDEFINED:
        return to_string(key)
    raise fail(f"a {typeof(key)} cannot be a property key")


def _index(key: Any) -> int | None:
    if type(key) is int:
        return int(key)
    if type(key) is float and key.is_integer():
        return int(key)
    if type(key) is str and key.isdigit() and key.isascii() and (key == "0" or key[0] != "0"):
        return int(key)
    return None


def get_member(obj: Any, key: Any) -> Any:
    """``obj[key]`` with S-7's rules: own data only, prototype names refused."""
    kind = type(obj)
    if kind is dict:
        name = key if type(key) is str else property_key(key)
        if name in UNSAFE_KEYS:
            raise MvuError(Code.SCHEMA, f"access to `{name}` is not allowed", key=name)
        return obj.get(name, UNDEFINED)
    if kind is list or kind is str:
        index = _index(key)
        if index is not None:
            return obj[index] if 0 <= index < len(obj) else UNDEFINED
        name = property_key(key)
        if name == "length":
            return len(obj) if kind is list else js_length(obj)
        if name in UNSAFE_KEYS:
            raise MvuError(Code.SCHEMA, f"access to `{name}` is not allowed", key=name)
        return builtins.method_of(obj, name)
    if isinstance(obj, Opaque):
        name = property_key(key)
        # `Object.prototype.hasOwnProperty.call(data, key)` is S-8's one explicit primitive.
        if name in UNSAFE_KEYS and not (obj is builtins.OBJECT and name == "prototype"):
            raise MvuError(Code.SCHEMA, f"access to `{name}` is not allowed", key=name)
        return obj.get(name)
    if obj is None or obj is UNDEFINED:
        raise fail(f"cannot read property `{to_string(key)}` of {to_string(obj)}")
    name = property_key(key)
    if name in UNSAFE_KEYS:
        raise MvuError(Code.SCHEMA, f"access to `{name}` is not allowed", key=name)
    return builtins.method_of(obj, name)


def set_member(budget: Budget, obj: Any, key: Any, value: Any) -> None:
    """``obj[key] = value`` on a container the declaration may write.

    Objects may hold functions and schemas while the declaration builds itself (bundlers keep
    their runtime in one); a parsed value that still holds one is refused when it is output.
    """
    target: Any = obj
    if isinstance(obj, JsFunction):
        if id(obj) in budget.frozen:
            raise MvuError(Code.SCHEMA, "the declaration's constants are read-only")
        target = obj.members
    else:
        builtins.check_writable(budget, obj)
    if type(target) is dict:
        name = property_key(key)
        if name in UNSAFE_KEYS:
            raise MvuError(Code.SCHEMA, f"writing `{name}` is not allowed", key=name)
        target[name] = value
        return
    index = _index(key)
    if property_key(key) == "length":
        raise MvuError(Code.SCHEMA, "writing an array's `length` is not allowed")
    if index is None or index > len(target):
        raise MvuError(Code.SCHEMA, "arrays stay dense: only existing indexes or the next one can be written")
    budget.charge(1)
    if index == len(target):
        target.append(value)
    else:
        target[index] = value


# -- operators -------------------------------------------------------------------------------


def _clip(value: Any) -> Any:
    """Keep integer results within JavaScript's exact range (beyond it numbers are doubles)."""
    if type(value) is int and not -_INT_LIMIT <= value <= _INT_LIMIT:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def _add(left: Any, right: Any) -> Any:
    if is_number(left) and is_number(right):
        return _clip(left + right)
    if type(left) is str and type(right) is str:
        return left + right
    if type(left) is dict or type(right) is dict or isinstance(left, Opaque) or isinstance(right, Opaque):
        raise fail("implicit conversion of an object is not allowed")
    if type(left) is str or type(right) is str or type(left) is list or type(right) is list:
        return to_string(left) + to_string(right)
    return _clip(to_number(left) + to_number(right))


def _divide(left: Any, right: Any) -> Any:
    a, b = to_number(left), to_number(right)
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def _remainder(left: Any, right: Any) -> Any:
    a, b = to_number(left), to_number(right)
    if b == 0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    if math.isinf(b):
        return a
    if type(a) is int and type(b) is int:
        result = abs(a) % abs(b)
        return -result if a < 0 else result
    return math.fmod(a, b)


def _power(left: Any, right: Any) -> Any:
    a, b = float(to_number(left)), float(to_number(right))
    try:
        result = a**b
    except OverflowError:
        return math.inf
    except ZeroDivisionError:
        return math.inf
    if isinstance(result, complex):
        return math.nan
    return result


def _int32(value: Any) -> int:
    number = to_number(value)
    if math.isnan(number) or math.isinf(number):
        return 0
    result = int(number) & 0xFFFFFFFF
    return result - 2**32 if result >= 2**31 else result


def _compare(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(left: Any, right: Any) -> bool:
        left_kind, right_kind = type(left), type(right)
        if (left_kind is int or left_kind is float) and (right_kind is int or right_kind is float):
            return test(left, right)
        if left_kind is str and right_kind is str:
            return test(left, right)
        return test(to_number(left), to_number(right))

    return compare


def _in(left: Any, right: Any) -> bool:
    if type(right) is dict:
        return property_key(left) in right
    if type(right) is list:
        index = _index(left)
        return (index is not None and 0 <= index < len(right)) or property_key(left) == "length"
    raise fail("`in` needs an object on its right")


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": _add,
    "-": lambda a, b: _clip(to_number(a) - to_number(b)),
    "*": lambda a, b: _clip(to_number(a) * to_number(b)),
    "/": _divide,
    "%": _remainder,
    "**": _power,
    "<": _compare(lambda a, b: a < b),
    ">": _compare(lambda a, b: a > b),
    "<=": _compare(lambda a, b: a <= b),
    ">=": _compare(lambda a, b: a >= b),
    "===": strict_equals,
    "!==": lambda a, b: not strict_equals(a, b),
    "==": loose_equals,
    "!=": lambda a, b: not loose_equals(a, b),
    "&": lambda a, b: _int32(_int32(a) & _int32(b)),
    "|": lambda a, b: _int32(_int32(a) | _int32(b)),
    "^": lambda a, b: _int32(_int32(a) ^ _int32(b)),
    "<<": lambda a, b: _int32(_int32(a) << (_int32(b) & 31)),
    ">>": lambda a, b: _int32(a) >> (_int32(b) & 31),
    ">>>": lambda a, b: (_int32(a) & 0xFFFFFFFF) >> (_int32(b) & 31),
    "in": _in,
}


def _negate(value: Any) -> Any:
    number = to_number(value)
    return -number if number != 0 else (-0.0 if type(number) is float or number == 0 else 0)


UNARY: dict[str, Callable[[Any], Any]] = {
    "!": lambda value: not truthy(value),
    "-": _negate,
    "+": to_number,
    "typeof": typeof,
    "void": lambda value: UNDEFINED,
    "~": lambda value: _int32(~_int32(value)),
}


def _thrown(value: Any) -> ScriptError:
    message = value.get("message", UNDEFINED) if type(value) is dict else value
    return ScriptError(f"the declaration threw: {to_string(message)}", value)


class _ShortCircuit(Exception):
    """Raised by an optional link (`a?.b`) on null/undefined; caught at the top of its chain."""


# -- the compiler ----------------------------------------------------------------------------


class Compiler:
    """Turns AST nodes into closures.

    ``fixed`` are the global capabilities (``z``, ``Math``, ``_`` ...). A name the program never
    binds anywhere always means its global, so it compiles to a constant instead of a walk up
    the frames on every use (most transforms are `v => _.clamp(v, 0, 100)`).
    """

    def __init__(self, fixed: dict[str, Any], program: Node) -> None:
        bound = _bound_names(program)
        self.fixed = {name: value for name, value in fixed.items() if name not in bound}

    def expression(self, node: Node) -> Eval:
        if node.kind in {"member", "index", "call"} and _has_optional(node):
            link = self.link(node)

            def chain(frame: Frame) -> Any:
                try:
                    return link(frame)
                except _ShortCircuit:
                    return UNDEFINED

            return chain
        method: Callable[[Node], Eval] = getattr(self, "e_" + node.kind)
        return method(node)

    def link(self, node: Node) -> Eval:
        """A member/index/call inside an optional chain: nested links do not catch."""
        method: Callable[[Node], Eval] = getattr(self, "e_" + node.kind)
        return method(node)

    def operand(self, node: Node) -> Eval:
        return self.link(node) if node.kind in {"member", "index", "call"} else self.expression(node)

    def e_const(self, node: Node) -> Eval:
        value = node.value
        return lambda frame: value

    def e_undefined(self, node: Node) -> Eval:
        return lambda frame: UNDEFINED

    def e_name(self, node: Node) -> Eval:
        name = node.value
        if name in self.fixed:
            return _constant(self.fixed[name])
        return lambda frame: frame.lookup(name)

    def e_template(self, node: Node) -> Eval:
        parts = [self.expression(kid) for kid in node.kids if kid is not None]

        def template(frame: Frame) -> str:
            text = "".join(to_string(part(frame)) for part in parts)
            frame.budget.charge(len(text) // 64)
            return text

        return template

    def e_regex(self, node: Node) -> Eval:
        pattern, flags = node.value

        def regex(frame: Frame) -> Any:
            return compile_regex(pattern, flags, frame.budget)

        return regex

    def e_array(self, node: Node) -> Eval:
        items = [(kid.kind == "spread", self.expression(kid.child(0) if kid.kind == "spread" else kid))
                 for kid in node.kids if kid is not None]

        def array(frame: Frame) -> list[Any]:
            result: list[Any] = []
            for spread, item in items:
                if spread:
                    result.extend(builtins.iterate(frame.budget, item(frame)))
                else:
                    result.append(item(frame))
            return result

        return array

    def e_object(self, node: Node) -> Eval:
        entries: list[tuple[str, Any, Eval]] = []
        for kid in node.kids:
            assert kid is not None
            if kid.kind == "property":
                if kid.value in UNSAFE_KEYS:
                    raise _refuse_at(kid, f"the key `{kid.value}` is not allowed")
                entries.append(("property", kid.value, self.expression(kid.child(0))))
            elif kid.kind == "computed":
                entries.append(("computed", self.expression(kid.child(0)), self.expression(kid.child(1))))
            else:
                entries.append(("spread", None, self.expression(kid.child(0))))

        def obj(frame: Frame) -> dict[str, Any]:
            result: dict[str, Any] = {}
            for shape, key, value in entries:
                if shape == "property":
                    result[key] = value(frame)
                elif shape == "computed":
                    name = property_key(key(frame))
                    if name in UNSAFE_KEYS:
                        raise MvuError(Code.SCHEMA, f"the key `{name}` is not allowed", key=name)
                    result[name] = value(frame)
                else:
                    source = value(frame)
                    frame.budget.charge(len(source) if isinstance(source, (dict, list, str)) else 1)
                    result.update(builtins.spread_entries(source))
            return result

        return obj

    def e_member(self, node: Node) -> Eval:
        name, optional = node.value
        target = self.operand(node.child(0))

        def member(frame: Frame) -> Any:
            obj = target(frame)
            if optional and (obj is None or obj is UNDEFINED):
                raise _ShortCircuit
            return get_member(obj, name)

        return member

    def e_index(self, node: Node) -> Eval:
        optional = node.value
        target = self.operand(node.child(0))
        key = self.expression(node.child(1))

        def index(frame: Frame) -> Any:
            obj = target(frame)
            if optional and (obj is None or obj is UNDEFINED):
                raise _ShortCircuit
            return get_member(obj, key(frame))

        return index

    def e_call(self, node: Node) -> Eval:
        optional = node.value
        callee_node = node.kids[0]
        assert callee_node is not None
        callee = self.operand(callee_node)
        label = callee_node.value[0] if callee_node.kind == "member" else str(callee_node.value)
        args = self.arguments(node.kids[1:])

        def call(frame: Frame) -> Any:
            function = callee(frame)
            if isinstance(function, JsCallable):
                return function.call(frame.budget, args(frame))
            if optional and (function is None or function is UNDEFINED):
                raise _ShortCircuit
            raise fail(f"{label} is not a function")

        return call

    def arguments(self, nodes: tuple[Node | None, ...]) -> Callable[[Frame], list[Any]]:
        parts = [(kid.kind == "spread", self.expression(kid.child(0) if kid.kind == "spread" else kid))
                 for kid in nodes if kid is not None]
        if not any(spread for spread, _ in parts):
            plain = [part for _, part in parts]
            return lambda frame: [part(frame) for part in plain]

        def spread_args(frame: Frame) -> list[Any]:
            values: list[Any] = []
            for spread, part in parts:
                if spread:
                    values.extend(builtins.iterate(frame.budget, part(frame)))
                else:
                    values.append(part(frame))
            return values

        return spread_args

    def e_function(self, node: Node) -> Eval:
        params = [(pattern, None if default is None else self.expression(default)) for pattern, default in node.value]
        body_node = node.child(0)
        expression = body_node.kind == "return" and body_node.kids[0] is not None
        body = self.expression(body_node.child(0)) if expression else self.statement(body_node)
        cost = 1 + body_node.size()

        def function(frame: Frame) -> JsFunction:
            return JsFunction(params, body, frame, cost, expression)

        return function

    def e_unary(self, node: Node) -> Eval:
        operator = node.value
        argument_node = node.kids[0]
        assert argument_node is not None
        if operator == "typeof" and argument_node.kind == "name":
            name = argument_node.value

            def typeof_name(frame: Frame) -> str:
                try:
                    return typeof(frame.lookup(name))
                except MvuError:
                    return "undefined"

            return typeof_name
        apply = UNARY[operator]
        argument = self.expression(argument_node)
        return lambda frame: apply(argument(frame))

    def e_binary(self, node: Node) -> Eval:
        apply = BINARY[node.value]
        left = self.expression(node.child(0))
        right = self.expression(node.child(1))
        return lambda frame: apply(left(frame), right(frame))

    def e_logical(self, node: Node) -> Eval:
        left = self.expression(node.child(0))
        right = self.expression(node.child(1))
        if node.value == "&&":
            return lambda frame: right(frame) if truthy(value := left(frame)) else value
        if node.value == "||":
            return lambda frame: value if truthy(value := left(frame)) else right(frame)
        return lambda frame: right(frame) if (value := left(frame)) is None or value is UNDEFINED else value

    def e_conditional(self, node: Node) -> Eval:
        test, then, other = (self.expression(node.child(index)) for index in range(3))
        return lambda frame: then(frame) if truthy(test(frame)) else other(frame)

    def e_sequence(self, node: Node) -> Eval:
        parts = [self.expression(node.child(index)) for index in range(len(node.kids))]

        def sequence(frame: Frame) -> Any:
            value = UNDEFINED
            for part in parts:
                value = part(frame)
            return value

        return sequence

    def e_spread(self, node: Node) -> Eval:
        raise _refuse_at(node, "spread is only supported in arrays, objects and calls")

    def target(self, node: Node) -> tuple[Eval, Callable[[Frame, Any], None]]:
        """A readable and writable place: a variable or a field of a JSON container."""
        if node.kind == "name":
            name = node.value
            return (lambda frame: frame.lookup(name)), (lambda frame, value: frame.assign(name, value))
        if node.kind not in {"member", "index"} or (node.value[1] if node.kind == "member" else node.value):
            raise _refuse_at(node, "only variables and fields can be assigned")
        holder = self.expression(node.child(0))
        key: Eval = _constant(node.value[0]) if node.kind == "member" else self.expression(node.child(1))

        def read(frame: Frame) -> Any:
            return get_member(holder(frame), key(frame))

        def write(frame: Frame, value: Any) -> None:
            set_member(frame.budget, holder(frame), key(frame), value)

        return read, write

    def e_assign(self, node: Node) -> Eval:
        operator = node.value
        read, write = self.target(node.child(0))
        value = self.expression(node.child(1))
        if operator == "=":
            def assign(frame: Frame) -> Any:
                result = value(frame)
                write(frame, result)
                return result

            return assign
        if operator in {"&&=", "||=", "??="}:
            def keep(current: Any) -> bool:
                if operator == "&&=":
                    return not truthy(current)
                if operator == "||=":
                    return truthy(current)
                return current is not None and current is not UNDEFINED

            def logical_assign(frame: Frame) -> Any:
                current = read(frame)
                if keep(current):
                    return current
                result = value(frame)
                write(frame, result)
                return result

            return logical_assign
        apply = BINARY[operator[:-1]]

        def compound(frame: Frame) -> Any:
            result = apply(read(frame), value(frame))
            write(frame, result)
            return result

        return compound

    def e_update(self, node: Node) -> Eval:
        operator, prefix = node.value
        read, write = self.target(node.child(0))
        step = 1 if operator == "++" else -1

        def update(frame: Frame) -> Any:
            old = to_number(read(frame))
            write(frame, _clip(old + step))
            return old + step if prefix else old

        return update

    # -- statements --------------------------------------------------------------------------

    def statement(self, node: Node) -> Exec:
        method: Callable[[Node], Exec] = getattr(self, "s_" + node.kind)
        return method(node)

    def s_expr(self, node: Node) -> Exec:
        expression = self.expression(node.child(0))

        def run(frame: Frame) -> None:
            expression(frame)

        return run

    def s_declare_list(self, node: Node) -> Exec:
        const = node.value == "const"
        declarators = [(kid.value, None if kid.kids[0] is None else self.expression(kid.kids[0]))
                       for kid in (node.child(index) for index in range(len(node.kids)))]

        def declare(frame: Frame) -> None:
            for pattern, init in declarators:
                bind(frame, pattern, UNDEFINED if init is None else init(frame), const=const)

        return declare

    def s_return(self, node: Node) -> Exec:
        value_node = node.kids[0]
        if value_node is None:
            return lambda frame: Return(UNDEFINED)
        value = self.expression(value_node)
        return lambda frame: Return(value(frame))

    def s_if(self, node: Node) -> Exec:
        test = self.expression(node.child(0))
        then = self.scoped(node.child(1))
        other = None if node.kids[2] is None else self.scoped(node.kids[2])

        def branch(frame: Frame) -> Any:
            if truthy(test(frame)):
                return then(frame)
            return None if other is None else other(frame)

        return branch

    def s_throw(self, node: Node) -> Exec:
        value = self.expression(node.child(0))

        def throw(frame: Frame) -> Any:
            raise _thrown(value(frame))

        return throw

    def e_new_error(self, node: Node) -> Eval:
        name = node.value
        message = self.expression(node.child(0)) if node.kids else _constant("")
        return lambda frame: {"name": name, "message": to_string(message(frame))}

    def s_try(self, node: Node) -> Exec:
        param = node.value
        body = self.scoped(node.child(0))
        handler = None if node.kids[1] is None else self.scoped(node.child(1))
        finalizer = None if node.kids[2] is None else self.scoped(node.child(2))

        def attempt(frame: Frame) -> Any:
            depth = frame.budget.depth
            try:
                return body(frame)
            except ScriptError as error:
                # Only the declaration's own exceptions are catchable (see ScriptError).
                frame.budget.depth = depth
                if handler is None:
                    raise
                inner = Frame(frame, frame.budget)
                if param is not None:
                    bind(inner, param, error.value, const=False)
                return handler(inner)
            finally:
                if finalizer is not None:
                    finalizer(frame)

        return attempt

    def s_break(self, node: Node) -> Exec:
        return lambda frame: BREAK

    def s_continue(self, node: Node) -> Exec:
        return lambda frame: CONTINUE

    def s_block(self, node: Node) -> Exec:
        steps = [self.statement(kid) for kid in node.kids if kid is not None]

        def block(frame: Frame) -> Any:
            for step in steps:
                completion = step(frame)
                if completion is not None:
                    return completion
            return None

        return block

    def scoped(self, node: Node) -> Exec:
        """A nested block gets its own frame when it declares names (so shadowing works)."""
        body = self.statement(node)
        if node.kind != "block" or not any(kid is not None and kid.kind == "declare_list" for kid in node.kids):
            return body
        return lambda frame: body(Frame(frame, frame.budget))

    def s_for_of(self, node: Node) -> Exec:
        return self.loop(node, _array_items)

    def s_for_in(self, node: Node) -> Exec:
        return self.loop(node, _own_keys)

    def loop(self, node: Node, items_of: Callable[[Any], list[Any]]) -> Exec:
        binding, pattern = node.value
        const = binding == "const"
        iterable = self.expression(node.child(0))
        body = self.statement(node.child(1))
        cost = 1 + node.child(1).size()

        def loop(frame: Frame) -> Any:
            items = items_of(iterable(frame))
            if len(items) > MAX_LOOP_ITEMS:
                raise MvuError(Code.LIMIT, f"loops visit at most {MAX_LOOP_ITEMS} items",
                               limit=MAX_LOOP_ITEMS, kind="loop")
            for item in items:
                frame.budget.charge(cost)
                inner = Frame(frame, frame.budget)
                bind(inner, pattern, item, const=const)
                completion = body(inner)
                if completion is BREAK:
                    break
                if type(completion) is Return:
                    return completion
            return None

        return loop


def _array_items(value: Any) -> list[Any]:
    if type(value) is not list and type(value) is not str:
        raise fail("for...of needs an array")
    return list(value)


def _own_keys(value: Any) -> list[Any]:
    """What ``for...in`` visits here: own keys of an object, indexes of an array, nothing else."""
    if type(value) is dict:
        return list(value)
    if type(value) is list or type(value) is str:
        return [str(index) for index in range(len(value))]
    if isinstance(value, JsFunction):
        return list(value.members)
    return []


def _bound_names(program: Node) -> set[str]:
    """Every name a declaration, parameter, loop or import binds anywhere in ``program``."""
    names: set[str] = set()
    stack = [program]
    while stack:
        node = stack.pop()
        patterns: list[tuple[Any, ...]] = []
        if node.kind == "declare":
            patterns.append(node.value)
        elif node.kind == "function":
            patterns.extend(pattern for pattern, _ in node.value)
            stack.extend(default for _, default in node.value if default is not None)
        elif node.kind in {"for_of", "for_in"}:
            patterns.append(node.value[1])
        elif node.kind == "try" and node.value is not None:
            patterns.append(node.value)
        elif node.kind == "import":
            names.update(local for _, local in node.value[1])
        for pattern in patterns:
            if pattern[0] == "name":
                names.add(pattern[1])
            elif pattern[0] == "object":
                names.update(local for _, local in pattern[1])
            else:
                names.update(pattern[1])
        stack.extend(kid for kid in node.kids if kid is not None)
    return names


def _constant(value: Any) -> Eval:
    return lambda frame: value


def _has_optional(node: Node) -> bool:
    current: Node | None = node
    while current is not None and current.kind in {"member", "index", "call"}:
        optional = current.value[1] if current.kind == "member" else current.value
        if optional:
            return True
        current = current.kids[0]
    return False


def _refuse_at(node: Node, message: str) -> MvuError:
    where = f"line {node.line}, column {node.col}"
    return MvuError(Code.SCHEMA_CODE, f"{message} at {where}", line=node.line, column=node.col)
