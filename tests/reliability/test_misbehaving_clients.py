"""Clients that misbehave against a real ``mvu serve`` (the abuses of ``benchmarks/misbehaving.py``):
every answer is a typed problem, a well-behaved client is answered throughout, the log holds one
line per request or connection and no traceback. Behaviour only: no latency is asserted."""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mvu_api.http.h11_protocol import MAX_CONNECTIONS, MAX_HEAD_BYTES

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "misbehaving.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("misbehaving", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # where its dataclass looks itself up while being made
    spec.loader.exec_module(module)
    return module


bench = _load()


class Served:
    def __init__(self, address: tuple[str, int], log: list[str]) -> None:
        self.address = address
        self.log = log
        self.events = 0  # requests sent and connections opened: the log's bound


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with bench.served(tmp_path_factory.mktemp("misbehaving"), "--head-timeout", "5") as running:
        log = running.log
        server = Served(running.address, log)
        server.events = 1  # the session the benchmark's server creates
        yield server
    # After the server stopped, its whole log is in.
    assert not [line for line in log if "Traceback" in line], log[-50:]
    assert max(len(line) for line in log) < 1_000
    assert len(log) <= server.events + 40, f"{len(log)} log lines for {server.events} requests and connections"


@contextlib.contextmanager
def good_client(served: Served) -> Iterator[Any]:
    """A well-behaved client reading all along; at the end, every answer it got was a 200."""
    with bench.GoodClient(served.address, bench.TOKEN) as good:
        good.wait_for(1)  # it is being answered before the abuse starts
        yield good
    figures = good.figures()
    served.events += figures["requests"]
    assert figures["requests"] >= 1 and figures["answers"] == {"200": figures["requests"]}, figures


def test_a_slowloris_of_64_is_closed_and_others_are_served(served: Served) -> None:
    with good_client(served) as good:
        outcome = bench.slowloris(served.address, bench.TOKEN, connections=64)
        served.events += 64
        assert outcome == {"connections": 64, "closedByServer": 64}
        before = len(good.latencies)
        good.wait_for(before + 1)  # and it is still answered once they are gone
        assert len(good.latencies) > before


def test_ten_thousand_wrong_tokens_are_each_a_401_problem(served: Served) -> None:
    with good_client(served):
        outcome = bench.wrong_tokens(served.address, bench.TOKEN, requests=10_000)
        served.events += 10_000
    assert outcome["answers"] == {"401 MVU_UNAUTHORIZED": 10_000}


def test_heads_over_the_bound_are_431_problems(served: Served) -> None:
    with good_client(served):
        outcome = bench.huge_heads(served.address, bench.TOKEN)
        served.events += len(outcome["answers"])
    assert set(outcome["answers"].values()) == {"431 MVU_HEAD_TOO_LARGE"}, outcome
    # A head just inside the bound is served as usual.
    start = f"GET {bench.MVU}/sessions/s0 HTTP/1.1\r\nHost: mvu\r\nAuthorization: Bearer {bench.TOKEN}\r\n".encode()
    padding = MAX_HEAD_BYTES - len(start) - len(b"X-Pad: \r\n\r\n")
    assert bench.exchange(served.address, start + b"X-Pad: " + b"p" * padding + b"\r\n\r\n") == "200"
    served.events += 1


def test_hostile_bodies_are_400_problems(served: Served) -> None:
    with good_client(served):
        outcome = bench.hostile_bodies(served.address, bench.TOKEN)
        served.events += len(outcome["answers"])
    assert outcome["answers"] == dict.fromkeys(outcome["answers"], "400 MVU_JSON")
    assert len(outcome["answers"]) == 4


def test_a_malformed_request_is_a_400_problem(served: Served) -> None:
    assert bench.exchange(served.address, b"NOT HTTP\x00\r\n\r\n") == "400 MVU_BAD_REQUEST"
    served.events += 1


def test_a_401_closes_its_connection(served: Served) -> None:
    with contextlib.closing(socket.create_connection(served.address, timeout=bench.DEADLINE)) as raw:
        status, fields, body = bench.Connection(over=raw).request("GET", f"{bench.MVU}/sessions/s0", token="wrong")
        served.events += 1
        assert (bench.answer_of(status, fields, body), fields["connection"]) == ("401 MVU_UNAUTHORIZED", "close")
        assert raw.recv(1) == b""  # closed by the server (the socket's timeout only bounds a server that never does)


def _closed_by_server(connection: socket.socket) -> bool:
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True


def test_connections_without_the_token_never_keep_a_client_with_it_out(served: Served) -> None:
    """Connections that never sent the token fill every slot, twice over: each new one takes the
    slot of the oldest of them waiting for a head, and the client with the token is served. Half
    of the first ones send a head they never finish (a slow client's), half send nothing."""
    first = [socket.create_connection(served.address, timeout=bench.DEADLINE) for _ in range(MAX_CONNECTIONS)]
    for connection in first[::2]:
        connection.sendall(f"GET {bench.MVU}/sessions/s0 HTTP/1.1\r\nHost: mvu\r\n".encode())
    served.events += 2 * len(first)  # each is opened, and closed to make room with one log line
    try:
        with good_client(served) as good:  # it connects with every slot held, and is answered
            second = [socket.create_connection(served.address, timeout=bench.DEADLINE) for _ in range(MAX_CONNECTIONS)]
            served.events += len(second)
            before = len(good.latencies)
            good.wait_for(before + 1)  # its proven connection was never the one closed
            assert len(good.latencies) > before
            assert all(_closed_by_server(connection) for connection in first)
        for connection in second:
            connection.close()
    finally:
        for connection in first:
            connection.close()


def test_a_503_only_when_every_connection_is_proven(tmp_path: Path) -> None:
    with bench.served(tmp_path, "--head-timeout", "120") as running:
        proven = [bench.Connection(running.address) for _ in range(MAX_CONNECTIONS)]
        try:
            assert {bench.answer_of(*connection.request("GET", f"{bench.MVU}/sessions/s0", token=bench.TOKEN))
                    for connection in proven} == {"200"}
            status, fields, body = bench.Connection(running.address).response()
            assert bench.answer_of(status, fields, body) == "503 MVU_TOO_MANY_CONNECTIONS"
            assert fields["retry-after"] == "1"
        finally:
            for connection in proven:
                connection.close()


def test_a_client_that_never_reads_its_public_answers_gives_up_its_slot(tmp_path: Path) -> None:
    """Public reads pipelined by a client that never reads the answers keep its connection inside a
    request (no head deadline) for as long as it likes: it is still the one closed to make room,
    and its slot is free at once, not once its answers are read."""
    with bench.served(tmp_path, "--head-timeout", "120") as running:
        never_reads = socket.socket()
        never_reads.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        never_reads.connect(running.address)
        never_reads.sendall(b"GET /inspector/static/panel.js HTTP/1.1\r\nHost: mvu\r\n\r\n" * 3000)
        never_reads.settimeout(bench.DEADLINE)
        assert never_reads.recv(1, socket.MSG_PEEK) == b"H"  # its answers have started
        proven = [bench.Connection(running.address) for _ in range(MAX_CONNECTIONS - 1)]
        try:
            assert {bench.answer_of(*connection.request("GET", f"{bench.MVU}/sessions/s0", token=bench.TOKEN))
                    for connection in proven} == {"200"}
            late = bench.Connection(running.address)  # the 513th: the one that never reads makes room
            answer = late.request("GET", f"{bench.MVU}/sessions/s0", token=bench.TOKEN, headers={"Connection": "close"})
            assert bench.answer_of(*answer) == "200"
            with pytest.raises(ConnectionError):  # the server closed it (and counted it out) first
                late.response()
            again = bench.Connection(running.address)  # 512 again only if the evicted one left at once
            assert bench.answer_of(*again.request("GET", f"{bench.MVU}/sessions/s0", token=bench.TOKEN)) == "200"
            again.close()
        finally:
            never_reads.close()
            for connection in proven:
                connection.close()


@pytest.mark.parametrize("path", ["/docs", "/redoc", f"{bench.API}/docs", f"{bench.API}/redoc",
                                  f"{bench.API}/docs/oauth2-redirect"])
def test_there_is_no_interactive_docs_page(served: Served, path: str) -> None:
    connection = bench.Connection(served.address)
    try:
        with_token = bench.answer_of(*connection.request("GET", path, token=bench.TOKEN))
        without = bench.answer_of(*connection.request("GET", path))
    finally:
        connection.close()
    served.events += 2
    assert (with_token, without) == ("404 MVU_NOT_FOUND", "401 MVU_UNAUTHORIZED")
