"""Changes and diffs benchmark (issue 33, "Performance"): a path's story over a 1,000-turn chat and
a diff of two 5 KiB states, each against a plain read, side by side in one run over HTTP.

A session plays ``--turns`` turns (1,000; 100 with ``--quick``) of a card whose ``stat_data`` is
about 5 KiB, every reply setting ``hp`` and one of its 100 text fields, through the store host as
``mvu serve`` keeps them. Then ``mvu serve`` answers, one keep-alive client asking one request at a
time, ``--requests`` (200) of each, interleaved in rounds so that the machine's load falls on all
alike:

- ``read``: ``GET /mvu/resource`` of the session's instance (the plain read);
- ``story_page``: ``GET /mvu/changes?path=/hp`` (the newest page, 100 changes);
- ``story_whole``: ``GET /mvu/changes?path=/hp&limit=1000`` (the whole story of a 1,000-turn chat in
  one page);
- ``diff``: ``GET /mvu/diff?from=1`` (revision 1 against the current state: two 5 KiB states, the
  100 text fields and ``hp`` apart);
- ``story_page_first``, ``story_whole_first``, ``diff_first``: the same work asked so that no
  server has answered it before (a new ``before`` beyond the newest change, the same page; a new
  ``from``, 2, 3, ..., as far apart), every time: what a first request costs, where the ones
  above may be answered from what a server kept of the same request.

``ratio_<name>`` = its mean time / the read's: the issue asks for at most 2. Until commits write
the changes table (issue 33's ledger part), the script writes each reply's ``/hp`` row itself, as a
commit would, so the story has its 1,000 rows either way (``rows_written_here`` says which).

With ``--baseline DIR`` (another checkout of this repository, e.g. ``git worktree add --detach DIR
COMMIT``, whose ledger schema is this one's), a second ``mvu serve`` runs that checkout's code on
the same ledger, and every request goes to both servers in turn, in the same rounds:
``baseline_<name>_ms`` and ``baseline_ratio_<name>`` beside this checkout's figures.
Human lines first; the LAST line is one JSON object.

    python benchmarks/changes.py [--quick] [--turns N] [--requests N] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import signal
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from statistics import fmean
from typing import Any

from mvu_store import MvuService, open_ledger
from mvu_store.jsonvalue import canonical_text
from mvu_store.ledger import Ledger
from mvu_store.ledger import tables as t
from mvu_store.store_host import StoreHost, play_turn

# The HTTP client and server start of benchmarks/http.py (loaded by path: its name shadows the
# standard library's http module).
_spec = importlib.util.spec_from_file_location("bench_http", Path(__file__).with_name("http.py"))
assert _spec is not None and _spec.loader is not None
bench_http: Any = sys.modules.setdefault("bench_http", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(bench_http)

FIELDS = 100
INITVAR = "hp: 50\n" + "".join(f"note_{n:03}: '{'x' * 36}'\n" for n in range(FIELDS))
CARD = {"character_id": "teller", "name": "Teller", "initvar": [INITVAR]}
SESSION = "story"
FAR = 1_000_000
"""A ``before`` beyond any change's position: the newest page, under a query not asked before."""


def reply(turn: int) -> str:
    return f"_.set('hp', {turn % 100}); _.set('note_{turn % FIELDS:03}', 'turn {turn:04} {'y' * 26}');"


async def play(db: str, turns: int) -> tuple[str, bool]:
    """The chat; returns its instance and whether this script wrote the /hp rows."""
    ledger = await open_ledger(db)
    try:
        host = StoreHost(ledger)
        service = MvuService(ledger=ledger, host=host)
        await service.discover(definition=CARD)
        await host.create_session(SESSION, created_at=1_700_000_000_000)
        chosen = await service.select_character(session_id=SESSION, character_id="teller")
        assert chosen.instance_id is not None
        for turn in range(1, turns + 1):
            await play_turn(service, host, SESSION, turn=turn, user="go", reply=reply(turn))
        scope = {"authority": "local", "session_id": SESSION}
        recorded = await service.changes(id=chosen.instance_id, scope=scope, path="/hp", limit=1)
        if recorded.changes:
            return chosen.instance_id, False
        await write_hp_rows(ledger, chosen.instance_id)
        return chosen.instance_id, True
    finally:
        await ledger.close()


async def write_hp_rows(ledger: Ledger, instance: str) -> None:
    """Each reply version's /hp change, as a commit writes it (one unit of work for them all)."""
    rows, previous = [], 50
    for version in await ledger.versions(instance):
        hp = version.revision % 100
        rows.append({"resource_id": instance, "position": version.position, "seq": 0, "revision": version.revision,
                     "session_id": SESSION, "turn": version.source.get("turn"),
                     "message_seq": version.source.get("messageSeq"), "path": "/hp", "op": "set",
                     "status": "applied", "actor": "reply", "before": canonical_text(previous),
                     "after": canonical_text(hp), "omitted": False, "command": f"_.set('hp', {hp});",
                     "code": None, "reason": None, "message": None, "derived": False})
        previous = hp
    store = ledger._store  # the writer of issue 33 is not merged yet: write as it will
    await store.write(lambda tx: store.insert_rows(tx, t.changes, rows))


async def measure(ports: dict[str, int], instance: str, requests: int) -> dict[str, dict[str, float]]:
    """The mean time of each request, per server (``ports``: by label), interleaved in rounds."""
    scope = json.dumps({"authority": "local", "sessionId": SESSION})

    def target(route: str, **params: str) -> str:
        return f"{bench_http.PREFIX}/{route}?{urllib.parse.urlencode({'id': instance, 'scope': scope, **params})}"

    # Each request's target in round n (0 for the warm-up).
    targets = {"read": lambda n: target("resource"), "story_page": lambda n: target("changes", path="/hp"),
               "story_whole": lambda n: target("changes", path="/hp", limit="1000"),
               "diff": lambda n: target("diff", **{"from": "1"}),
               "story_page_first": lambda n: target("changes", path="/hp", before=str(FAR + n)),
               "story_whole_first": lambda n: target("changes", path="/hp", limit="1000", before=str(FAR + n)),
               "diff_first": lambda n: target("diff", **{"from": str(2 + n)})}
    connections = {label: await bench_http.Connection.open("127.0.0.1", port) for label, port in ports.items()}
    try:
        answers: dict[str, dict[str, Any]] = {label: {} for label in ports}
        for label, connection in connections.items():
            for name, path in targets.items():  # warm: first compiles, caches, the check of history
                status, _, payload = await connection.request("GET", path(0))
                assert status == 200, (label, name, payload[:300])
                answers[label][name] = json.loads(payload)
        first = next(iter(answers.values()))
        for label, answered in answers.items():  # both servers say the same
            for name in ("story_page", "story_whole", "diff"):
                assert answered[name] == first[name], (label, name)
            for name in ("story_page", "story_whole"):  # the same page, under a query not asked before
                assert answered[f"{name}_first"] == answered[name], (label, name)
        times: dict[str, dict[str, list[float]]] = {label: {name: [] for name in targets} for label in ports}
        for n in range(1, requests + 1):
            for name, path in targets.items():
                for label, connection in connections.items():
                    started = time.perf_counter()
                    status, _, payload = await connection.request("GET", path(n))
                    times[label][name].append(time.perf_counter() - started)
                    assert status == 200, payload[:300]
        return {label: {name: fmean(spent) * 1000 for name, spent in kept.items()} for label, kept in times.items()}
    finally:
        for connection in connections.values():
            connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--turns", type=int, default=None, help="turns the chat plays (default 1,000; quick 100)")
    parser.add_argument("--requests", type=int, default=None, help="requests of each kind (default 200; quick 20)")
    parser.add_argument("--baseline", type=Path, help="another checkout whose server to measure side by side")
    args = parser.parse_args()
    turns = args.turns if args.turns is not None else (100 if args.quick else 1000)
    requests = args.requests if args.requests is not None else (20 if args.quick else 200)
    if requests + 2 > turns:
        parser.error("--requests must be below --turns - 1: each diff_first compares from a revision of its own")
    codes: dict[str, Path | None] = {"": None}
    if args.baseline is not None:
        codes = {"baseline_": args.baseline.resolve(), "": None}
    with tempfile.TemporaryDirectory(prefix="mvu-changes-bench-") as directory:
        db = f"sqlite:///{Path(directory) / 'ledger.sqlite3'}"
        started = time.perf_counter()
        instance, written_here = asyncio.run(play(db, turns))
        print(f"played {turns} turns in {time.perf_counter() - started:.1f} s"
              f"{' (the /hp rows written by this script)' if written_here else ''}", flush=True)
        servers = {label: bench_http.start_server(db, code) for label, code in codes.items()}
        try:
            mean_ms = asyncio.run(measure({label: port for label, (_, port) in servers.items()}, instance, requests))
        finally:
            for process, _ in servers.values():
                process.send_signal(signal.SIGTERM)
            exits = [process.wait(timeout=60) for process, _ in servers.values()]
    result: dict[str, Any] = {"turns": turns, "requests": requests, "rows_written_here": written_here,
                              "quick": args.quick, "server_exit": max(exits)}
    for label, measured in mean_ms.items():
        ratios = {name: round(ms / measured["read"], 3) for name, ms in measured.items() if name != "read"}
        if codes[label] is not None:
            print(f"baseline {codes[label]}:", flush=True)
        for name, ms in measured.items():
            print(f"GET {name:<18} {ms:7.3f} ms" + (f"   x{ratios[name]} a read" if name != "read" else ""),
                  flush=True)
        result.update({f"{label}{name}_ms": round(ms, 3) for name, ms in measured.items()})
        result.update({f"{label}ratio_{name}": ratio for name, ratio in ratios.items()})
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
