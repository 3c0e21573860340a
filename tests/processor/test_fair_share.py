"""Every card's script gets its share of the engine process (docs/processor.md): the requests
waiting for it are taken one card at a time, so a card whose script spends its whole budget on
every reply delays another card's reply by the one request it is running, not by all it queued.
No time is measured: the order the replies end in says it."""

from __future__ import annotations

import asyncio

from mvu_store.errors import MvuError
from mvu_store.lang import parse_commands
from mvu_store.processor.registry import CardProcessors
from tests.processor.support import PASS, helper, processor_turn

SPINS = helper("for (;;) {}")  # each reply runs to its budget: MVU_COMMAND_HOOK_LIMIT
TEXT = "_.set('hp', 1, 2);"


async def _ended_in_order(processors: CardProcessors, resources: list[str]) -> list[tuple[str, str]]:
    """Send one reply to each of ``resources`` in that order (the first is running before the
    next is queued); (resource, outcome) in the order they ended."""
    commands = tuple(parse_commands(TEXT))
    ended: list[tuple[str, str]] = []

    async def reply(resource: str, seq: int) -> None:
        try:
            await processors.process(commands, processor_turn(resource, seq, TEXT))
            ended.append((resource, "kept"))
        except MvuError as error:
            ended.append((resource, error.code))

    await asyncio.gather(*(reply(resource, seq) for seq, resource in enumerate(resources, start=1)))
    return ended


async def test_a_spinning_cards_queued_replies_wait_behind_another_cards_reply() -> None:
    processors = CardProcessors()
    try:
        await processors.register("slow", SPINS)
        await processors.register("good", PASS)
        ended = await _ended_in_order(processors, ["slow", "slow", "slow", "good"])
        assert ended == [("slow", "MVU_COMMAND_HOOK_LIMIT"), ("good", "kept"),
                         ("slow", "MVU_COMMAND_HOOK_LIMIT"), ("slow", "MVU_COMMAND_HOOK_LIMIT")]
    finally:
        processors.dispose()


async def test_the_share_is_the_cards_script_not_each_of_its_sessions() -> None:
    """Two instances playing the same script share one turn: spreading a card's replies over
    sessions does not buy it more of the engine."""
    processors = CardProcessors()
    try:
        for resource in ("slow-a", "slow-b"):
            await processors.register(resource, SPINS)
        await processors.register("good", PASS)
        ended = await _ended_in_order(processors, ["slow-a", "slow-b", "slow-a", "good"])
        assert [resource for resource, _ in ended] == ["slow-a", "good", "slow-b", "slow-a"]
    finally:
        processors.dispose()


async def test_each_cards_replies_keep_their_order() -> None:
    processors = CardProcessors()
    try:
        await processors.register("a", PASS)
        await processors.register("b", helper("const other = 'script';"))
        ended = await _ended_in_order(processors, ["a", "a", "b", "a", "b"])
        assert [resource for resource, _ in ended] == ["a", "b", "a", "b", "a"]
    finally:
        processors.dispose()
