"""A long run of ``mvu serve``: continuous edits and reads for a bounded time, and what grows.

Four writers edit their own session's instance of a card without a schema (``POST /mvu/update``,
a 4 KiB state each time, drawn from 32 distinct states per writer, so most edits send a state
the ledger already holds) and two readers read those instances (``GET /mvu/resource``)
meanwhile. Every ``--every`` seconds it samples the server's resident memory (``VmRSS``), the
sizes of the database file and its ``-wal``, and the ledger's budget use, then reports per
interval and overall:

- bytes per edit, of the budget and of the database file (a state already stored is stored once:
  an edit that sends one costs its version row, not the state again);
- how fast resident memory and the WAL grow per 1,000 edits in each third of the run, and whether
  they level off (the last third's growth at most a quarter of the first third's, or none; for
  the WAL, which SQLite cuts back to 16 MiB when it restarts, also when it stays within that cut
  over the last third).

With ``--turns`` the writers play whole turns instead (``POST /mvu/sessions/{id}/events``: a
turn's start and user message, then a reply that sets ``hp`` and the turn's end), the way a host
feeds a live chat; the figures then count turns where they say edits.

Human lines first; the LAST line is one JSON object. ``--quick`` makes a short run.

The ledger is made before the server starts, with a budget of ``--budget-mib`` (1 GiB by
default; the default ledger's 32 MiB would be spent after about 40,000 edits, and a refused edit
ends its writer: the run reports it under ``writeFailures``).

    python benchmarks/soak_serve.py [--seconds 120] [--every 5] [--budget-mib 1024] [--turns]
                                    [--session-memory-mib MIB] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import itertools
import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from misbehaving import MVU, TOKEN, Connection, served

from mvu_store.ledger import open_ledger
from mvu_store.ledger.engine import WAL_SIZE_LIMIT_BYTES

WRITERS = 4
READERS = 2
STATES_PER_WRITER = 32
STATE_BYTES = 4096
CARD = {"spec": "chara_card_v3", "spec_version": "3.0", "data": {
    "name": "Soak", "first_mes": "Hello.",
    "character_book": {"entries": [{"comment": "[initvar]", "content": "hp: 10\nnote: ''\n", "enabled": True}]}}}


def state(writer: int, index: int) -> dict[str, Any]:
    digest = hashlib.sha256(f"{writer}/{index}".encode()).hexdigest()
    return {"hp": index, "note": (digest * (STATE_BYTES // len(digest) + 1))[:STATE_BYTES]}


def _json(connection: Connection, method: str, path: str, body: Any = None) -> dict[str, Any]:
    status, _, answer = connection.request(method, path, token=TOKEN,
                                           body=None if body is None else json.dumps(body).encode())
    assert status < 300, (status, answer[:500])
    result: dict[str, Any] = json.loads(answer)
    return result


def _instances(address: tuple[str, int]) -> list[tuple[str, str]]:
    """One session per writer, each with its own instance of the card: (session id, instance id)."""
    connection = Connection(address)
    try:
        _json(connection, "POST", f"{MVU}/cards?characterId=soak", CARD)
        return [_new_session(connection, f"soak-{writer}") for writer in range(WRITERS)]
    finally:
        connection.close()


def _new_session(connection: Connection, session: str) -> tuple[str, str]:
    """A new session that selected the card: (session id, instance id)."""
    _json(connection, "POST", f"{MVU}/sessions", {"sessionId": session, "createdAt": 1000})
    selected = _json(connection, "PUT", f"{MVU}/sessions/{session}/selection", {"characterId": "soak"})
    return session, str(selected["instanceId"])


Writes = Callable[[Connection, int, str, str], Callable[[], None]]
"""Given a writer's connection, number, session and instance: a function that makes one write."""


def _edits(connection: Connection, writer: int, session: str, instance: str) -> Callable[[], None]:
    """Edits of the instance (``POST /mvu/update``), each with one of the writer's 32 states."""
    scope = {"authority": "local", "sessionId": session}
    revision = _json(connection, "GET", f"{MVU}/resource?id={instance}&scope={json.dumps(scope)}"
                     .replace(" ", ""))["revision"]
    edits = itertools.count(1)

    def edit() -> None:
        nonlocal revision
        number = next(edits)
        answer = _json(connection, "POST", f"{MVU}/update", {
            "id": instance, "scope": scope, "content": {"stat_data": state(writer, number % STATES_PER_WRITER)},
            "expectedRevision": revision, "operationId": f"soak-{writer}-{number}"})
        revision = answer["revision"]

    return edit


def _turns(connection: Connection, writer: int, session: str, instance: str, *, chat_turns: int = 0,
           moved: Callable[[int, str, str], None] | None = None) -> Callable[[], None]:
    """Whole turns of the session as a host sends them (``POST /sessions/{id}/events``: the turn's
    start and user message, then the reply and its end), each reply setting ``hp`` to one of 32
    values; every reply must be applied. With ``chat_turns``, a chat ends after that many turns
    and the writer starts a new session (``soak-<writer>-<n>``), and says so to ``moved``."""
    seq = _json(connection, "GET", f"{MVU}/sessions/{session}")["lastSeq"] + 1
    turns = itertools.count(1)
    chats = itertools.count(1)

    def send(*events: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        nonlocal seq
        batch = [{"seq": seq + n, "type": kind, "data": data} for n, (kind, data) in enumerate(events)]
        answer = _json(connection, "POST", f"{MVU}/sessions/{session}/events", {"events": batch})
        assert answer["error"] is None, answer["error"]
        seq += len(batch)
        return answer

    def turn() -> None:
        nonlocal session, instance, seq, turns
        number = next(turns)
        if chat_turns and number > chat_turns:
            session, instance = _new_session(connection, f"soak-{writer}-{next(chats)}")
            if moved is not None:
                moved(writer, session, instance)
            seq, turns = _json(connection, "GET", f"{MVU}/sessions/{session}")["lastSeq"] + 1, itertools.count(2)
            number = 1
        send(("turn/start", {"turn": number}),
             ("user/message", {"turn": number, "message": {"source": {"kind": "user"}, "content": "Onwards."}}))
        reply = f"The road goes on. _.set('hp', {number % STATES_PER_WRITER});"
        answer = send(("assistant/message", {"turn": number, "message": {"id": f"m{number}", "content": reply}}),
                      ("turn/end", {"turn": number, "reason": {"kind": "completed"}}))
        outcomes = answer["ingest"]["outcomes"]
        assert [(o["resourceId"], o["status"]) for o in outcomes] == [(instance, "committed")], outcomes

    return turn


class Load:
    """The writers and readers, running until :meth:`stop`; ``edits`` counts acknowledged writes
    (edits, or with ``turns`` whole turns)."""

    def __init__(self, address: tuple[str, int], instances: list[tuple[str, str]], *, turns: bool = False,
                 chat_turns: int = 0) -> None:
        self.edits = 0
        self.reads = 0
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # The chat each writer is playing, which the readers read (a writer that starts a new
        # chat puts it here: one list item replaced, which the readers see whole).
        self._current = list(instances)
        writes: Writes = functools.partial(_turns, chat_turns=chat_turns, moved=self._moved) if turns else _edits
        self._threads = [threading.Thread(target=self._write, args=(address, writes, writer, *instances[writer]))
                         for writer in range(WRITERS)]
        self._threads += [threading.Thread(target=self._read, args=(address,)) for _ in range(READERS)]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _write(self, address: tuple[str, int], writes: Writes, writer: int, session: str, instance: str) -> None:
        connection = Connection(address)
        try:
            write = writes(connection, writer, session, instance)
            while not self._stop.is_set():
                write()
                with self._lock:
                    self.edits += 1
        except AssertionError as refused:  # an answer that is not a success ends this writer
            with self._lock:
                self.failures.append(str(refused)[:300])
        finally:
            connection.close()

    def _moved(self, writer: int, session: str, instance: str) -> None:
        self._current[writer] = (session, instance)

    def _read(self, address: tuple[str, int]) -> None:
        connection = Connection(address)
        try:
            turn = 0
            while not self._stop.is_set():
                session, instance = self._current[turn % len(self._current)]
                scope = json.dumps({"authority": "local", "sessionId": session}).replace(" ", "")
                _json(connection, "GET", f"{MVU}/resource?id={instance}&scope={scope}")
                turn += 1
                with self._lock:
                    self.reads += 1
        finally:
            connection.close()


def resident_kib(pid: int | str = "self") -> dict[str, int]:
    """A process's resident memory in KiB (``/proc``): ``rssKib``, and its anonymous and
    file-backed parts, ``anonKib`` and ``fileKib``."""
    wanted = {"VmRSS": "rssKib", "RssAnon": "anonKib", "RssFile": "fileKib"}
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name = line.split(":", 1)[0]
        if name in wanted:
            found[wanted[name]] = int(line.split()[1])
    return found


def _sample(pid: int, db: Path, load: Load, started: float) -> dict[str, Any]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        used = int(connection.execute("SELECT used_bytes FROM ledger WHERE ledger_id = 'default'").fetchone()[0])
    wal = Path(f"{db}-wal")
    return {"seconds": round(time.monotonic() - started, 1), "edits": load.edits, "reads": load.reads,
            "rssKib": resident_kib(pid)["rssKib"], "dbBytes": db.stat().st_size,
            "walBytes": wal.stat().st_size if wal.exists() else 0, "usedBytes": used}


def _rates(samples: list[dict[str, Any]], key: str) -> list[float | None]:
    """``key``'s growth per 1,000 edits over each third of the run."""
    third = max(1, (len(samples) - 1) // 3)
    cuts = [samples[0], samples[third], samples[2 * third], samples[-1]]
    return [None if b["edits"] == a["edits"] else round(1000 * (b[key] - a[key]) / (b["edits"] - a["edits"]), 1)
            for a, b in itertools.pairwise(cuts)]


def _levels_off(rates: list[float | None]) -> bool:
    """Whether the growth over the last third is at most a quarter of the first third's (or none)."""
    first, last = rates[0], rates[-1]
    return first is not None and last is not None and (last <= 0 or last <= first / 4)


def _held_within_cut(samples: list[dict[str, Any]]) -> bool:
    """Whether the WAL stayed within the size it is cut back to over the last third of the run."""
    return all(sample["walBytes"] <= WAL_SIZE_LIMIT_BYTES for sample in samples[-max(1, len(samples) // 3):])


def _per_edit(a: dict[str, Any], b: dict[str, Any], key: str) -> float | None:
    edits = b["edits"] - a["edits"]
    return round((b[key] - a[key]) / edits, 1) if edits else None


async def _make_ledger(db: Path, budget_bytes: int) -> None:
    ledger = await open_ledger(f"sqlite:///{db}", ledger_limit_bytes=budget_bytes)
    await ledger.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--budget-mib", type=int, default=1024, help="the ledger's budget (default 1 GiB)")
    parser.add_argument("--turns", action="store_true", help="the writers play whole turns instead of edits")
    parser.add_argument("--chat-turns", type=int, default=0, metavar="N",
                        help="with --turns: a chat ends after N turns and its writer starts another "
                             "(default 0: one chat per writer for the whole run)")
    parser.add_argument("--session-memory-mib", type=int, default=None,
                        help="mvu serve's bound on the sessions' copies (default: the server's)")
    parser.add_argument("--quick", action="store_true", help="a short run (a smoke test)")
    options = parser.parse_args()
    if options.quick:
        options.seconds, options.every = 6.0, 1.0
    with tempfile.TemporaryDirectory(prefix="mvu-soak-serve-") as directory:
        db = Path(directory) / "ledger.sqlite3"
        asyncio.run(_make_ledger(db, options.budget_mib * 1024 * 1024))
        bound = () if options.session_memory_mib is None else ("--session-memory-mib", str(options.session_memory_mib))
        with served(Path(directory), *bound) as running:
            samples, load = _soak(running.address, running.pid, db, options)
            tracebacks = sum("Traceback" in line for line in running.log)
    _report(options, samples, load, tracebacks)


def _soak(address: tuple[str, int], pid: int, db: Path,
          options: argparse.Namespace) -> tuple[list[dict[str, Any]], Load]:
    """Run the load for ``options.seconds``, sampling every ``options.every``; the samples and the load."""
    instances = _instances(address)
    started = time.monotonic()
    load = Load(address, instances, turns=options.turns, chat_turns=options.chat_turns)
    unit = "turns" if options.turns else "edits"
    samples = [_sample(pid, db, load, started)]
    try:
        while time.monotonic() - started < options.seconds:
            time.sleep(options.every)  # a sampling period: the figures, not a wait for an event
            samples.append(_sample(pid, db, load, started))
            previous, last = samples[-2], samples[-1]
            print(f"{last['seconds']:7.1f}s  {last['edits']:7d} {unit}  rss {last['rssKib']:8d} KiB  "
                  f"wal {last['walBytes']:10,d}  db {last['dbBytes']:12,d}  "
                  f"budget/edit {_per_edit(previous, last, 'usedBytes')}  "
                  f"db/edit {_per_edit(previous, last, 'dbBytes')}", flush=True)
    finally:
        load.stop()
    return samples, load


def _report(options: argparse.Namespace, samples: list[dict[str, Any]], load: Load, tracebacks: int) -> None:
    first, last = samples[1] if len(samples) > 2 else samples[0], samples[-1]
    figures = {
        "quick": options.quick, "seconds": last["seconds"], "edits": last["edits"], "reads": last["reads"],
        "stateBytes": STATE_BYTES, "distinctStatesPerWriter": STATES_PER_WRITER, "writers": WRITERS, "readers": READERS,
        "budgetMib": options.budget_mib, "writeFailures": load.failures,
        "writes": "turns" if options.turns else "edits", "chatTurns": options.chat_turns,
        "sessionMemoryMib": options.session_memory_mib,
        "rssKib": {"start": samples[0]["rssKib"], "peak": max(s["rssKib"] for s in samples), "end": last["rssKib"]},
        "walBytesPeak": max(s["walBytes"] for s in samples),
        "dbBytes": last["dbBytes"],
        "budgetBytesPerEdit": _per_edit(first, last, "usedBytes"),
        "dbBytesPerEdit": _per_edit(first, last, "dbBytes"),
        "rssKibPerThousandEditsByThird": _rates(samples, "rssKib"),
        "walBytesPerThousandEditsByThird": _rates(samples, "walBytes"),
        "rssLevelsOff": _levels_off(_rates(samples, "rssKib")),
        # The WAL is a high-water mark cut back to WAL_SIZE_LIMIT_BYTES when it restarts: a step up
        # late in the run is no growth as long as it stays within that cut.
        "walLevelsOff": _levels_off(_rates(samples, "walBytes")) or _held_within_cut(samples),
        "walCutBytes": WAL_SIZE_LIMIT_BYTES,
        "tracebacks": tracebacks, "samples": samples,
        "loadAverage": [round(value, 2) for value in os.getloadavg()],
    }
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
