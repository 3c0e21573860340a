"""A commit may hand the ledger the canonical bytes of its state, measured once by the update:
the ledger stores them as they are and still holds them to its state budget."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import canonical_text
from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger
from mvu_store.ledger.query import Query

BODY = Query("test-head-body", lambda: text(
    "SELECT b.body FROM resources r JOIN blobs b ON b.ledger_id = r.ledger_id AND b.hash = r.head_hash"
    " WHERE r.ledger_id = :ledger_id AND r.id = :id"))


async def test_the_given_bytes_are_what_the_version_stores(ledger: Ledger) -> None:
    await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}}, definition={}))
    variables = {"stat_data": {"hp": 5, "名前": "白娅"}}
    encoded = canonical_text(variables).encode()

    await ledger.commit(CommitRequest("mvu:a", 0, "manual", variables, "fp", {"manual": True}, encoded=encoded))

    row = await ledger._store.read_one(BODY, id="mvu:a")
    assert row is not None and row["body"].encode() == encoded
    assert (await ledger.head("mvu:a")).variables == variables


async def test_given_bytes_over_the_state_budget_are_refused_and_nothing_is_written(tmp_path: object) -> None:
    ledger = await open_ledger(f"sqlite:///{tmp_path}/l.sqlite3", state_limit_bytes=64)
    try:
        await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}},
                                                 definition={}))
        variables = {"stat_data": {"text": "x" * 100}}
        with pytest.raises(MvuError) as refused:
            await ledger.commit(CommitRequest("mvu:a", 0, "manual", variables, "fp", {"manual": True},
                                              encoded=canonical_text(variables).encode()))
        assert refused.value.code == "MVU_LIMIT" and refused.value.details["limit"] == 64
        assert (await ledger.head("mvu:a")).revision == 0
    finally:
        await ledger.close()
