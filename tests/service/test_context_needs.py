"""Each part of the service reads only what its protocol in ``service/context.py`` names.

mypy (``make lint``) proves it while type checking; this test says it on its own, from the
source: every ``ctx`` a part takes is annotated with one of the context's protocols, every member
the part reads through it is one that protocol names, no part but ``MvuService`` takes the whole
``ServiceContext``, and ``ServiceContext`` has every member a protocol names.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Protocol

import pytest

from mvu_store.service import context
from mvu_store.service.context import ServiceContext

SERVICE = Path(context.__file__).parent
OWNERS = {"context.py", "service.py"}
"""Where the context is defined, and MvuService, which makes it and hands it to the parts."""


def members(protocol: type) -> set[str]:
    """The members a part protocol names: its own and its bases' (all public names)."""
    return {name for klass in protocol.__mro__ if klass not in (object, Protocol)
            for name in vars(klass) if not name.startswith("_")}


def part_protocols() -> dict[str, type]:
    return {name: value for name, value in vars(context).items()
            if name.endswith("Context") and isinstance(value, type) and value is not ServiceContext}


def reads_of(tree: ast.Module) -> set[str]:
    """Every name read as ``ctx.<name>`` or ``self._ctx.<name>``."""
    def is_ctx(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id == "ctx") or (
            isinstance(node, ast.Attribute) and node.attr == "_ctx"
            and isinstance(node.value, ast.Name) and node.value.id == "self")

    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and is_ctx(node.value)}


def ctx_annotations(tree: ast.Module) -> set[str]:
    """The annotations of every parameter named ``ctx``."""
    return {ast.unparse(node.annotation) for node in ast.walk(tree) if isinstance(node, ast.arg)
            and node.arg == "ctx" and node.annotation is not None}


PARTS = sorted(path.name for path in SERVICE.glob("*.py")
               if path.name not in OWNERS and ctx_annotations(ast.parse(path.read_text(encoding="utf-8"))))


def test_the_parts_are_found() -> None:
    # Every part named in context.py's protocols takes its ctx here (none is found vacuously).
    assert {"reply_turn.py", "pipeline.py", "reads.py", "allocation.py", "editing.py", "branching.py",
            "prompting.py", "card_scripts.py", "card_scopes.py", "request_lease.py",
            "observed_requests.py"} <= set(PARTS)


@pytest.mark.parametrize("part", PARTS)
def test_a_part_reads_only_what_its_protocol_names(part: str) -> None:
    tree = ast.parse((SERVICE / part).read_text(encoding="utf-8"))
    protocols = part_protocols()
    annotated = ctx_annotations(tree)
    assert annotated <= set(protocols), f"{part}: ctx annotated {annotated - set(protocols)}, not a part protocol"
    allowed = set().union(*(members(protocols[name]) for name in annotated))
    assert reads_of(tree) <= allowed, f"{part} reads {reads_of(tree) - allowed} beyond {sorted(annotated)}"


@pytest.mark.parametrize("part", PARTS)
def test_no_part_takes_the_whole_context(part: str) -> None:
    source = (SERVICE / part).read_text(encoding="utf-8")
    imported = {alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert "ServiceContext" not in imported


@pytest.mark.parametrize("protocol", sorted(part_protocols()))
def test_the_service_context_has_what_each_protocol_names(protocol: str) -> None:
    named = members(part_protocols()[protocol])
    assert named and all(hasattr(ServiceContext, name) for name in named), named


def test_a_read_beyond_the_protocol_is_found() -> None:
    # The check above, on a part that reads the host through a protocol without it.
    tree = ast.parse("class Part:\n    def __init__(self, ctx: TurnContext) -> None:\n        self._ctx = ctx\n"
                     "    def run(self) -> None:\n        self._ctx.host\n")
    assert reads_of(tree) - members(context.TurnContext) == {"host"}
