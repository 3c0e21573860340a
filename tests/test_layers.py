"""The layering rules, written as import-linter contracts in pyproject.toml, hold in the code.

Each import-linter contract is one test, so a failure names the rule an import broke. Beside
them, a check of our own finds module cycles with the package ``__init__`` modules included
(import-linter's acyclic contract compares siblings only, so ``ledger/__init__.py`` importing
``ledger.repository`` while that imports ``from mvu_store.ledger import X`` passes it).

Every import statement counts, wherever it stands: at module level, inside a function (the
command line imports the store lazily, and a lazy import is still a dependency) and under
``TYPE_CHECKING`` (a type-only import still ties the two modules' designs together).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("mvu_store", "mvu_api")
CONTRACTS = [contract["id"] for contract in
             tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]]


@pytest.mark.parametrize("contract", CONTRACTS)
def test_the_import_contract_is_kept(contract: str) -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-logo", "--no-cache", "--contract", contract], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _modules() -> dict[str, Path]:
    """Every module of the two packages by dotted name (a package by its ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(tree: ast.AST, name: str, is_package: bool, known: dict[str, Path]) -> Iterator[str]:
    """The modules of ours an AST imports: ``from a import b`` is ``a.b`` when that is a module,
    else ``a``; relative imports resolve against the module's own package."""
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        yield from (target for target in targets if target in known and target != name)


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: set(_imported(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py", known))
            for name, path in known.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return found


def test_no_module_imports_itself_round_a_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_check_sees_lazy_relative_and_package_imports() -> None:
    """The check itself: a cycle closed by a function's import, through a package's ``__init__``
    and by a relative import is each found."""
    known = {name: Path() for name in ("p", "p.a", "p.b", "p.c")}
    sources = {
        "p": "from p.a import thing\n",
        "p.a": "def later():\n    from p import b\n",
        "p.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n",
        "p.c": "from p import other_name\n",
    }
    graph = {name: set(_imported(ast.parse(text), name, name == "p", known)) for name, text in sources.items()}
    assert graph == {"p": {"p.a"}, "p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p"}}
    assert _cycles(graph) == [["p", "p.a", "p.b", "p.c"]]
    graph["p.c"] = set()
    assert _cycles(graph) == []
