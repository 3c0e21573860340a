"""A real ``mvu serve`` process against hostile or unlucky clients and operators: forged log lines,
clients that leave or stall mid-body, a stop during a stalled upload, a port in use, an open bind,
weak tokens."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.http.support import MVU, TOKEN, Server


def _empty(tmp_path: Path, *args: str, token: str | None = TOKEN) -> Server:
    return Server.start(f"sqlite:///{tmp_path / 'ledger.sqlite3'}", *args, token=token)


def _connect(server: Server) -> socket.socket:
    url = urlsplit(server.base)
    assert url.hostname is not None and url.port is not None
    return socket.create_connection((url.hostname, url.port), timeout=30)


def _answer(connection: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _reading_body(connection: socket.socket) -> None:
    """Wait until the app reads the body: with ``Expect: 100-continue`` the server answers ``100
    Continue`` exactly when the route first asks for it (an event, not a guessed delay)."""
    interim = b""
    while not interim.endswith(b"\r\n\r\n"):
        chunk = connection.recv(1)
        assert chunk, interim
        interim += chunk
    assert interim.startswith(b"HTTP/1.1 100"), interim


def _stalled_upload(server: Server) -> socket.socket:
    """An update whose headers promise 1000 bytes of which only 10 are sent, once the route reads."""
    connection = _connect(server)
    connection.sendall(f"POST {MVU}/update HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\n"
                       "Content-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n"
                       .encode())
    _reading_body(connection)
    connection.sendall(b'{"id": "mv')
    return connection


def test_the_access_log_cannot_be_forged_through_the_path(tmp_path: Path) -> None:
    server = _empty(tmp_path)
    forged = "2030-01-01 00:00:00,000 mvu.http 127.0.0.1:1 \"GET /admin\" 200 1.0ms"
    with _connect(server) as connection:
        # Percent-decoded by the server: a raw request line, so no client library re-encodes it.
        path = f"/x%0D%0A{forged.replace(' ', '%20').replace(chr(34), '%22')}%0Aend%E2%80%A8sep%5C"
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        assert _answer(connection).startswith(b"HTTP/1.1 401")
    code, _, log = server.stop()
    assert code == 0, log[-2000:]
    lines = log.splitlines()
    assert not any(line.startswith("2030-01-01") or line.startswith("end") for line in lines), log
    [line] = [line for line in lines if "/x\\x0d\\x0a" in line]
    assert line.endswith("ms") and '\\"GET /admin\\"' in line and "\\x0aend\\u2028sep\\\\" in line
    assert '" 401 ' in line


def test_a_client_leaving_mid_body_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    server = _empty(tmp_path)
    connection = _stalled_upload(server)
    connection.close()
    server.wait_for_log(f'"POST {MVU}/update" 499 ')  # the server saw the client leave
    code, _, log = server.stop()
    assert code == 0, log[-2000:]
    assert "Traceback" not in log and "ClientDisconnect" not in log and "Exception" not in log, log
    assert [line for line in log.splitlines() if "/update" in line] == [
        line for line in log.splitlines() if f'"POST {MVU}/update" 499 ' in line]
    assert len([line for line in log.splitlines() if "/update" in line]) == 1


def test_a_stalled_body_is_408_problem_after_the_body_timeout(tmp_path: Path) -> None:
    server = _empty(tmp_path, "--body-timeout", "1")
    started = time.monotonic()
    with _stalled_upload(server) as connection:
        answer = _answer(connection)
    assert time.monotonic() - started > 0.9  # not before the timeout (no upper bound: shared machines)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), answer
    assert b"content-type: application/problem+json" in head.lower() and b"connection: close" in head.lower()
    assert b'"code":"MVU_BODY_TIMEOUT"' in body and b'"status":408' in body
    code, _, log = server.stop()
    assert code == 0 and "Traceback" not in log, log[-2000:]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stalled_upload_does_not_hold_the_shutdown(tmp_path: Path, sig: int) -> None:
    server = _empty(tmp_path)  # the default body timeout (30 s) equals the grace period
    with _stalled_upload(server) as connection:
        server.process.send_signal(sig)
        answer = _answer(connection)
        code, out, log = server.stop(timeout=60)
    # The answer itself shows the upload was cut at the shutdown: a 503 ``MVU_DISPOSED``, not the
    # 30 s body timeout's 408 nor uvicorn's cancellation 500 after its grace period.
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503"), answer
    assert b"application/problem+json" in head and b'"code":"MVU_DISPOSED"' in body
    assert code == 0 and out.rstrip().endswith("mvu serve: stopped"), log[-2000:]
    assert "Traceback" not in log and not re.search(r'" 500 ', log), log[-2000:]


def _serve_fails(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    environment = {key: value for key, value in os.environ.items() if key != "MVU_TOKEN"}
    environment.update(env or {})
    done = subprocess.run([sys.executable, "-m", "mvu_api.cli", "serve", *args], capture_output=True, text=True,
                          env=environment, timeout=60, check=False)
    return done.returncode, done.stderr.strip().splitlines()


def test_a_port_in_use_is_one_clear_line_before_the_ledger_is_touched(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite3"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, lines = _serve_fails("--db", f"sqlite:///{ledger}", "--port", str(port), "--token", TOKEN)
    assert (code, lines[-1]) == (2, "MVU_CONFIG"), lines
    assert lines[-2].startswith(f"mvu: cannot listen on 127.0.0.1:{port}: ") and "in use" in lines[-2], lines
    assert "Traceback" not in "\n".join(lines)
    assert not ledger.exists()


@pytest.mark.parametrize(("args", "env"), [(("--token", ""), None), (("--token", "short"), None),
                                           (("--token", " " * 20), None), ((), {"MVU_TOKEN": ""}),
                                           ((), {"MVU_TOKEN": "123456789012345"})])
def test_an_empty_or_short_token_is_refused(tmp_path: Path, args: tuple[str, ...], env: dict[str, str] | None) -> None:
    ledger = tmp_path / "ledger.sqlite3"
    code, lines = _serve_fails("--db", f"sqlite:///{ledger}", "--port", "0", *args, env=env)
    assert (code, lines[-1]) == (2, "MVU_CONFIG"), lines
    assert "at least 16 characters" in lines[-2]
    assert not (tmp_path / "ledger.sqlite3.token").exists()


def test_a_session_memory_below_a_mebibyte_is_refused_before_the_ledger_is_touched(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite3"
    code, lines = _serve_fails("--db", f"sqlite:///{ledger}", "--port", "0", "--token", TOKEN,
                               "--session-memory-mib", "0")
    assert (code, lines[-1]) == (2, "MVU_CONFIG"), lines
    assert "--session-memory-mib" in lines[-2] and not ledger.exists()


def test_a_non_loopback_bind_warns_that_the_token_travels_in_clear(tmp_path: Path) -> None:
    server = _empty(tmp_path, "--host", "0.0.0.0")
    assert server.base.startswith("http://0.0.0.0:")
    code, _, log = server.stop()
    assert code == 0
    assert any("warning" in line and "in clear" in line and "0.0.0.0" in line for line in log.splitlines()), log


def test_a_loopback_bind_does_not_warn(tmp_path: Path) -> None:
    server = _empty(tmp_path)
    code, _, log = server.stop()
    assert code == 0 and "in clear" not in log, log


def test_a_body_arriving_just_after_the_signal_is_still_read(tmp_path: Path) -> None:
    """Only a body that stays stalled is cut short at stop: one completed within the moment given
    (2 s) is read and answered (here 404: the empty ledger has no such resource), not 503."""
    server = _empty(tmp_path)
    body = (b'{"id": "mvu:nothing", "scope": {"authority": "local", "sessionId": "s1"}, "content": {"stat_data": {}},'
            b' "expectedRevision": 0, "operationId": "late"}')
    with _connect(server) as connection:
        connection.sendall(f"POST {MVU}/update HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\n"
                           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                           "Expect: 100-continue\r\n\r\n".encode())
        _reading_body(connection)
        connection.sendall(body[:10])
        server.process.send_signal(signal.SIGTERM)
        server.wait_for_log("Shutting down")  # the rest of the body arrives after the stop began
        connection.sendall(body[10:])
        answer = _answer(connection)
    assert answer.startswith(b"HTTP/1.1 404"), answer
    assert b'"code":"MVU_MISSING"' in answer
    code, _, log = server.stop()
    assert code == 0 and "Traceback" not in log, log[-2000:]
