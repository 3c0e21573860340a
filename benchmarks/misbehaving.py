"""Clients that misbehave against a real ``mvu serve``, and what a well-behaved client sees meanwhile.

Each abuse runs while a good client reads a session (``GET /mvu/sessions/{id}``, one request at a
time on one keep-alive connection) and its latency is measured, against the same client on a
quiet server:

- ``slowloris``: 64 connections sending their request heads a byte at a time, until the server
  closes them (the head deadline, ``--head-timeout``);
- ``wrong_tokens``: 10,000 requests with a wrong bearer token over 8 keep-alive connections;
- ``huge_heads``: heads of 64 KiB, of 1 MiB and of 3,000 headers (over the head bound);
- ``hostile_bodies``: JSON nested 100,000 deep (inside the body bound), a key named twice,
  ``1e999``.

The answers are counted by status and code; the server's log is counted in lines and searched for
tracebacks. Human lines first; the LAST line is one JSON object. The good client runs in this
process beside the abusers (the machine's cores are shared with the server, as a host's would
be): the figures compare conditions, they are no absolute measure. ``--quick`` makes a short run.

    python benchmarks/misbehaving.py [--quick]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

API = "/pmp-dsh-tavern/api/v1"
MVU = f"{API}/mvu"
TOKEN = "misbehaving-benchmark-token-0123"
Address = tuple[str, int]
DEADLINE = 120.0  # seconds any one exchange may take before it counts as the server not answering


# -- raw HTTP/1.1 ---------------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection; requests one at a time."""

    def __init__(self, address: Address | None = None, *, over: socket.socket | None = None) -> None:
        """A new connection to ``address``, or the one already open ``over`` a socket."""
        self._socket = over if over is not None else socket.create_connection(address or ("", 0), timeout=DEADLINE)
        self._buffer = b""

    def close(self) -> None:
        self._socket.close()

    def request(self, method: str, path: str, *, token: str | None = None, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        lines = [f"{method} {path} HTTP/1.1", "Host: mvu"]
        if token is not None:
            lines.append(f"Authorization: Bearer {token}")
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self._socket.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
        return self.response()

    def response(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self._buffer:
            self._fill()
        head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        fields = {name.strip().lower(): value.strip() for name, value in
                  (line.split(":", 1) for line in header_lines)}
        length = int(fields.get("content-length", "0"))
        while len(self._buffer) < length:
            self._fill()
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return int(status_line.split()[1]), fields, body

    def _fill(self) -> None:
        chunk = self._socket.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self._buffer += chunk


def answer_of(status: int, fields: dict[str, str], body: bytes) -> str:
    """``"<status> <code>"`` for a problem, ``"<status>"`` otherwise (``untyped`` if a problem
    has no code or an error is not a problem)."""
    if fields.get("content-type") == "application/problem+json":
        code = json.loads(body).get("code")
        return f"{status} {code}" if code else f"{status} untyped"
    return str(status) if status < 400 else f"{status} untyped"


def exchange(address: Address, raw: bytes) -> str:
    """Send ``raw`` on a new connection, read one answer (a reset while sending counts as what it is)."""
    with contextlib.closing(socket.create_connection(address, timeout=DEADLINE)) as connection:
        with contextlib.suppress(OSError):  # the server refused mid-send; its answer may still be readable
            connection.sendall(raw)
        try:
            return answer_of(*Connection(over=connection).response())
        except (ConnectionError, OSError):
            return "closed"


# -- the abuses -----------------------------------------------------------------------------------


def slowloris(address: Address, _token: str, *, connections: int = 64) -> dict[str, Any]:
    """``connections`` heads sent a byte at a time; how many the server closed (waited for)."""
    sockets = [socket.create_connection(address, timeout=DEADLINE) for _ in range(connections)]
    head = b"GET / HTTP/1.1\r\nHost: mvu\r\nX-Slow: " + b"z" * 10_000
    closed = 0
    deadline = time.monotonic() + DEADLINE
    open_ = list(sockets)
    for offset in range(len(head)):
        if not open_ or time.monotonic() > deadline:
            break
        still = []
        for connection in open_:
            try:
                connection.sendall(head[offset:offset + 1])
                still.append(connection)
            except OSError:
                closed += 1
        open_ = still
        time.sleep(0.05)
    for connection in open_:  # those not closed yet: wait for the server to close them
        try:
            connection.settimeout(max(0.1, deadline - time.monotonic()))
            if connection.recv(1) == b"":
                closed += 1
        except OSError:
            closed += 1
    for connection in sockets:
        connection.close()
    return {"connections": connections, "closedByServer": closed}


def wrong_tokens(address: Address, _token: str, *, requests: int = 10_000, connections: int = 8) -> dict[str, Any]:
    answers: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    def client(count: int) -> None:
        connection = Connection(address)
        try:
            for index in range(count):
                status, fields, body = connection.request("GET", f"{MVU}/sessions/s0", token=f"wrong-token-{index:08d}")
                with lock:
                    answers[answer_of(status, fields, body)] += 1
                if fields.get("connection") == "close":  # a 401 closes its connection: connect again
                    connection.close()
                    connection = Connection(address)
        finally:
            connection.close()

    share = [requests // connections + (1 if index < requests % connections else 0) for index in range(connections)]
    threads = [threading.Thread(target=client, args=(count,)) for count in share]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"requests": requests, "answers": dict(answers)}


def huge_heads(address: Address, token: str) -> dict[str, Any]:
    auth = f"Authorization: Bearer {token}\r\n".encode()
    start = f"GET {MVU}/sessions/s0 HTTP/1.1\r\nHost: mvu\r\n".encode() + auth
    heads = {
        "64KiB header": start + b"X-Big: " + b"a" * 65_536 + b"\r\n\r\n",
        "1MiB header": start + b"X-Big: " + b"a" * (1 << 20) + b"\r\n\r\n",
        "3000 headers": start + b"X-Many: b\r\n" * 3_000 + b"\r\n",
    }
    return {"answers": {name: exchange(address, raw) for name, raw in heads.items()}}


def hostile_bodies(address: Address, token: str) -> dict[str, Any]:
    scope = '{"authority":"local","sessionId":"s0"}'
    envelope = '{{"id":"mvu:x","scope":{scope},"content":{{"stat_data":{state}}},"expectedRevision":0,' \
               '"operationId":"hostile"}}'
    bodies = {
        "nested 100000 deep": envelope.format(scope=scope, state="[" * 100_000 + "]" * 100_000),
        "key named twice": envelope.format(scope=scope, state='{"hp":1,"hp":2}'),
        "1e999": envelope.format(scope=scope, state='{"hp":1e999}'),
        "events nested 100000 deep": '{"events":' + "[" * 100_000 + "]" * 100_000 + "}",
    }
    answers = {}
    for name, text in bodies.items():
        path = f"{MVU}/sessions/s0/events" if name.startswith("events") else f"{MVU}/update"
        connection = Connection(address)
        try:
            answers[name] = answer_of(*connection.request("POST", path, token=token, body=text.encode()))
        finally:
            connection.close()
    return {"answers": answers}


ABUSES: dict[str, Callable[[Address, str], dict[str, Any]]] = {
    "slowloris": slowloris, "wrong_tokens": wrong_tokens, "huge_heads": huge_heads, "hostile_bodies": hostile_bodies,
}


# -- the good client ------------------------------------------------------------------------------


class GoodClient:
    """Reads one session (or ``path``) over and over on one connection, noting each answer and its
    latency."""

    def __init__(self, address: Address, token: str, path: str = f"{MVU}/sessions/s0") -> None:
        self._address = address
        self._token = token
        self._path = path
        self.latencies: list[float] = []
        self.started: list[float] = []
        """When each request of :attr:`latencies` was sent (``time.perf_counter()``)."""
        self.answers: collections.Counter[str] = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> GoodClient:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(DEADLINE)

    def _run(self) -> None:
        connection = Connection(self._address)
        try:
            while not self._stop.is_set():
                started = time.perf_counter()
                answer = answer_of(*connection.request("GET", self._path, token=self._token))
                self.latencies.append(time.perf_counter() - started)
                self.started.append(started)
                self.answers[answer] += 1
        finally:
            connection.close()

    def wait_for(self, requests: int) -> None:
        deadline = time.monotonic() + DEADLINE
        while len(self.latencies) < requests and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.01)

    def figures(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else None
        return {"requests": len(ordered), "answers": dict(self.answers),
                "median_ms": round(statistics.median(ordered) * 1000, 2) if ordered else None,
                "p99_ms": round(p99 * 1000, 2) if p99 is not None else None}


# -- the server -----------------------------------------------------------------------------------


@dataclasses.dataclass
class Running:
    address: Address
    log: list[str]
    """The server's standard error, line by line as it is written."""
    pid: int


@contextlib.contextmanager
def served(directory: Path, *args: str, source: Path | None = None) -> Iterator[Running]:
    """``mvu serve`` on a new ledger in ``directory``, with a session ``s0``; ``source``: the
    checkout whose code serves (this one by default)."""
    command = [sys.executable, "-m", "mvu_api.cli", "serve", "--db", f"sqlite:///{directory / 'ledger.sqlite3'}",
               "--port", "0", "--token", TOKEN, *args]
    environment = {key: value for key, value in os.environ.items() if key != "MVU_TOKEN"}
    root = source or Path(__file__).resolve().parents[1]
    if source is not None:
        environment["PYTHONPATH"] = str(source)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
                               cwd=root)
    assert process.stdout is not None and process.stderr is not None
    log: list[str] = []
    stderr = process.stderr
    reader = threading.Thread(target=lambda: log.extend(line.rstrip("\n") for line in stderr), daemon=True)
    reader.start()
    try:
        address = None
        for line in process.stdout:
            found = re.search(r"listening on http://([\d.]+):(\d+)", line)
            if found:
                address = (found.group(1), int(found.group(2)))
            if line.startswith("  docs:"):
                break
        assert address is not None, f"mvu serve did not start: {log[-20:]}"
        threading.Thread(target=lambda: [None for _ in process.stdout or ()], daemon=True).start()
        connection = Connection(address)
        try:
            status, _, body = connection.request("POST", f"{MVU}/sessions", token=TOKEN,
                                                 body=b'{"sessionId": "s0", "createdAt": 1000}')
            assert status in (200, 201), body
        finally:
            connection.close()
        yield Running(address, log, process.pid)
    finally:
        process.terminate()
        process.wait(DEADLINE)
        reader.join(DEADLINE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    options = parser.parse_args()
    quiet_requests = 100 if options.quick else 2_000
    figures: dict[str, Any] = {"quick": options.quick}
    with tempfile.TemporaryDirectory(prefix="mvu-misbehaving-") as directory, \
            served(Path(directory), "--head-timeout", "2") as running:
        address, log = running.address, running.log
        with GoodClient(address, TOKEN) as good:
            good.wait_for(quiet_requests)
        figures["quiet"] = good.figures()
        print(f"quiet: {figures['quiet']}")
        for name, abuse in ABUSES.items():
            with GoodClient(address, TOKEN) as good:
                if name == "wrong_tokens" and options.quick:
                    outcome = wrong_tokens(address, TOKEN, requests=500)
                else:
                    outcome = abuse(address, TOKEN)
            figures[name] = {**outcome, "goodClient": good.figures()}
            print(f"{name}: {figures[name]}")
        time.sleep(0.5)  # let the log writer catch up before counting (a figure, not a check)
        figures["logLines"] = len(log)
        figures["tracebacks"] = sum("Traceback" in line for line in log)
    figures["loadAverage"] = [round(value, 2) for value in os.getloadavg()]
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
