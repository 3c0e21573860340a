"""The legacy shared ledger and manual recovery (DIGEST L-1, L-3, I-9)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.ledger.transfer import import_directory
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import SCHEMA, scope

LEGACY_ID = "mvu:party"
# The template a new playthrough of the same game starts from: same id as the legacy record.
PARTY: dict[str, Any] = {"id": LEGACY_ID, "session_ids": ["*"], "initial": "hp: 50\ngold: 10\n",
                         "schema_source": SCHEMA}


def code_of(error: pytest.ExceptionInfo[MvuError]) -> str:
    return str(error.value.code)


def legacy_version(key: str, revision: int, seq: int, stat_data: dict[str, Any]) -> dict[str, Any]:
    source = {"sessionId": "old", "sessionFormatVersion": 1, "eventType": "assistant/message",
              "messageId": f"old-m{revision}", "messageSeq": seq, "turn": revision, "step": None, "endSeq": seq + 1}
    return {"key": key, "source": source, "fingerprint": "f" * 64, "variables": {"stat_data": stat_data},
            "parentKey": None, "sourceRevision": revision - 1, "revision": revision, "configRevision": None}


LEGACY_DOCUMENT: dict[str, Any] = {"version": 1, "resources": {LEGACY_ID: {
    "revision": 2, "currentKey": "b" * 64, "managementMode": "native",
    "versions": [legacy_version("a" * 64, 1, 2, {"hp": 40, "gold": 10}),
                 legacy_version("b" * 64, 2, 6, {"hp": 130, "gold": 3, "title": "knight"})],
    "definition": {"id": LEGACY_ID, "name": "Party", "sessionIds": ["old"],
                   "initial": {"stat_data": {"hp": 50, "gold": 10}}},
}}}
# Indented, keys unsorted, a trailing newline: a byte-for-byte check means something.
LEGACY_BYTES = (json.dumps(LEGACY_DOCUMENT, indent=2, ensure_ascii=False) + "\n").encode()


async def import_legacy(ledger: Ledger, tmp_path: Path) -> None:
    directory = tmp_path / "original"
    directory.mkdir()
    (directory / "mvu-state.json").write_bytes(LEGACY_BYTES)
    await import_directory(ledger, directory)


def old_session(host: MemoryHost) -> None:
    """The old playthrough's host session, with the conversation the legacy versions came from."""
    host.create_session("old", created_at=500)
    for turn in (1, 2):
        host.append("old", "turn/start", {"turn": turn})
        host.append("old", "user/message", {"turn": turn, "message": {"source": {"kind": "user"},
                                                                       "content": [{"type": "text", "text": "hi"}]}})
        host.append("old", "assistant/message", {"turn": turn, "message": {
            "id": f"old-m{turn}", "content": [{"type": "text", "text": "ok"}]}})
        host.append("old", "turn/end", {"turn": turn, "reason": {"kind": "completed"}})


@pytest.fixture
async def legacy_service(ledger: Ledger, host: MemoryHost, tmp_path: Path) -> MvuService:
    await import_legacy(ledger, tmp_path)
    old_session(host)
    return MvuService(ledger=ledger, host=host)


async def test_a_legacy_record_is_listed_read_only(legacy_service: MvuService, ledger: Ledger) -> None:
    [record] = await legacy_service.list(scope=scope())
    assert record.id == LEGACY_ID and record.name == "Party"
    assert (record.legacy, record.source_error) == (True, "MVU_MIGRATION_REQUIRED")
    assert record.capabilities == {"edit": False, "copy": False, "management": False}
    assert (record.revision, record.current_revision, record.version_key) == (2, 2, "b" * 64)
    assert record.content == {"stat_data": {"hp": 130, "gold": 3, "title": "knight"}}
    data = record.to_json()
    assert (data["legacy"], data["sourceError"], data["capabilities"]["edit"]) == (True, "MVU_MIGRATION_REQUIRED",
                                                                                  False)
    old = await legacy_service.read(id=LEGACY_ID, scope=scope("old"))
    assert old is not None and old.legacy and old.content == record.content
    assert [r.id for r in await legacy_service.list(scope=scope("old"))] == [LEGACY_ID]
    history = await legacy_service.history(id=LEGACY_ID, scope=scope("old"))
    assert [(entry.kind, entry.revision) for entry in history] == [("legacy", 1), ("legacy", 2)]
    assert await ledger.legacy_file("mvu-state.json") == LEGACY_BYTES


async def test_a_legacy_record_is_not_visible_to_other_sessions(legacy_service: MvuService,
                                                                host: MemoryHost) -> None:
    host.create_session("stranger", created_at=900)
    assert await legacy_service.list(scope=scope("stranger")) == []
    with pytest.raises(MvuError) as error:
        await legacy_service.read(id=LEGACY_ID, scope=scope("stranger"))
    assert code_of(error) == "SCOPE_MISMATCH"


async def test_a_legacy_record_can_not_be_changed(legacy_service: MvuService, ledger: Ledger) -> None:
    for where in (scope("old"), scope()):
        with pytest.raises(MvuError) as error:
            await legacy_service.update(id=LEGACY_ID, content={"stat_data": {"hp": 1}}, expected_revision=2,
                                        operation_id="edit-legacy", scope=where)
        assert code_of(error) == "MVU_MIGRATION_REQUIRED"
        with pytest.raises(MvuError) as error:
            await legacy_service.copy(id=LEGACY_ID, new_id="mvu:rescued", scope=where)
        assert code_of(error) == "MVU_MIGRATION_REQUIRED"
        with pytest.raises(MvuError) as error:
            await legacy_service.set_management_mode(id=LEGACY_ID, mode="managed", expected_revision=2,
                                                     operation_id="mode-legacy", scope=where)
        assert code_of(error) == "MVU_MIGRATION_REQUIRED"
    assert await legacy_service.read(id="mvu:rescued", scope=scope()) is None
    assert await ledger.legacy_file("mvu-state.json") == LEGACY_BYTES
    [record] = await legacy_service.list(scope=scope())
    assert record.revision == 2 and record.stored_management_mode == "native"


async def test_a_copy_can_not_take_a_legacy_id(ledger: Ledger, host: MemoryHost, tmp_path: Path) -> None:
    await import_legacy(ledger, tmp_path)
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": "mvu:notes", "session_ids": ["s1"], "sharing": "shared", "initial": "hp: 1\n"}])
    host.create_session("s1", created_at=1000)
    with pytest.raises(MvuError) as error:
        await service.copy(id="mvu:notes", new_id=LEGACY_ID, scope=scope("s1"))
    assert code_of(error) == "MVU_ID_CONFLICT"


async def test_a_shared_configuration_can_not_reuse_a_legacy_id(ledger: Ledger, host: MemoryHost,
                                                                tmp_path: Path) -> None:
    await import_legacy(ledger, tmp_path)
    service = MvuService(ledger=ledger, host=host, resources=[
        {"id": LEGACY_ID, "session_ids": ["old"], "sharing": "shared", "initial": "hp: 1\n"}])
    with pytest.raises(MvuError) as error:
        await service.list(scope=scope())
    assert code_of(error) == "MVU_MIGRATION_REQUIRED"
    assert await ledger.legacy_file("mvu-state.json") == LEGACY_BYTES


async def test_a_session_bound_to_legacy_state_needs_an_explicit_recovery(ledger: Ledger, host: MemoryHost,
                                                                          tmp_path: Path) -> None:
    await import_legacy(ledger, tmp_path)
    old_session(host)
    service = MvuService(ledger=ledger, host=host, resources=[PARTY])
    with pytest.raises(MvuError) as error:
        await service.list(scope=scope("old"))
    assert code_of(error) == "MVU_MIGRATION_REQUIRED"
    # ... which never splits or rewrites the legacy record, and leaves it readable where it was.
    old = await service.read(id=LEGACY_ID, scope=scope("old"))
    assert old is not None and old.legacy and old.revision == 2
    with pytest.raises(MvuError) as error:  # only the legacy record itself
        await service.read(id="mvu:something-else", scope=scope("old"))
    assert code_of(error) == "MVU_MIGRATION_REQUIRED"
    assert await ledger.resources(session_id="old", kinds=("instance",)) == []
    assert await ledger.legacy_file("mvu-state.json") == LEGACY_BYTES


async def test_a_new_playthrough_starts_from_the_template(ledger: Ledger, host: MemoryHost,
                                                          tmp_path: Path) -> None:
    await import_legacy(ledger, tmp_path)
    old_session(host)
    service = MvuService(ledger=ledger, host=host, resources=[PARTY])
    host.attach(service)
    host.create_session("new", created_at=2000)
    [record] = await service.list(scope=scope("new"))
    assert record.id.startswith("mvu:instance-") and record.template_id == LEGACY_ID
    assert not record.legacy and record.source_error is None
    assert (record.revision, record.content["stat_data"]) == (0, {"hp": 50, "gold": 10, "level": 1, "mood": "calm"})
    await host.turn("new", turn=1, user="go", reply="_.set('gold', 11);")
    assert (await service.read(id=record.id, scope=scope("new"))).content["stat_data"]["gold"] == 11  # type: ignore[union-attr]
    [legacy] = [r for r in await service.list(scope=scope()) if r.legacy]
    assert legacy.content["stat_data"]["gold"] == 3 and legacy.revision == 2


async def test_manual_recovery_into_a_new_playthrough(ledger: Ledger, host: MemoryHost, tmp_path: Path) -> None:
    """L-3: read the old record in its scope, start a new playthrough, confirm its id and revision,
    update it with the chosen stat_data under CAS and a new operation id."""
    await import_legacy(ledger, tmp_path)
    old_session(host)
    service = MvuService(ledger=ledger, host=host, resources=[PARTY])
    host.attach(service)

    old = await service.read(id=LEGACY_ID, scope={"authority": "local", "sessionId": "old"})
    assert old is not None and old.legacy
    chosen = old.content["stat_data"]  # only the data: never the old envelope or schema

    host.create_session("new", created_at=2000)
    [target] = await service.list(scope={"authority": "local", "sessionId": "new"})
    confirmed = await service.read(id=target.id, scope={"authority": "local", "sessionId": "new"})
    assert confirmed is not None and (confirmed.id, confirmed.revision) == (target.id, 0)

    with pytest.raises(MvuError) as error:  # the target schema may refuse
        await service.update(id=target.id, content={"stat_data": {**chosen, "gold": -3}},
                             expected_revision=confirmed.revision, operation_id="recover-refused",
                             scope={"authority": "local", "sessionId": "new"})
    assert code_of(error) == "MVU_SCHEMA"
    receipt = await service.update(id=target.id, content={"stat_data": chosen},
                                   expected_revision=confirmed.revision, operation_id="recover-1",
                                   scope={"authority": "local", "sessionId": "new"})
    # ... or transform: hp is clamped, level and mood filled in (a registered root object is loose,
    # S-2, so the undeclared title stays); the target's declaration stays.
    assert receipt.content["stat_data"] == {"hp": 100, "gold": 3, "title": "knight", "level": 1, "mood": "calm"}
    assert receipt.content["mvu_schema"] == confirmed.content["mvu_schema"]
    assert receipt.revision == 1

    with pytest.raises(MvuError) as error:  # a stale revision: re-read and confirm
        await service.update(id=target.id, content={"stat_data": chosen}, expected_revision=0,
                             operation_id="recover-2", scope={"authority": "local", "sessionId": "new"})
    assert code_of(error) == "REVISION_CONFLICT"

    # Nothing else migrates: no history, and the old ledger is unchanged.
    history = await service.history(id=target.id, scope=scope("new"))
    assert [(entry.kind, entry.operation_id) for entry in history] == [("manual", "recover-1")]
    assert await ledger.legacy_file("mvu-state.json") == LEGACY_BYTES
    again = await service.read(id=LEGACY_ID, scope=scope("old"))
    assert again is not None and (again.revision, again.content) == (2, old.content)
