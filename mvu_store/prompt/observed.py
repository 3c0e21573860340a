"""What of a recorded ``request/assembly`` tells that the state reached the model (A-4).

A host records the request it assembled (``request/assembly``: its ``owner``, the ``messages`` and
the assembly's ``nodes`` and ``diagnostics``), then reports the request it gives the model. The
state reached the request when both carry the same messages and a node of the assembly carries
the block a state diagnostic names. Only that evidence is kept: the messages' digest and the
diagnostics a node carries, never the messages' text (the model request stays with the host).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mvu_store.jsonvalue import JsonValue, js_json, normalize, sha256_hex

OWNERS = frozenset({"pmp-dsh-tavern", "dsh-prompt-assembler"})
"""The assemblers whose record counts (another owner's is not this state's evidence)."""
STATE_CODE = "MVU_RESOURCE_VERSION"
WORLD_BOOK_CODE = "WORLD_BOOK_MVU_VARIABLE_VERSION"
MAX_OBSERVED = 256
"""Blocks kept per assembly: a request carries a few states, not hundreds."""
MAX_TEXT = 300
MAX_CHECKS = 65_536
"""Node and child comparisons per assembly. Each state diagnostic is compared with every node, so
a body of n nodes and n diagnostics costs n squared: a real assembly needs a few hundred, and past
this bound the diagnostics left are simply not matched (fewer facts, never a wrong one)."""
_KEPT = ("code", "resourceId", "blockId", "blockResourceId", "revision", "configRevision")


@dataclass(frozen=True, slots=True)
class AssemblyEvidence:
    owner: str | None
    messages_sha256: str | None
    observed: list[dict[str, JsonValue]]

    def to_json(self) -> dict[str, JsonValue]:
        kept: dict[str, JsonValue] = {"observed": list(self.observed)}
        if self.owner is not None:
            kept["owner"] = self.owner
        if self.messages_sha256 is not None:
            kept["messagesSha256"] = self.messages_sha256
        return kept


def messages_digest(messages: Any) -> str:
    """The SHA-256 of the messages as JavaScript writes them (numbers as JSON reads them)."""
    normalized, _, _ = normalize(messages)
    return sha256_hex(js_json(normalized))


def evidence(data: Mapping[str, Any]) -> AssemblyEvidence:
    """The evidence of an assembly record: derived from a whole one (``messages``), or read back
    from one the store kept (``messagesSha256``, ``observed``)."""
    if "messages" not in data:
        stored, owner, digest = data.get("observed"), data.get("owner"), data.get("messagesSha256")
        return AssemblyEvidence(owner if isinstance(owner, str) else None,
                                digest if isinstance(digest, str) else None,
                                [item for item in stored if isinstance(item, dict)] if isinstance(stored, list) else [])
    messages = data["messages"]
    owner = data.get("owner")
    assembly = data.get("assembly")
    nodes = assembly.get("nodes") if isinstance(assembly, Mapping) else None
    diagnostics = assembly.get("diagnostics") if isinstance(assembly, Mapping) else None
    count = len(messages) if isinstance(messages, list) else 0
    observed = _observed(nodes, diagnostics, count) if isinstance(nodes, list) and isinstance(diagnostics, list) \
        else []
    return AssemblyEvidence(owner[:MAX_TEXT] if isinstance(owner, str) else None,
                            messages_digest(messages), observed)


def _observed(nodes: list[Any], diagnostics: list[Any], count: int) -> list[dict[str, JsonValue]]:
    """The state diagnostics a node carries, within :data:`MAX_OBSERVED` and :data:`MAX_CHECKS`."""
    observed: list[dict[str, JsonValue]] = []
    checks = 0
    for diagnostic in diagnostics:
        if len(observed) == MAX_OBSERVED:
            break
        if _kind(diagnostic) is None:
            continue
        for node in nodes:
            children = node.get("children") if isinstance(node, Mapping) else None
            checks += 1 + (len(children) if isinstance(children, list) else 0)
            if checks > MAX_CHECKS:
                return observed
            if _carries(node, diagnostic, count):
                observed.append(_kept(diagnostic))
                break
    return observed


def _kind(diagnostic: Any) -> str | None:
    if not isinstance(diagnostic, Mapping) or diagnostic.get("code") not in (STATE_CODE, WORLD_BOOK_CODE):
        return None
    if not isinstance(diagnostic.get("resourceId"), str) or not isinstance(diagnostic.get("blockId"), str):
        return None
    return str(diagnostic["code"])


def _carries(node: Any, diagnostic: Mapping[str, Any], count: int) -> bool:
    """Whether ``node`` put the diagnostic's block into the messages: it spans real messages and
    names the block (its id ends with it, or a child of it is the block)."""
    if not isinstance(node, Mapping):
        return False
    start, span = node.get("start"), node.get("count")
    if type(start) is not int or type(span) is not int or span <= 0 or start < 0 or start + span > count:
        return False
    block = diagnostic["blockId"]
    source = node.get("source")
    if isinstance(source, Mapping):
        if diagnostic["code"] == STATE_CODE:
            same = source.get("resourceId") == diagnostic["resourceId"]
        else:
            same = (source.get("resourceId") == diagnostic.get("blockResourceId")
                    and source.get("sourceId") == "worldbook")
        node_id = node.get("id")
        if same and isinstance(node_id, str) and node_id.endswith(":" + block):
            return True
    children = node.get("children")
    return isinstance(children, list) and any(
        isinstance(child, Mapping) and child.get("name") == block and isinstance(child.get("source"), Mapping)
        and child["source"].get("resourceId") == diagnostic["resourceId"] for child in children)


def _kept(diagnostic: Mapping[str, Any]) -> dict[str, JsonValue]:
    kept: dict[str, JsonValue] = {}
    for key in _KEPT:
        value = diagnostic.get(key)
        if isinstance(value, str):
            kept[key] = value[:MAX_TEXT]
        elif type(value) is int or (value is None and key in diagnostic):
            kept[key] = value
    return kept
