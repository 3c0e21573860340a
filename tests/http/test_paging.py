"""``GET /history?limit=&before=`` in-process: what reaches the service, and which values are
refused before it is called. (The pages themselves are tested on a real server in test_routes.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.http.support import MVU, client_of

HISTORY = f"{MVU}/history"
READ = {"id": "mvu:x", "scope": '{"sessionId":"s1"}'}


class Recording:
    """A service whose history records the keywords it was called with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def history(self, **keywords: Any) -> Any:
        self.calls.append(keywords)
        return []


@pytest.mark.parametrize(("query", "paging"), [
    ({}, {"limit": None, "before": None}), ({"includeBefore": "true"}, {"limit": None, "before": None}),
    ({"limit": "5"}, {"limit": 5, "before": None}), ({"before": "0"}, {"limit": None, "before": 0}),
    ({"limit": "1000", "before": "12"}, {"limit": 1000, "before": 12}), ({"limit": "1"}, {"limit": 1, "before": None}),
])
async def test_paging_reaches_the_service_as_given(query: dict[str, str], paging: dict[str, Any]) -> None:
    service = Recording()
    async with client_of(service) as client:
        response = await client.get(HISTORY, params={**READ, **query})
    assert response.status_code == 200, response.text
    [call] = service.calls
    assert {key: call[key] for key in ("limit", "before")} == paging
    assert call["include_before"] is ("includeBefore" in query)


@pytest.mark.parametrize(("name", "value"), [
    ("limit", "0"), ("limit", "1001"), ("limit", "-1"), ("limit", "x"), ("limit", "1.5"), ("limit", "1.0"),
    ("limit", "1e3"), ("limit", "+5"), ("limit", ""), ("limit", "true"), ("before", "-1"), ("before", "abc"),
    ("before", "2.5"), ("before", " 3"),
])
async def test_bad_paging_values_are_400_and_never_reach_the_service(name: str, value: str) -> None:
    service = Recording()
    async with client_of(service) as client:
        response = await client.get(HISTORY, params={**READ, name: value})
    assert response.status_code == 400 and response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "MVU_OPERATION" and body["errors"][0]["pointer"] == f"/query/{name}", body
    assert service.calls == []
