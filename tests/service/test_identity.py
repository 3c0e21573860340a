"""Discovery, templates and instances (DIGEST I-1 ... I-4, I-6, I-7): ids, defaults, source
errors, card changes and the durable session identity an instance is bound to."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from mvu_store.service.identity import instance_id
from tests.service.support import HERO, INITVAR, SCHEMA, playing, revision, scope, stat_data

HERO_TEMPLATE = "mvu:character-" + hashlib.sha256(b"hero").hexdigest()[:32]
BROKEN = {"character_id": "broken", "name": "Broken", "initvar": [INITVAR], "schema_source": "this is not zod"}


def expected_instance_id(template_id: str, session_id: str, created_at: Any) -> str:
    text = json.dumps([template_id, {"sessionId": session_id, "createdAt": created_at}], separators=(",", ":"))
    return "mvu:instance-" + hashlib.sha256(text.encode()).hexdigest()[:48]


@pytest.mark.parametrize("created_at", [[1, 1.5, True, "1"], ["x", {"at": 1}, None]])
def test_an_instance_id_is_the_originals_for_each_created_at_however_often_it_is_asked(created_at: list[Any]) -> None:
    # Python takes 1, 1.0 and True for one key; their JSON texts, and so their ids, differ.
    for _ in range(2):
        ids = [instance_id(HERO_TEMPLATE, {"sessionId": "s1", "createdAt": value}) for value in created_at]
        assert ids == [expected_instance_id(HERO_TEMPLATE, "s1", value) for value in created_at]
    assert len(set(ids)) == len(ids)


async def expect_code(code: str, call: Any) -> MvuError:
    with pytest.raises(MvuError) as caught:
        await call
    assert caught.value.code == code, caught.value
    return caught.value


# -- discovery --------------------------------------------------------------------------------


async def test_discovery_registers_a_native_template_and_no_state(service: MvuService, ledger: Ledger) -> None:
    template = await service.discover(definition=HERO)
    assert template.id == HERO_TEMPLATE
    assert (template.character_id, template.name, template.discovered) == ("hero", "Hero", True)
    assert (template.management_mode, template.session_ids, template.source_error) == ("native", [], None)
    assert template.interpreter_version == 2
    assert template.changed is True
    stored = await ledger.template(HERO_TEMPLATE)
    assert isinstance(stored, dict)
    assert stored["initial"]["stat_data"] == {"hp": 50, "gold": 10, "level": 1, "mood": "calm"}
    # A template is never a state: nothing to list or read, and no instance until a selection.
    assert await ledger.resources() == []
    assert await service.list(scope=scope()) == []
    assert await service.read(id=HERO_TEMPLATE, scope=scope()) is None
    again = await service.discover(definition=HERO)
    assert again.changed is False and again.id == HERO_TEMPLATE
    assert await ledger.audit() == []


async def test_discovery_with_a_session_grants_that_session_only(service: MvuService, ledger: Ledger) -> None:
    first = await service.discover(definition=HERO, session_id="s1")
    assert first.session_ids == ["s1"]
    second = await service.discover(definition=HERO, session_id="s2")
    assert second.session_ids == ["s1", "s2"] and second.changed is True
    assert (await service.discover(definition=HERO, session_id="s1")).changed is False
    assert "*" not in second.session_ids


async def test_a_card_without_initvar_or_schema_stores_a_failed_template(service: MvuService, host: MemoryHost,
                                                                         ledger: Ledger) -> None:
    template = await service.discover(definition={"character_id": "empty", "name": "Empty"})
    assert template.source_error == "MVU_INITIALIZATION_MISSING"
    stored = await ledger.template(template.id)
    assert isinstance(stored, dict)
    assert stored["sourceError"] == "MVU_INITIALIZATION_MISSING"
    assert stored["initial"] == {"stat_data": {}}


async def test_two_schema_sources_conflict(service: MvuService) -> None:
    other = SCHEMA.replace("min(0)", "min(5)")
    template = await service.discover(definition={**HERO, "schema_source": [SCHEMA, other]})
    assert template.source_error == "MVU_SCHEMA_CONFLICT"
    # The same source twice is one schema, not a conflict.
    same = await service.discover(definition={**HERO, "character_id": "twice", "schema_source": [SCHEMA, SCHEMA]})
    assert same.source_error is None


async def test_a_broken_schema_blocks_the_instance(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    template = await service.discover(definition=BROKEN)
    assert template.source_error == "MVU_SCHEMA_CODE"
    host.create_session("s1", created_at=1000)
    selection = await service.select_character(session_id="s1", character_id="broken")
    instance = selection.instance_id
    assert instance is not None
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    assert record.source_error == "MVU_SCHEMA_CODE"
    assert record.content == {"stat_data": {}}
    await host.turn("s1", turn=1, user="go", reply="_.set('hp', 1);")
    assert await ledger.versions(instance) == []
    assert (await ledger.checkpoints(instance)) == []
    error = await expect_code("MVU_READ_ONLY", service.update(
        id=instance, content={"stat_data": {"hp": 1}}, expected_revision=0, operation_id="e1", scope=scope("s1")))
    assert error.details.get("source_error") == "MVU_SCHEMA_CODE"
    assert await revision(service, instance) == 0
    assert await ledger.audit() == []


async def test_a_failing_rediscovery_keeps_the_healthy_template(service: MvuService, ledger: Ledger) -> None:
    await service.discover(definition=HERO)
    before = await ledger.template(HERO_TEMPLATE)
    result = await service.discover(definition={**HERO, "schema_source": "this is not zod"})
    assert result.changed is False
    assert result.source_error is None
    assert result.rejected_error == "MVU_SCHEMA_CODE"  # the host learns why the new card was not taken
    assert await ledger.template(HERO_TEMPLATE) == before


async def test_a_changed_card_reaches_future_instances_only(service: MvuService, host: MemoryHost,
                                                            ledger: Ledger) -> None:
    await service.discover(definition=HERO)
    # An older cached template: compiled by interpreter 1.
    stored = await ledger.template(HERO_TEMPLATE)
    assert isinstance(stored, dict)
    older = copy.deepcopy(stored)
    older["initial"]["mvu_schema"]["interpreterVersion"] = 1
    await ledger.put_template(HERO_TEMPLATE, older)
    host.create_session("s1", created_at=1000)
    first = (await service.select_character(session_id="s1", character_id="hero")).instance_id
    assert first is not None
    old_record = await service.read(id=first, scope=scope("s1"))
    assert old_record is not None
    assert old_record.content["mvu_schema"]["interpreterVersion"] == 1  # type: ignore[index,call-overload]

    changed = await service.discover(definition={**HERO, "initvar": ["hp: 80\ngold: 5\n"]})
    assert changed.changed is True and changed.interpreter_version == 2
    kept = await service.read(id=first, scope=scope("s1"))
    assert kept is not None
    assert kept.content == old_record.content and kept.revision == 0

    host.create_session("s2", created_at=2000)
    second = (await service.select_character(session_id="s2", character_id="hero")).instance_id
    assert second is not None and second != first
    fresh = await service.read(id=second, scope=scope("s2"))
    assert fresh is not None
    assert fresh.content["stat_data"] == {"hp": 80, "gold": 5, "level": 1, "mood": "calm"}  # type: ignore[index,call-overload]
    assert fresh.content["mvu_schema"]["interpreterVersion"] == 2  # type: ignore[index,call-overload]
    # Reselecting in the old session does not reset it either (I-5).
    await service.select_character(session_id="s1", character_id=None)
    assert (await service.select_character(session_id="s1", character_id="hero")).instance_id == first
    again = await service.read(id=first, scope=scope("s1"))
    assert again is not None and again.content == old_record.content
    # The old playthrough keeps running with its own declaration.
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 3);")
    assert await stat_data(service, first) == {"hp": 50, "gold": 3, "level": 1, "mood": "calm"}
    assert await ledger.audit() == []


async def test_bad_definitions_are_config_errors(service: MvuService, ledger: Ledger) -> None:
    for definition in ({"character_id": ""}, {"name": "no id"}, {"character_id": "x", "unknown": 1},
                       {"character_id": "x", "initvar": "hp: 1"}, "hero", None):
        await expect_code("MVU_CONFIG", service.discover(definition=definition))
    assert await ledger.templates() == {}


# -- instances and session identity -------------------------------------------------------------


@pytest.mark.parametrize("created_at", [1234, "2026-11-29T22:00:00.000Z"])
async def test_an_instance_is_bound_to_its_template_and_session_identity(service: MvuService, host: MemoryHost,
                                                                         ledger: Ledger, created_at: Any) -> None:
    await service.discover(definition=HERO)
    host.create_session("s1", created_at=created_at)
    instance = (await service.select_character(session_id="s1", character_id="hero")).instance_id
    assert instance == expected_instance_id(HERO_TEMPLATE, "s1", created_at)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    assert record.template_id == HERO_TEMPLATE
    assert record.instance == {"sessionId": "s1", "createdAt": created_at}
    assert (record.management_mode, record.stored_management_mode) == ("native", "native")
    assert record.source == {"kind": "character", "characterId": "hero", "discovered": True}
    assert (record.revision, record.version_key, record.source_error) == (0, None, None)
    # Selecting and reading again allocates nothing more.
    await service.select_character(session_id="s1", character_id="hero")
    assert [row.id for row in await ledger.resources(kinds=("instance",))] == [instance]
    # Another session cannot read it.
    host.create_session("s2", created_at=created_at)
    await expect_code("SCOPE_MISMATCH", service.read(id=instance, scope=scope("s2")))


async def test_two_sessions_have_independent_instances(service: MvuService, host: MemoryHost,
                                                       ledger: Ledger) -> None:
    one = await playing(service, host, "s1", created_at=1000)
    host.create_session("s2", created_at=1000)
    two = (await service.select_character(session_id="s2", character_id="hero")).instance_id
    assert two is not None and two != one
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    await host.turn("s1", turn=2, user="go", reply="_.set('gold', 2);")
    await host.turn("s2", turn=1, user="go", reply="_.set('gold', 9);")
    assert (await revision(service, one, "s1"), await revision(service, two, "s2")) == (2, 1)
    assert (await stat_data(service, one, "s1"))["gold"] == 2
    assert (await stat_data(service, two, "s2"))["gold"] == 9
    assert len(await service.history(id=one, scope=scope("s1"))) == 2
    assert len(await service.history(id=two, scope=scope("s2"))) == 1
    assert await ledger.audit() == []


async def test_a_drifted_session_identity_refuses_reads_and_ingest(service: MvuService, host: MemoryHost,
                                                                   ledger: Ledger) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    host.set_created_at("s1", 9999)
    await expect_code("MVU_SESSION_IDENTITY", service.read(id=instance, scope=scope("s1")))
    await expect_code("MVU_SESSION_IDENTITY", service.ingest(session_id="s1"))
    await expect_code("MVU_SESSION_IDENTITY", service.update(
        id=instance, content={"stat_data": {"hp": 1, "gold": 1}}, expected_revision=1, operation_id="e1",
        scope=scope("s1")))
    # Nothing was allocated for the "new" identity, and the old state is intact.
    assert len(await ledger.resources(kinds=("instance",))) == 1
    host.set_created_at("s1", 1000)
    assert await revision(service, instance) == 1
    assert (await stat_data(service, instance))["gold"] == 1
    assert await ledger.audit() == []


@pytest.mark.parametrize("created_at", [None, ""])
async def test_a_session_without_creation_time_cannot_select(service: MvuService, host: MemoryHost,
                                                             ledger: Ledger, created_at: Any) -> None:
    await service.discover(definition=HERO)
    # Every host refuses such a header at creation (tests/hosts): a host whose session lost its
    # creation time later is what the service meets.
    host.create_session("s1", created_at=1000)
    host.set_created_at("s1", created_at)
    await expect_code("MVU_SESSION_IDENTITY", service.select_character(session_id="s1", character_id="hero"))
    assert await ledger.resources(kinds=("instance",)) == []


async def test_selecting_in_an_unknown_session_is_refused(service: MvuService, ledger: Ledger) -> None:
    await service.discover(definition=HERO)
    await expect_code("MVU_SESSION_IDENTITY", service.select_character(session_id="ghost", character_id="hero"))
    assert await ledger.resources(kinds=("instance",)) == []


async def test_a_fork_child_without_seed_is_refused(service: MvuService, host: MemoryHost, ledger: Ledger) -> None:
    parent = await playing(service, host, "s1")
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    host.create_session("c1", created_at=2000, parent_session="s1")
    error = await expect_code("MVU_SEED_REQUIRED", service.select_character(session_id="c1", character_id="hero"))
    assert error.details.get("parent_session") == "s1"
    assert [row.id for row in await ledger.resources(kinds=("instance",))] == [parent]
    # The child never guesses its state from the parent's current one, and the refused
    # selection did not stick: the session is not left blocked.
    assert await service.list(scope=scope("c1")) == []
    assert (await ledger.selection("c1")) == (False, None)


async def test_subagent_sessions_are_ignored_by_ingest(service: MvuService, host: MemoryHost,
                                                       ledger: Ledger) -> None:
    await service.discover(definition=HERO)
    host.create_session("sub", created_at=1000, origin="subagent")
    instance = (await service.select_character(session_id="sub", character_id="hero")).instance_id
    assert instance is not None
    await host.turn("sub", turn=1, user="go", reply="_.set('gold', 1);")
    report = await service.ingest(session_id="sub")
    assert report.outcomes == []
    assert await ledger.versions(instance) == []
    assert await stat_data(service, instance, "sub") == {"hp": 50, "gold": 10, "level": 1, "mood": "calm"}
    assert await ledger.facts(session_id="sub") == []


async def test_ingest_of_an_unknown_session_is_refused(service: MvuService) -> None:
    await expect_code("MVU_SESSION_IDENTITY", service.ingest(session_id="ghost"))


async def test_a_session_without_a_card_checkpoints_and_ingests_nothing(service: MvuService, host: MemoryHost,
                                                                        ledger: Ledger) -> None:
    await service.discover(definition=HERO)
    host.create_session("s1", created_at=1000)
    await host.turn("s1", turn=1, user="go", reply="_.set('gold', 1);")
    start = host.append("s1", "turn/start", {"turn": 2})
    assert await service.checkpoint(session_id="s1", turn_start_seq=start) == []
    assert (await service.ingest(session_id="s1")).outcomes == []
    assert await ledger.resources() == []
    assert await ledger.facts() == []
