"""Forks made by ``Ledger.fork`` (linked ancestry, no copies) export as the original's fork children."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import CommitRequest, Ledger, NewResource
from mvu_store.ledger.transfer import export_directory, import_directory
from tests.ledger.test_transfer import as_json, read, state

TEMPLATE = "mvu:character-0123456789abcdef0123456789abcdef"
CREATED = {"s-1": 1_700_000_000_000, "s-2": 1_700_000_100_000, "s-3": "2026-11-29T20:00:00Z"}


def js_sha(value: Any) -> str:
    """sha256 of ``JSON.stringify(value)``, written out independently of the code under test."""
    return hashlib.sha256(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def instance(resource_id: str, session_id: str) -> NewResource:
    identity = {"sessionId": session_id, "createdAt": CREATED[session_id]}
    return NewResource(id=resource_id, kind="instance", initial={"stat_data": {"hp": 10}},
                       definition={"id": resource_id, "templateId": TEMPLATE, "instance": identity,
                                   "sessionIds": [session_id]},
                       template_id=TEMPLATE, session_id=session_id, session_created_at=CREATED[session_id])


def reply_source(session_id: str, seq: int) -> dict[str, JsonValue]:
    return {"sessionId": session_id, "sessionFormatVersion": 1, "sessionCreatedAt": CREATED[session_id],
            "eventType": "assistant/message", "messageId": f"m-{seq}", "messageSeq": seq, "turn": seq // 2,
            "step": None, "endSeq": seq + 1}


async def reply(ledger: Ledger, resource_id: str, session_id: str, seq: int, hp: int, *,
                error: str | None = None) -> str:
    head = await ledger.head(resource_id)
    outcome = await ledger.commit(CommitRequest(
        resource_id, head.revision, "failed" if error else "reply", {"stat_data": {"hp": hp}},
        js_sha(f"reply {seq}"), reply_source(session_id, seq), error=error))
    assert outcome.version_key is not None
    return outcome.version_key


async def native_forks(ledger: Ledger) -> dict[str, str]:
    """A parent with every version kind, a child, a grandchild, and a fork at an inherited version.

    Returns the version keys by name.
    """
    keys: dict[str, str] = {}
    await ledger.create_resource(instance("mvu:parent", "s-1"))
    keys["r1"] = await reply(ledger, "mvu:parent", "s-1", 2, 9)
    keys["r2"] = await reply(ledger, "mvu:parent", "s-1", 4, 8)
    keys["failed"] = await reply(ledger, "mvu:parent", "s-1", 6, 0, error="MVU_PARSE")
    # The failed reply claimed revision 3 (the head stayed on r2): the edit is written at 3.
    manual = await ledger.commit(CommitRequest(
        "mvu:parent", 3, "manual", {"stat_data": {"hp": 12}}, js_sha("manual"),
        {**reply_source("s-1", 4), "manual": True, "card": False}, operation_id="op-manual",
        meta={"sourceFingerprint": js_sha("reply 4")}))
    keys["manual"] = str(manual.version_key)
    await ledger.set_management_mode("mvu:parent", mode="managed", expected_revision=4, operation_id="op-mode",
                                     fingerprint=js_sha("mode"))
    keys["r3"] = await reply(ledger, "mvu:parent", "s-1", 8, 7)
    # The child forks at the manual edit: it inherits both replies, the failed one and the edit.
    await ledger.fork("mvu:parent", instance("mvu:child", "s-2"), at_key=keys["manual"])
    await ledger.put_checkpoint("mvu:child", session_id="s-2", turn=5, seq=9)
    keys["child"] = await reply(ledger, "mvu:child", "s-2", 10, 5)
    await ledger.fork("mvu:child", instance("mvu:grandchild", "s-3"), at_key=keys["child"])
    # Not an instance: no identity to derive keys from (the resource id stands in for it).
    await ledger.fork("mvu:child", NewResource(id="mvu:shared-fork", kind="shared", initial={"stat_data": {}},
                                               definition={"id": "mvu:shared-fork", "sharing": "shared"}),
                      at_key=keys["r1"])
    assert await ledger.audit() == []
    return keys


def copy_key(identity: Any, key: str) -> str:
    return js_sha(["inherited", identity, key])


async def test_a_native_fork_exports_as_the_originals_fork_child(ledger: Ledger, tmp_path: Path) -> None:
    keys = await native_forks(ledger)
    await export_directory(ledger, tmp_path / "out")
    resources = read(tmp_path / "out", "mvu-instances.json")["resources"]

    child = resources["mvu:child"]
    s2 = {"sessionId": "s-2", "createdAt": CREATED["s-2"]}
    inherited = child["versions"][:4]
    assert [v["inheritedFrom"]["versionKey"] for v in inherited] == [keys[n] for n in ("r1", "r2", "failed", "manual")]
    assert [v["key"] for v in inherited] == [copy_key(s2, keys[n]) for n in ("r1", "r2", "failed", "manual")]
    assert [v["inheritedFrom"]["revision"] for v in inherited] == [1, 2, 3, 4]
    assert all(v["revision"] == 0 and v["inheritedFrom"]["sessionId"] == "s-1" for v in inherited)
    assert all((v["source"]["inherited"], v["source"]["manual"], v["source"]["card"]) == (True, False, False)
               and v["source"]["sessionId"] == "s-2" and v["source"]["sessionCreatedAt"] == CREATED["s-2"]
               for v in inherited)
    # The manual edit's copy carries the fingerprint of the reply it was made on, and no receipt.
    assert inherited[3]["fingerprint"] == js_sha("reply 4") and "operationId" not in inherited[3]
    own = child["versions"][4]
    assert (own["key"], own["parentKey"], own["revision"]) == (keys["child"], inherited[3]["key"], 1)
    assert child["currentKey"] == keys["child"] and child["revision"] == 1
    assert child["checkpoints"][0]["versionKey"] == inherited[3]["key"]

    # The grandchild's history is copies of the child's: its copies' copies, then its own reply.
    grandchild = resources["mvu:grandchild"]
    s3 = {"sessionId": "s-3", "createdAt": CREATED["s-3"]}
    assert [v["inheritedFrom"]["versionKey"] for v in grandchild["versions"]] == [v["key"] for v in child["versions"]]
    assert grandchild["versions"][-1]["key"] == copy_key(s3, keys["child"])
    assert grandchild["currentKey"] == grandchild["versions"][-1]["key"] and grandchild["revision"] == 0

    shared = resources["mvu:shared-fork"]
    assert [v["key"] for v in shared["versions"]] == [copy_key("mvu:shared-fork", keys["r1"])]
    assert shared["versions"][0]["source"]["sessionId"] == "s-1"
    assert shared["currentKey"] == shared["versions"][0]["key"]


async def test_a_native_fork_reimports_to_a_fixed_point(ledger: Ledger, others: Callable[..., Awaitable[Ledger]],
                                                        tmp_path: Path) -> None:
    await native_forks(ledger)
    native = state(await ledger.snapshot())
    await export_directory(ledger, tmp_path / "first")

    copy = await others()
    await import_directory(copy, tmp_path / "first")
    assert await copy.audit() == []
    await export_directory(copy, tmp_path / "second")
    assert as_json(read(tmp_path / "second", "mvu-instances.json")) == as_json(
        read(tmp_path / "first", "mvu-instances.json"))
    # The imported child keeps writing on top of its inherited history.
    await reply(copy, "mvu:grandchild", "s-3", 12, 4)
    assert await copy.audit() == []

    # Importing the export into the ledger it came from finds everything already there.
    again = await import_directory(ledger, tmp_path / "first")
    assert again.unchanged
    assert state(await ledger.snapshot()) == native
