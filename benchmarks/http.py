"""HTTP benchmark (issue "HTTP API v1", "Performance"): the service over loopback against itself
in-process, measured side by side in one run on one ledger.

- in-process: 16 concurrent tasks, each editing its own session's instance of a card with a
  declared schema (``service.update`` with CAS and a fresh operation id per edit);
- HTTP: ``mvu serve`` on that ledger (its sessions are in it), 16 concurrent keep-alive clients
  doing the same edits (``POST /mvu/update``), then reads (``GET /mvu/resource``, each client
  reading its own session's instance);
- turns: 16 sessions in parallel, each playing whole turns as a host does, two batches per turn
  (``turn/start`` + ``user/message``, which checkpoints; then ``assistant/message`` +
  ``turn/end``, which ingests the reply), in-process through the store host's ``feed`` and over
  HTTP through ``POST /mvu/sessions/{id}/events``, each on its own sessions.

``ratio_update`` = HTTP update rate / in-process update rate; ``ratio_turn_http`` = HTTP turn
rate (``turns_per_s_http``) / in-process turn rate (``inprocess_turns_per_s``). The clients are raw asyncio HTTP/1.1
(a few hundred lines of Python less than an HTTP library per request), so the ratio measures the
server, not the client; both share the machine's cores with the server, as a local host would.
Human lines first; the LAST line is one JSON object. ``--quick`` makes a short run (smoke tests).
Each measurement runs ``--seconds`` and in any case until every client has done ``--at-least``
operations (default 1): a loaded machine stretches the window rather than measure nothing. With
``--at-least 0`` a window can end empty; that rate (and its ratio) is then null, and its line
says it measured nothing.

    python benchmarks/http.py [--quick] [--seconds S] [--at-least N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mvu_store.host import turn_events
from mvu_store.ledger import open_ledger
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost
from mvu_store.store_host.feed import feed

CLIENTS = 16
TOKEN = "bench-token-0123456789"
# mvu_api.http.MVU_PREFIX, written out: this script is named http.py, and importing the server
# package from it would shadow the standard library's http module inside FastAPI.
PREFIX = "/pmp-dsh-tavern/api/v1/mvu"
CARD = {
    "character_id": "hero", "name": "Hero", "initvar": ["hp: 50\ngold: 10\nlevel: 1\n"],
    "schema_source": """
        export const Schema = z.object({
          hp: z.coerce.number().transform(v => _.clamp(v, 0, 100)),
          gold: z.number().min(0),
          level: z.coerce.number().int().prefault(1),
        });
        $(() => { registerMvuSchema(Schema); });""",
}


def say(line: str) -> None:
    print(line, flush=True)


@dataclass(frozen=True)
class Window:
    """How long one measurement runs: ``seconds``, and until each client did ``at_least`` operations."""

    seconds: float
    at_least: int

    def start(self) -> tuple[float, float]:
        """The measurement's start and its deadline."""
        started = time.perf_counter()
        return started, started + self.seconds

    def goes_on(self, deadline: float, done_by_client: int) -> bool:
        return done_by_client < self.at_least or time.perf_counter() < deadline


def per_second(done: int, started: float) -> float | None:
    """The rate since ``started``; None when nothing finished (there is no rate to give)."""
    return done / (time.perf_counter() - started) if done else None


def ratio(part: float | None, whole: float | None) -> float | None:
    return round(part / whole, 3) if part is not None and whole is not None else None


def shown(rate: float | None, unit: str, digits: int = 0) -> str:
    if rate is None:
        return "measured nothing (no operation finished in the window)"
    return f"{rate:,.{digits}f} {unit}"


def scope(session_id: str) -> dict[str, str]:
    return {"authority": "local", "sessionId": session_id}


# The sessions each measurement plays: its own, so one never finds another's turns or edits.
TURN_SESSIONS = {"local": [f"turns-local-{n}" for n in range(CLIENTS)],
                 "http": [f"turns-http-{n}" for n in range(CLIENTS)]}


async def seed(db: str) -> dict[str, str]:
    """The card, and CLIENTS sessions (with their instances) for edits and reads, and as many per
    turn measurement; the sessions are created through the store host, as ``mvu serve`` keeps them."""
    ledger = await open_ledger(db)
    try:
        host = StoreHost(ledger)
        service = MvuService(ledger=ledger, host=host)
        await service.discover(definition=CARD)
        instances = {}
        edited = [f"bench-{n}" for n in range(CLIENTS)]
        for n, session_id in enumerate(edited + TURN_SESSIONS["local"] + TURN_SESSIONS["http"]):
            await host.create_session(session_id, created_at=1_700_000_000_000 + n)
            selection = await service.select_character(session_id=session_id, character_id="hero")
            assert selection.instance_id is not None
            if session_id in edited:
                instances[session_id] = selection.instance_id
        return instances
    finally:
        await ledger.close()


def turn_batches(session_id: str, turn: int, seq: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One whole turn as a host sends it, from event ``seq`` on: the request's batch and the reply's."""
    request, answer = turn_events(turn=turn, user=f"turn {turn}", message_id=f"{session_id}-m{turn}",
                                  reply=f"The hero rests. _.add('gold', 1);//turn {turn}")
    first = [{"seq": seq + n, "type": kind, "data": data} for n, (kind, data) in enumerate(request)]
    return first, [{"seq": seq + len(first) + n, "type": kind, "data": data} for n, (kind, data) in enumerate(answer)]


async def in_process_turns(db: str, window: Window) -> float | None:
    """Whole turns per second, CLIENTS sessions in parallel, through the store host's feed."""
    ledger = await open_ledger(db)
    try:
        host = StoreHost(ledger)
        service = MvuService(ledger=ledger, host=host)
        done = 0
        started, deadline = window.start()

        async def play(session_id: str) -> None:
            nonlocal done
            turn, seq = 0, 0
            while window.goes_on(deadline, turn):
                turn += 1
                for batch in turn_batches(session_id, turn, seq):
                    result = await feed(service, host, session_id, batch)
                    assert result.error is None, result.error
                    seq += len(batch)
                assert result.ingest is not None and [o.status for o in result.ingest.outcomes] == ["committed"]
                done += 1

        await asyncio.gather(*(play(session_id) for session_id in TURN_SESSIONS["local"]))
        return per_second(done, started)
    finally:
        await ledger.close()


async def in_process(db: str, instances: dict[str, str], window: Window) -> float | None:
    ledger = await open_ledger(db)
    try:
        service = MvuService(ledger=ledger, host=StoreHost(ledger))
        done = 0
        tag = uuid.uuid4().hex[:8]
        started, deadline = window.start()

        async def edit(session_id: str, instance: str) -> None:
            nonlocal done
            record = await service.read(id=instance, scope=scope(session_id))
            assert record is not None
            revision, n = record.revision, 0
            while window.goes_on(deadline, n):
                n += 1
                receipt = await service.update(id=instance, content={"stat_data": {"hp": n % 100, "gold": n}},
                                               expected_revision=revision, operation_id=f"local-{tag}-{session_id}-{n}",
                                               scope=scope(session_id))
                revision = receipt.revision
                done += 1

        await asyncio.gather(*(edit(s, i) for s, i in instances.items()))
        return per_second(done, started)
    finally:
        await ledger.close()


class Connection:
    """One keep-alive HTTP/1.1 connection: request, then read exactly one response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, f"{host}:{port}")

    async def request(self, method: str, target: str, body: bytes = b"",
                      headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}", f"Authorization: Bearer {TOKEN}",
                 f"Content-Length: {len(body)}"]
        if body:
            lines.append("Content-Type: application/json")
        lines += [f"{key}: {value}" for key, value in (headers or {}).items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parsed = {}
        for line in header_lines:
            if ":" in line:
                key, value = line.split(":", 1)
                parsed[key.strip().lower()] = value.strip()
        payload = await self.reader.readexactly(int(parsed.get("content-length", "0")))
        return int(status_line.split()[1]), parsed, payload

    def close(self) -> None:
        self.writer.close()


async def over_http(port: int, instances: dict[str, str], window: Window) -> tuple[float | None, float | None]:
    connections = [await Connection.open("127.0.0.1", port) for _ in instances]
    try:
        async def current(connection: Connection, session_id: str, instance: str) -> tuple[str, int]:
            query = urllib.parse.urlencode({"id": instance, "scope": json.dumps(scope(session_id))})
            target = f"{PREFIX}/resource?{query}"
            status, _, payload = await connection.request("GET", target)
            assert status == 200, payload[:300]
            return target, json.loads(payload)["revision"]

        done = 0
        tag = uuid.uuid4().hex[:8]
        started, deadline = window.start()

        async def edit(connection: Connection, session_id: str, instance: str) -> None:
            nonlocal done
            _, revision = await current(connection, session_id, instance)
            n = 0
            while window.goes_on(deadline, n):
                n += 1
                body = json.dumps({
                    "id": instance, "scope": scope(session_id), "content": {"stat_data": {"hp": n % 100, "gold": n}},
                    "expectedRevision": revision, "operationId": f"http-{tag}-{session_id}-{n}"}).encode()
                status, _, payload = await connection.request("POST", f"{PREFIX}/update", body)
                assert status == 200, payload[:300]
                revision = json.loads(payload)["revision"]
                done += 1

        pairs = list(zip(connections, instances.items(), strict=True))
        await asyncio.gather(*(edit(c, s, i) for c, (s, i) in pairs))
        update_rps = per_second(done, started)

        reads = 0
        started, deadline = window.start()

        async def read(connection: Connection, session_id: str, instance: str) -> None:
            nonlocal reads
            target, _ = await current(connection, session_id, instance)
            n = 0
            while window.goes_on(deadline, n):
                status, headers, payload = await connection.request("GET", target)
                assert status == 200 and headers["etag"].startswith('"r'), payload[:300]
                n += 1
                reads += 1

        await asyncio.gather(*(read(c, s, i) for c, (s, i) in pairs))
        return update_rps, per_second(reads, started)
    finally:
        for connection in connections:
            connection.close()


async def turns_over_http(port: int, window: Window) -> float | None:
    """Whole turns per second, CLIENTS sessions in parallel, over ``POST /mvu/sessions/{id}/events``."""
    connections = [await Connection.open("127.0.0.1", port) for _ in TURN_SESSIONS["http"]]
    try:
        done = 0
        started, deadline = window.start()

        async def play(connection: Connection, session_id: str) -> None:
            nonlocal done
            turn, seq = 0, 0
            while window.goes_on(deadline, turn):
                turn += 1
                for batch in turn_batches(session_id, turn, seq):
                    body = json.dumps({"events": batch}).encode()
                    target = f"{PREFIX}/sessions/{session_id}/events"
                    status, _, payload = await connection.request("POST", target, body)
                    answer = json.loads(payload)
                    assert status == 200 and answer["error"] is None, payload[:300]
                    seq += len(batch)
                assert [o["status"] for o in answer["ingest"]["outcomes"]] == ["committed"], payload[:300]
                done += 1

        await asyncio.gather(*(play(c, s) for c, s in zip(connections, TURN_SESSIONS["http"], strict=True)))
        return per_second(done, started)
    finally:
        for connection in connections:
            connection.close()


def start_server(db: str, code: Path | None = None) -> tuple[subprocess.Popen[str], int]:
    """``mvu serve`` on ``db``; ``code``: another checkout whose ``mvu_api`` and ``mvu_store`` it runs."""
    command = [sys.executable, "-m", "mvu_api.cli", "serve", "--db", db, "--port", "0", "--token", TOKEN]
    # `-m` looks in the working directory first, then PYTHONPATH, then the installed package.
    other = {"cwd": code, "env": {**os.environ, "PYTHONPATH": str(code)}} if code is not None else {}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **other)
    assert process.stdout is not None
    lines: list[str] = []

    def collect() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)

    threading.Thread(target=collect, daemon=True).start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [re.search(r"127\.0\.0\.1:(\d+)", line) for line in lines if "listening" in line]
        if found and found[0] and any("docs:" in line for line in lines):
            return process, int(found[0].group(1))
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"mvu serve did not start: {lines}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per measurement (default 4, quick 1)")
    parser.add_argument("--at-least", type=int, default=1, metavar="N",
                        help="operations each client does per measurement, however long they take (default 1)")
    args = parser.parse_args()
    seconds = args.seconds if args.seconds is not None else (1.0 if args.quick else 4.0)
    window = Window(seconds, args.at_least)
    with tempfile.TemporaryDirectory(prefix="mvu-http-bench-") as directory:
        db = f"sqlite:///{Path(directory) / 'ledger.sqlite3'}"
        instances = asyncio.run(seed(db))
        local = asyncio.run(in_process(db, instances, window))
        say(f"in-process service.update, {CLIENTS} tasks: {shown(local, 'updates/s')}")
        local_turns = asyncio.run(in_process_turns(db, window))
        say(f"in-process turns (feed), {CLIENTS} sessions: {shown(local_turns, 'turns/s', 1)}")
        process, port = start_server(db)
        try:
            update_rps, read_rps = asyncio.run(over_http(port, instances, window))
            http_turns = asyncio.run(turns_over_http(port, window))
        finally:
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=60)
        say(f"HTTP POST /mvu/update, {CLIENTS} clients:      {shown(update_rps, 'updates/s')}")
        say(f"HTTP GET /mvu/resource, {CLIENTS} clients:     {shown(read_rps, 'reads/s')}")
        say(f"HTTP turns (events), {CLIENTS} sessions:       {shown(http_turns, 'turns/s', 1)}")
        say(f"server exit code after SIGTERM: {code}")

    def rounded(rate: float | None) -> float | None:
        return round(rate, 1) if rate is not None else None

    result: dict[str, Any] = {
        "update_rps": rounded(update_rps), "read_rps": rounded(read_rps),
        "inprocess_update_rps": rounded(local), "ratio_update": ratio(update_rps, local),
        "turns_per_s_http": rounded(http_turns), "inprocess_turns_per_s": rounded(local_turns),
        "ratio_turn_http": ratio(http_turns, local_turns),
        "clients": CLIENTS, "seconds": seconds, "at_least": args.at_least, "quick": args.quick, "server_exit": code,
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
