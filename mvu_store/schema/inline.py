"""Declaration arrow functions compiled to Python source for the fast path (native.py).

The common transforms (`v => _.clamp(v, 0, 100)`, `v => Math.max(-100, Math.min(100, v))`,
`items => _.pickBy(items, ({count}) => count > 0)`, `list => list.slice(-20)`) cost about a
microsecond each through the interpreter's closures and frames. :class:`FunctionCompiler`
writes an expression-bodied arrow function of a safe subset as one Python function instead:
parameters become locals, free names are read once from the sealed or constant bindings the
function closes over, library members (`_.clamp`, `Math.max`) resolve once, and every operator
and library call is the interpreter's own Python function, so values are the same by
construction (NaN, -0, ints and floats as the interpreter keeps them). Fuel is charged as the
interpreter charges it: the call's ``cost``, one unit per library call and whatever the library
function charges itself. `_.pickBy`/`_.omitBy` with a function literal run the literal's
compiled body in pick_by's own loop (as a plain ``(b, item, key) -> bool``). Anything outside
the subset (statements, optional chains, spreads, templates, closures over another function's
parameters ...) is not compiled: the caller keeps the interpreter's call. At run time a
compiled function raises :class:`Bail` where it cannot follow the interpreter exactly (the
call depth limit); every exception ends the fast path, and the interpreter then decides the
value from the start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mvu_store.errors import MvuError
from mvu_store.js.values import (
    MAX_CALL_DEPTH,
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    Namespace,
    truthy,
)
from mvu_store.jsonvalue import UNSAFE_KEYS
from mvu_store.schema.builtins import GLOBALS
from mvu_store.schema.lodash import LODASH, _keyed, plain_number
from mvu_store.schema.operators import BINARY, UNARY
from mvu_store.schema.runtime import Frame, JsFunction, get_member
from mvu_store.schema.syntax import Node


class Bail(Exception):
    """The fast path cannot decide this value: the interpreter runs instead."""


class Unsupported(Exception):
    """The function is outside the compiled subset: the interpreter's call stays."""


_MATH = GLOBALS["Math"]
_MAX, _MIN = _MATH.members["max"], _MATH.members["min"]
_CLAMP = LODASH.members["clamp"]
_PICKS = {id(LODASH.members["pickBy"]): "", id(LODASH.members["omitBy"]): "not "}  # how each keeps a test
# Library functions that never call a declaration function (they convert their arguments to
# numbers), so the call depth inside them is never read: no depth bookkeeping is needed.
_LEAVES = frozenset(id(fn) for fn in (_CLAMP, _MAX, _MIN, *(_MATH.members[name] for name in
                                                             ("abs", "ceil", "floor", "round"))))
_BOOLEAN_OPERATORS = frozenset({"<", ">", "<=", ">=", "===", "!==", "==", "!=", "in"})
_ORDER = frozenset({"<", ">", "<=", ">="})


class CompiledFunction(JsFunction):
    """A function literal evaluated by compiled code: a new one per evaluation, as in the
    interpreter. Each literal gets a subclass whose ``call`` is its compiled body (see
    :func:`compiled_class`), which charges the cost and keeps the depth limit as JsFunction.call."""

    __slots__ = ()

    def __init__(self, cost: int, node: Node) -> None:
        self.cost = cost
        self.node = node
        self.members = {}
        self.params = []
        self.closure = None  # type: ignore[assignment]  # never read: the body is compiled
        self.expression = True
        self.names = self.picks = None


def compiled_class(call: Callable[..., Any]) -> type[CompiledFunction]:
    return type("CompiledFunction", (CompiledFunction,), {"__slots__": (), "call": call})


def _call(function: Any, budget: Budget, args: list[Any]) -> Any:
    """A call whose callee is only known at run time, as evaluate.Compiler.e_call makes it."""
    if isinstance(function, JsCallable):
        return function.call(budget, args)
    raise Bail


def _plus(budget: Budget, left: Any, right: Any) -> Any:
    """``+`` with the charge evaluate.Compiler.e_binary adds when it joins an array."""
    result = BINARY["+"](left, right)
    if type(left) is list or type(right) is list:
        budget.charge(len(result) // 8)
    return result


def _charged(budget: Budget, fn: Callable[[Budget, list[Any]], Any], args: list[Any]) -> Any:
    """A library call on a branch that may not run: its unit is charged only when it does."""
    budget.fuel -= 1
    return fn(budget, args)


def _number_literal(code: str) -> bool:
    return code.lstrip("-").isdigit()


class _Scope:
    """One compiled function: its parameters' Python names and the frame it closes over."""

    def __init__(self, names: dict[str, str], closure: Frame | None) -> None:
        self.names = names
        self.closure = closure
        self.units = 0  # library calls on the unconditional path, charged up front
        self.reenters = False  # whether declaration code may run below it (depth is then read)


class FunctionCompiler:
    """Writes compiled functions into a fast path's source, naming constants through ``const``."""

    def __init__(self, const: Callable[[Any], str], fresh: Callable[[str], str], source: list[str]) -> None:
        self.const = const
        self.fresh = fresh
        self.source = source
        self.scopes: list[_Scope] = []
        self.conditional = 0
        # Compiled transforms whose result is made of parts of their input only (its own items,
        # a slice, or a string) and which run no declaration code that could change the input:
        # for an input already normalised, the result needs no normalising walk (native.py).
        self.selectors: set[str] = set()
        self.reentrant: set[str] = set()  # compiled functions that may run declaration code
        self.picked: set[int] = set()  # pick_by sources whose compiled predicate is not reentrant

    def transform(self, fn: Any) -> str | None:
        """The name of a Python ``(budget, value) -> result`` doing ``fn.call(budget, [value])``,
        or None when ``fn`` is outside the subset."""
        if not isinstance(fn, JsFunction) or type(fn) is not JsFunction or not isinstance(fn.node, Node):
            return None
        try:
            return self.function(fn.node, fn.closure, fn.cost, style="single")
        except Unsupported:
            return None

    def function(self, node: Node, closure: Frame | None, cost: int, *, style: str) -> str:
        """A module-level def for the function literal ``node`` that does what JsFunction.call
        does: ``(b, value)`` for style "single" (a transform), ``(b, item, key) -> bool`` for
        "predicate" (the truthiness of a lodash iteratee's result, as make_predicate takes it),
        else (style "call") a ``call(self, b, args)``."""
        if node.kind != "function" or len(node.kids) != 1:
            raise Unsupported
        body = node.child(0)
        if body.kind != "return" or body.kids[0] is None:
            raise Unsupported
        params = node.value
        if any(default is not None for _, default in params):
            raise Unsupported
        name, head = self.fresh("j"), self.fresh("j")
        lines: list[str] = []
        names: dict[str, str] = {}
        if style == "single":
            if len(params) != 1:
                raise Unsupported
            self.bind(params[0][0], head, names, lines)
            signature = f"def {name}(b, {head}):"
        elif style == "predicate":
            if len(params) > 2:
                raise Unsupported
            key = self.fresh("j")
            for (pattern, _), value in zip(params, (head, key), strict=False):
                self.bind(pattern, value, names, lines)
            signature = f"def {name}(b, {head}, {key}):"
        else:
            signature = f"def {name}(self, b, a):"
            for index, (pattern, _) in enumerate(params):
                value = self.fresh("j")
                lines.append(f"    {value} = a[{index}] if len(a) > {index} else UNDEFINED")
                self.bind(pattern, value, names, lines)
        scope = _Scope(names, closure)
        self.scopes.append(scope)
        saved, self.conditional = self.conditional, 0
        try:
            result = self.expression(body.child(0))
            if style == "predicate":
                result = self.test(body.child(0), result)
            elif style == "single" and self.selects(body.child(0), params[0][0]):
                self.selectors.add(name)
        finally:
            self.scopes.pop()
            self.conditional = saved
        charge = cost + scope.units
        lines[:0] = [f"    b.fuel -= {charge}", f"    if b.depth >= {MAX_CALL_DEPTH}: raise Bail"]
        if scope.reenters:
            self.reentrant.add(name)
            tail = ["    b.depth += 1", f"    {head} = {result}", "    b.depth -= 1", f"    return {head}"]
        else:
            tail = [f"    return {result}"]
        self.source.append("\n".join([signature, *lines, *tail]))
        return name

    def selects(self, node: Node, pattern: tuple[Any, ...]) -> bool:
        """Whether the body ``node`` of a transform of parameter ``pattern`` is ``param.slice(n...)``
        with number literals, or ``_.pickBy(param, predicate)`` (omitBy) with a compiled literal
        predicate that calls no declaration code (so nothing can change the items it keeps)."""
        args = [kid for kid in node.kids[1:] if kid is not None]
        if pattern[0] != "name" or node.kind != "call" or node.value or len(args) != len(node.kids) - 1:
            return False
        callee = node.child(0)

        def is_param(item: Node) -> bool:
            return item.kind == "name" and item.value == pattern[1]

        if callee.kind == "member" and callee.value == ("slice", False):
            return is_param(callee.child(0)) and all(
                known and plain_number(value) for known, value in map(self.constant, args))
        known, function = self.constant(callee)
        return known and id(function) in _PICKS and bool(args) and is_param(args[0]) and id(args[0]) in self.picked

    def bind(self, pattern: tuple[Any, ...], value: str, names: dict[str, str], lines: list[str]) -> None:
        """A parameter: a plain name, or `{a, b}` of plain names (lodash predicates)."""
        if pattern[0] == "name":
            if pattern[1] in names:
                raise Unsupported
            names[pattern[1]] = value
            return
        if pattern[0] != "object" or not pattern[1]:
            raise Unsupported
        lines.append(f"    if {value} is None or {value} is UNDEFINED: raise Bail")
        for key, target, default in pattern[1]:
            if key is None or target[0] != "name" or default is not None or target[1] in names:
                raise Unsupported
            local = names[target[1]] = self.fresh("j")
            lines.append(f"    {local} = {self.member(value, value, key)}")

    # -- expressions: each returns Python source evaluating to the interpreter's value ----------

    def expression(self, node: Node) -> str:
        method: Callable[[Node], str] | None = getattr(self, "x_" + node.kind, None)
        if method is None:
            raise Unsupported
        return method(node)

    def atom(self, node: Node) -> tuple[str, str]:
        """The node's value for code that reads it more than once: ``first`` (evaluated where it
        is read first) and the plain name every later read uses."""
        code = self.expression(node)
        if code.isidentifier() or _number_literal(code):
            return code, code
        temp = self.fresh("j")
        return f"({temp} := {code})", temp

    def constant(self, node: Node) -> tuple[bool, Any]:
        """Whether ``node`` always has one value (a literal, a resolved name or library member)."""
        if node.kind == "const":
            return True, node.value
        if node.kind == "undefined":
            return True, UNDEFINED
        if node.kind == "name" and node.value not in self.scopes[-1].names:
            return True, self.resolve(node.value)
        if node.kind == "unary" and node.value in {"-", "+"} and node.kids[0] is not None:
            known, value = self.constant(node.child(0))
            if known and (type(value) is int or type(value) is float):
                return True, UNARY[node.value](value)
        if node.kind == "member" and not node.value[1]:
            known, holder = self.constant(node.child(0))
            if known and isinstance(holder, (Namespace, Builtin)):
                try:
                    return True, get_member(holder, node.value[0])
                except MvuError:
                    raise Unsupported from None
        return False, None

    def resolve(self, name: str) -> Any:
        """A free name's value: bound in a scope validations cannot change, read once here."""
        for scope in self.scopes[:-1]:
            if name in scope.names:
                raise Unsupported  # a closure over another compiled function's parameter
        frame = self.scopes[-1].closure
        while frame is not None:
            if name in frame.vars:
                if frame.sealed or (frame.consts is not None and name in frame.consts):
                    return frame.vars[name]
                raise Unsupported
            frame = frame.parent
        raise Unsupported

    def literal(self, value: Any) -> str:
        if type(value) in (int, str, bool) or value is None:
            return repr(value)
        return self.const(value)

    def x_const(self, node: Node) -> str:
        return self.literal(node.value)

    def x_undefined(self, node: Node) -> str:
        return "UNDEFINED"

    def x_name(self, node: Node) -> str:
        local = self.scopes[-1].names.get(node.value)
        if local is not None:
            return local
        return self.literal(self.resolve(node.value))

    def x_unary(self, node: Node) -> str:
        known, value = self.constant(node)
        if known:
            return self.literal(value)
        return f"{self.const(UNARY[node.value])}({self.expression(node.child(0))})"  # `!` gives a bool

    def x_binary(self, node: Node) -> str:
        operator = node.value
        if operator == "+":
            return f"{self.const(_plus)}(b, {self.expression(node.child(0))}, {self.expression(node.child(1))})"
        right_known, right = self.constant(node.child(1))
        if operator in _ORDER and right_known and plain_number(right):
            # both numbers: the interpreter's comparison is Python's (BINARY's _compare)
            first, left = self.atom(node.child(0))
            return (f"({left} {operator} {self.literal(right)} if type({first}) is int or type({left}) is float "
                    f"else {self.const(BINARY[operator])}({left}, {self.literal(right)}))")
        left_code = self.expression(node.child(0))
        return f"{self.const(BINARY[operator])}({left_code}, {self.expression(node.child(1))})"

    def x_logical(self, node: Node) -> str:
        first, left = self.atom(node.child(0))
        self.conditional += 1
        right = self.expression(node.child(1))
        self.conditional -= 1
        if node.value == "&&":
            return f"({right} if {self.test(node.child(0), first)} else {left})"
        if node.value == "||":
            return f"({left} if {self.test(node.child(0), first)} else {right})"
        return f"({right} if {first} is None or {left} is UNDEFINED else {left})"

    def x_conditional(self, node: Node) -> str:
        test = self.test(node.child(0), self.expression(node.child(0)))
        self.conditional += 1
        then, other = self.expression(node.child(1)), self.expression(node.child(2))
        self.conditional -= 1
        return f"({then} if {test} else {other})"

    def test(self, node: Node, code: str) -> str:
        """``code`` as a Python condition, with JavaScript's truthiness."""
        if (node.kind == "binary" and node.value in _BOOLEAN_OPERATORS) or (node.kind == "unary" and node.value == "!"):
            return code  # already a bool
        return f"{self.const(truthy)}({code})"

    def x_array(self, node: Node) -> str:
        if any(kid is not None and kid.kind == "spread" for kid in node.kids):
            raise Unsupported
        return "[" + ", ".join(self.expression(kid) for kid in node.kids if kid is not None) + "]"

    def x_member(self, node: Node) -> str:
        if node.value[1]:
            raise Unsupported  # optional chains short-circuit: the interpreter's
        if node.value[0] == "lastIndex":
            raise Unsupported  # a constant regex's is per validation: the interpreter reads the budget's
        known, value = self.constant(node)
        if known:
            return self.literal(value)
        first, holder = self.atom(node.child(0))
        return self.member(first, holder, node.value[0])

    def member(self, first: str, holder: str, key: str) -> str:
        """``holder[key]`` for a literal key, as get_member reads it; an object's own field
        directly (a key get_member would refuse never gets the short road)."""
        if key in UNSAFE_KEYS:
            return f"{self.const(get_member)}({first}, {key!r})"
        read = f"{self.const(get_member)}({holder}, {key!r})"
        return f"({holder}.get({key!r}, UNDEFINED) if type({first}) is dict else {read})"

    def x_index(self, node: Node) -> str:
        if node.value:
            raise Unsupported
        return f"{self.const(get_member)}({self.expression(node.child(0))}, {self.expression(node.child(1))})"

    def x_call(self, node: Node) -> str:
        if node.value or any(kid is None or kid.kind == "spread" for kid in node.kids[1:]):
            raise Unsupported
        callee = node.child(0)
        if callee.kind in {"member", "index"} and (callee.value[1] if callee.kind == "member" else callee.value):
            raise Unsupported
        known, function = self.constant(callee)
        scope = self.scopes[-1]
        if not (known and type(function) is Builtin):
            scope.reenters = True
            target = self.literal(function) if known else self.expression(callee)
            arguments = ", ".join(self.expression(kid) for kid in node.kids[1:] if kid is not None)
            return f"{self.const(_call)}({target}, b, [{arguments}])"
        if id(function) not in _LEAVES:
            scope.reenters = True
        kids = [kid for kid in node.kids[1:] if kid is not None]
        fn = self.const(function.fn)
        if self.conditional:
            return f"{self.const(_charged)}(b, {fn}, [{', '.join(self.expression(kid) for kid in kids)}])"
        scope.units += 1  # Builtin.call's unit, charged with the function's own
        special = self.special(function, kids, fn)
        if special is not None:
            return special
        return f"{fn}(b, [{', '.join(self.expression(kid) for kid in kids)}])"

    def special(self, function: Builtin, kids: list[Node], fn: str) -> str | None:
        """The library function's own short road, written out (the same test, the same result)."""
        if function is _CLAMP and len(kids) == 3:
            (low_known, low), (high_known, high) = self.constant(kids[1]), self.constant(kids[2])
            if low_known and high_known and plain_number(low) and plain_number(high):
                first, value = self.atom(kids[0])
                low_code, high_code = self.literal(low), self.literal(high)
                return (f"(max(min({value}, {high_code}), {low_code}) if (type({first}) is int or type({value}) is "
                        f"float) and {value} == {value} else {fn}(b, [{value}, {low_code}, {high_code}]))")
        keep = _PICKS.get(id(function))
        if keep is not None and len(kids) == 2 and kids[1].kind == "function":
            # pick_by's loop with the literal's body called directly: no function object, no
            # argument list, no make_predicate wrapper; the same pairs, charges and depth
            source = self.expression(kids[0])
            test = self.function(kids[1], self.scopes[-1].closure, 1 + kids[1].child(0).size(), style="predicate")
            if test not in self.reentrant:
                self.picked.add(id(kids[0]))
            key, item = self.fresh("j"), self.fresh("j")
            return (f"{{{key}: {item} for {key}, {item} in {self.const(_keyed)}(b, {source}) "
                    f"if {keep}{test}(b, {item}, {key})}}")
        if (function is _MAX or function is _MIN) and len(kids) == 2:
            pick = "max" if function is _MAX else "min"
            (first_a, one), (first_b, two) = self.atom(kids[0]), self.atom(kids[1])
            # both operands are evaluated, in order, before the test reads them
            names = [first for first in (first_a, first_b) if not first.isidentifier() and not _number_literal(first)]
            tests = [f"type({code}) is int" for code in (one, two) if not _number_literal(code)]
            if names:
                tests.insert(0, f"({', '.join(names)},)")
            return f"({pick}({one}, {two}) if {' and '.join(tests) or 'True'} else {fn}(b, [{one}, {two}]))"
        return None

    def x_function(self, node: Node) -> str:
        self.scopes[-1].reenters = True
        cost = 1 + node.child(0).size()
        name = self.function(node, self.scopes[-1].closure, cost, style="call")
        kind = self.fresh("j")
        self.source.append(f"{kind} = {self.const(compiled_class)}({name})")
        return f"{kind}({cost}, {self.const(node)})"


def compile_transform(fn: Any) -> Callable[[Budget, Any], Any] | None:
    """``fn`` compiled on its own, as the fast path compiles a transform (for tests)."""
    space: dict[str, Any] = {"Bail": Bail, "UNDEFINED": UNDEFINED}
    source: list[str] = []
    count = [0]

    def const(value: Any) -> str:
        name = f"c{len(space)}"
        space[name] = value
        return name

    def fresh(stem: str) -> str:
        count[0] += 1
        return f"{stem}{count[0]}"

    name = FunctionCompiler(const, fresh, source).transform(fn)
    if name is None:
        return None
    exec(compile("\n".join(source), "<mvu-schema-inline>", "exec"), space)
    return space[name]  # type: ignore[no-any-return]
