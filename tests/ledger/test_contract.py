"""The storage contract: what every engine (SQLite, PostgreSQL) promises the service."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger
from mvu_store.ledger import tables as t
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.writer import WriteTx

STATE = {"stat_data": {"hp": 10, "gold": 3}}
MANUAL = {"sessionId": "s1", "manual": True}


def new(resource_id: str = "mvu:a", initial: object = STATE) -> NewResource:
    return NewResource(id=resource_id, kind="shared", initial=initial, definition={"id": resource_id})


def edit(
    revision: int, hp: int, op: str | None = None, fingerprint: str | None = None, **extra: object
) -> CommitRequest:
    return CommitRequest(
        resource_id=str(extra.pop("resource_id", "mvu:a")),
        expected_revision=revision,
        kind="manual",
        variables={"stat_data": {"hp": hp}},
        fingerprint=fingerprint or f"fp-{hp}",
        source={"sessionId": "s1", "messageId": f"manual:{op}", "manual": True},
        operation_id=op,
    )


async def test_create_then_read_initial_state(ledger: Ledger) -> None:
    record = await ledger.create_resource(new())
    assert record.revision == 0
    assert record.head_key is None
    head = await ledger.head("mvu:a")
    assert head.revision == 0
    assert head.variables == STATE


async def test_existing_id_is_refused(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    with pytest.raises(MvuError) as refused:
        await ledger.create_resource(new())
    assert refused.value.code == "MVU_ID_CONFLICT"


async def test_commit_moves_head_and_history(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    first = await ledger.commit(edit(0, 9, "op1"))
    second = await ledger.commit(edit(1, 8, "op2"))
    assert (first.revision, second.revision) == (1, 2)
    head = await ledger.head("mvu:a")
    assert head.revision == 2
    assert head.version_key == second.version_key
    assert head.variables == {"stat_data": {"hp": 8}}
    history = await ledger.versions("mvu:a")
    assert [v.revision for v in history] == [1, 2]
    assert history[1].parent_key == history[0].key
    assert await ledger.audit() == []


async def test_stale_revision_is_a_conflict_carrying_the_current_revision(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    await ledger.commit(edit(0, 9, "op1"))
    with pytest.raises(MvuError) as refused:
        await ledger.commit(edit(0, 7, "op2"))
    assert refused.value.code == "REVISION_CONFLICT"
    assert refused.value.details["current_revision"] == 1
    assert refused.value.details["expected_revision"] == 0
    assert (await ledger.head("mvu:a")).variables == {"stat_data": {"hp": 9}}


async def test_replay_returns_the_stored_result_flagged(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    applied = await ledger.commit(edit(0, 9, "op1"))
    await ledger.commit(edit(1, 8, "op2"))
    replay = await ledger.commit(edit(0, 9, "op1"))
    assert replay.replayed and not applied.replayed
    assert (replay.revision, replay.version_key) == (applied.revision, applied.version_key)
    assert replay.result == applied.result
    assert len(await ledger.versions("mvu:a")) == 2


async def test_same_operation_other_request_is_refused(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    await ledger.commit(edit(0, 9, "op1"))
    with pytest.raises(MvuError) as refused:
        await ledger.commit(edit(1, 5, "op1", fingerprint="another"))
    assert refused.value.code == "MVU_IDEMPOTENCY_CONFLICT"


async def test_a_processed_message_is_never_applied_twice(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    source = {"sessionId": "s1", "messageId": "m1", "messageSeq": 4, "endSeq": 5}
    reply = CommitRequest("mvu:a", 0, "reply", {"stat_data": {"hp": 1}}, "text-hash", source)
    first = await ledger.commit(reply)
    again = await ledger.commit(CommitRequest("mvu:a", 1, "reply", {"stat_data": {"hp": 1}}, "text-hash", source))
    assert again.replayed and again.revision == first.revision == 1
    with pytest.raises(MvuError) as refused:
        await ledger.commit(CommitRequest("mvu:a", 1, "reply", {"stat_data": {"hp": 2}}, "other-text", source))
    assert refused.value.code == "MVU_IDEMPOTENCY_CONFLICT"


def reply(revision: int, seq: int, hp: int, *, error: str | None = None) -> CommitRequest:
    source = {"sessionId": "s1", "messageId": f"m{seq}", "messageSeq": seq}
    return CommitRequest("mvu:a", revision, "failed" if error else "reply", {"stat_data": {"hp": hp}},
                         f"text-{seq}", source, error=error)


async def test_a_failed_receipt_claims_a_revision_and_keeps_the_state(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    source = {"sessionId": "s1", "messageId": "m1", "messageSeq": 4}
    outcome = await ledger.commit(
        CommitRequest("mvu:a", 0, "failed", STATE, "text-hash", source, error="MVU_LIMIT")
    )
    # As the original's poison receipt: the revision (the CAS counter) moves, the head does not.
    assert outcome.revision == 1
    assert outcome.result == {"id": "mvu:a", "revision": 1, "versionKey": outcome.version_key, "error": "MVU_LIMIT"}
    head = await ledger.head("mvu:a")
    assert (head.revision, head.version_key, head.variables) == (1, None, STATE)
    [poison] = await ledger.versions("mvu:a")
    assert (poison.kind, poison.error, poison.revision, poison.parent_key) == ("failed", "MVU_LIMIT", 1, None)
    assert await ledger.audit() == []


async def test_a_commit_after_a_failed_receipt_is_written_on_the_head(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    first = await ledger.commit(reply(0, 2, 9))
    failed = await ledger.commit(reply(1, 4, 0, error="MVU_PARSE"))
    assert failed.revision == 2
    head = await ledger.head("mvu:a")
    assert (head.revision, head.version_key, head.variables) == (2, first.version_key, {"stat_data": {"hp": 9}})

    # The revision a client read before the failure is stale now.
    with pytest.raises(MvuError) as refused:
        await ledger.commit(reply(1, 6, 8))
    assert refused.value.code == "REVISION_CONFLICT"
    assert refused.value.details["current_revision"] == 2

    second = await ledger.commit(reply(2, 6, 8))
    assert second.revision == 3
    versions = await ledger.versions("mvu:a")
    assert [(v.kind, v.revision, v.parent_key) for v in versions] == [
        ("reply", 1, None), ("failed", 2, None), ("reply", 3, first.version_key)]
    assert await ledger.audit() == []


async def test_a_failed_receipt_replays_without_claiming_another_revision(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    await ledger.commit(reply(0, 2, 9))
    first = await ledger.commit(reply(1, 4, 0, error="MVU_PARSE"))
    await ledger.commit(reply(2, 6, 8))

    # Same message (so the same key) and the same fingerprint: the stored outcome, nothing written.
    again = await ledger.commit(reply(1, 4, 0, error="MVU_PARSE"))

    assert again.replayed
    assert (again.revision, again.version_key, again.result) == (first.revision, first.version_key, first.result)
    assert (await ledger.head("mvu:a")).revision == 3
    assert len(await ledger.versions("mvu:a")) == 3
    with pytest.raises(MvuError) as refused:  # the same message with another reply text
        await ledger.commit(CommitRequest("mvu:a", 3, "failed", STATE, "other-text",
                                          {"sessionId": "s1", "messageId": "m4", "messageSeq": 4},
                                          error="MVU_PARSE"))
    assert refused.value.code == "MVU_IDEMPOTENCY_CONFLICT"
    assert await ledger.audit() == []


@pytest.mark.parametrize("kinds", [("failed", "failed"), ("reply", "failed"), ("failed", "manual")])
async def test_the_database_refuses_two_versions_claiming_one_revision(ledger: Ledger, kinds: tuple[str, str]) -> None:
    await ledger.create_resource(new())
    blob = Blob.of(STATE)

    def insert(tx: WriteTx, position: int, kind: str) -> None:
        ledger._store.put_blob(tx, blob)
        ledger._store.insert_row(tx, t.versions, {
            "resource_id": "mvu:a", "position": position, "key": f"{position}" * 64, "kind": kind,
            "revision": 1, "parent_key": None, "variables_hash": blob.hash, "session_id": "s1",
            "message_seq": position, "operation_id": None, "fingerprint": "f", "error": None, "source": "{}",
            "meta": "{}", "created_at": 0,
        })

    await ledger._store.write(lambda tx: insert(tx, 0, kinds[0]))
    with pytest.raises(MvuError) as refused:
        await ledger._store.write(lambda tx: insert(tx, 1, kinds[1]))

    # PostgreSQL names the index (a revision conflict); SQLite only says a unique key was taken.
    expected = "REVISION_CONFLICT" if ledger.dialect == "postgresql" else "MVU_ID_CONFLICT"
    assert refused.value.code == expected
    assert len(await ledger.versions("mvu:a")) == 1


async def test_inherited_versions_claim_no_revision(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    blob = Blob.of(STATE)

    def insert(tx: WriteTx) -> None:
        ledger._store.put_blob(tx, blob)
        for position in range(2):
            ledger._store.insert_row(tx, t.versions, {
                "resource_id": "mvu:a", "position": position, "key": f"{position}" * 64, "kind": "inherited",
                "revision": 0, "parent_key": None, "variables_hash": blob.hash, "session_id": None,
                "message_seq": None, "operation_id": None, "fingerprint": None, "error": None, "source": "{}",
                "meta": "{}", "created_at": 0,
            })

    await ledger._store.write(insert)
    assert len(await ledger.versions("mvu:a")) == 2


async def test_missing_resource(ledger: Ledger) -> None:
    with pytest.raises(MvuError) as refused:
        await ledger.commit(edit(0, 1, "op"))
    assert refused.value.code == "MVU_MISSING"
    with pytest.raises(MvuError):
        await ledger.head("mvu:nope")
    assert await ledger.resource("mvu:nope") is None


async def test_state_over_the_limit_is_refused_and_nothing_written(ledger_url: str, ledger_id: str) -> None:
    ledger = await open_ledger(ledger_url, ledger_id=ledger_id, state_limit_bytes=1_000)
    try:
        await ledger.create_resource(new())
        before = await ledger.usage()
        with pytest.raises(MvuError) as refused:
            await ledger.commit(CommitRequest("mvu:a", 0, "manual", {"stat_data": {"x": "y" * 2_000}}, "f", MANUAL,
                                              operation_id="big"))
        assert refused.value.code == "MVU_LIMIT"
        assert await ledger.usage() == before
        deep: object = 1
        for _ in range(70):
            deep = [deep]
        with pytest.raises(MvuError) as too_deep:
            await ledger.commit(
                CommitRequest("mvu:a", 0, "manual", {"stat_data": deep}, "f", MANUAL, operation_id="deep")
            )
        assert too_deep.value.code == "MVU_LIMIT"
        assert (await ledger.head("mvu:a")).revision == 0
    finally:
        await ledger.close()


async def test_ledger_budget_refuses_whole_transaction_and_never_trims(ledger_url: str, ledger_id: str) -> None:
    ledger = await open_ledger(ledger_url, ledger_id=ledger_id, ledger_limit_bytes=3_000)
    try:
        await ledger.create_resource(new())
        revision = 0
        refusal: MvuError | None = None
        for step in range(100):
            try:
                outcome = await ledger.commit(
                    CommitRequest("mvu:a", revision, "manual", {"stat_data": {"pad": f"{step}" * 200}}, f"f{step}",
                                  MANUAL, operation_id=f"op{step}")
                )
            except MvuError as error:
                refusal = error
                break
            revision = outcome.revision
        assert refusal is not None, "the budget never refused"
        error = refusal
        assert error.code == "PLAY_STORAGE_LIMIT"
        assert error.details["limit"] == 3_000
        assert error.details["used"] + error.details["requested"] > 3_000
        usage = await ledger.usage()
        assert usage.used_bytes == error.details["used"] <= usage.limit_bytes
        # Nothing of the refused transaction was written, nothing earlier was trimmed.
        assert (await ledger.head("mvu:a")).revision == revision
        assert len(await ledger.versions("mvu:a")) == revision
        assert await ledger.audit() == []
    finally:
        await ledger.close()


async def test_identical_states_are_stored_once(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    await ledger.commit(edit(0, 9, "op1"))
    after_first = (await ledger.usage()).used_bytes
    await ledger.commit(edit(1, 8, "op2"))
    after_second = (await ledger.usage()).used_bytes
    await ledger.commit(edit(2, 9, "op3"))  # the state of op1 again: its blob is reused
    after_third = (await ledger.usage()).used_bytes
    assert after_third - after_second < after_second - after_first


async def test_checkpoint_is_frozen_once_per_turn(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    first = await ledger.put_checkpoint("mvu:a", session_id="s1", turn=1, seq=3)
    await ledger.commit(edit(0, 9, "op1"))
    again = await ledger.put_checkpoint("mvu:a", session_id="s1", turn=1, seq=3)
    assert again == first
    assert first.revision == 0 and first.version_key is None
    second = await ledger.put_checkpoint("mvu:a", session_id="s1", turn=2, seq=9)
    assert second.revision == 1
    assert await ledger.blob(second.variables_hash) == {"stat_data": {"hp": 9}}
    assert await ledger.blob(first.variables_hash) == STATE


async def test_fork_links_ancestry_instead_of_copying(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    outcomes = []
    for step in range(5):
        outcomes.append(await ledger.commit(edit(step, 100 - step, f"op{step}")))
    before = (await ledger.usage()).used_bytes
    child = await ledger.fork(
        "mvu:a",
        NewResource(id="mvu:child", kind="instance", initial={"stat_data": {"hp": 98}},
                    definition={"id": "mvu:a"}, session_id="s2"),
        at_key=outcomes[2].version_key,
    )
    grown = (await ledger.usage()).used_bytes - before
    assert grown < 200  # one row and its small metadata; no history, no states copied
    assert child.parent_id == "mvu:a" and child.head_key == outcomes[2].version_key
    assert (await ledger.head("mvu:child")).variables == {"stat_data": {"hp": 98}}
    history = await ledger.versions("mvu:child")
    assert [v.key for v in history] == [o.version_key for o in outcomes[:3]]
    assert all(v.inherited for v in history)
    # The child writes on top of its inherited head; the parent is untouched.
    await ledger.commit(edit(0, 50, "child-op", resource_id="mvu:child"))
    assert [v.inherited for v in await ledger.versions("mvu:child")] == [True, True, True, False]
    assert (await ledger.head("mvu:a")).revision == 5
    # A grandchild forked at an inherited version links to the version's owner.
    grandchild = await ledger.fork(
        "mvu:child",
        NewResource(id="mvu:grand", kind="instance", initial={"stat_data": {}}, definition={}),
        at_key=outcomes[1].version_key,
    )
    assert (grandchild.parent_id, grandchild.parent_position) == ("mvu:a", 1)
    assert await ledger.audit() == []


async def test_the_last_message_of_a_session_is_found_backwards_through_lineage(ledger: Ledger) -> None:
    def write(resource_id: str, revision: int, source: dict[str, object], *, error: str | None = None) -> CommitRequest:
        kind = "failed" if error else "manual" if source.get("manual") else "reply"
        return CommitRequest(resource_id, revision, kind, {"stat_data": {"r": revision}},
                             f"fp-{resource_id}-{revision}", source, error=error)

    await ledger.create_resource(new())
    assert await ledger.last_message_seq("mvu:a", "s1") is None  # no history at all
    steps = [{"sessionId": "s1", "messageSeq": 3}, {"sessionId": "s2", "messageSeq": 7},
             {"sessionId": "s1", "manual": True},  # a version with no message names none
             {"messageSeq": 11}]  # a message of no session
    outcomes = [await ledger.commit(write("mvu:a", n, source)) for n, source in enumerate(steps)]
    assert await ledger.last_message_seq("mvu:a", "s1") == 3
    assert await ledger.last_message_seq("mvu:a", "s2") == 7
    assert await ledger.last_message_seq("mvu:a", None) == 11
    assert await ledger.last_message_seq("mvu:a", "s3") is None
    # A failed version is history too, though it never moved the head.
    await ledger.commit(write("mvu:a", 4, {"sessionId": "s1", "messageSeq": 5}, error="MVU_LIMIT"))
    assert await ledger.last_message_seq("mvu:a", "s1") == 5
    # The latest version counts, not the highest number (a session's log can be rewound and replayed).
    await ledger.commit(write("mvu:a", 5, {"sessionId": "s1", "messageSeq": 2}))
    assert await ledger.last_message_seq("mvu:a", "s1") == 2
    # A child reads what it inherits up to its fork point, its own versions first.
    await ledger.fork("mvu:a", NewResource(id="mvu:child", kind="instance", initial=STATE, definition={}),
                      at_key=outcomes[1].version_key)
    await ledger.commit(write("mvu:a", 6, {"sessionId": "s2", "messageSeq": 9}))  # after the fork point
    assert await ledger.last_message_seq("mvu:child", "s2") == 7
    assert await ledger.last_message_seq("mvu:child", None) is None  # seq 11 is past the fork point
    await ledger.commit(write("mvu:child", 0, {"sessionId": "s2", "messageSeq": 8}))
    assert await ledger.last_message_seq("mvu:child", "s2") == 8
    assert await ledger.last_message_seq("mvu:child", "s1") == 3
    # A grandchild forked at a version its parent inherits reads the grandparent up to that point.
    await ledger.fork("mvu:child", NewResource(id="mvu:grand", kind="instance", initial=STATE, definition={}),
                      at_key=outcomes[0].version_key)
    assert await ledger.last_message_seq("mvu:grand", "s1") == 3
    assert await ledger.last_message_seq("mvu:grand", "s2") is None  # seq 7 is past its fork point


async def test_management_mode_is_cas_and_idempotent(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    changed = await ledger.set_management_mode("mvu:a", mode="managed", expected_revision=0, operation_id="m1",
                                               fingerprint="f")
    assert changed.result == {"id": "mvu:a", "managementMode": "managed", "revision": 1}
    replay = await ledger.set_management_mode("mvu:a", mode="managed", expected_revision=0, operation_id="m1",
                                              fingerprint="f")
    assert replay.replayed and replay.result == changed.result
    with pytest.raises(MvuError) as stale:
        await ledger.set_management_mode("mvu:a", mode="native", expected_revision=0, operation_id="m2",
                                         fingerprint="g")
    assert stale.value.code == "REVISION_CONFLICT"
    record = await ledger.resource("mvu:a")
    assert record is not None and record.management_mode == "managed"


async def test_facts_are_bounded_oldest_first(ledger: Ledger) -> None:
    for index in range(2_060):
        await ledger.append_fact({"phase": "started", "id": f"f{index}", "sessionId": "s1"})
    facts = await ledger.facts(session_id="s1")
    assert len(facts) == 2_048
    assert facts[0]["id"] == "f12" and facts[-1]["id"] == "f2059"
    usage = await ledger.usage()
    assert usage.facts_count == 2_048
    assert usage.used_bytes == 0  # facts have their own bound, outside the state budget
    assert await ledger.audit() == []


async def test_facts_bounded_by_bytes(ledger: Ledger) -> None:
    long = "x" * 1_000
    fields = ("id", "sessionId", "eventId", "on", "cause", "requestId", "reason", "detail", "turnKind")
    for index in range(600):
        await ledger.append_fact({"phase": "applied", **{name: f"{index}{long}" for name in fields}})
    usage = await ledger.usage()
    assert usage.facts_bytes <= 1024 * 1024
    assert 300 < usage.facts_count < 600  # ~2.8 KB each: the byte bound evicts, not the count
    assert (await ledger.facts())[-1]["id"].startswith("599")
    assert await ledger.audit() == []


async def test_facts_never_carry_content(ledger: Ledger) -> None:
    await ledger.append_fact({"phase": "applied", "id": "f", "detail": "d" * 1_000, "turn": 3,
                              "variables": {"stat_data": {"secret": 1}}, "text": "chat text", "reason": ["x"]})
    [fact] = await ledger.facts()
    assert fact == {"phase": "applied", "id": "f", "detail": "d" * 300, "turn": 3}
    with pytest.raises(MvuError) as refused:
        await ledger.append_fact({"id": "no phase"})
    assert refused.value.code == "MVU_JSON"


async def test_templates_replace_in_place(ledger: Ledger) -> None:
    await ledger.put_template("mvu:character-1", {"id": "mvu:character-1", "initial": STATE})
    await ledger.put_template("mvu:character-2", {"id": "mvu:character-2"})
    await ledger.put_template("mvu:character-1", {"id": "mvu:character-1", "name": "renamed"})
    templates = await ledger.templates()
    assert list(templates) == ["mvu:character-1", "mvu:character-2"]
    assert templates["mvu:character-1"] == {"id": "mvu:character-1", "name": "renamed"}


async def test_a_failing_unit_leaves_nothing(ledger: Ledger) -> None:
    await ledger.create_resource(new())
    before = await ledger.usage()

    def work(tx: object) -> None:
        ledger._store.put_blob(tx, ledger._store.prepare_state({"stat_data": {"orphan": True}}))  # type: ignore[arg-type]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await ledger._store.write(work)  # type: ignore[arg-type]
    assert await ledger.usage() == before
    assert await ledger.audit() == []


async def test_closed_ledger_refuses(ledger_url: str, ledger_id: str) -> None:
    ledger = await open_ledger(ledger_url, ledger_id=ledger_id)
    await ledger.close()
    await ledger.close()
    with pytest.raises(MvuError) as refused:
        await ledger.usage()
    assert refused.value.code == "MVU_DISPOSED"

