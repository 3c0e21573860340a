"""Recognising a card's command-processor declaration, and finding it in a card.

A script *declares* a processor when it is one complete inline script that both listens for
``global_Mvu_initialized`` (a call ``eventOn('global_Mvu_initialized', ...)``) and names
``<something>.COMMAND_PARSED``. Nothing here runs the script: tree-sitter reads it, and the few
facts above are looked up in the tree. A script without those two names is simply not a
declaration (``None``); one that names them but is no complete inline script (a syntax error,
an ``import``/``export`` statement, a dynamic ``import()``) is ``MVU_COMMAND_HOOK_DECLARATION``.

The declaration may name a *gate global*: ``const gate = globalThis.someName`` where ``gate``
is used as ``gate.latestUserText`` and ``gate.extractOperationBlock``. The sandbox then defines
``someName`` as its user-operation gate (see :mod:`mvu_store.processor.prelude`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser

from mvu_store.errors import Code, MvuError
from mvu_store.processor.prelude import INITIALIZED

MAX_SOURCE_UNITS = 64 * 1024
"""UTF-16 code units (JavaScript's string length) a declaration may have."""
PROTOCOL_VERSION = 1
COMMAND_PARSED_NAME = "COMMAND_PARSED"
_JS = Language(tree_sitter_javascript.language())
_GATE_NAME = re.compile(r"[A-Za-z_$][\w$]{0,127}", re.ASCII)
_RESERVED_GATES = frozenset({"Mvu", "console", "JSON", "Object", "__proto__", "constructor", "prototype",
                             "globalThis", "eventOn", "eventMakeLast", "__commandGate"})
_GATE_METHODS = frozenset({"latestUserText", "extractOperationBlock"})
_MODULE_STATEMENTS = frozenset({"import_statement", "export_statement"})
# Card lookup bounds: folders nest at most this deep, and this many entries of a level are read.
_MAX_DEPTH = 8
_MAX_ENTRIES = 128


@dataclass(frozen=True, slots=True)
class Declaration:
    source: str
    gate_global: str | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8", "surrogatepass")).hexdigest()


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def declaration(source: Any) -> Declaration | None:
    """The declaration ``source`` makes, or ``None`` when it makes none."""
    if not isinstance(source, str) or COMMAND_PARSED_NAME not in source or INITIALIZED not in source:
        return None
    if utf16_length(source) > MAX_SOURCE_UNITS:
        raise MvuError(Code.COMMAND_HOOK_LIMIT, f"a command processor's script is over {MAX_SOURCE_UNITS} code units",
                       limit=MAX_SOURCE_UNITS, kind="source")
    data = source.encode("utf-8", "surrogatepass")
    root = Parser(_JS).parse(data).root_node
    if root.has_error or any(node.type in _MODULE_STATEMENTS for node in root.children):
        raise MvuError(Code.COMMAND_HOOK_DECLARATION, "a command processor must be a complete inline script")
    names_event = listens = False
    aliases: dict[str, str] = {}  # local name -> the globalThis property it was read from
    uses: dict[str, set[str]] = {}
    for node in _walk(root):
        if node.type == "member_expression":
            target, prop = node.child_by_field_name("object"), node.child_by_field_name("property")
            if target is None or prop is None or prop.type != "property_identifier":
                continue
            name = _text(prop)
            names_event = names_event or name == COMMAND_PARSED_NAME
            if target.type == "identifier" and name in _GATE_METHODS:
                uses.setdefault(_text(target), set()).add(name)
        elif node.type == "call_expression":
            function = node.child_by_field_name("function")
            if function is not None and function.type == "import":
                raise MvuError(Code.COMMAND_HOOK_DECLARATION, "a command processor imports no modules")
            listens = listens or _listens_for_init(node)
        elif node.type == "variable_declarator":
            alias = _global_alias(node)
            if alias is not None:
                aliases[alias[0]] = alias[1]
    if not (names_event and listens):
        return None
    gates = {aliases[name] for name, methods in uses.items() if methods == _GATE_METHODS and name in aliases}
    if len(gates) > 1:
        raise MvuError(Code.COMMAND_HOOK_DECLARATION, "the command processor's gate global is ambiguous")
    gate = next(iter(gates), None)
    if gate is not None and (not _GATE_NAME.fullmatch(gate) or gate in _RESERVED_GATES):
        raise MvuError(Code.COMMAND_HOOK_DECLARATION, "the command processor's gate global is not a usable name")
    return Declaration(source, gate)


def _walk(root: Node) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


def _listens_for_init(call: Node) -> bool:
    function, arguments = call.child_by_field_name("function"), call.child_by_field_name("arguments")
    if function is None or function.type != "identifier" or _text(function) != "eventOn" or arguments is None:
        return False
    first = arguments.named_children[0] if arguments.named_children else None
    return first is not None and first.type == "string" and _text(first)[1:-1] == INITIALIZED


def _global_alias(declarator: Node) -> tuple[str, str] | None:
    """``X = globalThis.Y`` as ``(X, Y)``."""
    name, value = declarator.child_by_field_name("name"), declarator.child_by_field_name("value")
    if name is None or value is None or name.type != "identifier" or value.type != "member_expression":
        return None
    target, prop = value.child_by_field_name("object"), value.child_by_field_name("property")
    if target is None or prop is None or target.type != "identifier" or _text(target) != "globalThis" \
            or prop.type != "property_identifier":
        return None
    return _text(name), _text(prop)


# -- a card's declaration ----------------------------------------------------------------------


def card_declaration(card: Any) -> Declaration | None:
    """The one declaration among a card's enabled Tavern Helper scripts (``None``: none).

    ``card`` is the card JSON (``{spec, data}``, its ``data`` object, or ``{source: {raw}}``).
    A script counts when it and every folder above it are enabled (``enabled`` not false,
    ``disabled`` not true); two different declarations are ``MVU_COMMAND_HOOK_CONFLICT``.
    """
    raw = card.get("source", {}).get("raw", card) if isinstance(card, dict) and isinstance(
        card.get("source"), dict) else card
    data = raw.get("data", raw) if isinstance(raw, dict) else None
    extensions = data.get("extensions") if isinstance(data, dict) else None
    helper = _as_object(extensions.get("tavern_helper")) if isinstance(extensions, dict) else None
    scripts = helper.get("scripts") if helper is not None else None
    found: dict[str, Declaration] = {}
    for content in _active_contents(scripts, 0):
        made = declaration(content)
        if made is not None:
            found.setdefault(made.source, made)
    if len(found) > 1:
        raise MvuError(Code.COMMAND_HOOK_CONFLICT, "the card declares more than one command processor")
    return next(iter(found.values()), None)


def _as_object(value: Any) -> dict[str, Any] | None:
    """An object, or the same object stored as ``[key, value]`` pairs (Tavern Helper's way)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, list) and all(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                                       for pair in value):
        return dict(value)
    return None


def _active(item: dict[str, Any]) -> bool:
    return item.get("enabled") is not False and item.get("disabled") is not True


def _active_contents(scripts: Any, depth: int) -> Iterator[str]:
    if not isinstance(scripts, list) or depth > _MAX_DEPTH:
        return
    for entry in scripts[:_MAX_ENTRIES]:
        if not isinstance(entry, dict):
            continue
        value = entry.get("value")
        item = value if isinstance(value, dict) else entry
        if not (_active(entry) and _active(item)):
            continue
        if isinstance(item.get("content"), str):
            yield item["content"]
        yield from _active_contents(item.get("scripts", item.get("children")), depth + 1)
