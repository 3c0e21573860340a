"""Explicit resources (DIGEST I-10, I-11) and validate_config (A-3)."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import HERO, scope

CAMPAIGN: dict[str, Any] = {"id": "mvu:campaign", "session_ids": ["s1", "s2"], "sharing": "shared",
                            "initial": "hp: 5\n"}


def code_of(error: pytest.ExceptionInfo[MvuError]) -> str:
    return str(error.value.code)


def configured(ledger: Ledger, host: MemoryHost, *resources: dict[str, Any]) -> MvuService:
    service = MvuService(ledger=ledger, host=host, resources=list(resources))
    host.attach(service)
    return service


async def read(service: MvuService, resource_id: str, session_id: str | None) -> Any:
    record = await service.read(id=resource_id, scope=scope(session_id))
    assert record is not None
    return record


# -- shared resources --------------------------------------------------------------------------


async def test_a_shared_resource_is_one_state_for_its_sessions(ledger: Ledger, host: MemoryHost) -> None:
    service = configured(ledger, host, CAMPAIGN)
    for session_id, created_at in (("s1", 1000), ("s2", 2000), ("s3", 3000)):
        host.create_session(session_id, created_at=created_at)
    assert [r.id for r in await service.list(scope=scope("s1"))] == ["mvu:campaign"]
    assert [r.id for r in await service.list(scope=scope("s2"))] == ["mvu:campaign"]
    assert await service.list(scope=scope("s3")) == []
    record = await read(service, "mvu:campaign", "s1")
    assert (record.content["stat_data"], record.revision, record.template_id, record.instance) == (
        {"hp": 5}, 0, None, None)
    await service.update(id="mvu:campaign", content={"stat_data": {"hp": 7}}, expected_revision=0,
                         operation_id="from-s1", scope=scope("s1"))
    assert (await read(service, "mvu:campaign", "s2")).content["stat_data"] == {"hp": 7}
    await service.update(id="mvu:campaign", content={"stat_data": {"hp": 8}}, expected_revision=1,
                         operation_id="from-s2", scope=scope("s2"))
    with pytest.raises(MvuError) as error:
        await service.update(id="mvu:campaign", content={"stat_data": {"hp": 9}}, expected_revision=1,
                             operation_id="stale-s1", scope=scope("s1"))
    assert code_of(error) == "REVISION_CONFLICT"
    # A reply in either session writes the same state.
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 3);")
    shared = await read(service, "mvu:campaign", "s2")
    assert (shared.content["stat_data"], shared.revision) == ({"hp": 3}, 3)
    with pytest.raises(MvuError) as error:
        await service.read(id="mvu:campaign", scope=scope("s3"))
    assert code_of(error) == "SCOPE_MISMATCH"
    assert {r.id for r in await service.list(scope=scope())} == {"mvu:campaign"}


async def test_an_edit_of_a_shared_resource_names_its_own_session_s_last_reply(
        ledger: Ledger, host: MemoryHost) -> None:
    service = configured(ledger, host, CAMPAIGN)
    host.create_session("s1", created_at=1000)
    host.create_session("s2", created_at=2000)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 4);")
    s1_last = await host.turn("s1", turn=2, user="b", reply="_.set('hp', 3);")
    s2_last = await host.turn("s2", turn=1, user="c", reply="_.set('hp', 2);")  # the head: s2's reply
    revision = (await read(service, "mvu:campaign", "s1")).revision

    async def edit(session_id: str, operation_id: str, hp: int) -> Any:
        nonlocal revision
        revision = (await service.update(id="mvu:campaign", content={"stat_data": {"hp": hp}},
                                         expected_revision=revision, operation_id=operation_id,
                                         scope=scope(session_id))).revision
        return (await service.history(id="mvu:campaign", scope=scope(session_id)))[-1].source

    assert (await edit("s1", "e1", 9))["messageSeq"] == s1_last != s2_last
    assert (await edit("s2", "e2", 8))["messageSeq"] == s2_last
    assert (await edit("s1", "e3", 7)) == {"sessionId": "s1", "messageId": "manual:e3", "messageSeq": s1_last,
                                            "manual": True}


async def test_a_configuration_change_is_not_a_reset(ledger: Ledger, host: MemoryHost) -> None:
    host.create_session("s1", created_at=1000)
    first = configured(ledger, host, CAMPAIGN)
    await first.update(id="mvu:campaign", content={"stat_data": {"hp": 7}}, expected_revision=0,
                       operation_id="edit", scope=scope("s1"))
    second = configured(ledger, host, {**CAMPAIGN, "initial": "hp: 100\n"})
    record = await read(second, "mvu:campaign", "s1")
    assert (record.content["stat_data"], record.revision) == ({"hp": 7}, 1)


# -- templates -------------------------------------------------------------------------------------


async def test_a_wildcard_template_gives_every_session_its_own_instance(ledger: Ledger, host: MemoryHost) -> None:
    service = configured(ledger, host, {"id": "mvu:party", "session_ids": ["*"],
                                        "initial": {"stat_data": {"hp": 100, "bag": []}}})
    host.create_session("s1", created_at=1000)
    host.create_session("s2", created_at=2000)
    [one] = await service.list(scope=scope("s1"))
    [two] = await service.list(scope=scope("s2"))
    assert one.id != two.id and one.id.startswith("mvu:instance-") and two.id.startswith("mvu:instance-")
    assert (one.template_id, two.template_id) == ("mvu:party", "mvu:party")
    assert (one.instance, two.instance) == ({"sessionId": "s1", "createdAt": 1000},
                                            {"sessionId": "s2", "createdAt": 2000})
    assert one.content["stat_data"] == two.content["stat_data"] == {"hp": 100, "bag": []}
    assert await service.read(id="mvu:party", scope=scope("s1")) is None, "a template is never a state"
    await service.update(id=one.id, content={"stat_data": {"hp": 1, "bag": []}}, expected_revision=0,
                         operation_id="one", scope=scope("s1"))
    assert (await read(service, two.id, "s2")).content["stat_data"]["hp"] == 100
    with pytest.raises(MvuError) as error:
        await service.read(id=one.id, scope=scope("s2"))
    assert code_of(error) == "SCOPE_MISMATCH"
    # Listing again allocates nothing new: one instance per session identity.
    assert [r.id for r in await service.list(scope=scope("s1"))] == [one.id]


async def test_a_template_for_named_sessions_only(ledger: Ledger, host: MemoryHost) -> None:
    service = configured(ledger, host, {"id": "mvu:duel", "session_ids": ["s1"], "initial": "hp: 3\n"})
    host.create_session("s1", created_at=1000)
    host.create_session("s2", created_at=2000)
    [record] = await service.list(scope=scope("s1"))
    assert record.template_id == "mvu:duel" and record.content["stat_data"] == {"hp": 3}
    assert await service.list(scope=scope("s2")) == []


@pytest.mark.parametrize("initial", ["hp: 5\nbag:\n  - rope\n", {"stat_data": {"hp": 5, "bag": ["rope"]}},
                                     ["hp: 5\n", {"bag": ["rope"]}]])
async def test_yaml_envelope_and_merged_initials(ledger: Ledger, host: MemoryHost, initial: Any) -> None:
    service = configured(ledger, host, {"id": "mvu:bag", "session_ids": ["*"], "initial": initial})
    host.create_session("s1", created_at=1000)
    [record] = await service.list(scope=scope("s1"))
    assert record.content["stat_data"] == {"hp": 5, "bag": ["rope"]}


async def test_a_character_id_without_initial_reads_the_cards_envelope(ledger: Ledger, host: MemoryHost) -> None:
    service = configured(ledger, host, {"id": "mvu:hero-run", "session_ids": ["*"], "character_id": "hero"})
    await service.discover(definition=HERO)
    host.create_session("s1", created_at=1000)
    host.create_session("s2", created_at=2000)
    selection = await service.select_character(session_id="s1", character_id="hero")
    records = {r.template_id: r for r in await service.list(scope=scope("s1"))}
    assert set(records) == {"mvu:hero-run", selection.template_id}
    run = records["mvu:hero-run"]
    card = records[selection.template_id]
    assert run.content["stat_data"] == card.content["stat_data"] == {"hp": 50, "gold": 10, "level": 1,
                                                                     "mood": "calm"}
    assert run.content["mvu_schema"] == card.content["mvu_schema"]
    with pytest.raises(MvuError) as error:  # the card's declaration governs the configured resource too
        await service.update(id=run.id, content={"stat_data": {"hp": 1, "gold": -1}}, expected_revision=0,
                             operation_id="neg", scope=scope("s1"))
    assert code_of(error) == "MVU_SCHEMA"
    assert await service.list(scope=scope("s2")) == [], "only sessions that selected the card"


# -- invalid configurations -------------------------------------------------------------------------


@pytest.mark.parametrize("resources", [
    [{"id": "campaign", "session_ids": ["*"], "initial": "hp: 1\n"}],
    [{"id": "mvu:bad id", "session_ids": ["*"], "initial": "hp: 1\n"}],
    [{"id": "mvu:" + "x" * 161, "session_ids": ["*"], "initial": "hp: 1\n"}],
    [{"id": "mvu:instance-abc", "session_ids": ["*"], "initial": "hp: 1\n"}],
    [{"id": "mvu:character-abc", "session_ids": ["*"], "initial": "hp: 1\n"}],
    [{"id": "mvu:a", "session_ids": ["*"], "initial": "hp: 1\n"}, {"id": "mvu:a", "session_ids": ["s1"]}],
    [{"id": "mvu:a", "session_ids": ["*"], "initial": {"hp": 1}}],
    [{"id": "mvu:a", "session_ids": ["*"], "initial": {"stat_data": [1]}}],
    [{"id": "mvu:a", "session_ids": ["*"], "initial": "hp: 1\n", "sharing": "private"}],
    [{"id": "mvu:a", "session_ids": ["*"], "initial": "hp: 1\n", "management_mode": "auto"}],
    [{"id": "mvu:a", "session_ids": [""], "initial": "hp: 1\n"}],
    [{"id": "mvu:a", "initial": "hp: 1\n"}],
    [{"id": "mvu:a", "session_ids": ["*"], "initial": "hp: 1\n", "colour": "red"}],
])
async def test_invalid_configurations_are_refused(ledger: Ledger, host: MemoryHost,
                                                  resources: list[dict[str, Any]]) -> None:
    with pytest.raises(MvuError) as error:
        MvuService(ledger=ledger, host=host, resources=resources)
    assert code_of(error) == "MVU_CONFIG"


async def test_camel_case_configuration_keys_are_accepted(ledger: Ledger, host: MemoryHost) -> None:
    service = configured(ledger, host, {"id": "mvu:campaign", "sessionIds": ["s1"], "sharing": "shared",
                                        "initial": "hp: 5\n", "managementMode": "managed"})
    host.create_session("s1", created_at=1000)
    record = await read(service, "mvu:campaign", "s1")
    assert (record.stored_management_mode, record.management_mode) == ("managed", "native")


# -- validate_config (A-3) ----------------------------------------------------------------------------

STORE = ["parse_mvu_update", "validate_update", "apply_update"]
RETRIEVE = ["read_content", "render_state_and_update_instructions", "provide_to_model"]


@pytest.mark.parametrize("config", [
    {"type": "mvu-state"},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed"}},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": STORE}},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed",
                                    "strategy": [{"operation": name} for name in STORE]}},
    {"type": "mvu-state", "retrieve": {"on": "before_model_request", "strategy": RETRIEVE}},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": STORE},
     "retrieve": {"on": "before_model_request", "strategy": [RETRIEVE[0], {"operation": RETRIEVE[1]},
                                                              RETRIEVE[2]]}},
])
def test_validate_config_accepts_the_supported_chains(config: dict[str, Any]) -> None:
    assert MvuService.validate_config(config) is True


@pytest.mark.parametrize("config", [
    None,
    {},
    {"type": "mvu-variables"},
    {"type": "mvu-state", "store": {"on": "before_model_request", "strategy": RETRIEVE}},
    {"type": "mvu-state", "retrieve": {"on": "assistant_message_committed", "strategy": STORE}},
    {"type": "mvu-state", "store": {"on": "user_message_committed"}},
    {"type": "mvu-state", "store": "assistant_message_committed"},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": list(reversed(STORE))}},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": STORE[:2]}},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": [*STORE, "apply_update"]}},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": [
        {"operation": "parse_mvu_update", "strict": True}, "validate_update", "apply_update"]}},
    {"type": "mvu-state", "store": {"on": "assistant_message_committed", "strategy": [1, 2, 3]}},
    {"type": "mvu-state", "retrieve": {"on": "before_model_request", "strategy": RETRIEVE[:1]}},
])
def test_validate_config_refuses_anything_else(config: Any) -> None:
    with pytest.raises(MvuError) as error:
        MvuService.validate_config(config)
    assert code_of(error) == "MVU_CONFIG"
