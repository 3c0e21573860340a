"""``--cors-origin``: preflights from listed origins pass before the token, real requests still
need it, other origins get nothing; the origins themselves are checked (in-process ASGI, then
one real ``mvu serve``)."""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from mvu_api.http import create_app
from mvu_api.http.cors import allowed_origins, parse_origin
from mvu_store.errors import Code, MvuError
from mvu_store.service import MvuService, RecordJson
from tests.http.support import API, MVU, Server

APP_ORIGIN = "https://chat.example"
DEV_ORIGIN = "http://localhost:5173"
READ = f"{MVU}/resource?id=mvu:x&scope=%7B%22sessionId%22%3A%22s1%22%7D"
PREFLIGHT = {"Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type, if-match, idempotency-key"}


RECORD = b'{"id":"mvu:x","revision":3}'


class Reading:
    """A service that answers every read with one record and counts its calls."""

    def __init__(self) -> None:
        self.reads = 0

    async def read_json(self, **_: Any) -> RecordJson:
        self.reads += 1
        return RecordJson(3, RECORD, hashlib.sha256(RECORD).hexdigest())


@contextlib.asynccontextmanager
async def client_for(service: Reading, origins: Iterable[str] = (APP_ORIGIN, DEV_ORIGIN)) \
        -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(cast(MvuService, service), token="t", cors_origins=origins)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {name: value for name, value in response.headers.items() if name.startswith("access-control-")}


def listed(header: str) -> set[str]:
    return {part.strip().lower() for part in header.split(",")}


@pytest.mark.parametrize("path", [f"{MVU}/update", READ, f"{MVU}/sessions/s1/events", "/nowhere"])
@pytest.mark.parametrize("origin", [APP_ORIGIN, DEV_ORIGIN])
async def test_a_preflight_from_a_listed_origin_is_answered_without_the_token(path: str, origin: str) -> None:
    service = Reading()
    async with client_for(service) as client:
        response = await client.options(path, headers={"Origin": origin, **PREFLIGHT})
    assert response.status_code == 204, response.text
    assert response.content == b""
    assert response.headers["access-control-allow-origin"] == origin
    assert listed(response.headers["access-control-allow-methods"]) == {"get", "post", "put"}
    assert listed(response.headers["access-control-allow-headers"]) == {
        "authorization", "content-type", "if-match", "if-none-match", "idempotency-key"}
    assert response.headers["access-control-max-age"] == "7200"
    assert "origin" in listed(response.headers["vary"])
    assert service.reads == 0


async def test_a_real_request_from_a_listed_origin_still_needs_the_token_and_is_readable() -> None:
    service = Reading()
    async with client_for(service) as client:
        refused = await client.get(READ, headers={"Origin": APP_ORIGIN})
        answered = await client.get(READ, headers={"Origin": APP_ORIGIN, "Authorization": "Bearer t"})
    # The 401 is readable by the page too: it can tell a wrong token from a network failure.
    assert refused.status_code == 401 and refused.json()["code"] == "MVU_UNAUTHORIZED"
    assert refused.headers["access-control-allow-origin"] == APP_ORIGIN
    assert answered.status_code == 200 and answered.json() == {"id": "mvu:x", "revision": 3}
    assert answered.headers["access-control-allow-origin"] == APP_ORIGIN
    assert listed(answered.headers["access-control-expose-headers"]) == {"etag", "idempotent-replayed", "retry-after"}
    assert answered.headers["etag"].startswith('"r3-') and "origin" in listed(answered.headers["vary"])
    assert service.reads == 1


async def test_an_options_request_without_a_requested_method_is_no_preflight() -> None:
    async with client_for(Reading()) as client:
        response = await client.options(READ, headers={"Origin": APP_ORIGIN})
    assert response.status_code == 401
    assert response.headers["access-control-allow-origin"] == APP_ORIGIN


@pytest.mark.parametrize("origin", ["https://evil.example", "http://chat.example", "https://chat.example:8443",
                                    "http://localhost:5174", "https://chat.example.evil", "null", APP_ORIGIN + "/"])
async def test_an_origin_not_listed_gets_no_cors_headers_and_its_preflight_meets_the_token(origin: str) -> None:
    service = Reading()
    async with client_for(service) as client:
        preflight = await client.options(f"{MVU}/update", headers={"Origin": origin, **PREFLIGHT})
        real = await client.get(READ, headers={"Origin": origin, "Authorization": "Bearer t"})
    assert preflight.status_code == 401 and preflight.json()["code"] == "MVU_UNAUTHORIZED"
    assert cors_headers(preflight) == {} and cors_headers(real) == {}
    assert real.status_code == 200 and service.reads == 1
    # Still marked as depending on Origin: a cache must not hand this answer to a listed origin.
    assert "origin" in listed(real.headers["vary"])


async def test_without_origins_a_preflight_is_an_unauthenticated_request() -> None:
    async with client_for(Reading(), origins=()) as client:
        response = await client.options(f"{MVU}/update", headers={"Origin": APP_ORIGIN, **PREFLIGHT})
    assert response.status_code == 401
    assert cors_headers(response) == {} and "vary" not in response.headers


@pytest.mark.parametrize(("given", "sent"), [
    ("https://chat.example", "https://chat.example"), ("HTTPS://Chat.Example:443", "https://chat.example"),
    ("http://localhost:80", "http://localhost"), ("http://localhost:5173", "http://localhost:5173"),
    ("https://chat.example:80", "https://chat.example:80"), ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("http://[::1]:3000", "http://[::1]:3000"), ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
])
async def test_origins_are_compared_as_browsers_send_them(given: str, sent: str) -> None:
    assert parse_origin(given) == sent
    async with client_for(Reading(), origins=[given]) as client:
        response = await client.options(READ, headers={"Origin": sent, **PREFLIGHT})
    assert response.status_code == 204 and response.headers["access-control-allow-origin"] == sent


def test_repeated_origins_count_once_in_order() -> None:
    assert allowed_origins([DEV_ORIGIN, APP_ORIGIN, "HTTPS://chat.example"]) == (DEV_ORIGIN, APP_ORIGIN)


@pytest.mark.parametrize(("given", "says"), [
    ("*", "wildcard"), ("null", "null"), ("", "scheme://host"), ("chat.example", "scheme://host"),
    (" https://chat.example", "scheme://host"), ("https://chat.example/", "no path"),
    ("https://chat.example/app", "no path"), ("https://chat.example?x=1", "no path"),
    ("https://chat.example#a", "no path"),
    ("https://chat.example?", "no path"), ("ftp://chat.example", "http or https"), ("file:///tmp/x", "http or https"),
    ("https://me@chat.example", "user name"), ("https://chat.example:99999", "not an origin"),
    ("https://chat.example:x", "not an origin"), ("https://chat.example:0", "port 0"), ("https://", "DNS name"),
    ("https://chat..example", "DNS name"), ("https://chat_example%41", "DNS name"), ("https://bücher.example", "xn--"),
    ("http://[not-v6]", "IPv6"),
])
def test_a_malformed_origin_is_mvu_config_naming_it(given: str, says: str) -> None:
    with pytest.raises(MvuError) as refused:
        create_app(cast(MvuService, Reading()), token="t", cors_origins=[APP_ORIGIN, given])
    assert refused.value.code == Code.CONFIG
    assert says in refused.value.message and repr(given) in refused.value.message


def test_mvu_serve_answers_preflights_of_each_listed_origin(tmp_path: Path) -> None:
    server = Server.start(f"sqlite:///{tmp_path / 'mvu.sqlite3'}", "--cors-origin", APP_ORIGIN,
                          "--cors-origin", "HTTP://LOCALHOST:5173")
    try:
        assert f"  cors:     {APP_ORIGIN}, {DEV_ORIGIN}" in server.lines
        for origin in (APP_ORIGIN, DEV_ORIGIN):
            preflight = httpx.options(f"{server.base}{API}/openapi.json",
                                      headers={"Origin": origin, "Access-Control-Request-Method": "GET"})
            assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == origin
        real = httpx.get(f"{server.base}{API}/openapi.json", headers={"Origin": APP_ORIGIN, **server.auth})
        assert real.status_code == 200 and real.headers["access-control-allow-origin"] == APP_ORIGIN
        other = httpx.options(f"{server.base}{API}/openapi.json",
                              headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"})
        assert other.status_code == 401 and cors_headers(other) == {}
    finally:
        code, _, log = server.stop()
    assert code == 0
    assert f'"OPTIONS {API}/openapi.json" 204' in log and f'"OPTIONS {API}/openapi.json" 401' in log


def test_a_malformed_cors_origin_stops_mvu_serve_before_it_touches_the_ledger(tmp_path: Path) -> None:
    ledger = tmp_path / "mvu.sqlite3"
    done = subprocess.run([sys.executable, "-m", "mvu_api.cli", "--db", f"sqlite:///{ledger}", "serve", "--port", "0",
                           "--token", "test-token-0123456789", "--cors-origin", "https://chat.example/"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == "MVU_CONFIG" and "no path" in lines[-2]
    assert not ledger.exists()
