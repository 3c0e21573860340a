"""Reads (DIGEST A, A-2): scopes, the record shape, historical records and history (A-6)."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import PLAIN, playing, scope


def code_of(error: pytest.ExceptionInfo[MvuError]) -> str:
    return str(error.value.code)


async def two_turns(service: MvuService, host: MemoryHost) -> tuple[str, int, int]:
    """s1 playing HERO with two applied replies; returns the instance and the two reply seqs."""
    instance = await playing(service, host)
    first = await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);", message_id="m1")
    second = await host.turn("s1", turn=2, user="b", reply="_.set('hp', 30);", message_id="m2")
    return instance, first, second


# -- scopes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    {"authority": "remote", "session_id": "s1"},
    {"authority": "cloud"},
])
async def test_only_the_local_authority_is_served(service: MvuService, bad: dict[str, Any]) -> None:
    with pytest.raises(MvuError) as error:
        await service.list(scope=bad)
    assert code_of(error) == "MVU_AUTHORITY"
    with pytest.raises(MvuError) as error:
        await service.read(id="mvu:x", scope=bad)
    assert code_of(error) == "MVU_AUTHORITY"


@pytest.mark.parametrize("bad", [
    {"authority": "local", "sessionId": "s1", "colour": "red"},
    {"authority": "local", "historical": True},
    {"authority": "local", "session_id": 5},
    {"authority": "local", "session_id": ""},
    {"authority": "local", "session_id": "s1", "end_event_id": True},
    {"authority": "local", "session_id": "s1", "end_event_id": "3"},
    {"authority": "local", "session_id": "s1", "end_event_id": -1},
    "local",
    None,
])
async def test_unknown_scope_keys_and_bad_types_are_refused(service: MvuService, bad: Any) -> None:
    with pytest.raises(MvuError) as error:
        await service.list(scope=bad)
    assert code_of(error) == "MVU_SCOPE"


async def test_camel_case_scope_keys_are_accepted(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    record = await service.read(id=instance, scope={"authority": "local", "sessionId": "s1"})
    assert record is not None and record.scope == {"authority": "local", "sessionId": "s1"}


async def test_a_session_without_access_gets_scope_mismatch(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    host.create_session("s2", created_at=2000)
    with pytest.raises(MvuError) as error:
        await service.read(id=instance, scope=scope("s2"))
    assert code_of(error) == "SCOPE_MISMATCH"
    with pytest.raises(MvuError) as error:
        await service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 1}}, expected_revision=0,
                             operation_id="op", scope=scope("s2"))
    assert code_of(error) == "SCOPE_MISMATCH"
    with pytest.raises(MvuError) as error:
        await service.history(id=instance, scope=scope("s2"))
    assert code_of(error) == "SCOPE_MISMATCH"
    with pytest.raises(MvuError) as error:
        await service.facts(id=instance, scope=scope("s2"))
    assert code_of(error) == "SCOPE_MISMATCH"
    assert [r.id for r in await service.list(scope=scope("s2"))] == []
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.revision == 0


async def test_the_management_scope_lists_everything(service: MvuService, host: MemoryHost) -> None:
    hero = await playing(service, host, "s1")
    plain = await playing(service, host, "s2", card=PLAIN, created_at=2000)
    assert {r.id for r in await service.list(scope=scope("s1"))} == {hero}
    assert {r.id for r in await service.list(scope=scope("s2"))} == {plain}
    assert {r.id for r in await service.list(scope={"authority": "local"})} == {hero, plain}
    record = await service.read(id=plain, scope={"authority": "local"})
    assert record is not None and record.content["stat_data"] == {"hp": 10, "items": []}


async def test_reading_a_missing_id_is_none(service: MvuService, host: MemoryHost) -> None:
    await playing(service, host)
    assert await service.read(id="mvu:nothing-here", scope=scope("s1")) is None
    assert await service.read(id="mvu:nothing-here", scope=scope()) is None
    assert await service.history(id="mvu:nothing-here", scope=scope("s1")) == []


# -- the record shape ------------------------------------------------------------------------


async def test_a_current_record_has_the_originals_camel_case_shape(service: MvuService, host: MemoryHost) -> None:
    instance = await playing(service, host)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    data = record.to_json()
    for key in ("id", "name", "type", "authority", "scope", "content", "revision", "currentRevision",
                "historical", "versionKey", "managementMode", "storedManagementMode", "templateId", "instance"):
        assert key in data, key
    assert not any("_" in key for key in data), "camelCase keys only"
    assert data["id"] == instance and instance.startswith("mvu:instance-")
    assert (data["type"], data["authority"]) == ("mvu-state", "local")
    assert (data["revision"], data["currentRevision"], data["historical"]) == (0, 0, False)
    assert data["versionKey"] is None
    assert (data["managementMode"], data["storedManagementMode"]) == ("native", "native")
    assert data["templateId"].startswith("mvu:character-")
    assert data["instance"] == {"sessionId": "s1", "createdAt": 1000}
    assert data["content"]["stat_data"] == {"hp": 50, "gold": 10, "level": 1, "mood": "calm"}
    assert "legacy" not in data and "sourceError" not in data and "capabilities" not in data


async def test_historical_reads_by_message_id_and_end_event_id(service: MvuService, host: MemoryHost) -> None:
    instance, first, second = await two_turns(service, host)
    current = await service.read(id=instance, scope=scope("s1"))
    assert current is not None and (current.revision, current.content["stat_data"]["hp"]) == (2, 30)
    for historical in (scope("s1", message_id="m1"), scope("s1", end_event_id=first),
                       scope("s1", message_id="m1", end_event_id=first), scope("s1", end_event_id=second - 1)):
        record = await service.read(id=instance, scope=historical)
        assert record is not None, historical
        assert record.content["stat_data"]["hp"] == 40, historical
        assert (record.revision, record.current_revision, record.historical) == (1, 2, True), historical
        assert record.version_key is not None and record.version_key != current.version_key
        assert record.to_json()["historical"] is True
    latest = await service.read(id=instance, scope=scope("s1", message_id="m2"))
    assert latest is not None and (latest.revision, latest.current_revision) == (2, 2)
    assert latest.version_key == current.version_key


async def test_historical_coordinates_that_disagree_are_refused(service: MvuService, host: MemoryHost) -> None:
    instance, _, second = await two_turns(service, host)
    with pytest.raises(MvuError) as error:
        await service.read(id=instance, scope=scope("s1", message_id="m1", end_event_id=second))
    assert code_of(error) == "MVU_SCOPE"
    with pytest.raises(MvuError) as error:
        await service.read(id=instance, scope=scope("s1", message_id="no-such-message"))
    assert code_of(error) == "MVU_SCOPE"


async def test_a_historical_scope_is_never_editable(service: MvuService, host: MemoryHost) -> None:
    instance, first, _ = await two_turns(service, host)
    for historical in (scope("s1", message_id="m1"), scope("s1", end_event_id=first)):
        with pytest.raises(MvuError) as error:
            await service.update(id=instance, content={"stat_data": {"hp": 1, "gold": 1}}, expected_revision=2,
                                 operation_id="op-h", scope=historical)
        assert code_of(error) == "MVU_SCOPE"
        with pytest.raises(MvuError) as error:
            await service.set_management_mode(id=instance, mode="managed", expected_revision=2,
                                              operation_id="op-h", scope=historical)
        assert code_of(error) == "MVU_SCOPE"
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.revision == 2


# -- history (A-6) -----------------------------------------------------------------------------


async def test_history_is_the_sessions_versions_oldest_first_with_failures(service: MvuService,
                                                                          host: MemoryHost) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);")
    await host.turn("s1", turn=2, user="b", reply="_.set('hp', 1); _.set(bag, {'__proto__': 1});")
    await host.turn("s1", turn=3, user="c", reply="_.set('gold', 4);")
    await service.update(id=instance, content={"stat_data": {"hp": 12, "gold": 4}}, expected_revision=3,
                         operation_id="edit", scope=scope("s1"))
    history = await service.history(id=instance, scope=scope("s1"))
    assert [entry.kind for entry in history] == ["reply", "failed", "reply", "manual"]
    assert [entry.revision for entry in history] == [1, 2, 3, 4]
    assert (history[1].error, history[0].error) == ("MVU_PATH", None)
    failed, before = history[1].variables, history[0].variables
    assert isinstance(failed, dict) and isinstance(before, dict)
    assert failed["stat_data"] == before["stat_data"], "a failure keeps the state unchanged"
    # ... but not the diagnostics of the version before it: it changed nothing, and its one
    # diagnostic is its failure (issue 33).
    assert failed["delta_data"] == {"changes": []}
    assert [(item["kind"], item["code"]) for item in failed["update_diagnostics"]] == [("refused", "MVU_PATH")]
    assert history[3].operation_id == "edit"
    assert all(entry.before_available is None and "beforeAvailable" not in entry.to_json() for entry in history)
    assert isinstance(history, list)


async def test_history_with_before_comes_from_the_parent_or_the_checkpoint(service: MvuService,
                                                                          host: MemoryHost) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);")
    await host.turn("s1", turn=2, user="b", reply="_.set('hp', 30);")
    await service.update(id=instance, content={"stat_data": {"hp": 20, "gold": 10}}, expected_revision=2,
                         operation_id="edit", scope=scope("s1"))
    history = await service.history(id=instance, scope=scope("s1"), include_before=True)
    assert [(e.kind, e.before_available) for e in history] == [("reply", True), ("reply", True), ("manual", True)]
    hp_before = [e.before["hp"] for e in history]  # type: ignore[index]
    assert hp_before == [50, 40, 30]
    assert history[0].parent_key is None, "the first reply's before is its turn's checkpoint"
    assert history[0].to_json()["beforeAvailable"] is True


async def test_unknown_before_evidence_stays_unavailable(service: MvuService, host: MemoryHost) -> None:
    await service.discover(definition=PLAIN)
    host.create_session("s1", created_at=1000)
    selection = await service.select_character(session_id="s1", character_id="plain")
    instance = selection.instance_id
    assert instance is not None
    # A manual edit at the opening has no parent version and no turn checkpoint.
    await service.update(id=instance, content={"stat_data": {"hp": 3, "items": []}},
                         expected_revision=0, operation_id="opening", scope=scope("s1"))
    history = await service.history(id=instance, scope=scope("s1"), include_before=True)
    assert [(e.kind, e.before_available, e.before) for e in history] == [("manual", False, None)]
