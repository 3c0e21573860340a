"""Parse a declaration with tree-sitter and lower a whitelist of node kinds to a small AST.

The declaration is untrusted JavaScript (or TypeScript). Nothing here runs it: tree-sitter gives
a concrete syntax tree, and :func:`parse_program` copies the few node kinds we understand into
:class:`Node` values. Any other kind, any tree with a syntax error (tree-sitter recovers from
errors, so we check ``has_error`` ourselves) and any program nested deeper than :data:`MAX_SYNTAX_DEPTH`
is ``MVU_SCHEMA_CODE`` with the line and column, so a refusal is always explainable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Language, Parser
from tree_sitter import Node as CstNode

from mvu_store.errors import Code, MvuError
from mvu_store.schema.classes import CLASS_NAMES

MAX_SOURCE_BYTES = 128 * 1024
# Lowering, compiling and running recurse once per nested expression or statement; this bound
# keeps Python's own stack far away (a nested z.object costs about 3 levels, so real cards stay
# far under it).
MAX_SYNTAX_DEPTH = 150
MAX_LITERAL_CHARS = 64 * 1024

_JS = Language(tree_sitter_javascript.language())
_TS = Language(tree_sitter_typescript.language_typescript())

# TypeScript-only nodes that carry types, never values: skipped wherever a statement may stand.
_TYPE_STATEMENTS = frozenset({"type_alias_declaration", "interface_declaration", "ambient_declaration"})
# Wrappers whose value is their one expression child (types are erased).
_TYPE_WRAPPERS = frozenset({"as_expression", "satisfies_expression", "non_null_expression"})

BINARY_OPERATORS = frozenset(
    {"+", "-", "*", "/", "%", "**", "<", ">", "<=", ">=", "==", "!=", "===", "!==",
     "&", "|", "^", "<<", ">>", ">>>", "in"}
)
LOGICAL_OPERATORS = frozenset({"&&", "||", "??"})
UNARY_OPERATORS = frozenset({"!", "-", "+", "typeof", "void", "~"})
ASSIGN_OPERATORS = frozenset(
    {"=", "+=", "-=", "*=", "/=", "%=", "**=", "&&=", "||=", "??=", "|=", "&=", "^=", "<<=", ">>="}
)
CONSTRUCTORS = frozenset({"Error", "TypeError", "RangeError", "Set", "Map", "Date", "RegExp", "Array"})
HOST_WAIT = "waitGlobalInitialized"  # the one host call a declaration may await (a no-op here)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


@dataclass(frozen=True, slots=True)
class Node:
    """One node of the internal AST: a ``kind``, its position, a payload and child nodes.

    ``value`` holds names, operators and literal values; ``kids`` the sub-expressions. Kinds and
    their layout are listed in :func:`_Lowerer.expression` and :func:`_Lowerer.statement`.
    """

    kind: str
    line: int
    col: int
    value: Any = None
    kids: tuple[Node | None, ...] = ()

    def child(self, index: int) -> Node:
        """The ``index``-th kid, which the node's kind guarantees is present."""
        kid = self.kids[index]
        assert kid is not None, f"{self.kind} node without kid {index}"
        return kid

    def size(self) -> int:
        """Number of nodes in this subtree (the fuel a single pass over it may cost)."""
        total = 1
        stack = [kid for kid in self.kids if kid is not None]
        while stack:
            node = stack.pop()
            total += 1
            stack.extend(kid for kid in node.kids if kid is not None)
        return total


def refuse(cst: CstNode, message: str) -> MvuError:
    """An ``MVU_SCHEMA_CODE`` error pointing at ``cst`` (1-based line and column)."""
    line, col = cst.start_point[0] + 1, cst.start_point[1] + 1
    return MvuError(Code.SCHEMA_CODE, f"{message} at line {line}, column {col}", line=line, column=col)


def parse_program(source: str, *, original: bool = False) -> Node:
    """Parse ``source`` and return the lowered ``program`` node, or raise ``MVU_SCHEMA_CODE``.
    ``original``: refuse too what the original interpreter refuses and this one reads (S-8:
    ``while`` / ``do`` and ``for...in`` loops, destructured parameters), for a host that must run
    the card on the original as well."""
    data = source.encode("utf-8", "surrogatepass")
    if len(data) > MAX_SOURCE_BYTES:
        raise MvuError(Code.LIMIT, f"declaration is {len(data)} bytes, over {MAX_SOURCE_BYTES}",
                       limit=MAX_SOURCE_BYTES, kind="source")
    root = Parser(_JS).parse(data).root_node
    if root.has_error:
        # TypeScript sources (type annotations, `export type X = ...`) fail the JavaScript grammar.
        ts_root = Parser(_TS).parse(data).root_node
        if ts_root.has_error:
            raise refuse(_first_error(root), "syntax error")
        root = ts_root
    return _Lowerer(data, original).program(root)


def _first_error(root: CstNode) -> CstNode:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node
        stack.extend(reversed([child for child in node.children if child.has_error or child.is_missing]))
    return root


class _Lowerer:
    """Copies whitelisted CST nodes into :class:`Node` values; refuses everything else."""

    def __init__(self, data: bytes, original: bool = False) -> None:
        self.data = data
        self.depth = 0
        self.original = original
        self.this_users: list[bool] = []  # per enclosing non-arrow function: whether it reads `this`

    def deeper(self, cst: CstNode) -> None:
        self.depth += 1
        if self.depth > MAX_SYNTAX_DEPTH:
            raise MvuError(Code.LIMIT, f"declaration is nested deeper than {MAX_SYNTAX_DEPTH} at line "
                           f"{cst.start_point[0] + 1}", limit=MAX_SYNTAX_DEPTH, kind="syntax_depth")

    def text(self, cst: CstNode) -> str:
        return self.data[cst.start_byte:cst.end_byte].decode("utf-8", "surrogatepass")

    def node(self, cst: CstNode, kind: str, value: Any = None, *kids: Node | None) -> Node:
        return Node(kind, cst.start_point[0] + 1, cst.start_point[1] + 1, value, kids)

    def children(self, cst: CstNode) -> list[CstNode]:
        return [child for child in cst.named_children if child.type != "comment"]

    def field(self, cst: CstNode, name: str) -> CstNode:
        child = cst.child_by_field_name(name)
        if child is None:
            raise refuse(cst, f"incomplete {cst.type}")
        return child

    # -- statements --------------------------------------------------------------------------

    def program(self, cst: CstNode) -> Node:
        body = [self.top_statement(child) for child in self.children(cst) if child.type != "hash_bang_line"]
        return self.node(cst, "block", None, *[stmt for stmt in body if stmt is not None])

    def top_statement(self, cst: CstNode) -> Node | None:
        kind = cst.type
        if kind == "import_statement":
            return self.import_statement(cst)
        if kind == "export_statement":
            return self.export_statement(cst)
        return self.statement(cst)

    def import_statement(self, cst: CstNode) -> Node | None:
        if any(child.type == "type" for child in cst.children):
            return None  # TypeScript's `import type`: types only, erased
        source = self.string_value(self.field(cst, "source"))
        bindings: list[tuple[str, str]] = []  # (imported name or '*' / 'default', local name)
        for clause in self.children(cst):
            if clause.type != "import_clause":
                continue
            for part in self.children(clause):
                if part.type == "identifier":
                    bindings.append(("default", self.text(part)))
                elif part.type == "namespace_import":
                    bindings.append(("*", self.text(self.children(part)[0])))
                elif part.type == "named_imports":
                    for spec in self.children(part):
                        if any(child.type == "type" for child in spec.children):
                            continue  # `import { type T }`: erased
                        name = self.text(self.field(spec, "name"))
                        alias = spec.child_by_field_name("alias")
                        bindings.append((name, self.text(alias) if alias is not None else name))
                else:
                    raise refuse(part, f"unsupported import form {part.type}")
        return self.node(cst, "import", (source, tuple(bindings)))

    def export_statement(self, cst: CstNode) -> Node | None:
        declaration = cst.child_by_field_name("declaration")
        if declaration is not None:
            if declaration.type in _TYPE_STATEMENTS:
                return None
            inner = self.statement(declaration)
            return None if inner is None else self.node(cst, "export", None, inner)
        value = cst.child_by_field_name("value")
        if value is not None:
            return self.node(cst, "export_default", None, self.expression(value))
        if any(child.type == "type" for child in cst.children):
            return None  # TypeScript's `export type { T }`: erased
        clauses = self.children(cst)
        if cst.child_by_field_name("source") is None and all(child.type == "export_clause" for child in clauses):
            names: list[tuple[str, str]] = []  # `export { Schema, helper as other }`: (local, exported)
            for clause in clauses:
                for spec in self.children(clause):
                    local = self.text(self.field(spec, "name"))
                    alias = spec.child_by_field_name("alias")
                    names.append((local, self.text(alias) if alias is not None else local))
            return self.node(cst, "export_names", tuple(names))
        raise refuse(cst, "unsupported export form")

    def statement(self, cst: CstNode) -> Node | None:
        self.deeper(cst)
        try:
            return self.statement_kind(cst)
        finally:
            self.depth -= 1

    def statement_kind(self, cst: CstNode) -> Node | None:
        kind = cst.type
        if kind in _TYPE_STATEMENTS or kind in {"empty_statement", "comment"}:
            return None
        if kind in {"lexical_declaration", "variable_declaration"}:
            binding = "var" if kind == "variable_declaration" else self.text(self.field(cst, "kind"))
            declarators = []
            for child in self.children(cst):
                if child.type != "variable_declarator":
                    continue
                value = child.child_by_field_name("value")
                declarators.append(self.node(child, "declare", self.pattern(self.field(child, "name"), rest=True),
                                             None if value is None else self.expression(value)))
            return self.node(cst, "declare_list", binding, *declarators)
        if kind == "expression_statement":
            return self.node(cst, "expr", None, self.expression(self.children(cst)[0]))
        if kind == "function_declaration":
            # value "function": hoisted to the top of its block, as JavaScript does.
            name = self.text(self.field(cst, "name"))
            return self.node(cst, "declare_list", "function",
                             self.node(cst, "declare", ("name", name), self.function(cst)))
        if kind == "switch_statement":
            return self.switch(cst)
        if kind == "return_statement":
            kids = self.children(cst)
            return self.node(cst, "return", None, self.expression(kids[0]) if kids else None)
        if kind == "if_statement":
            alternative = cst.child_by_field_name("alternative")
            other = None
            if alternative is not None:
                other = self.statement(self.children(alternative)[0]) or self.node(alternative, "block")
            then = self.statement(self.field(cst, "consequence")) or self.node(cst, "block")
            return self.node(cst, "if", None, self.expression(self.field(cst, "condition")), then, other)
        if kind == "statement_block":
            body = [self.statement(child) for child in self.children(cst)]
            return self.node(cst, "block", None, *[stmt for stmt in body if stmt is not None])
        if kind == "for_in_statement":
            return self.for_of(cst)
        if kind in {"while_statement", "do_statement"}:
            if self.original:
                raise refuse(cst, "the original interpreter supports only `for...of` loops (S-8)")
            return self.while_loop(cst)
        if kind == "for_statement":
            return self.for_loop(cst)
        if kind == "try_statement":
            return self.try_statement(cst)
        if kind == "throw_statement":
            return self.node(cst, "throw", None, self.expression(self.children(cst)[0]))
        if kind in {"break_statement", "continue_statement", "labeled_statement"}:
            return self.jump(cst)
        raise refuse(cst, _describe_refusal(kind))

    def jump(self, cst: CstNode) -> Node:
        """``break``/``continue`` (value: the label or None) and ``label: statement`` (value:
        the label, kid: the statement); the original interpreter has no labels (S-8)."""
        label = cst.child_by_field_name("label")
        if label is not None and self.original:
            raise refuse(cst, "the original interpreter has no labelled statements or jumps (S-8)")
        if cst.type == "labeled_statement":
            labelled = self.statement(self.field(cst, "body")) or self.node(cst, "block")
            return self.node(cst, "labeled", self.text(self.field(cst, "label")), labelled)
        return self.node(cst, cst.type.split("_")[0], None if label is None else self.text(label))

    def switch(self, cst: CstNode) -> Node:
        """``switch``: kids are the discriminant, then ``case`` nodes (test or None for default)."""
        cases = []
        for clause in self.children(self.field(cst, "body")):
            test = clause.child_by_field_name("value") if clause.type == "switch_case" else None
            body = [self.statement(child) for child in clause.children_by_field_name("body")]
            cases.append(self.node(clause, "case", None, None if test is None else self.expression(test),
                                   self.node(clause, "block", None, *[stmt for stmt in body if stmt is not None])))
        return self.node(cst, "switch", None, self.expression(self.field(cst, "value")), *cases)

    def try_statement(self, cst: CstNode) -> Node:
        """``try``/``catch``/``finally``: cards wrap registration in one. What a catch may see is
        decided at run time (only the declaration's own errors, never a budget or a refusal)."""
        body = self.statement(self.field(cst, "body"))
        handler = cst.child_by_field_name("handler")
        finalizer = cst.child_by_field_name("finalizer")
        catch_body = param = None
        if handler is not None:
            parameter = handler.child_by_field_name("parameter")
            param = None if parameter is None else self.pattern(parameter)
            catch_body = self.statement(self.field(handler, "body"))
        finally_body = None if finalizer is None else self.statement(self.field(finalizer, "body"))
        return self.node(cst, "try", param, body, catch_body, finally_body)

    def for_of(self, cst: CstNode) -> Node:
        """``for (const x of array)`` and ``for (const key in object)`` (own keys, as bundlers'
        runtimes write it); both visit at most 1,000 items under the shared budget."""
        binding = cst.child_by_field_name("kind")
        operator = cst.child_by_field_name("operator")
        loop = {"of": "for_of", "in": "for_in"}.get(self.text(operator) if operator is not None else "")
        if self.original and loop == "for_in":
            raise refuse(cst, "the original interpreter supports only `for...of` loops (S-8)")
        if binding is None or loop is None or self.text(binding) not in {"const", "let", "var"}:
            raise refuse(cst, "this `for...in`/`for...of` form is not supported")
        body = self.statement(self.field(cst, "body")) or self.node(cst, "block")
        return self.node(cst, loop, (self.text(binding), self.pattern(self.field(cst, "left"))),
                         self.expression(self.field(cst, "right")), body)

    def for_loop(self, cst: CstNode) -> Node:
        """``for (init; test; update) body``: kids are the initialiser (a declaration or an
        ``expr`` statement), the test and the update (expressions) and the body, each maybe
        None; ``value`` is the initialiser's binding kind (``let`` copies per pass, see s_for)."""
        init_cst = self.field(cst, "initializer")
        if init_cst.type in {"lexical_declaration", "variable_declaration"}:
            init = self.statement(init_cst)
        elif init_cst.type == "empty_statement":
            init = None
        else:
            init = self.node(init_cst, "expr", None, self.expression(init_cst))
        tests = [child for child in cst.children_by_field_name("condition") if child.is_named]
        test = self.expression(tests[0]) if tests and tests[0].type != "empty_statement" else None
        update_cst = cst.child_by_field_name("increment")
        update = None if update_cst is None else self.expression(update_cst)
        body = self.statement(self.field(cst, "body")) or self.node(cst, "block")
        binding = init.value if init is not None and init.kind == "declare_list" else None
        return self.node(cst, "for", binding, init, test, update, body)

    def while_loop(self, cst: CstNode) -> Node:
        """``while (test) body`` and ``do body while (test)``: kids are the test and the body;
        ``value`` says whether the body runs before the first test (``do``)."""
        body = self.statement(self.field(cst, "body")) or self.node(cst, "block")
        test = self.expression(self.field(cst, "condition"))
        return self.node(cst, "while", cst.type == "do_statement", test, body)

    # -- patterns and functions --------------------------------------------------------------

    def pattern(self, cst: CstNode, *, rest: bool = False) -> tuple[Any, ...]:
        """A binding target: ``("name", n)``, ``("object", ((key, pattern, default), ...))`` or
        ``("array", ((pattern, default) | None, ...))`` (None is a hole, as in ``[, v]``).

        Real cards destructure (``({ 数量 }) => 数量 > 0``, ``([k, { n }]) => n``); defaults are
        AST nodes the compiler turns into closures. With ``rest`` (a declaration's own pattern) an
        object pattern may end in ``...name`` (key None): real cards drop keys that way. A rest
        parameter or a last array element ``...xs`` is ``("rest", pattern)``: the remaining items.
        """
        kind = cst.type
        if kind == "identifier":
            name = self.text(cst)
            if name in {"arguments", "eval"}:
                raise refuse(cst, f"`{name}` is not available")
            return ("name", name)
        if kind == "object_pattern":
            entries: list[tuple[str | None, tuple[Any, ...], Node | None]] = []
            for child in self.children(cst):
                if child.type == "shorthand_property_identifier_pattern":
                    entries.append((self.text(child), ("name", self.text(child)), None))
                elif child.type == "object_assignment_pattern":
                    name = self.text(self.field(child, "left"))
                    entries.append((name, ("name", name), self.expression(self.field(child, "right"))))
                elif child.type == "pair_pattern":
                    target, default = self.element(self.field(child, "value"))
                    entries.append((self.property_key(self.field(child, "key")), target, default))
                elif rest and child.type == "rest_pattern" and child == self.children(cst)[-1]:
                    rest_cst = self.children(child)[0]
                    if rest_cst.type != "identifier":
                        raise refuse(rest_cst, "an object rest element must be a name")
                    entries.append((None, self.pattern(rest_cst), None))
                else:
                    raise refuse(child, "rest elements are not supported")
            return ("object", tuple(entries))
        if kind == "array_pattern":
            items: list[tuple[tuple[Any, ...], Node | None] | None] = []
            current: tuple[tuple[Any, ...], Node | None] | None = None
            for child in cst.children[1:-1]:  # between the brackets; a bare comma leaves a hole
                if child.type == ",":
                    items.append(current)
                    current = None
                elif child.type != "comment":
                    current = self.element(child)
            if current is not None:
                items.append(current)
            if any(item is not None and item[0][0] == "rest" for item in items[:-1]):
                raise refuse(cst, "a rest element must be last")
            return ("array", tuple(items))
        if kind == "rest_pattern":  # `...xs` ending a parameter list or an array pattern
            return ("rest", self.pattern(self.children(cst)[0]))
        raise refuse(cst, "this binding form is not supported")

    def element(self, cst: CstNode) -> tuple[tuple[Any, ...], Node | None]:
        """A destructuring element with its optional default (``x = 2``)."""
        if cst.type == "assignment_pattern":
            return self.pattern(self.field(cst, "left")), self.expression(self.field(cst, "right"))
        return self.pattern(cst), None

    def function(self, cst: CstNode) -> Node:
        """A function node; an ``async`` one is wrapped in an ``async`` node (see AsyncFunction)."""
        if any(child.type == "*" for child in cst.children):
            raise refuse(cst, "generators are not supported")
        if any(child.type == "async" for child in cst.children):
            return self.node(cst, "async", None, self.plain_function(cst))
        return self.plain_function(cst)

    def plain_function(self, cst: CstNode) -> Node:
        """``kids``: the body, then a ``binds_this`` marker when a non-arrow function (or an arrow
        inside it) reads ``this``: only such a function gives its calls a receiver."""
        arrow = cst.type == "arrow_function"
        if not arrow:
            self.this_users.append(False)
        try:
            node = self.function_parts(cst)
        finally:
            uses_this = not arrow and self.this_users.pop()
        return replace(node, kids=(*node.kids, self.node(cst, "binds_this"))) if uses_this else node

    def function_parts(self, cst: CstNode) -> Node:
        params: list[tuple[tuple[Any, ...], Node | None]] = []
        single = cst.child_by_field_name("parameter")
        if single is not None:
            params.append((self.pattern(single), None))
        else:
            for param in self.children(self.field(cst, "parameters")):
                if params and params[-1][0][0] == "rest":
                    raise refuse(param, "a rest parameter must be last")
                params.append(self.parameter(param))
        if self.original and any(pattern[0] != "name" for pattern, _ in params):
            raise refuse(cst, "the original interpreter refuses destructured parameters (S-8)")
        body_cst = self.field(cst, "body")
        if body_cst.type == "statement_block":
            body = self.statement(body_cst)
        else:
            body = self.node(body_cst, "return", None, self.expression(body_cst))
        return self.node(cst, "function", tuple(params), body)

    def parameter(self, cst: CstNode) -> tuple[tuple[Any, ...], Node | None]:
        if cst.type in {"required_parameter", "optional_parameter"}:  # TypeScript
            value = cst.child_by_field_name("value")
            return self.pattern(self.field(cst, "pattern")), None if value is None else self.expression(value)
        if cst.type == "assignment_pattern":
            return self.pattern(self.field(cst, "left")), self.expression(self.field(cst, "right"))
        return self.pattern(cst), None

    # -- expressions -------------------------------------------------------------------------

    def expression(self, cst: CstNode) -> Node:
        self.deeper(cst)
        try:
            return self.expression_kind(cst)
        finally:
            self.depth -= 1

    def expression_kind(self, cst: CstNode) -> Node:
        kind = cst.type
        method = getattr(self, "x_" + kind, None)
        if method is not None:
            result: Node = method(cst)
            return result
        if kind in _TYPE_WRAPPERS:
            return self.expression(self.children(cst)[0])
        raise refuse(cst, _describe_refusal(kind))

    def x_parenthesized_expression(self, cst: CstNode) -> Node:
        return self.expression(self.children(cst)[0])

    def x_number(self, cst: CstNode) -> Node:
        return self.node(cst, "const", _number_value(self.text(cst), cst))

    def x_string(self, cst: CstNode) -> Node:
        return self.node(cst, "const", self.string_value(cst))

    def x_true(self, cst: CstNode) -> Node:
        return self.node(cst, "const", True)

    def x_false(self, cst: CstNode) -> Node:
        return self.node(cst, "const", False)

    def x_null(self, cst: CstNode) -> Node:
        return self.node(cst, "const", None)

    def x_undefined(self, cst: CstNode) -> Node:
        return self.node(cst, "undefined")

    def x_this(self, cst: CstNode) -> Node:
        """``this``: the receiver of the innermost non-arrow function (``obj.m()``, a getter's
        object), ``undefined`` outside one, as in a module. The original interpreter has none."""
        if self.original:
            raise refuse(cst, _describe_refusal("this"))
        if self.this_users:
            self.this_users[-1] = True
        return self.node(cst, "this")

    def x_identifier(self, cst: CstNode) -> Node:
        name = self.text(cst)
        if name == "undefined":
            return self.node(cst, "undefined")
        # `window` is an ordinary name, undefined here as in any non-browser JavaScript: bundles
        # read it inside try/catch or behind `typeof window`, which then behave as in node.
        if name in {"arguments", "eval", "globalThis", "Function", "Reflect", "Proxy"}:
            raise refuse(cst, f"`{name}` is not available")
        return self.node(cst, "name", name)

    def x_template_string(self, cst: CstNode) -> Node:
        parts: list[Node] = []
        literal: list[str] = []
        for child in cst.named_children:
            if child.type == "template_substitution":
                if literal:
                    parts.append(self.node(child, "const", _join_surrogates("".join(literal))))
                    literal = []
                parts.append(self.expression(self.children(child)[0]))
            elif child.type == "escape_sequence":
                literal.append(_unescape(self.text(child), child))
            elif child.type == "string_fragment":
                literal.append(self.text(child))
        if literal:
            parts.append(self.node(cst, "const", _join_surrogates("".join(literal))))
        return self.node(cst, "template", None, *parts)

    def x_regex(self, cst: CstNode) -> Node:
        flags = cst.child_by_field_name("flags")
        pattern = self.text(self.field(cst, "pattern"))
        return self.node(cst, "regex", (pattern, "" if flags is None else self.text(flags)))

    def x_array(self, cst: CstNode) -> Node:
        items = []
        current: Node | None = None
        for child in cst.children[1:-1]:  # between the brackets; a bare comma is an elision
            if child.type == ",":
                # arrays stay dense (S-7): an elision holds undefined, as JSON writes a hole
                items.append(current if current is not None else self.node(child, "undefined", None))
                current = None
            elif child.type == "spread_element":
                current = self.node(child, "spread", None, self.expression(self.children(child)[0]))
            elif child.type != "comment":
                current = self.expression(child)
        if current is not None:
            items.append(current)
        return self.node(cst, "array", None, *items)

    def x_object(self, cst: CstNode) -> Node:
        entries: list[Node] = []
        for child in self.children(cst):
            if child.type == "pair":
                key_cst = self.field(child, "key")
                value = self.expression(self.field(child, "value"))
                if key_cst.type == "computed_property_name":
                    key = self.expression(self.children(key_cst)[0])
                    entries.append(self.node(child, "computed", None, key, value))
                else:
                    entries.append(self.node(child, "property", self.property_key(key_cst), value))
            elif child.type == "shorthand_property_identifier":
                name = self.text(child)
                entries.append(self.node(child, "property", name, self.node(child, "name", name)))
            elif child.type == "spread_element":
                entries.append(self.node(child, "spread", None, self.expression(self.children(child)[0])))
            elif child.type == "method_definition":
                entries.append(self.method(child))
            else:
                raise refuse(child, _describe_refusal(child.type))
        return self.node(cst, "object", None, *entries)

    def method(self, cst: CstNode) -> Node:
        """``m() {...}`` is a property holding the function; ``get k() {...}`` a ``getter`` entry
        (Zod 4's recursive objects). A setter has nothing to do in a declaration: refused by name."""
        name_cst = self.field(cst, "name")
        parts = {part.type for part in cst.children}
        if "set" in parts:
            line, col = cst.start_point[0] + 1, cst.start_point[1] + 1
            raise MvuError(Code.UNSUPPORTED, f"setters (`set {self.text(name_cst)}(...)`) are not supported at line "
                           f"{line}, column {col}", member="set", line=line, column=col)
        if parts & {"async", "*"}:
            raise refuse(cst, "async and generator methods are not supported")
        if "get" in parts and name_cst.type == "computed_property_name":
            raise refuse(cst, "getters with a computed name are not supported")
        kind = "getter" if "get" in parts else "property"
        return self.node(cst, kind, self.property_key(name_cst), self.function(cst))

    def property_key(self, cst: CstNode) -> str:
        if cst.type in {"property_identifier", "shorthand_property_identifier", "identifier"}:
            return self.text(cst)
        if cst.type == "string":
            return self.string_value(cst)
        if cst.type == "number":
            return _number_key(_number_value(self.text(cst), cst))
        raise refuse(cst, "unsupported property key")

    def x_member_expression(self, cst: CstNode) -> Node:
        prop = self.field(cst, "property")
        if prop.type == "private_property_identifier":
            raise refuse(prop, "private names are not supported")
        optional = cst.child_by_field_name("optional_chain") is not None
        return self.node(cst, "member", (self.text(prop), optional), self.expression(self.field(cst, "object")))

    def x_subscript_expression(self, cst: CstNode) -> Node:
        optional = cst.child_by_field_name("optional_chain") is not None
        return self.node(cst, "index", optional, self.expression(self.field(cst, "object")),
                         self.expression(self.field(cst, "index")))

    def x_call_expression(self, cst: CstNode) -> Node:
        callee_cst = self.field(cst, "function")
        if callee_cst.type == "import":
            raise refuse(cst, "dynamic import is not supported")
        args_cst = self.field(cst, "arguments")
        if args_cst.type == "template_string":
            raise refuse(cst, "tagged templates are not supported")
        args = []
        for child in self.children(args_cst):
            if child.type == "spread_element":
                args.append(self.node(child, "spread", None, self.expression(self.children(child)[0])))
            else:
                args.append(self.expression(child))
        optional = cst.child_by_field_name("optional_chain") is not None
        return self.node(cst, "call", optional, self.expression(callee_cst), *args)

    def x_arrow_function(self, cst: CstNode) -> Node:
        return self.function(cst)

    def x_function_expression(self, cst: CstNode) -> Node:
        return self.function(cst)

    x_function = x_function_expression

    def x_await_expression(self, cst: CstNode) -> Node:
        """``await import('<url>')``, the registration form some cards use at top level (the URL
        binds a local capability like a static import; nothing is fetched);
        ``await waitGlobalInitialized('<name>')``, a card's wait for the MVU runtime to load: a
        declaration that is rebuilt in isolation has nothing to wait for, so it is ``undefined``;
        any other ``await v`` reads the value of a settled promise (see promises.py)."""
        children = self.children(cst)
        if not children:
            raise refuse(cst, "`await` needs an operand")
        call = children[0]
        callee = call.child_by_field_name("function") if call.type == "call_expression" else None
        arguments = call.child_by_field_name("arguments") if callee is not None else None
        args = [] if arguments is None else self.children(arguments)
        if callee is None or len(args) != 1 or args[0].type != "string":
            return self.node(cst, "await", None, self.expression(call))
        if callee.type == "import":
            return self.node(cst, "import_module", self.string_value(args[0]))
        if callee.type == "identifier" and self.text(callee) == HOST_WAIT:
            return self.node(cst, "undefined")
        return self.node(cst, "await", None, self.expression(children[0]))

    def x_new_expression(self, cst: CstNode) -> Node:
        """Only ``new Error(message)`` (and its kin, for ``throw``), ``new Set(items)`` and
        ``new Date(...)``."""
        constructor = self.field(cst, "constructor")
        name = self.text(constructor)
        arguments = cst.child_by_field_name("arguments")
        args = [] if arguments is None else [self.expression(child) for child in self.children(arguments)]
        if name.startswith("Intl.") and constructor.type == "member_expression":
            # `new Intl.NumberFormat(...)` is the call `Intl.NumberFormat(...)` (the rest is refused there)
            return self.node(cst, "call", False, self.expression(constructor), *args)
        if constructor.type != "identifier" or name not in CONSTRUCTORS:
            raise refuse(cst, "classes and `new` are not supported")
        return self.node(cst, "new", name, *(args if name in ("Date", "RegExp", "Array") else args[:1]))

    def x_unary_expression(self, cst: CstNode) -> Node:
        operator = self.text(self.field(cst, "operator"))
        if operator == "delete":
            target = self.field(cst, "argument")
            if target.type not in {"member_expression", "subscript_expression"}:
                raise refuse(cst, "only fields can be deleted")
            return self.node(cst, "delete", None, self.expression(target))
        if operator not in UNARY_OPERATORS:
            raise refuse(cst, f"operator `{operator}` is not supported")
        return self.node(cst, "unary", operator, self.expression(self.field(cst, "argument")))

    def x_binary_expression(self, cst: CstNode) -> Node:
        operator = self.text(self.field(cst, "operator"))
        left = self.expression(self.field(cst, "left"))
        if operator == "instanceof":
            right_cst = self.field(cst, "right")
            if right_cst.type != "identifier" or self.text(right_cst) not in CLASS_NAMES:
                raise refuse(right_cst, "`instanceof` needs a built-in class name (Error, Date, Array, Object...)")
            return self.node(cst, "instanceof", self.text(right_cst), left)
        right = self.expression(self.field(cst, "right"))
        if operator in LOGICAL_OPERATORS:
            return self.node(cst, "logical", operator, left, right)
        if operator not in BINARY_OPERATORS:
            raise refuse(cst, f"operator `{operator}` is not supported")
        return self.node(cst, "binary", operator, left, right)

    def x_ternary_expression(self, cst: CstNode) -> Node:
        return self.node(cst, "conditional", None, self.expression(self.field(cst, "condition")),
                         self.expression(self.field(cst, "consequence")),
                         self.expression(self.field(cst, "alternative")))

    def x_sequence_expression(self, cst: CstNode) -> Node:
        return self.node(cst, "sequence", None, *[self.expression(child) for child in self.children(cst)])

    def x_assignment_expression(self, cst: CstNode) -> Node:
        return self.assignment(cst, "=")

    def x_augmented_assignment_expression(self, cst: CstNode) -> Node:
        return self.assignment(cst, self.text(self.field(cst, "operator")))

    def assignment(self, cst: CstNode, operator: str) -> Node:
        if operator not in ASSIGN_OPERATORS:
            raise refuse(cst, f"operator `{operator}` is not supported")
        target = self.field(cst, "left")
        if operator == "=" and target.type in {"object_pattern", "array_pattern"}:
            # `({ registerMvuSchema } = await import(url))`: destructuring into existing variables
            return self.node(cst, "assign_pattern", self.pattern(target), self.expression(self.field(cst, "right")))
        if target.type not in {"identifier", "member_expression", "subscript_expression"}:
            raise refuse(target, "only variables and fields can be assigned")
        return self.node(cst, "assign", operator, self.expression(target), self.expression(self.field(cst, "right")))

    def x_update_expression(self, cst: CstNode) -> Node:
        argument = self.field(cst, "argument")
        operator = self.text(self.field(cst, "operator"))
        if argument.type not in {"identifier", "member_expression", "subscript_expression"}:
            raise refuse(argument, "only variables and fields can be updated")
        prefix = cst.children[0].type in {"++", "--"}
        return self.node(cst, "update", (operator, prefix), self.expression(argument))

    def string_value(self, cst: CstNode) -> str:
        parts = []
        for child in cst.named_children:
            if child.type == "string_fragment":
                parts.append(self.text(child))
            elif child.type == "escape_sequence":
                parts.append(_unescape(self.text(child), child))
        value = _join_surrogates("".join(parts))
        if len(value) > MAX_LITERAL_CHARS:
            raise MvuError(Code.LIMIT, "string literal is too long", limit=MAX_LITERAL_CHARS, kind="literal")
        return value


def pattern_names(pattern: tuple[Any, ...]) -> list[str]:
    """Every name a binding pattern binds."""
    if pattern[0] == "name":
        return [pattern[1]]
    if pattern[0] == "object":
        return [name for _, target, _ in pattern[1] for name in pattern_names(target)]
    if pattern[0] == "rest":
        return pattern_names(pattern[1])
    return [name for element in pattern[1] if element is not None for name in pattern_names(element[0])]


def _join_surrogates(text: str) -> str:
    """Combine escaped surrogate pairs (``\\uD83D\\uDE00``) into one character, as JavaScript
    strings hold them; a lone surrogate stays as it is."""
    if not any("\ud800" <= char <= "\udfff" for char in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _describe_refusal(kind: str) -> str:
    if kind in {"this", "super"}:
        return f"`{kind}` is not available"
    if kind in {"yield_expression", "generator_function", "generator_function_declaration"}:
        return "generators are not supported"
    if kind in {"class", "class_declaration"}:
        return "classes and `new` are not supported"
    return f"unsupported syntax `{kind}`"


def _number_value(text: str, cst: CstNode) -> float | int:
    cleaned = text.replace("_", "").lower()
    try:
        if cleaned.startswith(("0x", "0o", "0b")):
            return int(cleaned, 0)
        if cleaned.endswith("n"):
            raise refuse(cst, "BigInt literals are not supported")
        if len(cleaned) > 1 and cleaned[0] == "0" and cleaned[1].isdigit():
            raise refuse(cst, "legacy octal literals are not supported")
        number = float(cleaned)
    except ValueError:
        raise refuse(cst, "invalid number") from None
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _number_key(value: float | int) -> str:
    return str(value) if isinstance(value, int) else repr(value)


def _unescape(text: str, cst: CstNode) -> str:
    body = text[1:]
    if body in _ESCAPES:
        return _ESCAPES[body]
    if body.startswith(("x", "u")):
        digits = body[1:].strip("{}")
        try:
            return chr(int(digits, 16))
        except ValueError:
            raise refuse(cst, "invalid escape") from None
    if body.startswith(("\n", "\r")):
        return ""  # line continuation
    return body  # `\'`, `\"`, `\\` and any other character stand for themselves
