"""The schema descriptor ``{mvuSchema:1, interpreterVersion, source}``: compile, cache, validate.

Compiling runs the declaration's top level in the interpreter (imports bind local capabilities,
nothing is fetched), finds the registered or exported schema and applies S-2's registration rule.
Compiled forms live in a process cache keyed by (SHA-256 of source, version) and are never
stored: the descriptor keeps the source verbatim.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import MAX_DEPTH, MAX_NODES, JsonValue, sha256_hex
from mvu_store.schema.builtins import GLOBALS, JsSet
from mvu_store.schema.composite import ObjectSchema
from mvu_store.schema.dsl import make_z
from mvu_store.schema.evaluate import Compiler, hoisted
from mvu_store.schema.issues import Issue
from mvu_store.schema.lodash import LODASH
from mvu_store.schema.runtime import Frame, JsFunction
from mvu_store.schema.syntax import Node, parse_program, pattern_names
from mvu_store.schema.types import ParseCtx, Schema
from mvu_store.schema.values import UNDEFINED, Budget, Builtin, JsCallable, Namespace, arg

MVU_ZOD_URL = "https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js"
"""The one registration entry S-2 verified statically; only it loosens a registered root object."""
INTERPRETER_VERSIONS = (1, 2)
CURRENT_VERSION = 2
_ZOD_MODULES = frozenset({"zod", "zod/v4", "zod/v4/classic"})
_CACHE_SIZE = 128


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """``ok`` and the parsed ``value`` (None when refused), or the ``issues`` that refused it."""

    ok: bool
    value: JsonValue
    issues: tuple[Issue, ...]


@dataclass(frozen=True, slots=True)
class Compiled:
    root: Schema
    frozen: frozenset[int]


def compile_schema(source: str, *, interpreter_version: int = CURRENT_VERSION) -> dict[str, Any]:
    """Check that ``source`` compiles and return its descriptor; refusals raise ``MvuError``."""
    if type(source) is not str:
        raise MvuError(Code.SCHEMA, "the declaration source must be a string")
    _compiled(source, _version(interpreter_version))
    return {"mvuSchema": 1, "interpreterVersion": interpreter_version, "source": source}


def validate(descriptor: dict[str, Any], value: JsonValue, *, now_ms: int | None = None) -> ValidationResult:
    """Parse ``value`` with the descriptor's schema, as Zod's ``safeParse`` would.

    ``now_ms`` is the clock ``Date.now()`` reads inside the declaration (the caller's commit
    time, so results are reproducible). Refused values give ``ok=False`` and Zod's issues;
    broken declarations and exhausted budgets raise ``MvuError``.
    """
    if type(descriptor) is not dict or descriptor.get("mvuSchema") != 1 or type(descriptor.get("source")) is not str:
        raise MvuError(Code.SCHEMA, "not a schema descriptor ({mvuSchema:1, interpreterVersion, source})")
    compiled = _compiled(descriptor["source"], _version(descriptor.get("interpreterVersion")))
    _check_input(value, 1, MAX_NODES)
    ctx = ParseCtx(Budget(now_ms, frozen=compiled.frozen))
    output = _guarded(lambda: compiled.root.run(value, ctx))
    if ctx.issues:
        return ValidationResult(False, None, tuple(ctx.issues))
    return ValidationResult(True, _guarded(lambda: _to_json(output, 1)), ())


def _version(version: Any) -> int:
    if type(version) is not int or version not in INTERPRETER_VERSIONS:
        raise MvuError(Code.VERSION, f"unknown interpreter version {version!r}", supported=list(INTERPRETER_VERSIONS))
    return version


_cache: OrderedDict[tuple[str, int], Compiled | MvuError] = OrderedDict()
_cache_lock = threading.Lock()


def _compiled(source: str, version: int) -> Compiled:
    key = (sha256_hex(source.encode("utf-8", "surrogatepass")), version)
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
    if entry is None:
        try:
            entry = _guarded(lambda: _build(source, version))
        except MvuError as error:
            entry = error
        with _cache_lock:
            _cache[key] = entry
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    if isinstance(entry, MvuError):
        raise MvuError(entry.code, entry.message, **entry.details)
    return entry


def _guarded(action: Any) -> Any:
    """Run interpreter code; Python-level failures of the declaration become ``MvuError``."""
    try:
        return action()
    except RecursionError:
        raise MvuError(Code.LIMIT, "the declaration nests too deeply", kind="depth") from None
    except (ArithmeticError, ValueError, TypeError) as error:
        raise MvuError(Code.SCHEMA, f"the declaration failed: {error}") from None


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


def _build(source: str, version: int) -> Compiled:
    program = parse_program(source)
    budget = Budget()
    globals_frame = Frame(None, budget)
    globals_frame.vars.update(GLOBALS)
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
    if url in _ZOD_MODULES:
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
        elif isinstance(item, (Schema, JsFunction)) and id(item) not in seen_opaque:
            seen_opaque.add(id(item))
            if isinstance(item, JsFunction):
                yield id(item)  # its property bag is a constant too
                for frame in item.frames():
                    frame.sealed = True
            stack.extend(item.refs())


def _check_input(value: Any, depth: int, room: int) -> int:
    """Check that ``value`` is JSON within jsonvalue's limits; return the node budget left.

    The input is not copied: parsing builds fresh containers, and the two schemas that hand
    input through (z.any / z.unknown, z.preprocess's function) copy it, so the caller's value
    is never changed. Checking instead of normalising halves the cost of this step.
    """
    kind = type(value)
    if room <= 0:
        raise MvuError(Code.LIMIT, f"value has more than {MAX_NODES} nodes", limit=MAX_NODES, kind="nodes")
    if kind is str or kind is int or kind is bool or value is None:
        return room - 1
    if kind is dict or kind is list:
        room = _check_container(value, depth, room)
        if room < 0:
            raise MvuError(Code.LIMIT, f"value has more than {MAX_NODES} nodes", limit=MAX_NODES, kind="nodes")
        return room
    if kind is float and math.isfinite(value):
        return room - 1
    if kind is float:
        raise MvuError(Code.JSON, "numbers must be finite (NaN and Infinity are not JSON)")
    raise MvuError(Code.JSON, f"{kind.__name__} is not a JSON value")


def _check_container(value: Any, depth: int, room: int) -> int:
    if depth > MAX_DEPTH:
        raise MvuError(Code.LIMIT, f"value is nested deeper than {MAX_DEPTH}", limit=MAX_DEPTH, kind="depth")
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise MvuError(Code.JSON, f"object key {key!r} is not a string")
            leaf = type(item)  # leaves are counted inline: most nodes are leaves
            if leaf is str or leaf is int or leaf is bool or item is None:
                room -= 1
            else:
                room = _check_input(item, depth + 1, room)
        return room - 1
    for item in value:
        leaf = type(item)
        if leaf is str or leaf is int or leaf is bool or item is None:
            room -= 1
        else:
            room = _check_input(item, depth + 1, room)
    return room - 1


_LEAVES = frozenset({str, int, bool, type(None)})  # values _to_json returns unchanged


def _to_json(value: Any, depth: int) -> Any:
    """The parsed value as normalised JSON, as ``JSON.stringify`` would write it.

    ``undefined`` members vanish, NaN and infinities become null, integral floats become ints
    (as jsonvalue.normalize does), functions and schemas refuse, and the depth limit holds.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if depth > MAX_DEPTH:
        raise MvuError(Code.LIMIT, f"the parsed value is nested deeper than {MAX_DEPTH}", limit=MAX_DEPTH, kind="depth")
    if kind is dict:
        return {key: item if type(item) in _LEAVES else _to_json(item, depth + 1)
                for key, item in value.items() if item is not UNDEFINED}
    if kind is list:
        return [item if type(item) in _LEAVES else _to_json(item, depth + 1) for item in value]
    if kind is float:
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 1e21 else value
    if value is UNDEFINED:
        return None
    raise MvuError(Code.SCHEMA, "the schema produced a function or schema where a value belongs")
