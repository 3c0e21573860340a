"""The API index: the URL ``mvu serve`` prints opens it, without the token, and it lists what the
OpenAPI document lists (never a resource)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import httpx

from tests.http.support import API, MVU, Server, client_of

NO_TOKEN = {"Authorization": ""}


def operations(document: dict[str, object]) -> set[tuple[str, str]]:
    paths = document["paths"]
    assert isinstance(paths, dict)
    return {(method.upper(), path) for path, methods in paths.items() for method in methods}


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [value for name, value in attrs if tag == "a" and name == "href" and value]


async def test_the_index_answers_without_the_token_and_lists_every_documented_route() -> None:
    async with client_of(object()) as client:
        document = (await client.get(f"{API}/openapi.json")).json()
        for path in ("/", f"{API}/"):
            answer = await client.get(path, headers=NO_TOKEN)
            assert answer.status_code == 200, answer.text
            index = answer.json()
            assert index["links"] == {"openapi": f"{API}/openapi.json", "explorer": "/explorer/",
                                      "inspector": "/inspector/"}
            assert {(route["method"], route["path"]) for route in index["routes"]} == operations(document)
            assert all(route["summary"] for route in index["routes"])
            assert "docs/host-protocol.md" in index["guides"]


async def test_a_browser_gets_a_page_that_links_the_openapi_document() -> None:
    async with client_of(object()) as client:
        answer = await client.get(f"{API}/", headers={**NO_TOKEN, "Accept": "text/html,application/xhtml+xml;q=0.9"})
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
        links = Links()
        links.feed(answer.text)
        assert links.hrefs == ["/explorer/", f"{API}/openapi.json", "/inspector/"]
        assert f"<code>{MVU}/resources</code>" in answer.text and f"<code>{MVU}/update</code>" in answer.text


async def test_only_reading_the_index_skips_the_token() -> None:
    async with client_of(object()) as client:
        for method, path in (("GET", f"{API}/openapi.json"), ("GET", f"{MVU}/"), ("GET", "/nowhere"),
                             ("POST", f"{API}/"), ("GET", f"{MVU}/resources")):
            answer = await client.request(method, path, headers=NO_TOKEN)
            assert answer.status_code == 401 and answer.json()["code"] == "MVU_UNAUTHORIZED", (method, path)


async def test_a_browser_that_opens_a_route_without_the_token_is_told_what_it_is() -> None:
    browser = {**NO_TOKEN, "Accept": "text/html,application/xhtml+xml;q=0.9"}
    async with client_of(object()) as client:
        answer = await client.get(f"{API}/openapi.json", headers=browser)
        assert answer.status_code == 401 and answer.headers["content-type"].startswith("text/html")
        links = Links()
        links.feed(answer.text)
        assert links.hrefs == ["/explorer/", "/inspector/"]
        assert "var/mvu.sqlite3.token" in answer.text and "Authorization: Bearer" in answer.text
        assert f"http://test{API}/openapi.json" in answer.text  # the curl line, for this server
        # A script's call, or a write, still gets the problem a client reads.
        for method in ("POST", "PUT"):
            refused = await client.request(method, f"{MVU}/update", headers=browser)
            assert refused.status_code == 401 and refused.json()["code"] == "MVU_UNAUTHORIZED"


def test_the_url_mvu_serve_prints_opens_the_index(tmp_path: Path) -> None:
    server = Server.start(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    try:
        [printed] = [match.group(1) for line in server.lines
                     if (match := re.match(r"mvu serve: listening on (\S+)", line))]
        answer = httpx.get(printed)
        assert answer.status_code == 200, answer.text
        assert answer.json()["links"]["openapi"] == f"{API}/openapi.json"
        # mvu serve keeps sessions, so the host routes are there too.
        assert {"method": "POST", "path": f"{MVU}/sessions/{{sessionId}}/events"} in [
            {key: route[key] for key in ("method", "path")} for route in answer.json()["routes"]]
    finally:
        code, _, err = server.stop()
        assert code == 0, err[-2000:]


async def test_head_on_the_index_answers_like_get_without_a_body() -> None:
    async with client_of(object()) as client:
        got = await client.get(f"{API}/", headers=NO_TOKEN)
        head = await client.head(f"{API}/", headers=NO_TOKEN)
        bare = await client.get(API, headers=NO_TOKEN)  # the printed URL without its slash
    assert (head.status_code, head.content) == (200, b"")
    assert bare.status_code == 200 and bare.json() == got.json()
    assert head.headers["content-type"] == got.headers["content-type"]
