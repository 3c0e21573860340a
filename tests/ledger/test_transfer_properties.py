"""Property tests of the importer's validation: mutate a valid directory at random.

Whatever the mutation, an import either succeeds, and then is lossless and idempotent, or is an
``MvuError`` that left the ledger exactly as it was: never another exception, never partial rows.
"""

from __future__ import annotations

import copy
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import dumps, normalize
from mvu_store.ledger import open_ledger
from mvu_store.ledger.json_ledger import parse_instances
from mvu_store.ledger.transfer import import_directory
from mvu_store.ledger.transfer_rows import Snapshot
from tests.ledger.transfer_fixtures import realistic

BASE = realistic().instances_document()
FACTS = {"version": 1, "records": realistic().facts}
# Field names the importer gives meaning to: mutations that add or drop them reach its branches.
FIELDS = ["key", "revision", "variables", "source", "error", "inheritedFrom", "operationId", "fingerprint", "result",
          "parentKey", "currentKey", "checkpoints", "managementOperations", "activationSeqs", "initial", "definition",
          "card", "manual", "sessionId", "turn", "seq", "versionKey", "installed", "kind", "__proto__", "prototype"]
KEYS = st.sampled_from(FIELDS) | st.text(max_size=6)
SCALARS = (
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    | st.sampled_from(["", "0" * 64, "x" * 300, "a\x00b", "native", "mvu:instance-x"])
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=6)
MUTATION = st.tuples(st.sampled_from(["replace", "delete", "insert", "duplicate"]), st.integers(min_value=0),
                     KEYS, VALUES)


def paths(document: Any) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), document)]
    while stack:
        path, value = stack.pop()
        found.append(path)
        children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack.extend(((*path, key), child) for key, child in children)
    return found


def mutate(document: Any, mutations: list[tuple[str, int, str, Any]]) -> Any:
    document = copy.deepcopy(document)
    for action, pick, key, generated in mutations:
        value = copy.deepcopy(generated)  # hypothesis may hand the same object to two mutations
        everywhere = paths(document)
        path = everywhere[pick % len(everywhere)]
        target = document
        for part in path:
            target = target[part]
        if action in ("insert", "duplicate") and isinstance(target, dict):
            target[key] = copy.deepcopy(next(iter(target.values()))) if action == "duplicate" and target else value
        elif action in ("insert", "duplicate") and isinstance(target, list):
            target.insert(0, copy.deepcopy(target[-1]) if action == "duplicate" and target else value)
        elif path:
            parent = document
            for part in path[:-1]:
                parent = parent[part]
            if action == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
    return document


def as_json(value: Any) -> str:
    normalized, _, _ = normalize(value, max_nodes=10**9, max_depth=10**9)
    return dumps(normalized)


@settings(max_examples=300, deadline=None)
@given(st.lists(MUTATION, min_size=1, max_size=3))
def test_the_validator_accepts_or_refuses_with_a_path(mutations: list[tuple[str, int, str, Any]]) -> None:
    data = json.dumps(mutate(BASE, mutations)).encode()
    path: str | None = None
    try:
        parse_instances(data, state_limit=2 * 1024 * 1024, now_ms=0)
    except MvuError as error:
        event(f"refused {error.code}")
        path = error.details["path"]
    else:
        event("accepted")
    assert path is None or path == "" or path.startswith("/")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(MUTATION, min_size=1, max_size=3), st.booleans(),
       st.none() | st.integers(min_value=1, max_value=40_000))
async def test_an_import_is_whole_lossless_or_nothing(ledger_url: str, mutations: list[tuple[str, int, str, Any]],
                                                     in_facts: bool, cut: int | None) -> None:
    files = {"mvu-instances.json": BASE, "mvu-facts.json": FACTS}
    target = "mvu-facts.json" if in_facts else "mvu-instances.json"
    texts = {name: json.dumps(mutate(document, mutations) if name == target else document)
             for name, document in files.items()}
    if cut is not None:  # damage the text itself as well, now and then
        texts[target] = texts[target][:cut]
    ledger = await open_ledger(ledger_url, ledger_id=f"h-{uuid.uuid4().hex[:20]}")
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for name, text in texts.items():
                (Path(scratch) / name).write_text(text)
            try:
                await import_directory(ledger, scratch)
            except MvuError as error:
                event(f"refused {error.code}")
                assert await ledger.snapshot() == Snapshot()
                assert (await ledger.usage()).used_bytes == 0
                return
            event("imported")
            stored = await ledger.snapshot()
            expected = {"templates": {}, "seeds": {}, "discoverySelections": {},
                        **json.loads(texts["mvu-instances.json"]), "facts": json.loads(texts["mvu-facts.json"])}
            for section, got in (("resources", stored.resources), ("templates", stored.templates),
                                 ("seeds", stored.seeds), ("discoverySelections", stored.selections),
                                 ("facts", {"version": 1, "records": stored.facts})):
                assert as_json(got) == as_json(expected[section])
            assert (await import_directory(ledger, scratch)).unchanged
    finally:
        await ledger.close()
