"""``mvu serve`` options: where the token comes from, where sessions come from."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from mvu_api.http.serve import resolve_token, token_path
from mvu_store.errors import MvuError
from tests.http.support import API, MVU, Server


def _openapi(server: Server, token: str) -> int:
    return httpx.get(f"{server.base}{API}/openapi.json", headers={"Authorization": f"Bearer {token}"}).status_code


def test_a_generated_token_is_printed_once_and_kept_0600_beside_the_ledger(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'mvu.sqlite3'}"
    token_file = tmp_path / "mvu.sqlite3.token"
    first = Server.start(db, token=None)
    first.token = token_file.read_text().strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    # Every file the server created is its owner's alone, whatever the umask it was started with.
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()} == {
        p.name: 0o600 for p in tmp_path.iterdir()}
    assert any(first.token in line for line in first.lines)
    # Sessions are kept in the ledger itself, fed over the host routes.
    assert any(line.startswith("  sessions: kept in the ledger") for line in first.lines)
    assert _openapi(first, first.token) == 200 and _openapi(first, "other") == 401
    code, _, log = first.stop()
    assert code == 0
    # One line per request, the refused one too; never the token.
    assert f'"GET {API}/openapi.json" 200' in log and f'"GET {API}/openapi.json" 401' in log
    assert first.token not in log
    second = Server.start(db, token=None)
    second.token = first.token
    assert not any(first.token in line for line in second.lines)
    assert f"  token:    from {token_file}" in second.lines
    assert _openapi(second, first.token) == 200
    assert second.stop()[0] == 0
    third = Server.start(db, token=None, env={"MVU_TOKEN": "from-the-environment"})
    third.token = "from-the-environment"
    assert _openapi(third, "from-the-environment") == 200 and _openapi(third, first.token) == 401
    assert third.stop()[0] == 0


def _serve_fails(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    environment = {key: value for key, value in os.environ.items() if key != "MVU_TOKEN"}
    environment.update(env or {})
    done = subprocess.run([sys.executable, "-m", "mvu_api.cli", "serve", "--port", "0", *args], capture_output=True,
                          text=True, env=environment, timeout=60, check=False)
    return done.returncode, done.stderr.strip().splitlines()[-1]


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "mvu.sqlite3.token"
    token_file.write_text("secret\n")
    token_file.chmod(0o644)
    assert _serve_fails("--db", f"sqlite:///{tmp_path / 'mvu.sqlite3'}") == (2, "MVU_CONFIG")


def test_a_server_database_needs_an_explicit_token() -> None:
    assert _serve_fails("--db", "postgresql://nobody@127.0.0.1:1/none") == (2, "MVU_CONFIG")


def test_the_demo_on_a_ledger_is_served_afterwards(tmp_path: Path) -> None:
    """`mvu demo` on the embedded ledger, then `mvu serve` on it: the demo's session is the store's,
    so reads answer instead of MVU_SESSION_IDENTITY."""
    db = f"sqlite:///{tmp_path / 'mvu.sqlite3'}"
    done = subprocess.run([sys.executable, "-m", "mvu_api.cli", "--db", db, "--json", "demo"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    demo = json.loads(done.stdout.strip().splitlines()[-1])
    server = Server.start(db)
    try:
        scope = json.dumps({"authority": "local", "sessionId": demo["sessionId"]})
        answer = httpx.get(f"{server.base}{API}/mvu/resource", params={"id": demo["instanceId"], "scope": scope},
                           headers=server.auth)
        assert answer.status_code == 200, answer.text
        assert answer.json()["content"]["stat_data"] == demo["retry"]["statData"]
    finally:
        assert server.stop()[0] == 0


def test_a_token_path_that_is_a_link_is_refused_with_a_typed_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mvu.sqlite3'}"
    path = token_path(url)
    assert path is not None
    real = tmp_path / "elsewhere"
    real.write_text("a-token-of-sufficient-length\n")
    real.chmod(0o600)
    for target in (tmp_path / "missing", real):  # dangling, then to a good-looking file
        path.unlink(missing_ok=True)
        path.symlink_to(target)
        with pytest.raises(MvuError) as refused:
            resolve_token(url, None)
        assert refused.value.code == "MVU_CONFIG" and "link" in str(refused.value)


def test_a_token_file_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'mvu.sqlite3'}"
    resolve_token(url, None)  # created, ours
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)  # as another user sees it
    with pytest.raises(MvuError) as refused:
        resolve_token(url, None)
    assert refused.value.code == "MVU_CONFIG" and "another user" in str(refused.value)


def test_two_first_starts_at_once_agree_on_one_complete_token(tmp_path: Path) -> None:
    for attempt in range(20):
        url = f"sqlite:///{tmp_path / f'mvu-{attempt}.sqlite3'}"
        start = threading.Barrier(2)
        tokens: list[str] = []

        def first_start(url: str = url, start: threading.Barrier = start, tokens: list[str] = tokens) -> None:
            start.wait()
            tokens.append(resolve_token(url, None).value)

        threads = [threading.Thread(target=first_start) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        path = token_path(url)
        assert path is not None
        assert len(tokens) == 2 and tokens[0] == tokens[1] == path.read_text().strip()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_a_server_whose_log_nobody_reads_keeps_answering(tmp_path: Path) -> None:
    """An access-log line per request into a pipe nobody reads: the pipe fills after a few
    hundred lines, the server must not stop with it. The route is the cheapest one that answers
    200 (an empty session list): the lines are what fill the pipe, not the answers' size."""
    server = Server.start(f"sqlite:///{tmp_path / 'mvu.sqlite3'}", read_log=False)
    try:
        with server.client() as client:
            statuses = {client.get(f"{MVU}/inspector/sessions").status_code for _ in range(1_500)}
        assert statuses == {200}
    finally:
        code, _, log = server.stop()
    assert code == 0
    assert "log lines were dropped" in log or log.count("/inspector/sessions") >= 1_500


def test_the_log_queue_drops_and_counts_instead_of_waiting() -> None:
    from mvu_api.http.nonblocking_logs import QUEUE_RECORDS, nonblocking_logging

    release = threading.Event()
    written: list[str] = []

    class Stuck:
        """A stream whose first write waits until released, as a pipe nobody reads."""

        def write(self, text: str) -> None:
            release.wait()
            written.append(text)

        def flush(self) -> None:
            pass

    logger = logging.getLogger("mvu.test-log")
    with nonblocking_logging(Stuck()):  # type: ignore[arg-type]
        for n in range(QUEUE_RECORDS + 100):  # returns at once each time, however stuck the stream
            logger.info("line %d", n)
        release.set()
        deadline = time.monotonic() + 60
        while len(written) < QUEUE_RECORDS:  # the queue drains once the stream takes lines again
            assert time.monotonic() < deadline, "the queued lines were never written"
            time.sleep(0.01)
        logger.info("after")
    dropped = [text for text in written if "were dropped" in text]
    # The writer may or may not have taken the first line off the queue before it filled.
    assert len(dropped) == 1 and re.search(r" (99|100) log lines were dropped", dropped[0])
    assert written[-1].rstrip().endswith("after")
    assert len(written) == QUEUE_RECORDS + 100 - int(dropped[0].split(" log lines")[0].split()[-1]) + 2


def _closed_by_server(connection: socket.socket) -> bool:
    """Whether the server closed the connection (waited for, not timed: the socket's own
    timeout only turns a server that never closes it into a failure)."""
    connection.settimeout(60)
    try:
        return connection.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_a_connection_whose_request_head_does_not_arrive_is_closed(tmp_path: Path) -> None:
    server = Server.start(f"sqlite:///{tmp_path / 'mvu.sqlite3'}", "--head-timeout", "0.5")
    try:
        address = server.base.removeprefix("http://").rsplit(":", 1)
        silent = socket.create_connection((address[0], int(address[1])))
        slow = socket.create_connection((address[0], int(address[1])))
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and never the end of its headers
        with server.client() as client:  # a well-behaved client is served meanwhile, twice on one connection
            assert client.get(f"{API}/openapi.json").status_code == 200
            assert client.get(f"{API}/openapi.json").status_code == 200
        assert _closed_by_server(silent) and _closed_by_server(slow)
        silent.close()
        slow.close()
    finally:
        code, _, log = server.stop()
    assert code == 0 and "no request head within 0.5 s" in log
