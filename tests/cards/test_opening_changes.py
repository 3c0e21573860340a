"""What an opening changed, in the ``changes`` table: the greeting's rows are written with the
instance (actor ``opening``, position -1, revision 0), only for what the greeting changed, and
"what set this value" finds them before the first turn's."""

from __future__ import annotations

from typing import Any

from mvu_store.cards import read_card
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import Change, MvuService
from tests.cards import baiya
from tests.ledger.change_fixtures import change_rows
from tests.service.support import scope

DEPENDENCE = "/白娅/依存度"
NO_OP = "<UpdateVariable>_.set('白娅.依存度', 35);</UpdateVariable>"
STRIPPED = "<UpdateVariable>_.set('白娅.心情', '好');</UpdateVariable>"


async def _card(service: MvuService, host: MemoryHost, *alternates: str) -> None:
    found = read_card(baiya.card_bytes(*alternates), name="baiya")
    await service.discover(definition=found.definition("baiya"))
    host.create_session("s1", created_at=1000)


async def _open(service: MvuService, index: int) -> str:
    chosen = await service.select_character(session_id="s1", character_id="baiya", greeting_index=index)
    assert chosen.instance_id is not None
    return chosen.instance_id


def _shown(changes: list[Change]) -> list[tuple[Any, ...]]:
    return [(c.position, c.revision, c.turn, c.actor, c.status, c.op, c.before, c.after) for c in changes]


async def test_what_set_a_value_the_greeting_patched_is_the_opening(service: MvuService, host: MemoryHost) -> None:
    await _card(service, host)
    instance = await _open(service, 2)  # a JSON Patch to 150, clamped to 100 by the declaration
    story = await service.changes(id=instance, scope=scope("s1"), path=DEPENDENCE)
    assert _shown(story.changes) == [(-1, 0, None, "opening", "applied", "replace", 35, 100)]
    assert story.changes[0].session_id == "s1" and story.changes[0].message_seq is None

    await host.turn("s1", turn=1, user="你好", reply="_.add('白娅.依存度', -5);", message_id="m1")
    story = await service.changes(id=instance, scope=scope("s1"), path=DEPENDENCE)
    assert [(c.position, c.actor, c.after) for c in story.changes] == [(-1, "opening", 100), (0, "reply", 95)]
    created = await service.changes(id=instance, scope=scope("s1"), revision=0)
    assert _shown(created.changes) == [(-1, 0, None, "opening", "applied", "replace", 35, 100)]
    turn = await service.changes(id=instance, scope=scope("s1"), turn=1)
    assert [c.actor for c in turn.changes] == ["reply"]


async def test_only_what_the_greeting_changed_has_rows(service: MvuService, host: MemoryHost,
                                                       ledger: Ledger) -> None:
    await _card(service, host)
    first = await _open(service, 0)  # the first message has no update block
    assert (await service.changes(id=first, scope=scope("s1"), path=DEPENDENCE)).changes == []
    assert (await service.changes(id=first, scope=scope("s1"), revision=0)).changes == []
    alternate = await _open(service, 1)  # its <initvar> replaces every leaf of the lorebook's data
    rows = await change_rows(ledger)
    assert {row["resource_id"] for row in rows} == {alternate}
    assert {(row["path"], row["actor"], row["position"]) for row in rows} == {
        (path, "opening", -1) for path in ("/世界/当前时间", "/世界/当前地点", "/白娅/依存度", "/白娅/着装/上装",
                                           "/白娅/着装/下装", "/白娅/着装/鞋子")}
    assert await ledger.audit() == []


async def test_a_greetings_commands_that_changed_nothing_are_ignored_rows(service: MvuService, host: MemoryHost,
                                                                          ledger: Ledger) -> None:
    await _card(service, host, NO_OP, STRIPPED)
    for index, path, reason, command in ((1, DEPENDENCE, "no_op", "_.set('白娅.依存度', 35);"),
                                         (2, "/白娅/心情", "stripped", "_.set('白娅.心情', '好');")):
        created = await service.changes(id=await _open(service, index), scope=scope("s1"), revision=0)
        assert [(c.position, c.actor, c.status, c.path, c.reason, c.command) for c in created.changes] == [
            (-1, "opening", "ignored", path, reason, command)]
    assert await ledger.audit() == []


async def test_each_greeting_copy_keeps_its_own_opening_rows_once(service: MvuService, host: MemoryHost,
                                                                  ledger: Ledger) -> None:
    await _card(service, host)
    patched = await _open(service, 2)
    plain = await _open(service, 0)
    assert await _open(service, 2) == patched  # switching back finds the copy: no second opening
    await _open(service, 0)
    rows = await change_rows(ledger)
    assert [(row["resource_id"], row["path"], row["after"]) for row in rows] == [(patched, DEPENDENCE, "100")]
    assert plain != patched
    assert await ledger.audit() == []
