"""Concurrent ingest / update / select_character on one session, on SQLite and PostgreSQL.

The requirement: concurrent calls never lose a write and never apply a reply twice. In one
service the per-session lock orders the calls; two services (over one ledger object, or two
ledgers opened on one database, as two processes would) share nothing but the ledger, so there
the unique reply version key, the row-version CAS and the derived instance id decide. Every test
asserts outcomes (versions, revisions, state, audit), never timings. The two-OS-process variant
is in ``tests/reliability/test_service_processes.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from mvu_store.service.identity import character_template_id, instance_id
from tests.service.support import (
    PLAIN,
    assert_applied_once,
    checkpointed_turns,
    frozen_turns,
    playing,
    scope,
)

GOLD = "The guard pays up. _.add('gold', 1);"


def committed(reports: list[Any]) -> list[tuple[str, int]]:
    """(resource, turn) of every reply the reports say they committed."""
    return [(o.resource_id, o.turn) for report in reports for o in report.outcomes if o.status == "committed"]


async def test_gathered_ingests_apply_the_pending_reply_once(service: MvuService, host: MemoryHost,
                                                             ledger: Ledger) -> None:
    instance = await playing(service, host)
    host.attach(None)
    await checkpointed_turns(service, host, "s1", range(1, 7), GOLD)
    reports = await asyncio.gather(*(service.ingest(session_id="s1") for _ in range(16)))
    assert committed(reports) == [(instance, 6)], "turns 1-5 were applied by the checkpoints, turn 6 once here"
    stat = await assert_applied_once(service, ledger, instance, "s1", 6)
    assert stat["gold"] == 10 + 6


async def test_gathered_ingests_of_many_pending_replies_apply_each_once(service: MvuService, host: MemoryHost,
                                                                        ledger: Ledger) -> None:
    """Two services (two locks) over one ledger race through eight pending replies."""
    instance = await playing(service, host)
    host.attach(None)
    await frozen_turns(ledger, host, instance, "s1", range(1, 9), GOLD)
    other = MvuService(ledger=ledger, host=host)
    reports = await asyncio.gather(*(svc.ingest(session_id="s1") for _ in range(6) for svc in (service, other)))
    assert sorted(committed(reports)) == [(instance, turn) for turn in range(1, 9)]
    stat = await assert_applied_once(service, ledger, instance, "s1", 8)
    assert stat["gold"] == 10 + 8


async def edit_until_applied(service: MvuService, instance: str, session_id: str, field: str, value: Any) -> int:
    """A client's edit: read, change one field, CAS; on REVISION_CONFLICT re-read and try again."""
    for attempt in range(100):
        record = await service.read(id=instance, scope=scope(session_id))
        assert record is not None
        stat_data = dict(record.content["stat_data"])
        stat_data[field] = value
        try:
            receipt = await service.update(id=instance, content={"stat_data": stat_data},
                                           expected_revision=record.revision,
                                           operation_id=f"edit-{field}-{attempt}", scope=scope(session_id))
        except MvuError as error:
            if error.code != Code.REVISION_CONFLICT:
                raise
            continue
        assert receipt.content["stat_data"][field] == value
        return attempt
    raise AssertionError(f"the edit of {field} never landed")


async def test_ingest_racing_manual_edits_loses_no_write(service: MvuService, host: MemoryHost,
                                                         ledger: Ledger) -> None:
    instance = await playing(service, host)
    host.attach(None)
    await frozen_turns(ledger, host, instance, "s1", range(1, 7), GOLD)
    other = MvuService(ledger=ledger, host=host)  # edits through another lock: a real CAS race
    edits = {"mood": "angry", "level": 3, "hp": 77}
    results = await asyncio.gather(
        service.ingest(session_id="s1"),
        *(edit_until_applied(svc, instance, "s1", field, value)
          for svc, (field, value) in zip((other, service, other), edits.items(), strict=True)),
        service.ingest(session_id="s1"), other.ingest(session_id="s1"),
    )
    assert sorted(committed([results[0], *results[-2:]])) == [(instance, turn) for turn in range(1, 7)]
    stat = await assert_applied_once(service, ledger, instance, "s1", 6, manual=len(edits))
    assert stat == {"hp": 77, "gold": 10 + 6, "level": 3, "mood": "angry"}


async def test_gathered_selections_allocate_one_instance_per_character(service: MvuService, host: MemoryHost,
                                                                       ledger: Ledger) -> None:
    hero = await playing(service, host)
    await host.turn("s1", turn=1, user="hi", reply=GOLD)
    await service.discover(definition=PLAIN)
    other = MvuService(ledger=ledger, host=host)
    picks = ["hero", "plain", "hero", "plain", "plain", "hero", "hero", "plain"]
    results = await asyncio.gather(*(svc.select_character(session_id="s1", character_id=pick)
                                     for pick, svc in zip(picks, [service, other] * 4, strict=True)))
    identity = {"sessionId": "s1", "createdAt": 1000}
    expected = {pick: instance_id(character_template_id(pick), identity) for pick in ("hero", "plain")}
    assert expected["hero"] == hero
    for pick, result in zip(picks, results, strict=True):
        assert (result.template_id, result.instance_id) == (character_template_id(pick), expected[pick])
        assert result.boundary is not None
    instances = await ledger.resources(session_id="s1", kinds=("instance",))
    assert sorted(row.id for row in instances) == sorted(expected.values())
    assert len({row.template_id for row in instances}) == 2
    # The selection is one of the two, and reselecting it changes nothing.
    by_template = {character_template_id(pick): pick for pick in expected}
    selected, template_id = await ledger.selection("s1")
    assert selected and template_id in by_template
    again = await service.select_character(session_id="s1", character_id=by_template[template_id])
    assert (again.template_id, again.instance_id) == (template_id, expected[by_template[template_id]])
    boundaries = await ledger.activations("s1")
    assert again.boundary == boundaries[again.instance_id]
    # The hero's first reply (before any switch) stayed applied once; nothing else was.
    history = await service.history(id=hero, scope=scope("s1"))
    assert [(entry.kind, entry.source.get("turn")) for entry in history] == [("reply", 1)]
    assert await ledger.audit() == []


async def test_two_ledgers_on_one_database_race_ingest_of_one_session(ledger: Ledger, ledger_url: str,
                                                                       ledger_id: str) -> None:
    """Two services, each over its own ledger on the same database (two processes' worth)."""
    host = MemoryHost()
    first = MvuService(ledger=ledger, host=host)
    second_ledger = await open_ledger(ledger_url, ledger_id=ledger_id)
    try:
        second = MvuService(ledger=second_ledger, host=host)
        instance = await playing(first, host)
        await checkpointed_turns(first, host, "s1", range(1, 4), GOLD)  # turn 3 pending
        await frozen_turns(ledger, host, instance, "s1", range(4, 9), GOLD)  # turns 3-8 pending
        reports = await asyncio.gather(*(svc.ingest(session_id="s1") for _ in range(4) for svc in (first, second)))
        assert sorted(committed(reports)) == [(instance, turn) for turn in range(3, 9)]
        for svc in (first, second):
            stat = await assert_applied_once(svc, ledger, instance, "s1", 8)
            assert stat["gold"] == 10 + 8
        assert (await second.ingest(session_id="s1")).outcomes == []
    finally:
        await second_ledger.close()
