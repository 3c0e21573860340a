"""Ingest benchmark: completed turns per second through ``MvuService``, end to end.

A turn is what a host does per reply: ``turn/start`` → ``service.checkpoint``, then the user
message, the assistant reply and ``turn/end`` → ``service.ingest`` (``MemoryHost`` attached, so
every turn pays the host inspection, the ledger reads, the update language, the card's schema
validation and the durable commit, as in use). The card is realistic: a Zod declaration of about
30 fields (clamps through ``transform(_.clamp)``, ``coerce``, enums, nested objects and records)
over a ~5 KiB ``stat_data``, and every reply carries 5 commands (``_.set``, ``_.add`` and one
``<JSONPatch>`` op).

- (a) one session, ``--turns`` turns one after another;
- (b) ``--sessions`` sessions (16) in parallel: ``asyncio.gather`` of one such loop per session,
  each session ``--turns / --sessions`` turns (at least 2), in one service and one ledger;
- (c) growth (skipped with ``--skip-growth``): one more session played to ``--growth-turns``
  turns (N, default 1,000; 40 with ``--quick``), every turn timed on its own, to show how the
  cost of a turn, a read and a history page grows with the session's history:

  - ``turn_cost_growth`` = ``turn_ms_last / turn_ms_first``: the mean wall time of a turn over
    the last window (turns N-k .. N) divided by the mean over the first one (turns k .. 2k),
    both windows inclusive, with k = max(2, round(N / 100)): turns 10-20 and 990-1,000 for
    N = 1,000, turns 2-4 and 38-40 for N = 40. Turn 1 (first compile of the card, cold caches)
    is never in a window;
  - ``read_cost_growth`` = ``read_ms_last / read_ms_first``: the mean of ``--reads`` (20)
    consecutive ``service.read`` of the session's instance right after turn k (``read_ms_first``)
    and right after turn N (``read_ms_last``); reads are never inside a timed turn;
  - ``history_page_ms``: the mean of 5 ``service.history(..., limit=100)`` at N versions (the
    newest page; the run checks it holds the last 100 revisions).

Measured beside them in the same run, to say how far a turn is from the cost of its storage:

- ``raw_turn_commits_per_s``: raw ``sqlite3`` (same file settings: WAL, ``synchronous=FULL``)
  writing the rows one turn writes, one transaction per turn: the turn's checkpoint, the new
  state's blob (the same envelope, as canonical JSON with its SHA-256), the head's
  compare-and-swap, the version row and four trigger facts with the facts counter. Measured
  before and after (a); the mean is the figure. ``ratio_turn_vs_raw_commit`` = ``turns_per_s`` /
  it: everything a turn does above the storage engine counts against us;
- (d) edits: ``--edits`` (200) in-process ``service.update`` calls one after another on (a)'s
  instance (the card's declaration validates each), against ``ledger.commit`` of the same
  envelope on a resource of its own in the same ledger, in interleaved rounds:
  ``ratio_update_vs_ledger_commit`` = updates/s over the ledger's commits/s (the median of the
  rounds' ratios).

- (e) with ``--baseline DIR`` (another checkout of this repository, e.g. ``git worktree add --detach
  DIR COMMIT``): the same turns, one session of ``--side-turns`` (100; 10 with ``--quick``) after
  a warm-up turn, each in a child process of its own (a fresh SQLite ledger, ``synchronous=FULL``)
  whose ``mvu_store`` is that checkout's or this one's, alternating (the baseline's child right
  before this checkout's, ``--rounds`` times: 5, 2 with ``--quick``) so that the machine's load
  falls on both alike. ``turn_ms`` / ``baseline_turn_ms`` (wall) and ``turn_cpu_ms`` /
  ``baseline_turn_cpu_ms`` (the process's CPU time, every thread) are the medians of the rounds;
  ``ratio_turn_vs_baseline`` and ``ratio_turn_cpu_vs_baseline`` divide this checkout's by the
  baseline's. With ``--instructions`` too, each checkout's turn is also counted in instructions,
  a figure load hardly moves: the child run under ``valgrind --tool=callgrind`` twice, to
  ``--instruction-turns`` (20) and to twice as many, the difference divided by the turns between
  (``turn_instructions``, ``baseline_turn_instructions``, ``ratio_turn_instructions_vs_baseline``).

The ledger is a SQLite file in a temporary directory (WAL, ``synchronous=FULL``), or ``--url``
(e.g. the PostgreSQL test database; each run uses its own ``ledger_id``; the raw figure is then
still SQLite's, for reference). Human lines first; the LAST line is one JSON object with
``turns_per_s``, ``turns_per_s_16_sessions``, the ratios above (and, unless ``--skip-growth``,
the growth figures above).

    python benchmarks/ingest.py [--turns N] [--sessions N] [--growth-turns N] [--reads N]
                                [--skip-growth] [--url URL] [--quick]
                                [--baseline DIR [--side-turns N] [--rounds N]
                                 [--instructions [--instruction-turns N]]]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService

SCHEMA = """
import { registerMvuSchema } from 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';

const Stat = (low, high) => z.coerce.number().transform(v => _.clamp(v, low, high));
const Companion = z.object({
  affection: Stat(-100, 100),
  trust: Stat(0, 100),
  mood: z.enum(['happy', 'calm', 'sad', 'angry', 'afraid']).prefault('calm'),
  location: z.string(),
  notes: z.string().max(400),
});

export const Schema = z.object({
  world: z.object({
    day: z.coerce.number().int().min(1),
    time: z.enum(['dawn', 'morning', 'noon', 'evening', 'night']),
    weather: z.enum(['clear', 'rain', 'storm', 'fog', 'snow']).prefault('clear'),
    location: z.string(),
    events: z.array(z.string()).max(40),
  }),
  hero: z.object({
    name: z.string(),
    hp: Stat(0, 100),
    mp: Stat(0, 100),
    stamina: Stat(0, 100),
    sanity: Stat(0, 100),
    hunger: Stat(0, 100),
    level: z.coerce.number().int().min(1).prefault(1),
    exp: z.coerce.number().min(0),
    gold: z.coerce.number().min(0),
    mood: z.enum(['calm', 'angry', 'tired', 'elated']).prefault('calm'),
    status: z.array(z.string()).max(20),
    skills: z.record(z.string(), z.coerce.number().transform(v => _.clamp(v, 0, 10))),
  }),
  companions: z.record(z.string(), Companion),
  inventory: z.record(z.string(), z.object({ count: z.coerce.number().int().min(0), note: z.string() }))
    .transform(items => _.pickBy(items, ({ count }) => count > 0)),
  quests: z.record(z.string(), z.object({
    stage: z.coerce.number().int().min(0),
    status: z.enum(['active', 'done', 'failed']),
    summary: z.string(),
  })),
  flags: z.object({
    metKing: z.boolean(),
    cursed: z.boolean().prefault(false),
    chapter: z.coerce.number().int().min(1),
  }),
});

$(() => { registerMvuSchema(Schema); });
"""

LOREM = ("The road out of the valley is older than the kingdom; its stones remember carts, armies and "
         "the slow rain of every autumn. ")


def initial_state() -> dict[str, Any]:
    """The card's ``[initvar]``: a ~5 KiB ``stat_data`` (the size is printed and reported)."""
    companions = {
        name: {"affection": 10 * index, "trust": 40 + index, "mood": "calm", "location": "camp",
               "notes": f"{name}: " + LOREM * 3}
        for index, name in enumerate(["Aria", "Bram", "Cale", "Dara", "Edda"])
    }
    inventory = {item: {"count": count, "note": f"{item} " + LOREM[:60]}
                 for item, count in [("rope", 1), ("torch", 3), ("potion", 2), ("bread", 4), ("map", 1),
                                     ("dagger", 1), ("coin-purse", 1), ("herbs", 5)]}
    quests = {f"q{index}": {"stage": index, "status": "active", "summary": LOREM[: 60 + 10 * index]}
              for index in range(8)}
    return {
        "world": {"day": 1, "time": "morning", "weather": "clear", "location": "Valley road",
                  "events": [f"event {index}: " + LOREM[:60] for index in range(8)]},
        "hero": {"name": "Hero", "hp": 80, "mp": 40, "stamina": 70, "sanity": 90, "hunger": 20, "level": 3,
                 "exp": 120, "gold": 50, "mood": "calm", "status": ["rested"],
                 "skills": {"sword": 3, "bow": 2, "stealth": 4, "lore": 1, "charm": 2}},
        "companions": companions,
        "inventory": inventory,
        "quests": quests,
        "flags": {"metKing": False, "cursed": False, "chapter": 1},
    }


def reply(turn: int) -> str:
    """A reply with five commands: two ``_.add`` (one clamped), two ``_.set``, one JSON Patch op."""
    times = ["dawn", "morning", "noon", "evening", "night"]
    names = ["Aria", "Bram", "Cale", "Dara", "Edda"]
    return (
        f"The day wears on; the party walks and talks.\n<UpdateVariable>\n"
        f"_.add('hero.gold', {turn % 7 + 1});//loot\n"
        f"_.add('hero.hp', {(-1) ** turn * 15});//clamped to 0..100\n"
        f"_.set('world.time', '{times[turn % 5]}');\n"
        f"_.set('companions.{names[turn % 5]}.affection', {turn % 150});//clamped to -100..100\n"
        f'<JSONPatch>[{{"op": "replace", "path": "/hero/exp", "value": {120 + turn}}}]</JSONPatch>\n'
        f"</UpdateVariable>"
    )


def say(line: str) -> None:
    print(line, flush=True)


async def play(service: MvuService, host: MemoryHost, session_id: str, turns: int, created_at: int) -> str:
    host.create_session(session_id, created_at=created_at)
    selection = await service.select_character(session_id=session_id, character_id="bench")
    assert selection.instance_id is not None
    return selection.instance_id


async def session_loop(host: MemoryHost, session_id: str, first: int, turns: int) -> None:
    for turn in range(first, first + turns):
        await host.turn(session_id, turn=turn, user="onwards", reply=reply(turn))


async def check(service: MvuService, instance: str, session_id: str, turns: int) -> None:
    """The run did what it claims: every turn committed once, the state is valid and changed."""
    record = await service.read(id=instance, scope={"authority": "local", "session_id": session_id})
    assert record is not None and record.revision == turns, (record.revision if record else None, turns)
    assert record.content["update_diagnostics"] == [], record.content["update_diagnostics"]
    hero = record.content["stat_data"]["hero"]
    assert 0 <= hero["hp"] <= 100 and hero["exp"] == 120 + turns

def raw_turn_commits(directory: Path, envelope: dict[str, Any], turns: int) -> float:
    """Turns/s of raw sqlite3 writing one turn's rows in one transaction each (see the module doc)."""
    path = directory / f"raw-{uuid.uuid4().hex[:8]}.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(
        """
        CREATE TABLE resources (id TEXT PRIMARY KEY, revision INTEGER NOT NULL, head_hash TEXT NOT NULL);
        CREATE TABLE blobs (hash TEXT PRIMARY KEY, body TEXT NOT NULL);
        CREATE TABLE versions (resource_id TEXT, position INTEGER, key TEXT NOT NULL, revision INTEGER NOT NULL,
            variables_hash TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY (resource_id, position));
        CREATE UNIQUE INDEX versions_key ON versions (resource_id, key);
        CREATE TABLE checkpoints (resource_id TEXT, session_id TEXT, turn INTEGER, seq INTEGER NOT NULL,
            revision INTEGER NOT NULL, PRIMARY KEY (resource_id, session_id, turn));
        CREATE TABLE facts (seq INTEGER PRIMARY KEY, phase TEXT NOT NULL, body TEXT NOT NULL);
        CREATE TABLE counters (id INTEGER PRIMARY KEY, facts_count INTEGER NOT NULL, facts_next_seq INTEGER NOT NULL);
        INSERT INTO counters VALUES (1, 0, 0);
        INSERT INTO resources VALUES ('r', 0, '');
        """
    )
    facts = [json.dumps({"phase": phase, "id": "r", "turn": 0, "recordedAt": 1_700_000_000_000})
             for phase in ("started", "triggered", "applied", "completed")]

    def one(turn: int) -> None:
        state = {**envelope, "stat_data": {**envelope["stat_data"], "turn": turn}}
        body = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = hashlib.sha256(body.encode()).hexdigest()
        source = json.dumps({"sessionId": "s", "turn": turn, "messageSeq": 4 * turn + 2})
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO checkpoints VALUES ('r', 's', ?, ?, ?)", (turn, 4 * turn, turn - 1))
        db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (digest, body))
        if db.execute("UPDATE resources SET revision = ?, head_hash = ? WHERE id = 'r' AND revision = ?",
                      (turn, digest, turn - 1)).rowcount != 1:
            raise RuntimeError("CAS failed")
        db.execute("INSERT INTO versions VALUES ('r', ?, ?, ?, ?, ?)",
                   (turn, hashlib.sha256(source.encode()).hexdigest(), turn, digest, source))
        (count, next_seq), = db.execute("SELECT facts_count, facts_next_seq FROM counters WHERE id = 1")
        db.executemany("INSERT INTO facts VALUES (?, ?, ?)",
                       [(next_seq + index, "fact", fact) for index, fact in enumerate(facts)])
        db.execute("UPDATE counters SET facts_count = ?, facts_next_seq = ? WHERE id = 1",
                   (count + len(facts), next_seq + len(facts)))
        db.execute("COMMIT")

    for turn in range(1, 11):  # warm-up
        one(turn)
    started = time.perf_counter()
    for turn in range(11, 11 + turns):
        one(turn)
    elapsed = time.perf_counter() - started
    db.close()
    return turns / elapsed


EDIT_ROUNDS = 4


async def measure_edits(service: MvuService, ledger: Ledger, instance: str, session_id: str,
                        edits: int) -> dict[str, Any]:
    """(d): ``service.update`` one after another against ``ledger.commit`` of the same envelope."""
    scope = {"authority": "local", "session_id": session_id}
    record = await service.read(id=instance, scope=scope)
    assert record is not None
    revision = record.revision
    envelope = record.content
    assert isinstance(envelope, dict)
    own = f"mvu:bench-commits-{uuid.uuid4().hex[:8]}"
    await ledger.create_resource(NewResource(id=own, kind="shared", initial=envelope, definition={}))
    committed = 0
    rounds: list[tuple[float, float]] = []
    per_round = max(1, edits // EDIT_ROUNDS)
    for _ in range(EDIT_ROUNDS):
        started = time.perf_counter()
        for _ in range(per_round):
            stat = {**envelope["stat_data"], "hero": {**envelope["stat_data"]["hero"], "gold": revision}}
            receipt = await service.update(id=instance, content={"stat_data": stat}, expected_revision=revision,
                                           operation_id=f"edit-{uuid.uuid4().hex}", scope=scope)
            revision = receipt.revision
        updates = per_round / (time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(per_round):
            state = {**envelope, "stat_data": {**envelope["stat_data"], "n": committed}}
            outcome = await ledger.commit(CommitRequest(own, committed, "manual", state, uuid.uuid4().hex,
                                                        {"manual": True}, operation_id=f"op-{committed}"))
            committed = outcome.revision
        rounds.append((updates, per_round / (time.perf_counter() - started)))
    final = await service.read(id=instance, scope=scope)
    assert final is not None and final.revision == revision and final.content["update_diagnostics"] == []
    return {"edits": per_round * EDIT_ROUNDS,
            "updates_per_s": statistics.median(update for update, _ in rounds),
            "ledger_commits_per_s": statistics.median(commit for _, commit in rounds),
            "ratio_update_vs_ledger_commit": statistics.median(update / commit for update, commit in rounds)}


HISTORY_PAGE = 100
HISTORY_REPEATS = 5


@dataclass(frozen=True)
class Windows:
    """The turns whose times are compared: ``first`` (k .. 2k) and ``last`` (N-k .. N), inclusive."""

    turns: int
    k: int

    @classmethod
    def for_turns(cls, turns: int) -> Windows:
        return cls(turns, max(2, round(turns / 100)))

    @property
    def first(self) -> range:
        return range(self.k, 2 * self.k + 1)

    @property
    def last(self) -> range:
        return range(self.turns - self.k, self.turns + 1)


def min_growth_turns() -> int:
    """The smallest N whose two windows do not overlap (N - k > 2k; with k = 2: 2..4 and 5..7)."""
    turns = 1
    while Windows.for_turns(turns).last.start <= 2 * Windows.for_turns(turns).k:
        turns += 1
    return turns


async def mean_read_ms(service: MvuService, instance: str, session_id: str, reads: int, revision: int) -> float:
    scope = {"authority": "local", "session_id": session_id}
    times: list[float] = []
    for _ in range(reads):
        started = time.perf_counter()
        record = await service.read(id=instance, scope=scope)
        times.append(time.perf_counter() - started)
        assert record is not None and record.revision == revision, (record, revision)
    return 1000 * fmean(times)


async def history_page_ms(service: MvuService, instance: str, session_id: str, versions: int) -> float:
    """The mean time of the newest 100-entry history page at ``versions`` versions."""
    scope = {"authority": "local", "session_id": session_id}
    times: list[float] = []
    for _ in range(HISTORY_REPEATS):
        started = time.perf_counter()
        entries = await service.history(id=instance, scope=scope, limit=HISTORY_PAGE)
        times.append(time.perf_counter() - started)
        # The newest entries, oldest first: the page ends at the head.
        expected = list(range(max(1, versions - HISTORY_PAGE + 1), versions + 1))
        assert [entry.revision for entry in entries] == expected, [entry.revision for entry in entries][-3:]
    return 1000 * fmean(times)


async def measure_growth(service: MvuService, host: MemoryHost, run: str, turns: int,
                         reads: int) -> dict[str, Any]:
    """(c): one session played to ``turns`` turns, each turn timed; reads after turn k and N."""
    windows = Windows.for_turns(turns)
    session_id = f"growth-{run}"
    instance = await play(service, host, session_id, turns, 3000)
    turn_s: dict[int, float] = {}
    read_first = 0.0
    progress = max(1, turns // 10)
    for turn in range(1, turns + 1):
        started = time.perf_counter()
        await host.turn(session_id, turn=turn, user="onwards", reply=reply(turn))
        turn_s[turn] = time.perf_counter() - started
        if turn == windows.k:
            read_first = await mean_read_ms(service, instance, session_id, reads, turn)
        if turn % progress == 0:
            say(f"  growth: turn {turn}/{turns}, {1000 * turn_s[turn]:.1f} ms")
    read_last = await mean_read_ms(service, instance, session_id, reads, turns)
    await check(service, instance, session_id, turns)
    page_ms = await history_page_ms(service, instance, session_id, turns)
    turn_first = 1000 * fmean(turn_s[turn] for turn in windows.first)
    turn_last = 1000 * fmean(turn_s[turn] for turn in windows.last)
    return {"growth_turns": turns, "growth_window_k": windows.k,
            "growth_windows": {"first": [windows.first.start, windows.first.stop - 1],
                               "last": [windows.last.start, windows.last.stop - 1]},
            "turn_ms_first": turn_first, "turn_ms_last": turn_last, "read_ms_first": read_first,
            "read_ms_last": read_last, "reads_per_sample": reads, "history_page_ms": page_ms,
            "growth_s": sum(turn_s.values())}


async def bench_service(ledger: Ledger) -> tuple[MvuService, MemoryHost]:
    """A service over ``ledger`` that knows the card, with its host attached."""
    host = MemoryHost()
    service = MvuService(ledger=ledger, host=host)
    card = {"character_id": "bench", "name": "Bench", "initvar": [json.dumps(initial_state())],
            "schema_source": SCHEMA}
    template = await service.discover(definition=card)
    assert template.source_error is None, template
    host.attach(service)
    return service, host


async def measure(ledger: Ledger, turns: int, sessions: int, growth_turns: int | None,
                  reads: int, edits: int, scratch: Path) -> dict[str, Any]:
    service, host = await bench_service(ledger)
    run = uuid.uuid4().hex[:8]

    # (a) one session, turns one after another (one warm-up turn first, not counted).
    single = f"single-{run}"
    instance = await play(service, host, single, turns, 1000)
    await session_loop(host, single, 1, 1)
    record = await service.read(id=instance, scope={"authority": "local", "session_id": single})
    assert record is not None
    raw_before = raw_turn_commits(scratch, record.content, turns)
    started = time.perf_counter()
    await session_loop(host, single, 2, turns)
    single_s = time.perf_counter() - started
    raw_after = raw_turn_commits(scratch, record.content, turns)
    await check(service, instance, single, turns + 1)
    record = await service.read(id=instance, scope={"authority": "local", "session_id": single})
    assert record is not None
    envelope = json.dumps(record.content, separators=(",", ":"), ensure_ascii=False).encode()
    state_bytes = len(json.dumps(record.content["stat_data"], separators=(",", ":"), ensure_ascii=False).encode())

    # (b) many sessions in parallel.
    per_session = max(2, turns // sessions)
    ids = [f"par-{run}-{index}" for index in range(sessions)]
    instances = [await play(service, host, session_id, per_session, 2000 + index) for index, session_id in
                 enumerate(ids)]
    await asyncio.gather(*(session_loop(host, session_id, 1, 1) for session_id in ids))
    started = time.perf_counter()
    await asyncio.gather(*(session_loop(host, session_id, 2, per_session) for session_id in ids))
    parallel_s = time.perf_counter() - started
    for session_id, instance_id in zip(ids, instances, strict=True):
        await check(service, instance_id, session_id, per_session + 1)

    # (d) edits, on (a)'s instance (after (b), so the turn figures are as before).
    edited = await measure_edits(service, ledger, instance, single, edits)

    # (c) one long session (after (a) and (b), so their figures are as before).
    growth = {} if growth_turns is None else await measure_growth(service, host, run, growth_turns, reads)
    assert await ledger.audit() == []
    return {"turns": turns, "single_s": single_s, "parallel_turns": per_session * sessions,
            "parallel_s": parallel_s, "state_bytes": state_bytes, "envelope_bytes": len(envelope),
            "raw_turn_commits_per_s": (raw_before + raw_after) / 2, **edited, **growth}


async def run(url: str, turns: int, sessions: int, growth_turns: int | None, reads: int, edits: int,
              scratch: Path) -> dict[str, Any]:
    ledger_id = "default" if url.startswith("sqlite") else f"bench-{uuid.uuid4().hex[:12]}"
    ledger = await open_ledger(url, ledger_id=ledger_id, synchronous="FULL")
    try:
        return await measure(ledger, turns, sessions, growth_turns, reads, edits, scratch)
    finally:
        await ledger.close()


ROOT = Path(__file__).resolve().parents[1]
"""This checkout: the code a side-by-side child imports unless it is the baseline's."""


async def side_turns(url: str, turns: int) -> dict[str, Any]:
    """(e), one child: a warm-up turn, then ``turns`` turns of one session, timed."""
    ledger = await open_ledger(url, synchronous="FULL")
    try:
        service, host = await bench_service(ledger)
        instance = await play(service, host, "side", turns, 1000)
        await session_loop(host, "side", 1, 1)
        started, cpu = time.perf_counter(), time.process_time()
        await session_loop(host, "side", 2, turns)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        await check(service, instance, "side", turns + 1)
    finally:
        await ledger.close()
    return {"turn_ms": 1000 * seconds / turns, "turn_cpu_ms": 1000 * cpu / turns}


def side_child(code: Path, turns: int, scratch: Path, *, callgrind: Path | None = None) -> dict[str, Any]:
    """One (e) child run with ``code``'s ``mvu_store`` (under callgrind when ``callgrind`` names
    its output file); its figures."""
    db = scratch / f"side-{uuid.uuid4().hex[:8]}.sqlite3"
    command = [sys.executable, __file__, "--child-turns", str(turns), "--url", f"sqlite:///{db}"]
    if callgrind is not None:
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}", *command]
    # PYTHONPATH comes before the installed (editable) package: the child imports ``code``'s.
    # A fixed hash seed: the same dictionaries, the same instructions, run after run.
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the side-by-side child ({code}) failed:\n{done.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def callgrind_instructions(out: Path) -> int:
    """The instructions a callgrind run counted, all threads (its ``totals:`` / ``summary:`` line)."""
    total = 0
    for path in out.parent.glob(f"{out.name}*"):  # one file per thread with --separate-threads
        match = re.search(r"^(?:totals|summary): (\d+)", path.read_text(errors="replace"), re.MULTILINE)
        assert match is not None, path
        total += int(match.group(1))
    return total


def turn_instructions(code: Path, turns: int, scratch: Path) -> float:
    """Instructions a turn costs with ``code``: two callgrind runs, to ``turns`` and ``2 * turns``
    turns, so that start-up, the card's compile and the warm-up cancel out."""
    counts = []
    for played in (turns, 2 * turns):
        out = scratch / f"callgrind-{uuid.uuid4().hex[:8]}.out"
        side_child(code, played, scratch, callgrind=out)
        counts.append(callgrind_instructions(out))
    return (counts[1] - counts[0]) / turns


def side_by_side(baseline: Path, turns: int, rounds: int, instructions: int | None, scratch: Path) -> dict[str, Any]:
    """(e): this checkout's turn against ``baseline``'s, alternating children (see the module doc)."""
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
    for round_ in range(rounds):
        for name, code in (("baseline", baseline), ("this", ROOT)):
            runs[name].append(side_child(code, turns, scratch))
        say(f"  side by side, round {round_ + 1}/{rounds}: a turn {runs['baseline'][-1]['turn_ms']:.2f} ms "
            f"(baseline) / {runs['this'][-1]['turn_ms']:.2f} ms (this checkout)")
    figures: dict[str, Any] = {}
    for key in ("turn_ms", "turn_cpu_ms"):
        figures[f"baseline_{key}"] = statistics.median(run[key] for run in runs["baseline"])
        figures[key] = statistics.median(run[key] for run in runs["this"])
    if instructions is not None:
        figures["baseline_turn_instructions"] = turn_instructions(baseline, instructions, scratch)
        figures["turn_instructions"] = turn_instructions(ROOT, instructions, scratch)
    return figures


def side_figures(figures: dict[str, Any], baseline: Path, turns: int, rounds: int) -> dict[str, Any]:
    """Print (e)'s lines and return its part of the JSON line."""
    say(f"side by side with {baseline} ({turns} turns a run, median of {rounds} alternating runs):")
    result: dict[str, Any] = {"side_turns": turns, "rounds": rounds}
    for key, label, unit in (("turn_ms", "a turn", "ms"), ("turn_cpu_ms", "its CPU", "ms"),
                             ("turn_instructions", "instructions", "")):
        if key not in figures:
            continue
        ratio = figures[key] / figures[f"baseline_{key}"]
        name = key.removesuffix("_ms")
        result[f"ratio_{name}_vs_baseline"] = round(ratio, 3)
        result[key] = round(figures[key], 3) if unit else round(figures[key])
        result[f"baseline_{key}"] = round(figures[f"baseline_{key}"], 3) if unit else round(figures[f"baseline_{key}"])
        shown = ",.2f" if unit else ",.0f"
        say(f"  {label + ':':14} {figures[f'baseline_{key}']:{shown}}{unit and ' ' + unit} (baseline) -> "
            f"{figures[key]:{shown}}{unit and ' ' + unit} (this checkout) = x{ratio:.3f}")
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns of the single session (default 200)")
    parser.add_argument("--sessions", type=int, default=16, help="parallel sessions (default 16)")
    parser.add_argument("--url", help="a ledger URL (default: a SQLite file in a temporary directory)")
    parser.add_argument("--growth-turns", type=int, default=None,
                        help="turns of the growth session (default 1000; 40 with --quick)")
    parser.add_argument("--reads", type=int, default=20, help="reads per read-cost sample (default 20)")
    parser.add_argument("--edits", type=int, default=200, help="service.update calls of (d) (default 200)")
    parser.add_argument("--skip-growth", action="store_true", help="skip the growth session (c)")
    parser.add_argument("--quick", action="store_true", help="a smaller run (seconds, for smoke tests)")
    parser.add_argument("--baseline", type=Path, help="another checkout whose turn to measure side by side (e)")
    parser.add_argument("--side-turns", type=int, default=None, help="turns of each (e) run (default 100; quick 10)")
    parser.add_argument("--rounds", type=int, default=None, help="alternating (e) runs of each (default 5; quick 2)")
    parser.add_argument("--instructions", action="store_true",
                        help="with --baseline: count a turn's instructions under callgrind too (slow)")
    parser.add_argument("--instruction-turns", type=int, default=20,
                        help="turns of the shorter callgrind run (default 20; the longer plays twice as many)")
    parser.add_argument("--child-turns", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_turns is not None:
        figures = asyncio.run(side_turns(args.url, args.child_turns))
        print(json.dumps(figures), flush=True)
        return figures
    side_turns_n = args.side_turns if args.side_turns is not None else (10 if args.quick else 100)
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    if side_turns_n < 1 or rounds < 1 or args.instruction_turns < 1:
        parser.error("--side-turns, --rounds and --instruction-turns must be positive")
    if args.instructions and (args.baseline is None or shutil.which("valgrind") is None):
        parser.error("--instructions needs --baseline and valgrind")
    turns = 16 if args.quick else args.turns
    edits = 2 * EDIT_ROUNDS if args.quick else args.edits
    sessions = args.sessions
    if turns < 1 or sessions < 1 or args.reads < 1 or edits < EDIT_ROUNDS:
        parser.error(f"--turns, --sessions and --reads must be positive, --edits at least {EDIT_ROUNDS}")
    growth_turns: int | None = None
    if not args.skip_growth:
        growth_turns = args.growth_turns if args.growth_turns is not None else (40 if args.quick else 1000)
        if growth_turns < min_growth_turns():
            parser.error(f"--growth-turns must be at least {min_growth_turns()} (two windows that do not overlap)")

    with tempfile.TemporaryDirectory(prefix="mvu-bench-ingest-") as temp:
        url = args.url or f"sqlite:///{Path(temp) / 'ledger.sqlite3'}"
        engine = url.split(":", 1)[0]
        say(f"ingest, end to end through MvuService + MemoryHost, {engine} ledger"
            f"{' (quick)' if args.quick else ''}")
        figures = asyncio.run(run(url, turns, sessions, growth_turns, args.reads, edits, Path(temp)))
        if args.baseline is not None:
            figures.update(side_by_side(args.baseline.resolve(), side_turns_n, rounds,
                                        args.instruction_turns if args.instructions else None, Path(temp)))

    turns_per_s = figures["turns"] / figures["single_s"]
    parallel_per_s = figures["parallel_turns"] / figures["parallel_s"]
    say(f"card: ~30 declared fields, stat_data {figures['state_bytes']} B "
        f"(whole envelope {figures['envelope_bytes']} B), 5 commands a reply")
    say(f"one session:     {figures['turns']} turns in {figures['single_s']:.2f} s = {turns_per_s:.1f} turns/s "
        f"({1000 / turns_per_s:.2f} ms a turn)")
    say(f"{sessions} sessions:    {figures['parallel_turns']} turns in {figures['parallel_s']:.2f} s = "
        f"{parallel_per_s:.1f} turns/s")
    raw = figures["raw_turn_commits_per_s"]
    say(f"raw sqlite3:     a turn's rows in one transaction: {raw:.0f}/s; a turn = "
        f"{turns_per_s / raw:.3f} of that")
    say(f"edits:           service.update {figures['updates_per_s']:.0f}/s, ledger.commit of the same envelope "
        f"{figures['ledger_commits_per_s']:.0f}/s = {figures['ratio_update_vs_ledger_commit']:.3f}")
    result = {
        "turns_per_s": round(turns_per_s, 1),
        "turns_per_s_16_sessions" if sessions == 16 else f"turns_per_s_{sessions}_sessions": round(parallel_per_s, 1),
        "turns_per_s_parallel": round(parallel_per_s, 1),
        "raw_turn_commits_per_s": round(raw, 1),
        "ratio_turn_vs_raw_commit": round(turns_per_s / raw, 3),
        "updates_per_s": round(figures["updates_per_s"], 1),
        "ledger_commits_per_s": round(figures["ledger_commits_per_s"], 1),
        "ratio_update_vs_ledger_commit": round(figures["ratio_update_vs_ledger_commit"], 3),
        "edits": figures["edits"],
        "sessions": sessions,
        "turns": figures["turns"],
        "parallel_turns": figures["parallel_turns"],
        "state_bytes": figures["state_bytes"],
        "envelope_bytes": figures["envelope_bytes"],
        "commands_per_reply": 5,
        "engine": engine,
        "synchronous": "FULL",
        "quick": args.quick,
    }
    if growth_turns is not None:
        result.update(growth_figures(figures))
    if args.baseline is not None:
        result.update(side_figures(figures, args.baseline.resolve(), side_turns_n, rounds))
    print(json.dumps(result, sort_keys=True), flush=True)
    return result


def growth_figures(figures: dict[str, Any]) -> dict[str, Any]:
    """Print the growth lines and return the growth part of the JSON line."""
    first, last = figures["growth_windows"]["first"], figures["growth_windows"]["last"]
    turn_growth = figures["turn_ms_last"] / figures["turn_ms_first"]
    read_growth = figures["read_ms_last"] / figures["read_ms_first"]
    n = figures["growth_turns"]
    say(f"growth session:  {n} turns in {figures['growth_s']:.1f} s")
    say(f"  a turn:        {figures['turn_ms_first']:.2f} ms (turns {first[0]}-{first[1]}) -> "
        f"{figures['turn_ms_last']:.2f} ms (turns {last[0]}-{last[1]}) = x{turn_growth:.2f}")
    say(f"  a read:        {figures['read_ms_first']:.2f} ms (after turn {first[0]}) -> "
        f"{figures['read_ms_last']:.2f} ms (after turn {n}) = x{read_growth:.2f}, "
        f"mean of {figures['reads_per_sample']} reads each")
    say(f"  history:       a {HISTORY_PAGE}-entry page at {n} versions: {figures['history_page_ms']:.2f} ms")
    return {
        "turn_cost_growth": round(turn_growth, 2),
        "read_cost_growth": round(read_growth, 2),
        "history_page_ms": round(figures["history_page_ms"], 2),
        "turn_ms_first": round(figures["turn_ms_first"], 2),
        "turn_ms_last": round(figures["turn_ms_last"], 2),
        "read_ms_first": round(figures["read_ms_first"], 3),
        "read_ms_last": round(figures["read_ms_last"], 3),
        "growth_turns": n,
        "growth_windows": figures["growth_windows"],
        "reads_per_sample": figures["reads_per_sample"],
    }


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
