"""Command processor benchmark: what a card's script adds to a turn, end to end.

The card and the replies are ``benchmarks/ingest.py``'s (a Zod declaration of ~30 fields over a
~5 KiB ``stat_data``, five commands a reply). Three copies of the card are discovered in one
service over one ledger: one without a command processor, one whose Helper script is a typical
card's guard (it reads the variables, drops commands on protected paths, keeps the rest in
order: these replies touch no protected path, so it keeps all five, as a guard does on most
turns), and one whose script drops a command on every turn (``world.time``). Each plays its own
session through ``MemoryHost`` (``turn/start`` → checkpoint, the reply and ``turn/end`` →
ingest), in interleaved rounds (the order rotates every round), so all see the same machine
load:

- ``added_cost_ratio``: the median over the rounds of ``(guarded turn - plain turn) / plain
  turn``, mean wall times of the round's turns; the script's engine and its VM are reused, the
  commands go in and come back as JSON text once per turn;
- ``added_cost_ratio_filtering``: the same for the script that drops a command every turn (the
  commands applied while the script ran are then applied again without it);
- ``first_turn_ms``: the first turn of the guarded session, which starts the engine process and
  the script (``first_turn_ms_plain``: the plain card's first turn, for comparison).

The ledger is a SQLite file in a temporary directory (WAL, ``synchronous=FULL``). Human lines
first; the LAST line is one JSON object with the figures and the load average of the run.

    python benchmarks/processor.py [--rounds N] [--turns N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import SCHEMA, initial_state, reply  # the same card and replies

from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService

HELPER = """
const PROTECTED = ['flags', 'hero.name', 'hero.level'];
let registered = false;
function register() {
  if (registered) return;
  registered = true;
  eventMakeLast(Mvu.events.COMMAND_PARSED, (variables, commands, text) => {
    const hero = variables.stat_data.hero;
    for (let i = commands.length - 1; i >= 0; i--) {
      const path = commands[i].args[0] || '';
      const guarded = PROTECTED.some(prefix => path === prefix || path.startsWith(prefix + '.'));
      if (guarded || (path === 'hero.gold' && hero.gold > 1e9)) commands.splice(i, 1);
    }
  });
}
eventOn('global_Mvu_initialized', register);
register();
"""
FILTERING = HELPER.replace("const PROTECTED = ['flags', 'hero.name', 'hero.level'];",
                           "const PROTECTED = ['flags', 'hero.name', 'hero.level', 'world.time'];")
SESSIONS = {"plain": None, "scripted": HELPER, "filtering": FILTERING}


def say(line: str) -> None:
    print(line, flush=True)


async def start(service: MvuService, host: MemoryHost, session_id: str, character_id: str, at: int) -> str:
    host.create_session(session_id, created_at=at)
    selection = await service.select_character(session_id=session_id, character_id=character_id)
    assert selection.instance_id is not None
    return selection.instance_id


async def timed(host: MemoryHost, session_id: str, first: int, turns: int) -> float:
    """Mean wall ms of ``turns`` turns of the session, starting at turn ``first``."""
    started = time.perf_counter()
    for turn in range(first, first + turns):
        await host.turn(session_id, turn=turn, user="onwards", reply=reply(turn))
    return (time.perf_counter() - started) * 1000 / turns


async def check(service: MvuService, instance: str, session_id: str, turns: int) -> None:
    """Every session committed every turn, the scripts let the hero's updates through, and the
    filtering one kept the time of day the initial state has."""
    record = await service.read(id=instance, scope={"authority": "local", "session_id": session_id})
    assert record is not None and record.revision == turns, (record.revision if record else None, turns)
    stat_data: Any = record.content["stat_data"]
    assert stat_data["hero"]["exp"] == 120 + turns
    last_set = re.search(r"_\.set\('world\.time', '(\w+)'\)", reply(turns))
    assert last_set is not None
    kept_time = initial_state()["world"]["time"]  # type: ignore[index,call-overload]
    expected = kept_time if session_id == "filtering" else last_set.group(1)
    assert stat_data["world"]["time"] == expected, (session_id, stat_data["world"]["time"], expected)


async def measure(url: str, rounds: int, turns: int) -> dict[str, Any]:
    ledger = await open_ledger(url, synchronous="FULL")
    host = MemoryHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    initvar = [json.dumps(initial_state())]
    instances = {}
    for index, (name, source) in enumerate(SESSIONS.items()):
        extra = {} if source is None else {"command_source": source}
        template = await service.discover(definition={"character_id": name, "name": name, "initvar": initvar,
                                                      "schema_source": SCHEMA, **extra})
        assert template.source_error is None, template
        instances[name] = await start(service, host, name, name, 1000 * (index + 1))
    first = {name: await timed(host, name, 1, 1) for name in SESSIONS}
    ms: dict[str, list[float]] = {name: [] for name in SESSIONS}
    next_turn = 2
    names = list(SESSIONS)
    for index in range(rounds):
        for name in names[index % len(names):] + names[:index % len(names)]:
            ms[name].append(await timed(host, name, next_turn, turns))
        next_turn += turns
    for name, instance in instances.items():
        await check(service, instance, name, next_turn - 1)
    record = await service.read(id=instances["scripted"], scope={"authority": "local", "session_id": "scripted"})
    assert record is not None and record.command_processor is not None
    await service.close()
    await ledger.close()
    return {"ms": ms, "first": first, "listener_count": record.command_processor["listenerCount"]}


def added(figures: dict[str, Any], name: str) -> float:
    """The median over the rounds of the session's added cost over the plain one's."""
    return statistics.median((mine - plain) / plain for mine, plain in zip(figures["ms"][name], figures["ms"]["plain"],
                                                                           strict=True))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    parser.add_argument("--turns", type=int, default=20, help="turns of each session per round (default 20)")
    parser.add_argument("--quick", action="store_true", help="a smaller run (seconds, for smoke tests)")
    args = parser.parse_args(argv)
    rounds, turns = (2, 3) if args.quick else (args.rounds, args.turns)
    if rounds < 1 or turns < 1:
        parser.error("--rounds and --turns must be positive")
    with tempfile.TemporaryDirectory(prefix="mvu-bench-processor-") as temp:
        say(f"command processor, end to end through MvuService + MemoryHost, sqlite ledger"
            f"{' (quick)' if args.quick else ''}")
        figures = asyncio.run(measure(f"sqlite:///{Path(temp) / 'ledger.sqlite3'}", rounds, turns))
    ratio, filtering = added(figures, "scripted"), added(figures, "filtering")
    mean = {name: statistics.fmean(values) for name, values in figures["ms"].items()}
    load = os.getloadavg()
    say(f"a turn without a processor: {mean['plain']:.2f} ms; with the guard script: {mean['scripted']:.2f} ms; "
        f"with a script that drops a command: {mean['filtering']:.2f} ms ({rounds} rounds of {turns} turns each)")
    say(f"added cost: median {ratio:+.3f} of a turn with the guard, {filtering:+.3f} with the dropping script")
    say(f"first turn: {figures['first']['scripted']:.1f} ms with the script (engine process and script started), "
        f"{figures['first']['plain']:.1f} ms without")
    say(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    result = {
        "added_cost_ratio": round(ratio, 3),
        "added_cost_ratio_filtering": round(filtering, 3),
        "first_turn_ms": round(figures["first"]["scripted"], 1),
        "first_turn_ms_plain": round(figures["first"]["plain"], 1),
        "turn_ms_plain": round(mean["plain"], 3),
        "turn_ms_processor": round(mean["scripted"], 3),
        "turn_ms_processor_filtering": round(mean["filtering"], 3),
        "rounds": rounds,
        "turns_per_round": turns,
        "listener_count": figures["listener_count"],
        "load_average_1m": round(load[0], 2),
        "quick": args.quick,
    }
    print(json.dumps(result, sort_keys=True), flush=True)
    return result


if __name__ == "__main__":
    main()
