"""Compile the internal AST to Python closures and run them under the fuel budget.

Each expression becomes ``fn(frame) -> value`` and each statement ``fn(frame) -> completion``
once, at compile time; validations then only call closures (no AST walk per value). Work is
charged where it can repeat: every function call and loop iteration costs the node count of its
body, builtins cost the size of what they touch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.members import delete_own, own_keys, property_key, safe_key, set_member
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    JsCallable,
    Namespace,
    ScriptError,
    fail,
    strict_equals,
    text_limit,
    thrown,
    to_number,
    to_string,
    truthy,
    typeof,
)
from mvu_store.jsonvalue import UNSAFE_KEYS
from mvu_store.schema import builtins, dates
from mvu_store.schema.accessors import GetterObject
from mvu_store.schema.classes import instance_of
from mvu_store.schema.maps import JsMap
from mvu_store.schema.operators import BINARY, UNARY, clip
from mvu_store.schema.promises import AsyncFunction, awaited
from mvu_store.schema.regex import REGEXP, Regex, compile_regex
from mvu_store.schema.runtime import (
    BREAK,
    CONTINUE,
    Eval,
    Exec,
    Frame,
    JsFunction,
    Jump,
    Return,
    bind,
    destructure,
    get_member,
    receiver,
)
from mvu_store.schema.syntax import Node, pattern_names

MAX_LOOP_ITEMS = 1_000


class _ShortCircuit(Exception):
    """Raised by an optional link (`a?.b`) on null/undefined; caught at the top of its chain."""


# -- the compiler ----------------------------------------------------------------------------


class Compiler:
    """Turns AST nodes into closures.

    ``fixed`` are the global capabilities (``z``, ``Math``, ``_`` ...). A name the program never
    binds anywhere always means its global, so it compiles to a constant instead of a walk up
    the frames on every use (most transforms are `v => _.clamp(v, 0, 100)`).
    """

    def __init__(self, fixed: dict[str, Any], program: Node, modules: Callable[[str, Node], Any]) -> None:
        bound = _bound_names(program)
        self.fixed = {name: value for name, value in fixed.items() if name not in bound}
        self.modules = modules  # resolves `await import(url)` to a local capability
        self.labels: frozenset[str] = frozenset()  # the labels of the loop compiled next

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
            budget = frame.budget
            text = text_limit("".join(builtins.charged_text(budget, part(frame)) for part in parts))
            budget.charge(len(text) // 64)
            return text

        return template

    def e_regex(self, node: Node) -> Eval:
        pattern, flags = node.value
        try:
            compile_regex(pattern, flags, Budget())  # a literal JavaScript rejects is an early error
        except ScriptError as error:
            raise _refuse_at(node, to_string(error.value["message"])) from None
        except MvuError as error:
            # Refused only if it runs: a card whose rare branch needs lookaround still loads.
            refusal = MvuError(error.code, f"{error.message} (line {node.line}, column {node.col})",
                               **error.details, line=node.line, column=node.col)

            def refused(frame: Frame) -> Any:
                raise refusal

            return refused
        return lambda frame: compile_regex(pattern, flags, frame.budget)

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
            if kid.kind in {"property", "getter"}:
                if kid.value in UNSAFE_KEYS:
                    raise _refuse_at(kid, f"the key `{kid.value}` is not allowed")
                entries.append((kid.kind, kid.value, self.expression(kid.child(0))))
            elif kid.kind == "computed":
                entries.append(("computed", self.expression(kid.child(0)), self.expression(kid.child(1))))
            else:
                entries.append(("spread", None, self.expression(kid.child(0))))

        if any(shape == "getter" for shape, _, _ in entries):
            return _getter_object(entries)

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
                    result.update(_spread(frame.budget, value(frame)))
            return result

        return obj

    def e_this(self, node: Node) -> Eval:
        return receiver

    def e_member(self, node: Node) -> Eval:
        name, optional = node.value
        holder = node.child(0)
        if not optional and holder.kind == "name" and isinstance(self.fixed.get(holder.value), (Namespace, Builtin)):
            # `_.clamp`, `Math.max`, `z.object`: the library is immutable, so resolve it once here.
            # A missing member is left to fail at run time, only if that code ever runs.
            try:
                return _constant(get_member(self.fixed[holder.value], name))
            except MvuError:
                pass
        target = self.operand(holder)
        if name == "lastIndex":
            return self.last_index(target, optional)

        def member(frame: Frame) -> Any:
            obj = target(frame)
            if optional and (obj is None or obj is UNDEFINED):
                raise _ShortCircuit
            if type(obj) is GetterObject:
                return obj.read(frame.budget, name)
            try:
                return get_member(obj, name)
            except MvuError as error:
                raise _located(error, node) from None

        return member

    def last_index(self, target: Eval, optional: bool) -> Eval:
        """``x.lastIndex``: a constant regex keeps one per validation, so it reads the budget's."""
        def member(frame: Frame) -> Any:
            obj = target(frame)
            if optional and (obj is None or obj is UNDEFINED):
                raise _ShortCircuit
            return obj.read_last_index(frame.budget) if isinstance(obj, Regex) else get_member(obj, "lastIndex")

        return member

    def e_index(self, node: Node) -> Eval:
        optional = node.value
        target = self.operand(node.child(0))
        key = self.expression(node.child(1))

        def index(frame: Frame) -> Any:
            obj = target(frame)
            if optional and (obj is None or obj is UNDEFINED):
                raise _ShortCircuit
            if type(obj) is GetterObject:
                return obj.read(frame.budget, property_key(key(frame)))
            return get_member(obj, key(frame))

        return index

    def e_call(self, node: Node) -> Eval:
        optional = node.value
        callee_node = node.kids[0]
        assert callee_node is not None
        callee = self.operand(callee_node)
        label = callee_node.value[0] if callee_node.kind == "member" else str(callee_node.value)
        args = self.arguments(node.kids[1:])
        fixed = _fixed_value(callee_node, self.fixed)
        if type(fixed) is Builtin:
            # `_.clamp(...)`, `Math.max(...)`: a library function known at compile time is called
            # as Builtin.call calls it (one unit of fuel), without looking it up on every call.
            fn = fixed.fn

            def call_builtin(frame: Frame) -> Any:
                budget = frame.budget
                budget.fuel -= 1
                if budget.fuel < 0:
                    budget.charge(0)
                try:
                    return fn(budget, args(frame))
                except MvuError as error:
                    raise _located(error, node) from None

            return call_builtin

        if (callee_node.kind == "member" and callee_node.value[0] != "lastIndex") or callee_node.kind == "index":
            return self.method_call(node, args)

        def call(frame: Frame) -> Any:
            function = callee(frame)
            if isinstance(function, JsCallable):
                return function.call(frame.budget, args(frame))
            if optional and (function is None or function is UNDEFINED):
                raise _ShortCircuit
            raise fail(f"{label} is not a function")

        return call

    def method_call(self, node: Node, args: Callable[[Frame], list[Any]]) -> Eval:
        """``obj.m(...)`` or ``obj[key](...)``: the function read from ``obj`` is called with ``obj``
        as its ``this``."""
        callee_node = node.child(0)
        key: Eval | None = None
        if callee_node.kind == "member":
            constant, optional_member = callee_node.value
        else:
            constant, optional_member = None, callee_node.value
            key = self.expression(callee_node.child(1))
        optional_call = node.value
        holder = self.operand(callee_node.child(0))

        def call(frame: Frame) -> Any:
            obj = holder(frame)
            if optional_member and (obj is None or obj is UNDEFINED):
                raise _ShortCircuit
            name = constant if key is None else key(frame)
            try:
                function = (obj.read(frame.budget, property_key(name)) if type(obj) is GetterObject
                            else get_member(obj, name))
            except MvuError as error:
                raise _located(error, callee_node) from None
            if isinstance(function, JsFunction):
                return function.call(frame.budget, args(frame), obj)
            if isinstance(function, JsCallable):
                return function.call(frame.budget, args(frame))
            if optional_call and (function is None or function is UNDEFINED):
                raise _ShortCircuit
            raise fail(f"{name if isinstance(name, str) else 'the value'} is not a function")

        return call

    def arguments(self, nodes: tuple[Node | None, ...]) -> Callable[[Frame], list[Any]]:
        parts = [(kid.kind == "spread", self.expression(kid.child(0) if kid.kind == "spread" else kid))
                 for kid in nodes if kid is not None]
        if not any(spread for spread, _ in parts):
            plain = [part for _, part in parts]
            # Most calls pass one to three arguments: a literal list is cheaper than a loop.
            if len(plain) == 1:
                first = plain[0]
                return lambda frame: [first(frame)]
            if len(plain) == 2:
                first, second = plain
                return lambda frame: [first(frame), second(frame)]
            if len(plain) == 3:
                first, second, third = plain
                return lambda frame: [first(frame), second(frame), third(frame)]
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

    def e_function(self, node: Node, kind: type[JsFunction] = JsFunction, source: Node | None = None) -> Eval:
        params = [(self.pattern(pattern), None if default is None else self.expression(default))
                  for pattern, default in node.value]
        body_node = node.child(0)
        expression = body_node.kind == "return" and body_node.kids[0] is not None
        body = self.expression(body_node.child(0)) if expression else self.statement(body_node)
        cost = 1 + body_node.size()
        source = node if source is None else source
        binds_this = len(node.kids) > 1  # syntax.py's `binds_this` marker

        def function(frame: Frame) -> JsFunction:
            return kind(params, body, frame, cost, expression, source, binds_this)

        return function

    def e_async(self, node: Node) -> Eval:
        # The wrapper node is the function's source: purity analysis (native.py) sees `async`.
        return self.e_function(node.child(0), AsyncFunction, node)

    def e_instanceof(self, node: Node) -> Eval:
        operand, name = self.expression(node.child(0)), node.value
        return lambda frame: instance_of(operand(frame), name)

    def e_await(self, node: Node) -> Eval:
        operand = self.expression(node.child(0))
        return lambda frame: awaited(operand(frame))

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
        if node.value != "+":
            return lambda frame: apply(left(frame), right(frame))

        def add(frame: Frame) -> Any:
            a, b = left(frame), right(frame)
            result = apply(a, b)
            if type(a) is list or type(b) is list:  # `items + ''` joins the array: pay as String() does
                frame.budget.charge(len(result) // 8)
            return result

        return add

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
            write(frame, clip(old + step))
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
        declarators = [(self.pattern(kid.value), None if kid.kids[0] is None else self.expression(kid.kids[0]))
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
            raise thrown(value(frame))

        return throw

    def e_new(self, node: Node) -> Eval:
        name = node.value
        if name == "Set":
            items = self.expression(node.child(0)) if node.kids else _constant([])
            return lambda frame: builtins.JsSet(builtins.iterate(frame.budget, items(frame)))
        if name == "Map":
            entries = self.expression(node.child(0)) if node.kids else _constant([])
            return lambda frame: JsMap.of(frame.budget, _map_entries(frame.budget, entries(frame)))
        if name in ("Date", "RegExp", "Array"):
            parts = [self.expression(kid) for kid in node.kids if kid is not None]
            build = {"Date": dates.construct, "RegExp": REGEXP.fn}.get(name, builtins.GLOBALS["Array"].fn)
            return lambda frame: build(frame.budget, [part(frame) for part in parts])
        message = self.expression(node.child(0)) if node.kids else _constant("")
        return lambda frame: {"name": name, "message": to_string(message(frame))}

    def s_try(self, node: Node) -> Exec:
        param = None if node.value is None else self.pattern(node.value)
        body = self.scoped(node.child(0))
        handler = None if node.kids[1] is None else self.scoped(node.child(1))
        finalizer = None if node.kids[2] is None else self.scoped(node.child(2))

        def guarded(frame: Frame) -> Any:
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

        if finalizer is None:
            return guarded

        def attempt(frame: Frame) -> Any:
            # As in JavaScript, a `return`/`break`/`continue` in `finally` replaces the try's own
            # completion, even a thrown error. Refusals (budget, isolation) are not ScriptErrors:
            # they skip the finalizer, so no declaration code runs after them or can swallow them.
            try:
                completion = guarded(frame)
            except ScriptError:
                override = finalizer(frame)
                if override is not None:
                    return override
                raise
            override = finalizer(frame)
            return completion if override is None else override

        return attempt

    def e_import_module(self, node: Node) -> Eval:
        module = self.modules(node.value, node)
        return lambda frame: module

    def e_assign_pattern(self, node: Node) -> Eval:
        pattern = self.pattern(node.value)
        value = self.expression(node.child(0))

        def assign(frame: Frame) -> Any:
            result = value(frame)
            destructure(frame, pattern, result, frame.assign)
            return result

        return assign

    def e_delete(self, node: Node) -> Eval:
        target = node.child(0)
        if (target.kind == "member" and target.value[1]) or (target.kind == "index" and target.value):
            raise _refuse_at(node, "optional chains cannot be deleted")
        holder = self.expression(target.child(0))
        key = _constant(target.value[0]) if target.kind == "member" else self.expression(target.child(1))

        def delete(frame: Frame) -> bool:
            return delete_own(frame.budget, holder(frame), key(frame))

        return delete

    def s_switch(self, node: Node) -> Exec:
        subject = self.expression(node.child(0))
        cases = [(None if case.kids[0] is None else self.expression(case.child(0)), self.statement(case.child(1)))
                 for case in (node.child(index) for index in range(1, len(node.kids)))]
        fallback = next((index for index, (test, _) in enumerate(cases) if test is None), None)

        def switch(frame: Frame) -> Any:
            value = subject(frame)
            start = next((index for index, (test, _) in enumerate(cases)
                          if test is not None and strict_equals(value, test(frame))), fallback)
            if start is None:
                return None
            inner = Frame(frame, frame.budget)
            for _, body in cases[start:]:  # cases fall through until a break
                completion = body(inner)
                if completion is BREAK:
                    return None
                if completion is not None:
                    return completion
            return None

        return switch

    def s_break(self, node: Node) -> Exec:
        jump = BREAK if node.value is None else Jump(node.value, breaks=True)
        return lambda frame: jump

    def s_continue(self, node: Node) -> Exec:
        jump = CONTINUE if node.value is None else Jump(node.value, breaks=False)
        return lambda frame: jump

    def s_labeled(self, node: Node) -> Exec:
        """``label: statement``: a ``break label`` inside ends it; a loop so labelled also takes
        ``continue label`` (the loop reads :attr:`labels` when it is compiled)."""
        labels = {node.value}
        inner = node.child(0)
        while inner.kind == "labeled":  # `a: b: for (...)`
            labels.add(inner.value)
            inner = inner.child(0)
        self.labels = frozenset(labels) if inner.kind in _LOOPS else frozenset()
        body = self.statement(inner)
        self.labels = frozenset()

        def labeled(frame: Frame) -> Any:
            completion = body(frame)
            if type(completion) is Jump and completion.breaks and completion.label in labels:
                return None
            return completion

        return labeled

    def take_labels(self) -> frozenset[str]:
        """The labels of the loop being compiled (none for the loops nested in its body)."""
        labels, self.labels = self.labels, frozenset()
        return labels

    def pattern(self, pattern: tuple[Any, ...]) -> tuple[Any, ...]:
        """A binding pattern with its default values compiled to closures."""
        if pattern[0] == "name":
            return pattern
        if pattern[0] == "rest":
            return ("rest", self.pattern(pattern[1]))
        if pattern[0] == "object":
            return ("object", tuple((key, self.pattern(target), None if default is None else self.expression(default))
                                    for key, target, default in pattern[1]))
        return ("array", tuple(None if element is None else
                               (self.pattern(element[0]), None if element[1] is None else self.expression(element[1]))
                               for element in pattern[1]))

    def s_block(self, node: Node) -> Exec:
        steps = [self.statement(kid) for kid in hoisted(node)]

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
        labels = self.take_labels()
        binding, pattern = node.value[0], self.pattern(node.value[1])
        const = binding == "const"
        iterable = self.expression(node.child(0))
        body = self.statement(node.child(1))
        cost = 1 + node.child(1).size()

        def loop(frame: Frame) -> Any:
            items = items_of(iterable(frame))
            if len(items) > MAX_LOOP_ITEMS:
                raise _iteration_limit()
            for item in items:
                frame.budget.charge(cost)
                inner = Frame(frame, frame.budget)
                bind(inner, pattern, item, const=const)
                completion = body(inner)
                if completion is not None and completion is not CONTINUE:
                    if _ends_loop(completion, labels):
                        break
                    if not _continues_loop(completion, labels):
                        return completion
            return None

        return loop

    def s_while(self, node: Node) -> Exec:
        """``while`` and ``do…while``: each pass pays for its test and body like a ``for…of`` item,
        and a loop runs its body at most :data:`MAX_LOOP_ITEMS` times, so ``while (true) {}`` is a
        clear ``MVU_LIMIT`` long before the budget would run out."""
        labels = self.take_labels()
        test = self.expression(node.child(0))
        body = self.scoped(node.child(1))
        cost = 1 + node.child(0).size() + node.child(1).size()
        test_first = not node.value

        def loop(frame: Frame) -> Any:
            if test_first and not truthy(test(frame)):
                return None
            for _ in range(MAX_LOOP_ITEMS):
                frame.budget.charge(cost)
                completion = body(frame)
                if completion is not None and completion is not CONTINUE:
                    if _ends_loop(completion, labels):
                        return None
                    if not _continues_loop(completion, labels):
                        return completion
                if not truthy(test(frame)):  # `continue` comes here too, as in JavaScript
                    return None
            raise _iteration_limit()

        return loop


    def s_for(self, node: Node) -> Exec:
        """``for (init; test; update)``: as in JavaScript, a ``let`` loop gives each pass its own
        copy of the loop variables (closures made in a pass keep that pass's values), copied
        before the update runs. Each pass pays like a ``while`` pass, at most
        :data:`MAX_LOOP_ITEMS` of them."""
        labels = self.take_labels()
        init = None if node.kids[0] is None else self.statement(node.child(0))
        test = None if node.kids[1] is None else self.expression(node.child(1))
        update = None if node.kids[2] is None else self.expression(node.child(2))
        body = self.scoped(node.child(3))
        cost = 1 + sum(kid.size() for kid in node.kids[1:] if kid is not None)
        per_pass = node.value == "let"

        def loop(frame: Frame) -> Any:
            scope = Frame(frame, frame.budget)
            if init is not None:
                init(scope)
            for _ in range(MAX_LOOP_ITEMS):
                frame.budget.charge(cost)
                if test is not None and not truthy(test(scope)):
                    return None
                completion = body(scope)
                if completion is not None and completion is not CONTINUE:
                    if _ends_loop(completion, labels):
                        return None
                    if not _continues_loop(completion, labels):
                        return completion
                if per_pass:  # the next pass's copy, made before the update
                    scope = Frame(frame, frame.budget, dict(scope.vars))
                if update is not None:
                    update(scope)
            raise _iteration_limit()

        return loop


_LOOPS = frozenset({"for_of", "for_in", "while", "for"})


def _ends_loop(completion: Any, labels: frozenset[str]) -> bool:
    """A ``break``, or a ``break label`` naming this loop."""
    return completion is BREAK or (type(completion) is Jump and completion.breaks and completion.label in labels)


def _continues_loop(completion: Any, labels: frozenset[str]) -> bool:
    """A ``continue label`` naming this loop (a plain ``continue`` never gets here)."""
    return type(completion) is Jump and not completion.breaks and completion.label in labels


def _iteration_limit() -> MvuError:
    return MvuError(Code.LIMIT, f"loops visit at most {MAX_LOOP_ITEMS} items", limit=MAX_LOOP_ITEMS, kind="loop")


def _getter_object(entries: list[tuple[str, Any, Eval]]) -> Eval:
    """A literal with a getter: a :class:`GetterObject` (entries are compiled as in e_object)."""
    def obj(frame: Frame) -> GetterObject:
        result = GetterObject()
        for shape, key, value in entries:
            if shape == "getter":
                result.define_getter(key, value(frame))
            elif shape == "property":
                result.put(key, value(frame))
            elif shape == "computed":
                result.put(safe_key(property_key(key(frame))), value(frame))
            else:
                for name, item in _spread(frame.budget, value(frame)).items():
                    result.put(name, item)
        return result

    return obj


def _spread(budget: Budget, source: Any) -> dict[str, Any]:
    """The entries ``{...source}`` copies: an object with getters runs each of them once."""
    if type(source) is GetterObject:
        return source.values(budget)
    budget.charge(len(source) if isinstance(source, (dict, list, str)) else 1)
    return builtins.spread_entries(source)


def _map_entries(budget: Budget, value: Any) -> list[Any]:
    return [] if value is None or value is UNDEFINED else builtins.iterate(budget, value)


def _array_items(value: Any) -> list[Any]:
    if isinstance(value, builtins.JsSet):
        return list(value.items)
    if isinstance(value, JsMap):
        return value.pairs()
    if type(value) is not list and type(value) is not str:
        raise fail("for...of needs an array")
    return list(value)


def _own_keys(value: Any) -> list[Any]:
    """What ``for...in`` visits here: own keys of an object, indexes of an array, nothing else."""
    if type(value) is dict:
        return own_keys(value)
    if type(value) is list or type(value) is str:
        return [str(index) for index in range(len(value))]
    if isinstance(value, JsFunction):
        return list(value.members)
    return []


def hoisted(block: Node) -> list[Node]:
    """A block's statements with function declarations first, as JavaScript hoists them."""
    statements = [kid for kid in block.kids if kid is not None]
    return sorted(statements, key=lambda statement: not _declares_function(statement))


def _declares_function(statement: Node) -> bool:
    inner = statement.kids[0] if statement.kind == "export" and statement.kids else statement
    return inner is not None and inner.kind == "declare_list" and inner.value == "function"


def _pattern_defaults(pattern: tuple[Any, ...]) -> list[Node]:
    if pattern[0] == "rest":
        return _pattern_defaults(pattern[1])
    if pattern[0] == "object":
        return [node for _, target, default in pattern[1]
                for node in ([default] if default is not None else []) + _pattern_defaults(target)]
    if pattern[0] == "array":
        return [node for element in pattern[1] if element is not None
                for node in ([element[1]] if element[1] is not None else []) + _pattern_defaults(element[0])]
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
            names.update(pattern_names(pattern))
            stack.extend(_pattern_defaults(pattern))
        stack.extend(kid for kid in node.kids if kid is not None)
    return names


def _constant(value: Any) -> Eval:
    return lambda frame: value


def _fixed_value(node: Node, fixed: dict[str, Any]) -> Any:
    """What ``node`` always evaluates to, when it is a global library name or member
    (``Math``, ``_.clamp``) as e_name and e_member resolve them at compile time; else None."""
    if node.kind == "name":
        return fixed.get(node.value)
    if node.kind == "member" and not node.value[1]:
        holder = node.child(0)
        if holder.kind == "name" and isinstance(fixed.get(holder.value), (Namespace, Builtin)):
            try:
                return get_member(fixed[holder.value], node.value[0])
            except MvuError:
                return None
    return None


def _has_optional(node: Node) -> bool:
    current: Node | None = node
    while current is not None and current.kind in {"member", "index", "call"}:
        optional = current.value[1] if current.kind == "member" else current.value
        if optional:
            return True
        current = current.kids[0]
    return False


def _located(error: MvuError, node: Node) -> MvuError:
    """An ``MVU_UNSUPPORTED`` refusal (a Zod method or constructor we do not provide) told where
    the declaration uses it; other errors pass unchanged."""
    if error.code != Code.UNSUPPORTED.value or "line" in error.details:
        return error
    return MvuError(error.code, f"{error.message} at line {node.line}, column {node.col}",
                    **{**error.details, "line": node.line, "column": node.col})


def _refuse_at(node: Node, message: str) -> MvuError:
    where = f"line {node.line}, column {node.col}"
    return MvuError(Code.SCHEMA_CODE, f"{message} at {where}", line=node.line, column=node.col)
