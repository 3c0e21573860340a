"""Edits (DIGEST A, A-1, A-2, I-8, I-11): CAS, idempotency, the declaration, leases, facts,
management mode and copies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.host import Lease
from mvu_store.ledger import CommitRequest, Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import PLAIN, playing, scope

# A declaration whose transform is not idempotent: applying it twice would show.
ADDER: dict[str, Any] = {
    "character_id": "adder", "name": "Adder", "initvar": ["count: 0\n"],
    "schema_source": "export const Schema = z.object({ count: z.number().transform(v => v + 1) });",
}


def code_of(error: pytest.ExceptionInfo[MvuError]) -> str:
    return str(error.value.code)


async def edit(service: MvuService, instance: str, stat_data: dict[str, Any], revision: int, operation_id: str,
               session_id: str = "s1", **content: Any) -> Any:
    return await service.update(id=instance, content={"stat_data": stat_data, **content},
                                expected_revision=revision, operation_id=operation_id, scope=scope(session_id))


async def current(service: MvuService, instance: str, session_id: str = "s1") -> Any:
    record = await service.read(id=instance, scope=scope(session_id))
    assert record is not None
    return record


# -- CAS and idempotency ---------------------------------------------------------------------


async def test_a_stale_expected_revision_is_a_conflict(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    await edit(service, instance, {"hp": 20, "gold": 1}, 0, "first")
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 30, "gold": 1}, 0, "second")
    assert code_of(error) == "REVISION_CONFLICT"
    assert error.value.details.get("current_revision") == 1
    record = await current(service, instance)
    assert (record.revision, record.content["stat_data"]["hp"]) == (1, 20)


async def test_the_same_operation_and_request_replays_the_receipt(service: MvuService, host: MemoryHost,
                                                                  ledger: Ledger) -> None:
    instance = await playing(service, host)
    first = await edit(service, instance, {"hp": 20, "gold": 1}, 0, "op-1")
    again = await edit(service, instance, {"hp": 20, "gold": 1}, 0, "op-1")
    assert (first.replayed, again.replayed) == (False, True)
    assert first.revision == again.revision == 1
    assert first.content == again.content
    assert again.to_json()["replayed"] is True
    assert [v.kind for v in await ledger.versions(instance)] == ["manual"]
    assert (await current(service, instance)).revision == 1
    facts = await service.facts(id=instance, scope=scope("s1"))
    assert [f["phase"] for f in facts].count("completed") == 1, "a replay records no second edit"


async def test_the_same_operation_with_another_request_is_refused(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    await edit(service, instance, {"hp": 20, "gold": 1}, 0, "op-1")
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 21, "gold": 1}, 0, "op-1")
    assert code_of(error) == "MVU_IDEMPOTENCY_CONFLICT"
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 21, "gold": 1}, 1, "op-1")
    assert code_of(error) == "MVU_IDEMPOTENCY_CONFLICT"
    record = await current(service, instance)
    assert (record.revision, record.content["stat_data"]["hp"]) == (1, 20)


@pytest.mark.parametrize("operation_id", [None, "", "x" * 201, 7])
async def test_an_operation_id_is_required_and_bounded(service: MvuService, host: MemoryHost,
                                                       operation_id: Any) -> None:
    instance = await playing(service, host)
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 20, "gold": 1}, 0, operation_id)
    assert code_of(error) == "MVU_OPERATION"


async def test_an_operation_id_of_200_characters_is_fine(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    assert (await edit(service, instance, {"hp": 20, "gold": 1}, 0, "x" * 200)).revision == 1


@pytest.mark.parametrize("content", [None, [], {"stat_data": []}, {"stat_data": "hp: 1"}, {"hp": 1}])
async def test_content_must_be_an_envelope_with_stat_data(service: MvuService, host: MemoryHost,
                                                          content: Any) -> None:
    instance = await playing(service, host)
    with pytest.raises(MvuError):
        await service.update(id=instance, content=content, expected_revision=0, operation_id="bad",
                             scope=scope("s1"))
    assert (await current(service, instance)).revision == 0


# -- the declaration (A: the source schema can't be removed or replaced) ------------------------


async def test_an_edit_cannot_replace_the_schema_and_omitting_it_keeps_it(service: MvuService,
                                                                          host: MemoryHost) -> None:
    instance = await playing(service, host)
    before = await current(service, instance)
    descriptor = before.content["mvu_schema"]
    other = {**descriptor, "source": "export const Schema = z.object({ hp: z.number() });"}
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 20, "gold": 1}, 0, "swap", mvu_schema=other)
    assert code_of(error) == "MVU_SCHEMA_CODE"
    kept = await edit(service, instance, {"hp": 20, "gold": 1}, 0, "keep")
    assert kept.content["mvu_schema"] == descriptor
    same = await edit(service, instance, {"hp": 21, "gold": 1}, 1, "same", mvu_schema=descriptor)
    assert same.content["mvu_schema"] == descriptor
    # The same declaration with its keys in the original's order is still the same declaration.
    reordered = {key: descriptor[key] for key in ("mvuSchema", "interpreterVersion", "source")}
    assert list(reordered) != list(descriptor)
    again = await edit(service, instance, {"hp": 22, "gold": 1}, 2, "reordered", mvu_schema=reordered)
    assert again.content["mvu_schema"] == descriptor
    record = await current(service, instance)
    assert record.content["mvu_schema"] == descriptor and record.revision == 3


async def test_an_edit_cannot_add_a_schema_to_a_state_without_one(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=PLAIN)
    hero = await current(service, instance)
    assert "mvu_schema" not in hero.content
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 1}, 0, "add", mvu_schema={"mvuSchema": 1, "interpreterVersion": 2,
                                                                          "source": "export default z.any();"})
    assert code_of(error) == "MVU_SCHEMA_CODE"


async def test_the_schema_transforms_an_edit_exactly_once(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host, card=ADDER)
    assert (await current(service, instance)).content["stat_data"] == {"count": 1}
    receipt = await edit(service, instance, {"count": 10}, 0, "count")
    assert receipt.content["stat_data"] == {"count": 11}
    assert (await current(service, instance)).content["stat_data"] == {"count": 11}
    assert (await current(service, instance)).content["display_data"] == {"count": 11}


async def test_the_schema_clamps_and_coerces_an_edit(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    receipt = await edit(service, instance, {"hp": "250", "gold": 0}, 0, "clamp")
    assert receipt.content["stat_data"] == {"hp": 100, "gold": 0, "level": 1, "mood": "calm"}


async def test_a_value_the_schema_refuses_writes_nothing(service: MvuService, host: MemoryHost,
                                                         ledger: Ledger) -> None:
    instance = await playing(service, host)
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 20, "gold": -5}, 0, "negative")
    assert code_of(error) == "MVU_SCHEMA"
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 20, "gold": 1, "mood": "sleepy"}, 0, "enum")
    assert code_of(error) == "MVU_SCHEMA"
    assert await ledger.versions(instance) == []
    assert (await current(service, instance)).revision == 0
    assert await service.facts(id=instance, scope=scope("s1")) == []
    # The refused operation id was not consumed: it can carry a valid request now.
    assert (await edit(service, instance, {"hp": 20, "gold": 5}, 0, "negative")).revision == 1


# -- sessions: running turns and leases (A-1) ----------------------------------------------------


async def test_an_instance_is_read_only_while_its_turn_runs(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    host.append("s1", "turn/start", {"turn": 1})
    await host.drain()
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 20, "gold": 1}, 0, "mid-turn")
    assert code_of(error) == "MVU_READ_ONLY"
    host.append("s1", "turn/end", {"turn": 1, "reason": {"kind": "aborted"}})
    await host.drain()
    assert (await edit(service, instance, {"hp": 20, "gold": 1}, 0, "after-turn")).revision == 1


class LeaseBreakingHost(MemoryHost):
    """A host whose session changes right after a lease was captured (during the call)."""

    def __init__(self) -> None:
        super().__init__()
        self.break_next = False

    async def capture_session_lease(self, session_id: str) -> Lease:
        lease = await super().capture_session_lease(session_id)
        if self.break_next:
            self.break_next = False
            self._broken = session_id
        return lease

    async def inspect_since(self, session_id: str, after_seq: int) -> Any:
        tail = await super().inspect_since(session_id, after_seq)
        if getattr(self, "_broken", None) == session_id:
            self._broken = None
            self.invalidate_leases(session_id)
        return tail


async def test_a_lease_invalidated_during_the_call_is_refused(ledger: Ledger) -> None:
    host = LeaseBreakingHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    instance = await playing(service, host)
    host.break_next = True
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 20, "gold": 1}, 0, "leased")
    assert code_of(error) == "MVU_SESSION_LEASE", "refused at the re-check before the commit (A-1)"
    host.break_next = True
    with pytest.raises(MvuError) as error:
        await service.set_management_mode(id=instance, mode="managed", expected_revision=0,
                                          operation_id="leased-mode", scope=scope("s1"))
    assert code_of(error) == "MVU_SESSION_LEASE", "refused at the re-check before the commit (A-1)"
    assert await ledger.versions(instance) == []
    record = await current(service, instance)
    assert (record.revision, record.stored_management_mode) == (0, "native")
    assert (await edit(service, instance, {"hp": 20, "gold": 1}, 0, "leased")).revision == 1


async def test_a_session_whose_lease_is_already_invalid_is_refused(ledger: Ledger) -> None:
    class NoLeaseHost(MemoryHost):
        refuse = False

        async def capture_session_lease(self, session_id: str) -> Lease:
            return (lambda: False) if self.refuse else await super().capture_session_lease(session_id)

    host = NoLeaseHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    instance = await playing(service, host)
    host.refuse = True
    with pytest.raises(MvuError) as error:
        await edit(service, instance, {"hp": 20, "gold": 1}, 0, "no-lease")
    assert code_of(error) == "MVU_SESSION_LEASE"


# -- facts of an edit (A-4) -----------------------------------------------------------------------


async def test_the_facts_of_an_edit(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    await edit(service, instance, {"hp": 20, "gold": 10}, 0, "change")
    await edit(service, instance, {"hp": 20, "gold": 10}, 1, "same-state")
    facts = await service.facts(id=instance, scope=scope("s1"))
    assert all(f["on"] == "manual_update" and f["id"] == instance and f["sessionId"] == "s1" for f in facts)
    by_operation = {op: [(f["phase"], f.get("detail"), f.get("revision")) for f in facts if f["eventId"] == op]
                    for op in ("change", "same-state")}
    assert by_operation["change"] == [("started", None, None), ("triggered", None, None),
                                      ("applied", "state-committed", 1), ("completed", "manual-update", 1)]
    assert by_operation["same-state"] == [("started", None, None), ("triggered", None, None),
                                          ("completed", "manual-update", 2)]
    assert all("stat_data" not in str(f) and "hp" not in str(f) for f in facts), "facts are content-free"


# -- management mode (I-8) ----------------------------------------------------------------------


async def test_set_management_mode_stores_a_preference_under_cas(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    receipt = await service.set_management_mode(id=instance, mode="managed", expected_revision=0,
                                                operation_id="mode-1", scope=scope("s1"))
    assert (receipt.management_mode, receipt.stored_management_mode, receipt.replayed) == ("native", "managed", False)
    assert receipt.to_json()["storedManagementMode"] == "managed"
    record = await current(service, instance)
    assert (record.stored_management_mode, record.management_mode) == ("managed", "native")
    assert record.to_json()["storedManagementMode"] == "managed"
    assert record.revision == receipt.revision
    assert record.content["stat_data"]["hp"] == 50, "the content is unchanged"
    again = await service.set_management_mode(id=instance, mode="managed", expected_revision=0,
                                              operation_id="mode-1", scope=scope("s1"))
    assert (again.replayed, again.revision, again.stored_management_mode) == (True, receipt.revision, "managed")
    with pytest.raises(MvuError) as error:
        await service.set_management_mode(id=instance, mode="native", expected_revision=0, operation_id="mode-1",
                                          scope=scope("s1"))
    assert code_of(error) == "MVU_IDEMPOTENCY_CONFLICT"
    if receipt.revision > 0:
        with pytest.raises(MvuError) as error:
            await service.set_management_mode(id=instance, mode="native", expected_revision=0,
                                              operation_id="mode-2", scope=scope("s1"))
        assert code_of(error) == "REVISION_CONFLICT"
    back = await service.set_management_mode(id=instance, mode="native", expected_revision=receipt.revision,
                                             operation_id="mode-3", scope=scope("s1"))
    assert (back.stored_management_mode, back.management_mode) == ("native", "native")
    assert (await current(service, instance)).stored_management_mode == "native"


async def test_set_management_mode_conflicts_with_a_stale_revision(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    await edit(service, instance, {"hp": 20, "gold": 1}, 0, "edit")
    with pytest.raises(MvuError) as error:
        await service.set_management_mode(id=instance, mode="managed", expected_revision=0,
                                          operation_id="mode", scope=scope("s1"))
    assert code_of(error) == "REVISION_CONFLICT"
    assert (await current(service, instance)).stored_management_mode == "native"


@pytest.mark.parametrize("mode", ["manual", "", None, "MANAGED"])
async def test_an_unknown_management_mode_is_a_config_error(service: MvuService, host: MemoryHost,
                                                            mode: Any) -> None:
    instance = await playing(service, host)
    with pytest.raises(MvuError) as error:
        await service.set_management_mode(id=instance, mode=mode, expected_revision=0, operation_id="mode",
                                          scope=scope("s1"))
    assert code_of(error) == "MVU_CONFIG"


# -- copy (I-11) ----------------------------------------------------------------------------------


@pytest.mark.parametrize("new_id", ["campaign", "mvu:", "mvu:has space", "mvu:" + "a" * 161, "mvu:a/b",
                                    "mvu:instance-abc", "mvu:character-abc", 5])
async def test_a_copy_needs_a_valid_new_id(service: MvuService, host: MemoryHost, new_id: Any) -> None:
    instance = await playing(service, host)
    with pytest.raises(MvuError) as error:
        await service.copy(id=instance, new_id=new_id, scope=scope("s1"))
    assert code_of(error) == "MVU_ID_CONFLICT"


async def test_a_copy_to_an_existing_id_is_refused(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    await service.copy(id=instance, new_id="mvu:backup", scope=scope("s1"))
    for existing in ("mvu:backup", instance):
        with pytest.raises(MvuError) as error:
            await service.copy(id=instance, new_id=existing, scope=scope("s1"))
        assert code_of(error) == "MVU_ID_CONFLICT"


async def test_a_copy_holds_the_current_content_and_is_independent(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    host.create_session("s2", created_at=2000)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);")
    await edit(service, instance, {"hp": 35, "gold": 7}, 1, "edit")
    copied = await service.copy(id=instance, new_id="mvu:backup.1", scope=scope("s1"))
    assert (copied.id, copied.revision, copied.current_revision, copied.historical) == ("mvu:backup.1", 0, 0, False)
    assert copied.content["stat_data"] == {"hp": 35, "gold": 7, "level": 1, "mood": "calm"}
    assert copied.content["mvu_schema"] == (await current(service, instance)).content["mvu_schema"]
    assert {r.id for r in await service.list(scope=scope("s1"))} == {instance, "mvu:backup.1"}
    assert "mvu:backup.1" not in {r.id for r in await service.list(scope=scope("s2"))}
    with pytest.raises(MvuError) as error:
        await service.read(id="mvu:backup.1", scope=scope("s2"))
    assert code_of(error) == "SCOPE_MISMATCH"
    assert await service.history(id="mvu:backup.1", scope=scope("s1")) == []
    # Independent afterwards, both ways.
    await edit(service, "mvu:backup.1", {"hp": 1, "gold": 1}, 0, "copy-edit")
    assert (await current(service, instance)).content["stat_data"]["hp"] == 35
    await edit(service, instance, {"hp": 90, "gold": 7}, 2, "original-edit")
    copy_record = await current(service, "mvu:backup.1")
    assert (copy_record.revision, copy_record.content["stat_data"]["hp"]) == (1, 1)
    with pytest.raises(MvuError) as error:
        await edit(service, "mvu:backup.1", {"hp": 1, "gold": -1}, 1, "copy-schema")
    assert code_of(error) == "MVU_SCHEMA", "the copy keeps the declaration"


async def test_an_edit_may_send_the_same_declaration_back_in_any_key_order(service: MvuService, host: MemoryHost,
                                                                           ledger: Ledger) -> None:
    instance = await playing(service, host)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    content: Any = record.content
    reordered = dict(reversed(list(content["mvu_schema"].items())))
    receipt = await service.update(id=instance, content={"stat_data": {"hp": 5, "gold": 1}, "mvu_schema": reordered},
                                   expected_revision=0, operation_id="e1", scope=scope("s1"))
    assert receipt.revision == 1
    assert receipt.content["mvu_schema"] == content["mvu_schema"]  # type: ignore[index,call-overload]
    assert await ledger.audit() == []


async def test_an_edit_cannot_replace_the_declaration(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    content: Any = record.content
    other = {**content["mvu_schema"], "source": content["mvu_schema"]["source"].replace("min(0)", "min(5)")}
    with pytest.raises(MvuError) as caught:
        await service.update(id=instance, content={"stat_data": {"hp": 5, "gold": 1}, "mvu_schema": other},
                             expected_revision=0, operation_id="e1", scope=scope("s1"))
    assert caught.value.code == "MVU_SCHEMA_CODE"
    assert (await ledger.head(instance)).revision == 0


# -- what an edit may carry (review findings) -----------------------------------------------------


@pytest.mark.parametrize(("content", "code"), [
    ({"stat_data": {"hp": 1, "__proto__": {}}}, "MVU_PATH"),
    ({"stat_data": {"hp": 2**60 + 1}}, "MVU_JSON"),
    ({"stat_data": {"hp": 1}, "schema": "junk"}, "MVU_SCHEMA_CODE"),
    ({"stat_data": {"hp": 1}, "colour": "red"}, "MVU_JSON"),
])
async def test_an_edit_that_would_poison_later_replies_is_refused(
        service: MvuService, host: MemoryHost, ledger: Ledger, content: dict[str, Any], code: str) -> None:
    instance = await playing(service, host, card=PLAIN)
    with pytest.raises(MvuError) as caught:
        await service.update(id=instance, content=content, expected_revision=0, operation_id="bad",
                             scope=scope("s1"))
    assert caught.value.code == code
    await host.turn("s1", turn=1, user="go", reply="_.set('hp', 11);")
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.content["stat_data"]["hp"] == 11  # type: ignore[index]
    assert [v.kind for v in await ledger.versions(instance)] == ["reply"]


async def test_an_edit_keeps_the_native_schema_in_step_and_replays_identically(
        service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    instance = await playing(service, host, card=PLAIN)
    body = {"stat_data": {"hp": 3, "items": ["rope"], "mana": 4}}
    first = await service.update(id=instance, content=body, expected_revision=0, operation_id="e", scope=scope("s1"))
    # A reply moves the state on; the same edit sent again is still a replay, not a conflict.
    await host.turn("s1", turn=1, user="go", reply="_.set('hp', 9);")
    again = await service.update(id=instance, content=body, expected_revision=0, operation_id="e", scope=scope("s1"))
    assert (again.replayed, again.revision) == (True, first.revision)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    assert record.content["stat_data"] == {"hp": 9, "items": ["rope"], "mana": 4}  # type: ignore[index]
    assert "mana" in record.content["schema"]["properties"]  # type: ignore[index]
    assert record.content["update_diagnostics"] == []  # type: ignore[index]
    assert await ledger.audit() == []


async def test_an_edit_whose_head_moves_before_its_lock_builds_on_the_head_its_revision_names(
        service: MvuService, host: MemoryHost, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    """The edit reads its resource and head before it takes the session's lock. A head that
    moves in between, to exactly the revision the caller expected, is read again: the new
    envelope keeps what that head holds besides stat_data, not what the earlier one held."""
    instance = await playing(service, host)
    head = await ledger.head(instance)
    moved = {**head.variables, "initialized_lorebooks": {"moved-in-between": []}}
    read = asyncio.Event()
    real = ledger.resource_head

    async def observed(resource_id: str) -> Any:
        try:
            return await real(resource_id)
        finally:
            read.set()

    monkeypatch.setattr(ledger, "resource_head", observed)
    async with ledger.session_lock("s1"):
        editing = asyncio.ensure_future(edit(service, instance, {"hp": 7, "gold": 1}, head.revision + 1, "late"))
        await read.wait()  # the edit saw the old head and now waits for the lock
        await ledger.commit(CommitRequest(instance, head.revision, "manual", moved, "fp-moved", {"manual": True},
                                          operation_id="moved"))
    receipt = await editing

    assert receipt.revision == head.revision + 2
    assert receipt.content["initialized_lorebooks"] == {"moved-in-between": []}
    assert (await current(service, instance)).content["stat_data"]["hp"] == 7
