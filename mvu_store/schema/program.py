"""Run a declaration's top level and find its schema (S-1, S-2).

Imports bind local capabilities (nothing is fetched or run), ``$(fn)`` callbacks run after the
top level as jQuery's ready does, and the registered, exported or lone schema becomes the root;
a root object registered through the verified helper URL is rebuilt loose (S-2). Afterwards the
declaration's scopes are sealed and its containers frozen: validations may only read them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import UNDEFINED, Budget, Builtin, JsCallable, Namespace, arg
from mvu_store.schema.accessors import GetterObject
from mvu_store.schema.builtins import GLOBALS, JsSet
from mvu_store.schema.composite import LazyObjectSchema, ObjectSchema
from mvu_store.schema.dates import JsDate
from mvu_store.schema.dsl import make_z
from mvu_store.schema.evaluate import Compiler, hoisted
from mvu_store.schema.host import HOST_GLOBALS
from mvu_store.schema.lodash import LODASH
from mvu_store.schema.maps import JsMap
from mvu_store.schema.regex import Regex
from mvu_store.schema.runtime import Frame, JsFunction
from mvu_store.schema.syntax import Node, parse_program, pattern_names
from mvu_store.schema.types import Schema

MVU_ZOD_URL = "https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js"
"""The one registration entry S-2 verified statically; only it loosens a registered root object."""
_ZOD_MODULES = frozenset({"zod", "zod/v4", "zod/v4/classic"})
# Zod 4 as browser bundles import it from a CDN (`…/npm/zod/+esm`, `esm.sh/zod@4`): the same
# local capability as the bare specifier; a URL naming another major version is not Zod 4.
_ZOD_CDN = re.compile(r"https://(?:[\w-]+\.)*(?:jsdelivr\.net/npm|esm\.sh|unpkg\.com)/zod(?:@[~^]?4[\w.+-]*)?"
                      r"(?:/v4(?:/classic)?)?(?:/\+esm)?/?")


@dataclass(frozen=True, slots=True)
class Compiled:
    root: Schema
    frozen: frozenset[int]


class _Registry:
    """What the top level registered, imported and exported."""

    def __init__(self) -> None:
        self.registered: list[tuple[Any, bool]] = []  # (schema or factory, through the verified URL)
        self.ready: list[JsCallable] = []  # `$(() => ...)` callbacks, run after the top level
        self.exports: dict[str, Any] = {}
        self.last_value: Any = UNDEFINED
        self.top_schema: Any = UNDEFINED

    def register(self, verified: bool) -> Builtin:
        def register(budget: Budget, args: list[Any]) -> Any:
            self.registered.append((arg(args, 0), verified))
            return UNDEFINED

        return Builtin("registerMvuSchema", register)

    def on_ready(self, budget: Budget, args: list[Any]) -> Any:
        """``$(fn)`` and ``$(document).ready(fn)``: run ``fn`` after the top level, as jQuery does."""
        callback = arg(args, 0)
        if isinstance(callback, JsCallable):
            self.ready.append(callback)
            return UNDEFINED
        return Namespace("jQuery", {"ready": Builtin("ready", self.on_ready)})


def build(source: str, version: int) -> Compiled:
    """Compile ``source``: the root schema and the ids validations must not change."""
    program = parse_program(source)
    budget = Budget()
    globals_frame = Frame(None, budget)
    globals_frame.vars.update(GLOBALS)
    globals_frame.vars.update(HOST_GLOBALS)
    z = make_z(version)
    registry = _Registry()
    globals_frame.vars.update({"z": z, "_": LODASH, "$": Builtin("$", registry.on_ready),
                               "document": Namespace("document", {}),
                               "registerMvuSchema": registry.register(verified=False)})
    top = Frame(globals_frame, budget)
    compiler = Compiler(globals_frame.vars, program, lambda url, node: _module(url, node, registry, z))
    for statement in hoisted(program):
        _run_top(statement, top, compiler, registry, z, budget)
    for callback in registry.ready:
        callback.call(budget, [])
    registry.top_schema = top.vars.get("Schema", UNDEFINED)
    root = _pick_root(registry, budget, version)
    _read_shapes(root, budget)
    top.sealed = globals_frame.sealed = True
    return Compiled(root, frozenset(_freeze(top, registry)))


def _run_top(statement: Node, top: Frame, compiler: Compiler, registry: _Registry, z: Any, budget: Budget) -> None:
    budget.charge(statement.size())
    if statement.kind == "import":
        _bind_imports(statement, top, registry, z)
        return
    if statement.kind == "export_names":
        for local, exported in statement.value:
            registry.exports[exported] = top.lookup(local)
        return
    if statement.kind == "export_default":
        registry.exports["default"] = compiler.expression(statement.kids[0])(top)  # type: ignore[arg-type]
        return
    inner = statement.kids[0] if statement.kind == "export" else statement
    assert inner is not None
    if inner.kind == "expr":
        registry.last_value = compiler.expression(inner.kids[0])(top)  # type: ignore[arg-type]
        return
    if inner.kind in {"return", "break", "continue"}:
        raise MvuError(Code.SCHEMA_CODE, f"`{inner.kind}` outside a function at line {inner.line}, column {inner.col}",
                       line=inner.line, column=inner.col)
    compiler.statement(inner)(top)
    if statement.kind == "export" and inner.kind == "declare_list":
        for declarator in inner.kids:
            assert declarator is not None
            for name in pattern_names(declarator.value):
                registry.exports[name] = top.lookup(name)


def _bind_imports(statement: Node, top: Frame, registry: _Registry, z: Any) -> None:
    url, bindings = statement.value
    module = _module(url, statement, registry, z)
    for imported, local in bindings:
        members = getattr(module, "members", {})
        if imported in {"*", "default"}:
            top.vars[local] = module
        elif imported in members:
            top.vars[local] = members[imported]
        else:
            raise MvuError(Code.SCHEMA_CODE, f"import of `{imported}` from {url!r} is not supported at line "
                           f"{statement.line}, column {statement.col}", line=statement.line, column=statement.col)


def _module(url: str, node: Node, registry: _Registry, z: Any) -> Any:
    """The local capability an import URL stands for; nothing is fetched or run."""
    if url.endswith("/mvu_zod.js"):
        return Namespace("mvu_zod", {"registerMvuSchema": registry.register(verified=url == MVU_ZOD_URL)})
    if url in _ZOD_MODULES or _ZOD_CDN.fullmatch(url):
        return z
    if url == "lodash":
        return LODASH
    raise MvuError(Code.SCHEMA_CODE, f"import from {url!r} is not supported at line {node.line}, column {node.col}",
                   line=node.line, column=node.col)


def _pick_root(registry: _Registry, budget: Budget, version: int) -> Schema:
    """The registered schema, else the exported one, else a bare schema expression (S-2)."""
    if registry.registered:
        candidate, verified = registry.registered[-1]
        if isinstance(candidate, JsCallable):  # registerMvuSchema(() => schema)
            candidate = candidate.call(budget, [])
        if not isinstance(candidate, Schema):
            raise MvuError(Code.SCHEMA, "registerMvuSchema was given something other than a schema")
        if verified and version >= 2 and type(candidate) is ObjectSchema:
            # mvu_zod rebuilds a directly registered root object as a loose object from its shape:
            # the root's own strictness and checks are gone, nested schemas keep theirs.
            return ObjectSchema(candidate.shape, "loose")
        if verified and version >= 2 and type(candidate) is LazyObjectSchema:
            return LazyObjectSchema(candidate.sources, "loose")
        return candidate
    exported = [value for value in registry.exports.values() if isinstance(value, Schema)]
    for name in ("Schema", "default"):
        if isinstance(registry.exports.get(name), Schema):
            return registry.exports[name]  # type: ignore[no-any-return]
    if len(exported) == 1:
        return exported[0]
    if isinstance(registry.last_value, Schema):
        return registry.last_value
    if isinstance(registry.top_schema, Schema):  # a script that only declares `const Schema = ...`
        return registry.top_schema
    raise MvuError(Code.SCHEMA, "the declaration neither registers nor exports a schema")


def _read_shapes(root: Schema, budget: Budget) -> None:
    """Read, at compile, the shape of every object with getters the root reaches: validations
    then find them read (none changes a schema), and a getter that throws refuses the
    declaration here rather than every value later."""
    seen: set[int] = set()
    stack: list[Any] = [root]
    while stack:
        item = stack.pop()
        if not isinstance(item, Schema) or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, LazyObjectSchema):
            item.resolve(budget)
        stack.extend(item.refs())


def _freeze(top: Frame, registry: _Registry) -> Iterator[int]:
    """Seal every scope the compiled declaration's functions close over, and yield the ids of
    every container (objects, arrays, sets, functions' property bags) it can reach: validations
    may read all of them and change none."""
    seen_opaque: set[int] = set()
    stack: list[Any] = [*top.vars.values(), *registry.exports.values(), *(item for item, _ in registry.registered)]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            yield id(item)
            stack.extend(item.values())
        elif type(item) is list:
            yield id(item)
            stack.extend(item)
        elif isinstance(item, JsSet):
            yield id(item)
            stack.extend(item.items)
        elif isinstance(item, JsMap):
            yield id(item)
            stack.extend(value for pair in item.pairs() for value in pair)
        elif isinstance(item, Regex):
            yield id(item)  # `const RE = /x/g`: each validation keeps its own lastIndex
        elif isinstance(item, JsDate):
            yield id(item)  # `const start = new Date(0)`: its setters would change it for later runs
        elif isinstance(item, GetterObject):
            yield id(item)
            stack.extend(item.refs())
        elif isinstance(item, (Schema, JsFunction)) and id(item) not in seen_opaque:
            seen_opaque.add(id(item))
            if isinstance(item, JsFunction):
                yield id(item)  # its property bag is a constant too
                for frame in item.frames():
                    frame.sealed = True
            stack.extend(item.refs())
