"""A receipt whose result repeats the committed state stores that state once, in its version:
the row holds a reference, and a replay or an export gives back the result as it was written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from mvu_store.errors import MvuError
from mvu_store.ledger import CommitRequest, Ledger, NewResource
from mvu_store.ledger.query import Query
from mvu_store.ledger.results import STATE_FIELDS
from mvu_store.ledger.transfer import export_directory, import_directory

STATE = {"stat_data": {"hp": 10}}
RECEIPT = Query("test-receipt", lambda: text(
    "SELECT result, bytes FROM receipts WHERE ledger_id = :ledger_id AND operation_id = :operation_id"))


def edit(revision: int, hp: int, operation: str) -> tuple[CommitRequest, dict[str, Any]]:
    """A request like the service's edit: its result holds the very state it commits."""
    variables = {"stat_data": {"hp": hp, "名前": "白娅"}, "display_data": {"hp": hp}}
    result = {"id": "mvu:a", "type": "mvu-state", "content": variables, "revision": revision + 1,
              "scope": {"sessionId": "s"}, "authority": "local"}
    return CommitRequest("mvu:a", revision, "manual", variables, f"fp-{operation}", {"manual": True},
                         operation_id=operation, result=result), json.loads(json.dumps(result))


@pytest.fixture
async def resource(ledger: Ledger) -> str:
    await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial=STATE, definition={}))
    return "mvu:a"


async def test_the_receipt_row_names_the_state_instead_of_holding_it(ledger: Ledger, resource: str) -> None:
    request, result = edit(0, 20, "op-1")
    outcome = await ledger.commit(request)

    assert outcome.result == result and not outcome.replayed
    row = await ledger._store.read_one(RECEIPT, operation_id="op-1")
    assert row is not None
    stored = json.loads(row["result"])
    assert stored[STATE_FIELDS] == ["content"] and "content" not in stored
    assert "白娅" not in row["result"]


async def test_a_replay_returns_the_state_from_the_version(ledger: Ledger, resource: str) -> None:
    first, result = edit(0, 20, "op-1")
    await ledger.commit(first)
    second, _ = edit(1, 30, "op-2")
    await ledger.commit(second)

    again, _ = edit(0, 20, "op-1")
    replay = await ledger.commit(again)

    assert replay.replayed and replay.revision == 1
    assert replay.result == result  # the first edit's state, not the head's


async def test_a_result_that_only_equals_the_state_is_stored_whole(ledger: Ledger, resource: str) -> None:
    request, result = edit(0, 20, "op-1")
    assert isinstance(request.result, dict)
    request.result["content"] = json.loads(json.dumps(request.variables))  # equal, not the same object
    await ledger.commit(request)

    row = await ledger._store.read_one(RECEIPT, operation_id="op-1")
    assert row is not None and json.loads(row["result"]) == result


async def test_export_puts_the_state_back_and_import_refuses_the_stored_form(
        ledger: Ledger, resource: str, tmp_path: Path) -> None:
    request, result = edit(0, 20, "op-1")
    await ledger.commit(request)

    await export_directory(ledger, tmp_path)
    document = json.loads((tmp_path / "mvu-instances.json").read_text())
    versions = document["resources"]["mvu:a"]["versions"]
    exported = next(version for version in versions if version.get("operationId") == "op-1")
    assert exported["result"] == result and exported["result"]["content"] == exported["variables"]

    exported["result"] = {key: value for key, value in result.items() if key != "content"}
    exported["result"][STATE_FIELDS] = ["content"]
    (tmp_path / "mvu-instances.json").write_text(json.dumps(document))
    with pytest.raises(MvuError) as refused:
        await import_directory(ledger, tmp_path)
    assert refused.value.code == "MVU_JSON" and STATE_FIELDS in str(refused.value)
