"""One card's slow script beside another card's: what the engine's per-card share buys.

A card's script that spins on every reply (``for (;;) {}``: each reply runs to the engine's
per-call budget and fails ``MVU_COMMAND_HOOK_LIMIT``) keeps ``--flood`` replies in flight all the
time, as a card played in several sessions at once would; meanwhile another card's script (a
pass-through) processes ``--replies`` replies one after another, and the latency of each is
measured. Two runs side by side in one process:

- ``one_queue``: every request in one queue, in arrival order, as the engine took them before it
  had shares (the slow card's queued replies all run before the other card's);
- ``per_card``: the engine's shares (``mvu_store/processor/engine.py``): one request of each
  waiting card's script in turn.

Human lines first; the LAST line is one JSON object.

    python benchmarks/processor_share.py [--flood 6] [--replies 10] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any

from mvu_store.errors import MvuError
from mvu_store.lang import parse_commands
from mvu_store.processor.declaration import Declaration
from mvu_store.processor.port import ProcessorTurn
from mvu_store.processor.registry import CardProcessors


def _helper(body: str) -> str:
    return ("eventOn('global_Mvu_initialized', () => {});\n"
            f"eventMakeLast(Mvu.events.COMMAND_PARSED, (variables, commands, text) => {{ {body} }});\n")


SPINS = _helper("for (;;) {}")
PASSES = _helper("")
TEXT = "_.set('hp', 1, 2);"
COMMANDS = tuple(parse_commands(TEXT))
ONE_SHARE = Declaration("")


class OneQueue(CardProcessors):
    """Every card's requests in one share: the engine's order before shares."""

    async def _call(self, request: dict[str, Any], body: str, made: Declaration) -> Any:
        return await super()._call(request, body, ONE_SHARE)


def _turn(resource_id: str, seq: int) -> ProcessorTurn:
    return ProcessorTurn(resource_id=resource_id, session_id="s", turn=1, message_seq=seq, text=TEXT,
                         variables={"stat_data": {"hp": 1}})


async def measure(processors: CardProcessors, flood: int, replies: int) -> dict[str, Any]:
    await processors.register("slow", SPINS)
    await processors.register("good", PASSES)
    stop = asyncio.Event()
    slow_answers: dict[str, int] = {}

    async def flooding(lane: int) -> None:
        seq = lane * 1_000_000
        while not stop.is_set():
            seq += 1
            try:
                await processors.process(COMMANDS, _turn("slow", seq))
                code = "kept"
            except MvuError as error:
                code = error.code
            slow_answers[code] = slow_answers.get(code, 0) + 1

    lanes = [asyncio.ensure_future(flooding(lane)) for lane in range(flood)]
    await asyncio.sleep(0)  # the flood is queued before the first measured reply
    latencies = []
    try:
        for seq in range(replies):
            started = time.perf_counter()
            kept = await processors.process(COMMANDS, _turn("good", seq))
            latencies.append(time.perf_counter() - started)
            assert list(kept) == list(COMMANDS)
    finally:
        stop.set()
        await asyncio.gather(*lanes)
        processors.dispose()
    return {"replies": len(latencies), "medianMs": round(statistics.median(latencies) * 1000, 1),
            "worstMs": round(max(latencies) * 1000, 1), "slowAnswers": slow_answers}


async def run(flood: int, replies: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"flood": flood}
    figures["one_queue"] = await measure(OneQueue(), flood, replies)
    print(f"one queue: {figures['one_queue']}")
    figures["per_card"] = await measure(CardProcessors(), flood, replies)
    print(f"per card:  {figures['per_card']}")
    figures["worst_ratio"] = round(figures["one_queue"]["worstMs"] / figures["per_card"]["worstMs"], 1)
    figures["median_ratio"] = round(figures["one_queue"]["medianMs"] / figures["per_card"]["medianMs"], 1)
    print(f"the other card's reply: worst x{figures['worst_ratio']}, median x{figures['median_ratio']} "
          "faster with shares")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flood", type=int, default=6, help="the slow card's replies kept in flight")
    parser.add_argument("--replies", type=int, default=10, help="the other card's replies measured")
    parser.add_argument("--quick", action="store_true", help="3 in flight, 3 replies")
    options = parser.parse_args()
    if options.quick:
        options.flood, options.replies = 3, 3
    figures = asyncio.run(run(options.flood, options.replies))
    figures["quick"] = options.quick
    figures["loadAverage"] = [round(value, 2) for value in os.getloadavg()]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
