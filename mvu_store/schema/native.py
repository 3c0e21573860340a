"""The fast path of a validation: a declaration's schema tree compiled to Python source.

``validate`` runs this compiled form first. It parses the plain parts itself (objects, records,
arrays, strings, numbers, enums, booleans and the wrappers), calls transforms and checks
directly, and hands every other node (unions, tuples, lazy, intersections ...) to the
interpreter. It never reports an issue or an error: at the first sign of one (a type that does
not match, an issue, a spent budget, a value that is not JSON) it gives up with :class:`Bail`
and ``validate`` runs the interpreter from the start, which decides today's exact issues,
refusals and budgets. A run that does not give up yields what the interpreter yields:

- the same fuel is charged (objects ``fields + 1``, arrays and records ``items + 1``, loose
  extras, and the declaration's functions and checks themselves, called with the same budget);
  fuel only goes down, so a total still >= 0 at the end means the interpreter never ran out;
- the input's nodes are counted and checked as ``descriptor._check_input`` does, where they are
  parsed or, for parts the schema skips, by :func:`_inner`;
- declaration code (transforms, checks) sees exactly the values the interpreter hands it: code
  beneath it is compiled in *raw* mode (the interpreter's output), elsewhere in *final* mode
  (already normalised as :func:`to_json` would write it, so no second walk is needed). A final
  transform's result is normalised again, unless it is a *selector* (parts of its input, see
  inline.FunctionCompiler.selects) and raw-mode code made nothing to_json could change while
  its input was parsed (``_Run.raw``).

A *position* is where a parent hands a child its input (the root, an object field, an array item,
a record value). Positions that hold a container become functions of their own; with a
:class:`ValidationMemo`, those whose subtree is pure (see :func:`purity`) and final reuse the
output, fuel and node count of their previous run on the identical input object.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Iterator
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import UNDEFINED, Budget, Builtin, Namespace, same_value_key, to_number, to_string, truthy
from mvu_store.jsonvalue import MAX_DEPTH, MAX_NODES, copy_json
from mvu_store.schema.builtins import GLOBALS
from mvu_store.schema.composite import ArraySchema, ObjectSchema, RecordSchema
from mvu_store.schema.dates import JsDate
from mvu_store.schema.inline import Bail, FunctionCompiler
from mvu_store.schema.primitives import (
    AnySchema,
    BooleanSchema,
    LiteralSchema,
    NeverSchema,
    NumberSchema,
    StringSchema,
)
from mvu_store.schema.regex import Regex
from mvu_store.schema.runtime import Frame, JsFunction
from mvu_store.schema.syntax import Node, pattern_names
from mvu_store.schema.types import (
    Default,
    IssueSink,
    Lazy,
    NonOptional,
    Nullable,
    Optional,
    ParseCtx,
    Pipe,
    Readonly,
    Schema,
    SizeCheck,
    Transform,
)

_MISSING = object()  # an absent key (no JSON value is this object)
_OMIT = object()  # the absent key stays absent in the output


# -- output normalisation ----------------------------------------------------------------------

_LEAVES = frozenset({str, int, bool, type(None)})  # values to_json returns unchanged


def to_json(value: Any, depth: int) -> Any:
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
        return {key: item if type(item) in _LEAVES else to_json(item, depth + 1)
                for key, item in value.items() if item is not UNDEFINED}
    if kind is list:
        return [item if type(item) in _LEAVES else to_json(item, depth + 1) for item in value]
    if kind is float:
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 1e21 else value
    if value is UNDEFINED:
        return None
    if isinstance(value, JsDate):
        return value.json()  # as JSON.stringify stores it: the ISO text, null when invalid
    raise MvuError(Code.SCHEMA, "the schema produced a function or schema where a value belongs")


# -- helpers the generated code calls ------------------------------------------------------------


def _inner(value: Any, depth: int) -> int:
    """How many nodes ``value`` holds below itself, checking it is JSON within the depth limit."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return 0
    if kind is float:
        if math.isfinite(value):
            return 0
        raise Bail
    if depth > MAX_DEPTH:
        raise Bail
    total = len(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise Bail
            if type(item) not in _LEAVES:
                total += _inner(item, depth + 1)
        return total
    if kind is list:
        for item in value:
            if type(item) not in _LEAVES:
                total += _inner(item, depth + 1)
        return total
    raise Bail


def _final(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if value is UNDEFINED:  # its parent would drop or null it: rare enough for the interpreter
        raise Bail
    return to_json(value, depth)


def _num_raw(value: Any, run: _Run) -> Any:
    kind = type(value)
    if kind is int:
        return value
    if kind is float and math.isfinite(value):
        run.raw += 1  # to_json may write it otherwise (1.0, -0.0)
        return value
    raise Bail


def _num_final(value: Any) -> Any:
    kind = type(value)
    if kind is int:
        return value
    if kind is float and math.isfinite(value):
        return int(value) if value.is_integer() and abs(value) < 1e21 else value
    raise Bail


def _coerce(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return to_number(value)
    if kind is float:
        return value
    raise Bail


def _coerce_raw(value: Any, run: _Run) -> Any:
    return _num_raw(_coerce(value), run)


def _coerce_final(value: Any) -> Any:
    return _num_final(_coerce(value))


def _json_leaf(value: Any) -> bool:
    kind = type(value)
    return kind is str or kind is int or kind is bool or value is None or (kind is float and math.isfinite(value))


def _coerce_str(value: Any) -> str:
    if not _json_leaf(value):
        raise Bail
    return to_string(value)


def _coerce_bool(value: Any) -> bool:
    if not _json_leaf(value):
        raise Bail
    return truthy(value)


def _literal(value: Any, keyed: dict[Any, Any], final: bool, run: _Run) -> Any:
    if not _json_leaf(value) or same_value_key(value) not in keyed:
        raise Bail
    if type(value) is float:
        if final:
            return _num_final(value)
        run.raw += 1
    return value


def _any(value: Any, depth: int, run: _Run, counting: bool, final: bool) -> Any:
    if counting:
        run.nodes += _inner(value, depth)
    if not final:
        run.raw += 1
    if type(value) is dict or type(value) is list:
        return to_json(value, depth) if final else copy_json(value)
    return _final(value, depth) if final else value


def _delegate(node: Schema, value: Any, depth: int, run: _Run, counting: bool, final: bool) -> Any:
    """A node the fast path does not parse itself: the interpreter parses it, in place."""
    if counting:
        run.nodes += _inner(value, depth)
    ctx = run.ctx
    out = node.run(value, ctx)
    if ctx.issues:
        raise Bail
    if final:
        return _final(out, depth)
    run.raw += 1
    return out


def _absent(node: Schema, depth: int, budget: Budget, final: bool) -> Any:
    """An object's absent key, on Zod's rungs as ObjectSchema.parse climbs them."""
    optin, optout = node.optin, node.optout
    if optout == "optional" and optin == "optional":
        return _OMIT
    trial = ParseCtx(budget)
    result = node.run(UNDEFINED, trial)
    if trial.issues:
        if optin is not None and optout == "optional":
            return _OMIT
        raise Bail
    if optin is None:
        raise Bail
    if result is not UNDEFINED or (optin == "defaulted" and optout != "optional"):
        if final:
            return _OMIT if result is UNDEFINED else _final(result, depth)
        return result
    return _OMIT


def _enum_absent(node: Schema, depth: int, budget: Budget, final: bool) -> Any:
    """A record's absent enum key: its value schema parses ``undefined``."""
    trial = ParseCtx(budget)
    result = node.run(UNDEFINED, trial)
    if trial.issues:
        raise Bail
    if result is UNDEFINED:
        return _OMIT
    return _final(result, depth) if final else result


def _strip_extras(value: dict[Any, Any], shape: dict[str, Schema], depth: int, run: _Run) -> None:
    """Keys a stripping object drops are still input: counted and checked."""
    for key, item in value.items():
        if key not in shape:
            if type(key) is not str:
                raise Bail
            run.nodes += _inner(item, depth)


def _loose_extras(value: dict[Any, Any], shape: dict[str, Schema], out: dict[str, Any], depth: int,
                  budget: Budget, run: _Run, counting: bool, final: bool) -> None:
    """A loose object's extra keys, kept as given (ObjectSchema.rest_keys)."""
    extra = [key for key in value if key not in shape]
    budget.fuel -= len(extra)
    if not final:
        run.raw += 1
    for key in extra:
        if type(key) is not str:
            raise Bail
        item = value[key]
        if counting:
            run.nodes += _inner(item, depth)
        if key == "__proto__":
            continue
        if type(item) is dict or type(item) is list:
            out[key] = to_json(item, depth) if final else copy_json(item)
        else:
            out[key] = _final(item, depth) if final else item


# -- the memo ------------------------------------------------------------------------------------


class ValidationMemo:
    """Results of one declaration's pure positions, reused when the input is the identical object.

    Pass one to :func:`mvu_store.schema.validate` for a series of validations of states that
    share structure (each state a path copy of the one before: the containers along a changed
    path are new objects, the rest are the earlier state's own). A position whose subtree is
    pure and whose input is the very object (``is``) it parsed in the previous call (or earlier
    in this one) takes its previous output instead of parsing again; the ancestors of a change
    parse again. Results are equal to a run without the memo, always, including issues,
    refusals and budgets (a hit charges the fuel and counts the input nodes it stands for).

    Contract: the caller never mutates a value after passing it with a memo, and treats the
    results as immutable (they share unchanged subtrees with earlier results of the same memo).
    The memo keeps the entries the last two calls used, so it holds at most the containers of
    two states (each at most MAX_NODES); positions that read ``Date.now()`` are keyed by
    ``now_ms`` too. It belongs to one thread at a time, and serves one declaration: given
    another, it starts afresh.
    """

    __slots__ = ("_current", "_owner", "_previous")

    def __init__(self) -> None:
        self._owner: object | None = None
        self._current: dict[tuple[int, int], tuple[Any, ...]] = {}
        self._previous: dict[tuple[int, int], tuple[Any, ...]] = {}

    def _begin(self, owner: object) -> None:
        if owner is not self._owner:
            self._owner = owner
            self._current = {}
        self._previous = self._current
        self._current = {}

    def _look(self, key: tuple[int, int]) -> tuple[Any, ...] | None:
        entry = self._current.get(key)
        if entry is None:
            entry = self._previous.get(key)
            if entry is not None:
                self._current[key] = entry
        return entry

    def _keep(self, key: tuple[int, int], entry: tuple[Any, ...]) -> None:
        self._current[key] = entry


# -- purity --------------------------------------------------------------------------------------

PURE, CLOCK, IMPURE = 0, 1, 2
"""A subtree's output depends on its input only, also on ``now_ms``, or may depend on more."""

_DATE = GLOBALS["Date"]
_DATE_NOW = _DATE.members["now"]
_WRITES = frozenset({"assign", "update", "assign_pattern", "delete"})
_PLAIN = (str, int, float, bool, type(None), Regex)


def purity(value: Any, seen: set[int] | None = None) -> int:
    """Decide at compile time, conservatively, what a schema (or a value it holds) depends on.

    Declaration functions are analysed by their syntax: a free name is read from the frames it
    closes over and must be a sealed or constant binding of a pure value (``Date`` makes it
    depend on the clock); writing a free name, an unknown kind of value, ``z.lazy`` or a function
    without its syntax make it impure. (Validations cannot change the declaration's state at all,
    sealed scopes and frozen constants refuse it; this is a second, independent line.)
    """
    seen = set() if seen is None else seen
    if isinstance(value, _PLAIN) or value is UNDEFINED or type(value) is SizeCheck:
        return PURE
    if id(value) in seen:
        return PURE  # already being decided higher up: it adds nothing new
    seen.add(id(value))
    if isinstance(value, Lazy):
        return IMPURE
    if isinstance(value, Schema):
        return _worst(purity(item, seen) for item in value.refs())
    if type(value) is dict:
        return _worst(purity(item, seen) for item in value.values())
    if type(value) in (list, tuple, set, frozenset):
        return _worst(purity(item, seen) for item in value)
    if isinstance(value, JsFunction):
        return _function_purity(value, seen)
    if isinstance(value, Builtin):
        return CLOCK if value is _DATE_NOW or value is _DATE else PURE
    if isinstance(value, Namespace):
        return PURE
    if isinstance(value, types.MethodType):  # a schema's bound parse, taken by runner()
        return purity(value.__self__, seen)
    if isinstance(value, types.FunctionType):  # a check: whatever it closes over decides
        return _worst(purity(cell.cell_contents, seen) for cell in value.__closure__ or ())
    if isinstance(value, types.BuiltinFunctionType | types.MethodDescriptorType):
        return PURE  # str.strip, operator.lt ...: Python's own, no state
    return IMPURE


def _worst(levels: Iterator[int]) -> int:
    return max(levels, default=PURE)


def _function_purity(fn: JsFunction, seen: set[int]) -> int:
    if not isinstance(fn.node, Node):
        return IMPURE
    names: set[str] = set()
    written: set[str] = set()
    level_floor = PURE
    for node in _walk(fn.node):
        if node.kind == "name":
            names.add(node.value)
        elif node.kind == "new" and node.value == "Date":
            level_floor = CLOCK  # `new Date()` reads the clock (with arguments it need not: conservative)
        elif node.kind in _WRITES:
            written.update(_targets(node))
    level = level_floor
    for name in names:
        frame = _binding(fn.closure, name)
        if frame is None:
            continue  # a name of the function's own (fresh on every call)
        if name in written or not (frame.sealed or (frame.consts is not None and name in frame.consts)):
            return IMPURE
        level = max(level, purity(frame.vars[name], seen))
        if level == IMPURE:
            return IMPURE
    return level


def _binding(frame: Frame | None, name: str) -> Frame | None:
    while frame is not None:
        if name in frame.vars:
            return frame
        frame = frame.parent
    return None


def _walk(node: Node) -> Iterator[Node]:
    stack: list[Any] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Node):
            yield item
            stack.extend(item.kids)
            stack.append(item.value)
        elif type(item) in (tuple, list):
            stack.extend(item)


def _targets(node: Node) -> Iterator[str]:
    """The names an assignment, update or delete writes through (the root of a member chain)."""
    if node.kind == "assign_pattern":
        yield from pattern_names(node.value)
        return
    target = node.kids[0]
    while isinstance(target, Node) and target.kind in {"member", "index"}:
        target = target.kids[0]
    if isinstance(target, Node) and target.kind == "name":
        yield target.value


# -- code generation -----------------------------------------------------------------------------


_NATIVE = frozenset({StringSchema, NumberSchema, BooleanSchema, LiteralSchema, NeverSchema, AnySchema,
                     Optional, Nullable, Readonly, NonOptional, Default, Pipe, Transform})


def _handled(node: Schema) -> bool:
    kind = type(node)
    if kind is ObjectSchema:
        return bool(node.mode != "catchall")  # type: ignore[attr-defined]
    if kind is RecordSchema:
        return bool(node.any_key or (node.enum_keys is not None and not node.partial))  # type: ignore[attr-defined]
    return kind is ArraySchema or kind in _NATIVE


def _leaf_chain(node: Schema) -> bool:
    """Whether ``node`` parses no container and calls the interpreter nowhere: its code is
    inlined where its parent handles the item, with no function call of its own."""
    kind = type(node)
    if kind in (StringSchema, NumberSchema, BooleanSchema, LiteralSchema, NeverSchema, Transform):
        return True
    if kind in (Optional, Nullable, Readonly, NonOptional, Default):
        return _leaf_chain(node.inner)  # type: ignore[attr-defined]
    if kind is Pipe:
        return _leaf_chain(node.left) and _leaf_chain(node.right)  # type: ignore[attr-defined]
    return False


class _Run:
    """One validation on the fast path: the interpreter's context, input nodes seen, the memo,
    and ``raw``: how many values raw-mode code made that to_json might write otherwise (a
    float, a default, declaration code's result ...; counted where they are made, generously)."""

    __slots__ = ("ctx", "keep", "look", "nodes", "now", "raw")

    def __init__(self, budget: Budget, memo: ValidationMemo | None) -> None:
        self.ctx = ParseCtx(budget)
        self.nodes = 1  # the root
        self.raw = 0
        self.now = budget.now_ms
        if memo is not None:
            self.look = memo._look
            self.keep = memo._keep


class Native:
    """A declaration's compiled fast path: ``run`` returns the normalised output or raises."""

    def __init__(self, root: Schema) -> None:
        self._plain = _Generator(memo=False).build(root)
        self._memo = _Generator(memo=True).build(root)

    def run(self, value: Any, budget: Budget, memo: ValidationMemo | None) -> Any:
        run = _Run(budget, memo)
        if memo is None:
            out = self._plain(value, budget, run)
        else:
            memo._begin(self)
            out = self._memo(value, budget, run)
        if run.nodes > MAX_NODES or budget.fuel < 0:
            raise Bail
        return out


class _Generator:
    """Writes the Python source of one fast path (see the module's docstring)."""

    def __init__(self, *, memo: bool) -> None:
        self.memo = memo
        self.space: dict[str, Any] = {
            "Bail": Bail, "UNDEFINED": UNDEFINED, "MISSING": _MISSING, "OMIT": _OMIT, "IssueSink": IssueSink,
            "copy_json": copy_json, "_inner": _inner, "_final": _final, "_any": _any, "_delegate": _delegate,
            "_absent": _absent, "_enum_absent": _enum_absent, "_strip_extras": _strip_extras,
            "_loose_extras": _loose_extras, "_literal": _literal, "_coerce_str": _coerce_str,
            "_coerce_bool": _coerce_bool, "_num_raw": _num_raw, "_num_final": _num_final,
            "_coerce_raw": _coerce_raw, "_coerce_final": _coerce_final,
        }
        self.names: dict[int, str] = {}
        self.source: list[str] = []
        self.count = 0
        self.keys = 0
        self.purity_cache: dict[int, int] = {}
        self.functions = FunctionCompiler(self.const, self.fresh, self.source)

    def build(self, root: Schema) -> Callable[[Any, Budget, _Run], Any]:
        name = self.position(root, 1, final=True, counting=True)
        exec(compile("\n".join(self.source), "<mvu-schema-fast-path>", "exec"), self.space)
        return self.space[name]  # type: ignore[no-any-return]

    def const(self, value: Any) -> str:
        name = self.names.get(id(value))
        if name is None:
            name = self.names[id(value)] = f"c{len(self.names)}"  # no stem of fresh() starts with c
            self.space[name] = value
        return name

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def position(self, node: Schema, depth: int, *, final: bool, counting: bool) -> str:
        """A function ``(v, b, r) -> output`` for ``node`` parsing an input at ``depth``."""
        name = self.fresh("p")
        lines = [f"def {name}(v, b, r):"]
        self.chain(node, "v", depth, final, counting, lines, "    ")
        lines.append("    return v")
        level = self.purity(node)
        if not (self.memo and final and counting and level != IMPURE):
            self.source.append("\n".join(lines))
            return name
        lines[0] = f"def {name}_parse(v, b, r):"
        self.source.append("\n".join(lines))
        key = self.keys = self.keys + 1  # one per memoised position
        clock = " and e[4] == r.now" if level == CLOCK else ""
        self.source.append(f"""def {name}(v, b, r):
    k = ({key}, id(v))
    e = r.look(k)
    if e is not None and e[0] is v{clock}:
        b.fuel -= e[2]
        r.nodes += e[3]
        return e[1]
    f = b.fuel
    n = r.nodes
    out = {name}_parse(v, b, r)
    r.keep(k, (v, out, f - b.fuel, r.nodes - n, r.now))
    return out""")
        return name

    def purity(self, node: Schema) -> int:
        level = self.purity_cache.get(id(node))
        if level is None:
            level = self.purity_cache[id(node)] = purity(node)
        return level

    def item(self, node: Schema, var: str, depth: int, final: bool, counting: bool, out: list[str], ind: str) -> None:
        """A container's item: inlined when it is a leaf chain, else a call to its position."""
        if _leaf_chain(node):
            self.chain(node, var, depth, final, counting, out, ind)
        else:
            out.append(f"{ind}{var} = {self.position(node, depth, final=final, counting=counting)}({var}, b, r)")

    def chain(self, node: Schema, var: str, depth: int, final: bool, counting: bool, out: list[str], ind: str) -> None:
        """Statements that replace ``var`` by what ``node`` makes of it (or raise Bail)."""
        if depth > MAX_DEPTH:
            out.append(f"{ind}raise Bail")
            return
        if not _handled(node):
            out.append(f"{ind}{var} = _delegate({self.const(node)}, {var}, {depth}, r, {counting}, {final})")
            return
        checks = node.checks
        getattr(self, "g_" + type(node).__name__)(node, var, depth, final and not checks, counting, out, ind)
        for check in checks:
            if type(check) is SizeCheck:  # runs on whatever has a length, as run_checks does
                out.append(f"{ind}if type({var}) is str or type({var}) is list:")
                out.append(f"{ind}    {var} = {self.const(check)}({var}, r.ctx)")
            else:
                out.append(f"{ind}{var} = {self.const(check)}({var}, r.ctx)")
            out.append(f"{ind}if r.ctx.issues: raise Bail")
        if checks:
            self.finalize(var, depth, final, out, ind)

    def finalize(self, var: str, depth: int, final: bool, out: list[str], ind: str) -> None:
        """Normalise what declaration code returned, or in raw mode count it as raw; ints and
        strings (most results) as they are."""
        action = f"{var} = _final({var}, {depth})" if final else "r.raw += 1"
        out.append(f"{ind}if type({var}) is not int and type({var}) is not str: {action}")

    # one method per natively parsed node type: (node, var, depth, final, counting, out, ind)

    def g_StringSchema(self, node: StringSchema, var: str, depth: int, final: bool, counting: bool,
                       out: list[str], ind: str) -> None:
        if node.coerce:
            out.append(f"{ind}{var} = _coerce_str({var})")
        else:
            out.append(f"{ind}if type({var}) is not str: raise Bail")

    def g_NumberSchema(self, node: NumberSchema, var: str, depth: int, final: bool, counting: bool,
                       out: list[str], ind: str) -> None:
        helper = ("_coerce_" if node.coerce else "_num_") + ("final" if final else "raw")
        call = f"{helper}({var})" if final else f"{helper}({var}, r)"
        if node.coerce:  # "85", the common coerced field: to_number's own first road, written out
            out.append(f"{ind}if type({var}) is not int: {var} = int({var}) if type({var}) is str and len({var}) < 16 "
                       f"and {var}.isdigit() and {var}.isascii() else {call}")
        else:
            out.append(f"{ind}if type({var}) is not int: {var} = {call}")

    def g_BooleanSchema(self, node: BooleanSchema, var: str, depth: int, final: bool, counting: bool,
                        out: list[str], ind: str) -> None:
        if node.coerce:
            out.append(f"{ind}{var} = _coerce_bool({var})")
        else:
            out.append(f"{ind}if type({var}) is not bool: raise Bail")

    def g_LiteralSchema(self, node: LiteralSchema, var: str, depth: int, final: bool, counting: bool,
                        out: list[str], ind: str) -> None:
        if node.values and all(type(value) is str for value in node.values):
            options = self.const(frozenset(node.values))
            out.append(f"{ind}if type({var}) is not str or {var} not in {options}: raise Bail")
        else:
            out.append(f"{ind}{var} = _literal({var}, {self.const(node.keyed)}, {final}, r)")

    def g_NeverSchema(self, node: NeverSchema, var: str, depth: int, final: bool, counting: bool,
                      out: list[str], ind: str) -> None:
        out.append(f"{ind}raise Bail")

    def g_AnySchema(self, node: AnySchema, var: str, depth: int, final: bool, counting: bool,
                    out: list[str], ind: str) -> None:
        out.append(f"{ind}{var} = _any({var}, {depth}, r, {counting}, {final})")

    def g_Optional(self, node: Optional, var: str, depth: int, final: bool, counting: bool,
                   out: list[str], ind: str) -> None:
        out.append(f"{ind}if {var} is UNDEFINED: raise Bail")
        self.chain(node.inner, var, depth, final, counting, out, ind)

    def g_Nullable(self, node: Nullable, var: str, depth: int, final: bool, counting: bool,
                   out: list[str], ind: str) -> None:
        out.append(f"{ind}if {var} is not None:")
        self.chain(node.inner, var, depth, final, counting, out, ind + "    ")

    def g_Readonly(self, node: Readonly, var: str, depth: int, final: bool, counting: bool,
                   out: list[str], ind: str) -> None:
        self.chain(node.inner, var, depth, final, counting, out, ind)

    def g_NonOptional(self, node: NonOptional, var: str, depth: int, final: bool, counting: bool,
                      out: list[str], ind: str) -> None:
        self.chain(node.inner, var, depth, final, counting, out, ind)
        out.append(f"{ind}if {var} is UNDEFINED: raise Bail")

    def g_Default(self, node: Default, var: str, depth: int, final: bool, counting: bool,
                  out: list[str], ind: str) -> None:
        out.append(f"{ind}if {var} is UNDEFINED: raise Bail")
        self.chain(node.inner, var, depth, final, counting, out, ind)
        if not node.prefault:  # an inner `undefined` would give the default again
            out.append(f"{ind}if {var} is UNDEFINED: raise Bail")

    def g_Pipe(self, node: Pipe, var: str, depth: int, final: bool, counting: bool,
               out: list[str], ind: str) -> None:
        right = node.right
        if not (final and type(right) is Transform and not right.checks):
            self.chain(node.left, var, depth, False, counting, out, ind)
            self.chain(right, var, depth, final, False, out, ind)  # it parses an output, not input
            return
        start = len(out)
        self.chain(node.left, var, depth, False, counting, out, ind)
        if self.call(right, var, depth, False, out, ind) in self.functions.selectors:
            # the result is parts of the parsed input: normalised already unless raw code made
            # a value to_json could change while the input was parsed (see _Run.raw)
            mark = self.fresh("m")
            out.insert(start, f"{ind}{mark} = r.raw")
            out.append(f"{ind}if r.raw != {mark}: {var} = _final({var}, {depth})")
        else:
            self.finalize(var, depth, True, out, ind)

    def g_Transform(self, node: Transform, var: str, depth: int, final: bool, counting: bool,
                    out: list[str], ind: str) -> None:
        self.call(node, var, depth, counting, out, ind)
        self.finalize(var, depth, final, out, ind)

    def call(self, node: Transform, var: str, depth: int, counting: bool, out: list[str], ind: str) -> str | None:
        """The transform's call on ``var``; the name of its compiled function, if it has one."""
        if counting:
            out.append(f"{ind}r.nodes += _inner({var}, {depth})")
        if node.raw_input:
            out.append(f"{ind}{var} = copy_json({var})")
        fn = self.const(node.fn)
        compiled = None if node.wants_ctx else self.functions.transform(node.fn)
        if compiled is not None:
            out.append(f"{ind}{var} = {compiled}(b, {var})")
        elif node.wants_ctx:
            out.append(f"{ind}{var} = {fn}.call(b, [{var}, IssueSink(r.ctx, {var}, continues=False)])")
            out.append(f"{ind}if r.ctx.issues: raise Bail")
        else:
            out.append(f"{ind}{var} = {fn}.call(b, [{var}])")
        return compiled

    def g_ObjectSchema(self, node: ObjectSchema, var: str, depth: int, final: bool, counting: bool,
                       out: list[str], ind: str) -> None:
        result, hits, item = self.fresh("o"), self.fresh("h"), self.fresh("x")
        track = node.mode != "strip" or counting
        out.append(f"{ind}if type({var}) is not dict: raise Bail")
        out.append(f"{ind}b.fuel -= {len(node.fields) + 1}")
        if counting:
            out.append(f"{ind}r.nodes += len({var})")
        out.append(f"{ind}{result} = {{}}")
        if track:  # the keys present: every field, less one in each absent branch (the rare one)
            out.append(f"{ind}{hits} = {len(node.shape)}")
        for key, schema in node.shape.items():
            literal = repr(key)
            # a subscript in a try costs less than .get() (3.11's try is free until it raises)
            out.append(f"{ind}try:")
            out.append(f"{ind}    {item} = {var}[{literal}]")
            out.append(f"{ind}except KeyError:")
            if track:
                out.append(f"{ind}    {hits} -= 1")
            out.append(f"{ind}    {item} = _absent({self.const(schema)}, {depth + 1}, b, {final})")
            if not final:  # a default, or undefined
                out.append(f"{ind}    r.raw += 1")
            out.append(f"{ind}    if {item} is not OMIT: {result}[{literal}] = {item}")
            out.append(f"{ind}else:")
            self.item(schema, item, depth + 1, final, counting, out, ind + "    ")
            out.append(f"{ind}    {result}[{literal}] = {item}")
        if node.mode == "strict":
            out.append(f"{ind}if {hits} != len({var}): raise Bail")
        elif node.mode == "loose":
            out.append(f"{ind}if {hits} != len({var}):")
            out.append(f"{ind}    _loose_extras({var}, {self.const(node.shape)}, {result}, {depth + 1}, b, r, "
                       f"{counting}, {final})")
        elif counting:
            out.append(f"{ind}if {hits} != len({var}): _strip_extras({var}, {self.const(node.shape)}, {depth + 1}, r)")
        out.append(f"{ind}{var} = {result}")

    def g_ArraySchema(self, node: ArraySchema, var: str, depth: int, final: bool, counting: bool,
                      out: list[str], ind: str) -> None:
        result, item = self.fresh("o"), self.fresh("x")
        out.append(f"{ind}if type({var}) is not list: raise Bail")
        for cap in node.caps:
            out.append(f"{ind}if len({var}) > {self.const(cap.limit)}: raise Bail")
        out.append(f"{ind}b.fuel -= len({var}) + 1")
        if counting:
            out.append(f"{ind}r.nodes += len({var})")
        out.append(f"{ind}{result} = []")
        out.append(f"{ind}for {item} in {var}:")
        self.item(node.item, item, depth + 1, final, counting, out, ind + "    ")
        out.append(f"{ind}    {result}.append({item})")
        out.append(f"{ind}{var} = {result}")

    def g_RecordSchema(self, node: RecordSchema, var: str, depth: int, final: bool, counting: bool,
                       out: list[str], ind: str) -> None:
        result, key, item = self.fresh("o"), self.fresh("k"), self.fresh("x")
        # the interpreter drops a value parsed to `undefined`; final code never makes one
        keep = (f"{ind}    {result}[{key}] = {item}" if final
                else f"{ind}    if {item} is not UNDEFINED: {result}[{key}] = {item}")
        out.append(f"{ind}if type({var}) is not dict: raise Bail")
        out.append(f"{ind}b.fuel -= len({var}) + 1")
        if counting:
            out.append(f"{ind}r.nodes += len({var})")
        out.append(f"{ind}{result} = {{}}")
        if node.any_key:
            out.append(f"{ind}for {key}, {item} in {var}.items():")
            out.append(f"{ind}    if type({key}) is not str: raise Bail")
            out.append(f"{ind}    if {key} == '__proto__':")  # skipped, as RecordSchema.parse does
            if counting:
                out.append(f"{ind}        r.nodes += _inner({item}, {depth + 1})")
            out.append(f"{ind}        continue")
            self.item(node.value, item, depth + 1, final, counting, out, ind + "    ")
            out.append(keep)
            out.append(f"{ind}{var} = {result}")
            return
        hits = self.fresh("h")
        out.append(f"{ind}{hits} = 0")
        assert node.enum_keys is not None
        for name in node.enum_keys:
            out.append(f"{ind}{key} = {name!r}")
            out.append(f"{ind}{item} = {var}.get({key}, MISSING)")
            out.append(f"{ind}if {item} is MISSING:")
            out.append(f"{ind}    {item} = _enum_absent({self.const(node.value)}, {depth + 1}, b, {final})")
            if not final:
                out.append(f"{ind}    r.raw += 1")
            out.append(f"{ind}    if {item} is not OMIT: {result}[{key}] = {item}")
            out.append(f"{ind}else:")
            out.append(f"{ind}    {hits} += 1")
            self.item(node.value, item, depth + 1, final, counting, out, ind + "    ")
            out.append(keep)
        out.append(f"{ind}if {hits} != len({var}): raise Bail")
        out.append(f"{ind}{var} = {result}")
