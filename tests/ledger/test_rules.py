"""What the ledger refuses before writing: kinds against sources, texts its columns cannot hold."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import CommitRequest, Ledger, NewResource


async def make(ledger: Ledger) -> None:
    await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}}, definition={}))


@pytest.mark.parametrize(
    ("kind", "source", "error"),
    [
        ("manual", {"sessionId": "s"}, None),  # a manual edit's source says manual: true
        ("reply", {"manual": True}, None),
        ("card", {"manual": True}, None),
        ("initial", {"initial": True, "manual": True}, None),
        ("failed", {}, None),  # a failed version carries its error code
        ("reply", {}, "MVU_LIMIT"),  # and only a failed one does
        ("inherited", {"inherited": True}, None),  # inherited copies come from seeds, not commits
    ],
)
async def test_a_kind_that_disagrees_with_its_source_is_refused(
    ledger: Ledger, kind: str, source: dict[str, object], error: str | None
) -> None:
    await make(ledger)
    with pytest.raises(MvuError) as refused:
        await ledger.commit(CommitRequest("mvu:a", 0, kind, {"stat_data": {}}, "f", source,  # type: ignore[arg-type]
                                          operation_id="op", error=error))
    assert refused.value.code == "MVU_OPERATION"
    assert (await ledger.head("mvu:a")).revision == 0


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("operation_id", "o" * 201, "MVU_LIMIT"),
        ("operation_id", "a\x00b", "MVU_JSON"),
        ("operation_id", "", "MVU_OPERATION"),
        ("resource_id", "mvu:" + "r" * 200, "MVU_LIMIT"),
        ("fingerprint", "f" * 65, "MVU_LIMIT"),
        ("key", "k" * 65, "MVU_LIMIT"),
    ],
)
async def test_texts_the_columns_cannot_hold_are_refused_alike(
    ledger: Ledger, field: str, value: str, code: str
) -> None:
    await make(ledger)
    fields = {"resource_id": "mvu:a", "operation_id": "op", "fingerprint": "f", "key": None, field: value}
    request = CommitRequest(fields["resource_id"], 0, "manual", {"stat_data": {}}, fields["fingerprint"],  # type: ignore[arg-type]
                            {"manual": True}, key=fields["key"], operation_id=fields["operation_id"])
    with pytest.raises(MvuError) as refused:
        await ledger.commit(request)
    assert refused.value.code == code


async def test_a_lone_surrogate_is_mvu_json(ledger: Ledger) -> None:
    await make(ledger)
    with pytest.raises(MvuError) as refused:
        await ledger.commit(CommitRequest("mvu:a", 0, "manual", {"stat_data": {"name": "\ud83d"}}, "f",
                                          {"manual": True}, operation_id="op"))
    assert refused.value.code == "MVU_JSON"


async def test_a_failed_receipt_replays_with_its_error(ledger: Ledger) -> None:
    await make(ledger)
    source = {"sessionId": "s", "messageId": "m", "messageSeq": 3}
    poison = CommitRequest("mvu:a", 0, "failed", {"stat_data": {}}, "text", source, error="MVU_LIMIT")
    first = await ledger.commit(poison)
    again = await ledger.commit(poison)  # expected_revision 0 again: a replay is not a CAS
    assert again.replayed
    assert again.result == first.result
    assert first.result["error"] == "MVU_LIMIT"  # type: ignore[index]
    assert first.revision == again.revision == 1  # the failure claimed a revision, once
    assert (await ledger.head("mvu:a")).revision == 1


async def test_management_mode_must_be_native_or_managed(ledger: Ledger) -> None:
    await make(ledger)
    with pytest.raises(MvuError) as refused:
        await ledger.set_management_mode("mvu:a", mode="other", expected_revision=0, operation_id="m",
                                         fingerprint="f")
    assert refused.value.code == "MVU_CONFIG"


async def test_resource_kinds_are_known(ledger: Ledger) -> None:
    with pytest.raises(MvuError) as refused:
        await ledger.create_resource(NewResource(id="mvu:x", kind="legacy", initial={}, definition={}))  # type: ignore[arg-type]
    assert refused.value.code == "MVU_OPERATION"
