"""A real ``mvu serve`` process on a free loopback port over a seeded SQLite ledger.

``seed`` writes the ledger and its sessions in-process (the store-backed host plays the turns, as
``mvu serve`` keeps them), then ``Server.start`` serves the same file; tests talk to it with httpx. ``client_of``
is the in-process alternative over a stub service.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import httpx

from mvu_api.http import create_app
from mvu_store.ledger import open_ledger
from mvu_store.ledger.transfer import import_directory
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost, play_turn
from tests.service.support import HERO, PLAIN

API = "/pmp-dsh-tavern/api/v1"
MVU = f"{API}/mvu"
TOKEN = "test-token-0123456789"
BROKEN = {"character_id": "broken", "name": "Broken", "initvar": ["a: [1"]}
LEGACY = ('{"version": 1, "resources": {"mvu:shared-old": {"revision": 3, "currentKey": null, "versions": [],'
          ' "managementMode": "native", "definition": {"id": "mvu:shared-old", "sessionIds": ["*"],'
          ' "initial": {"stat_data": {"hp": 7.5}}}}}}')
SHARED = [f"mvu:world-{n}" for n in range(16)]


@dataclass
class Seeded:
    db: str
    instances: dict[str, str] = field(default_factory=dict)
    """session id -> its HERO instance (s3: the broken card's instance)."""


def scope(session_id: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"authority": "local", **({"sessionId": session_id} if session_id else {}), **extra}


async def _seed(directory: Path, *, ledger_limit_bytes: int | None) -> Seeded:
    db = f"sqlite:///{directory / 'ledger.sqlite3'}"
    seeded = Seeded(db=db)
    legacy = directory / "legacy"
    legacy.mkdir()
    (legacy / "mvu-state.json").write_text(LEGACY, encoding="utf-8")
    ledger = await open_ledger(db)
    try:
        await import_directory(ledger, legacy)
        host = StoreHost(ledger)
        resources = [{"id": rid, "session_ids": ["*"], "sharing": "shared", "initial": {"stat_data": {"n": 0}}}
                     for rid in SHARED]
        service = MvuService(ledger=ledger, host=host, resources=resources)
        for card in (HERO, PLAIN, BROKEN):
            await service.discover(definition=card)
        for session_id, card in (("s1", HERO), ("s2", HERO), ("s3", BROKEN), ("s4", PLAIN)):
            await host.create_session(session_id, created_at=1000)
            selection = await service.select_character(session_id=session_id, character_id=card["character_id"])
            assert selection.instance_id is not None
            seeded.instances[session_id] = selection.instance_id
        await play_turn(service, host, "s1", turn=1, user="rest", reply="You rest. _.set('hp', 50, 70);//healed",
                        message_id="s1-m1")
        await play_turn(service, host, "s1", turn=2, user="fight", reply="Ouch. _.add('hp', -20);//hit",
                        message_id="s1-m2")
        await service.list(scope=scope())  # creates the shared resources
    finally:
        await ledger.close()
    if ledger_limit_bytes is not None:
        ledger = await open_ledger(db)
        used = (await ledger.usage()).used_bytes
        await ledger.close()
        await (await open_ledger(db, ledger_limit_bytes=used + ledger_limit_bytes)).close()
    return seeded


@contextlib.asynccontextmanager
async def client_of(service: object) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of the app over ``service`` (a stub standing in for MvuService)."""
    app = create_app(cast(MvuService, service), token="t")
    transport = httpx.ASGITransport(app=app)  # raises what the app lets out, as uvicorn would log it
    async with httpx.AsyncClient(transport=transport, base_url="http://test", headers={"Authorization": "Bearer t"}) \
            as client:
        yield client


def _collect(stream: IO[str], lines: list[str]) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))


def seed(directory: Path, *, ledger_limit_bytes: int | None = None) -> Seeded:
    return asyncio.run(_seed(directory, ledger_limit_bytes=ledger_limit_bytes))


# How long a server may take to start, or a log line to appear, before the test fails: only a
# bound on waiting for an event, generous for a loaded machine.
EVENT_DEADLINE = 120.0


@dataclass
class Server:
    process: subprocess.Popen[str]
    base: str
    token: str
    lines: list[str]
    reader: threading.Thread
    log: list[str]
    """Standard error (the access log) line by line, as it is written."""
    log_reader: threading.Thread

    @classmethod
    def start(cls, db: str, *args: str, token: str | None = TOKEN, env: dict[str, str] | None = None,
              timeout: float = EVENT_DEADLINE, read_log: bool = True) -> Server:
        """``read_log=False``: nobody reads the server's standard error until :meth:`stop`."""
        command = [sys.executable, "-m", "mvu_api.cli", "serve", "--db", db, "--port", "0", *args]
        if token is not None:
            command += ["--token", token]
        environment = {key: value for key, value in os.environ.items() if key != "MVU_TOKEN"}
        environment.update(env or {})
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=environment, cwd=Path(__file__).resolve().parents[2])
        lines: list[str] = []
        log: list[str] = []
        assert process.stdout is not None and process.stderr is not None
        reader = threading.Thread(target=_collect, args=(process.stdout, lines), daemon=True)
        reader.start()
        log_reader = threading.Thread(target=_collect, args=(process.stderr, log), daemon=True)
        if read_log:
            log_reader.start()
        deadline = time.monotonic() + timeout
        base = None
        while base is None or not any(line.startswith("  docs:") for line in lines):
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                process.wait()
                log_reader.join(timeout=30)
                raise AssertionError(f"mvu serve did not start: {lines} {log[-40:]}")
            time.sleep(0.02)
            match = next((re.search(r"listening on (http://[^/]+)", line) for line in lines if "listening" in line),
                         None)
            base = match.group(1) if match else None
        assert base is not None
        server = cls(process, base, token or "", lines, reader, log, log_reader)
        server.wait_ready(deadline)
        return server

    def wait_ready(self, deadline: float) -> None:
        while True:
            try:
                # Any answer (a 401 too, when the test does not know the token yet) means it serves.
                httpx.get(f"{self.base}{API}/openapi.json", timeout=2)
                return
            except (httpx.HTTPError, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers=self.auth, timeout=30)

    def stdout(self) -> str:
        return "\n".join(self.lines)

    def wait_for_log(self, text: str) -> str:
        """The first standard-error line containing ``text``, once the server has written it."""
        deadline = time.monotonic() + EVENT_DEADLINE
        while True:
            found = next((line for line in list(self.log) if text in line), None)
            if found is not None:
                return found
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"the server never logged {text!r}: {self.log[-40:]}")
            time.sleep(0.02)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> tuple[int, str, str]:
        if self.log_reader.ident is None:  # not read so far: read it now, so the server can exit
            self.log_reader.start()
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        # Each reader ends at the end of its stream: then every line is in.
        self.reader.join(timeout=30)
        self.log_reader.join(timeout=30)
        return self.process.returncode, self.stdout(), "".join(line + "\n" for line in self.log)


@contextlib.contextmanager
def served(db: str) -> Iterator[Server]:
    """A server on ``db`` for a test module: stopped at the end, where it must exit cleanly."""
    running = Server.start(db)
    try:
        yield running
    finally:
        code, _, err = running.stop()
        assert code == 0, err[-2000:]
