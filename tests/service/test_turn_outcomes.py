"""A turn's outcome, command by command, and the diagnostics of each version (issue 33)."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import playing, scope, text_message
from tests.service.test_pipeline import detached, hand_turn

__all__ = ["detached"]  # the fixture, shared with the pipeline's tests


async def content_at(service: MvuService, instance: str, revision: int) -> Any:
    """The current record's content, which must be at ``revision`` (a host reads after every turn)."""
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None and record.revision == revision
    return record.content


async def test_the_answer_lists_every_command_with_its_outcome(service: MvuService, host: MemoryHost,
                                                               detached: str) -> None:
    text = ("_.set('hp', 20);\n_.set('gold', 10);\n_.set('mood', 'sleepy');\n_.set('hp', 5\n"
            "_.set('level', 2)\n_.sett('gold', 1);\n"
            '<JSONPatch>[{"op":"frobnicate","path":"/x"}]</JSONPatch>')
    _, report = await hand_turn(host, service, 1, [text_message(1, "m", text)])
    [outcome] = report.outcomes
    assert [(c["kind"], c.get("reason", c.get("code"))) for c in outcome.commands] == [
        ("applied", None), ("ignored", "no_op"), ("refused", "MVU_SCHEMA"), ("ignored", "unclosed"),
        ("ignored", "no_terminator"), ("ignored", "unknown_op")]
    assert outcome.commands[0]["before"] == 50 and outcome.commands[0]["after"] == 20
    refused = outcome.commands[2]
    assert refused["path"] == "/mood" and "mood" in str(refused["message"])
    assert (outcome.ignored_total, outcome.possible_total) == (4, 1)
    content = await content_at(service, detached, outcome.revision)
    assert content["delta_data"]["changes"] == [
        {"op": "set", "path": "/hp", "reason": "", "previous": 50, "value": 20}]
    assert content["update_diagnostics"] == outcome.diagnostics
    assert [item["kind"] for item in outcome.diagnostics] == ["ignored", "refused", *["ignored"] * 3, "possible"]
    assert outcome.to_json()["commands"] == outcome.commands


async def test_a_record_shows_the_diagnostics_of_its_own_version(service: MvuService, host: MemoryHost,
                                                                  detached: str) -> None:
    _, first = await hand_turn(host, service, 1, [text_message(1, "m1", "_.set('hp', 20);_.set('mood', 'x');")])
    assert len((await content_at(service, detached, 1))["update_diagnostics"]) == 1
    _, skipped = await hand_turn(host, service, 2, [text_message(
        2, "m2", '<JSONPatch>[{"op":"replace","path":"/hp","value":1}]')])
    skipped_content = await content_at(service, detached, 2)
    _, failed = await hand_turn(host, service, 3, [text_message(3, "m3", "_.set('__proto__.x', 1);")])
    failed_content = await content_at(service, detached, 3)
    [two], [three] = skipped.outcomes, failed.outcomes
    assert two.status == "skipped" and two.reason is not None and "not closed" in two.reason
    assert skipped_content["delta_data"] == {"changes": []}
    assert [item["reason"] for item in skipped_content["update_diagnostics"]] == ["unclosed_block"]
    assert (three.status, three.error) == ("failed", "MVU_PATH")
    assert three.message is not None and "'__proto__.x'" in three.message
    # A failed version leaves the head where it was (the original's receipt): the record shows the
    # skipped version's state, under its key, with the failed version's own diagnostic (the
    # failure), and the failed version in the history has none of another's.
    assert {**failed_content, "update_diagnostics": None} == {**skipped_content, "update_diagnostics": None}
    assert skipped_content["stat_data"] == {"hp": 20, "gold": 10, "level": 1, "mood": "calm"}
    assert [item["code"] for item in failed_content["update_diagnostics"]] == ["MVU_PATH"]
    record = await service.read(id=detached, scope=scope("s1"))
    assert record is not None and record.version_key == two.version_key
    history = await service.history(id=detached, scope=scope("s1"))
    failure: Any = history[-1].variables
    assert history[-1].kind == "failed" and (failure["delta_data"], failure["update_diagnostics"]) == (
        {"changes": []}, failed_content["update_diagnostics"])
    assert first.outcomes[0].diagnostics != skipped_content["update_diagnostics"]


async def test_a_reply_without_commands_says_so(service: MvuService, host: MemoryHost, detached: str) -> None:
    _, report = await hand_turn(host, service, 1, [text_message(1, "m", "They rest by the fire.")])
    [outcome] = report.outcomes
    assert (outcome.status, outcome.reason, outcome.commands) == ("skipped", "the reply has no update command", [])


async def test_an_edit_missing_a_key_says_an_edit_replaces_the_whole_state(service: MvuService,
                                                                           host: MemoryHost) -> None:
    instance = await playing(service, host)
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    with pytest.raises(MvuError) as caught:
        await service.update(id=instance, content={"stat_data": {"hp": 12, "level": 1, "mood": "calm"}},
                             expected_revision=record.revision, operation_id="edit", scope=scope("s1"))
    assert caught.value.code == "MVU_SCHEMA"
    assert "replaces the whole stat_data" in caught.value.message and "/gold" in caught.value.message
    assert caught.value.details["missing"] == ["/gold"]


async def test_a_prompt_for_a_turn_never_started_names_the_missing_turn_start(service: MvuService,
                                                                             host: MemoryHost) -> None:
    instance = await playing(service, host)
    await host.turn("s1", turn=1, user="a", reply="_.set('hp', 40);")
    macro = "{{format_message_variable::stat_data.hp}}"
    with pytest.raises(MvuError) as caught:
        await service.render_world_book(scope=scope("s1"), entries=[{"text": macro}], id=instance, turn=2)
    assert caught.value.code == "MVU_USAGE_DENIED"
    assert "turn 2 has no turn/start" in caught.value.message
    rendered = await service.render_world_book(scope=scope("s1"), entries=[{"text": macro}], id=instance, turn=2,
                                               preview=True)
    assert rendered.texts == ["40"]
