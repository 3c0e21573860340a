"""The status mapping, in one table, through the ASGI app (codes no real request can provoke
cheaply, such as busy storage, come from a stub service)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mvu_api.http.problems import STATUSES, status_of
from mvu_store.errors import Code, MvuError
from tests.http.support import MVU, client_of

SCOPE = "scope=%7B%22sessionId%22%3A%22s1%22%7D"
READ = f"{MVU}/resource?id=mvu:x&{SCOPE}"
READS = [f"{MVU}/resources?{SCOPE}", READ, f"{MVU}/history?id=mvu:x&{SCOPE}", f"{MVU}/facts?id=mvu:x&{SCOPE}"]
BODY = {"id": "mvu:x", "scope": {"authority": "local", "sessionId": "s1"}, "content": {"stat_data": {}},
        "expectedRevision": 0, "operationId": "o"}


class Refusing:
    """Every method raises the given error."""

    def __init__(self, error: MvuError) -> None:
        self.error = error

    async def list(self, **_: Any) -> Any:
        raise self.error

    async def read_json(self, **_: Any) -> Any:
        raise self.error

    async def history(self, **_: Any) -> Any:
        raise self.error

    async def facts(self, **_: Any) -> Any:
        raise self.error

    async def update(self, **_: Any) -> Any:
        raise self.error


def test_every_code_has_exactly_one_deliberate_status() -> None:
    """A new Code fails here until problems.STATUSES names its status (400 included)."""
    named = [code for codes in STATUSES.values() for code in codes]
    assert sorted(named) == sorted(Code)
    assert all(status_of(code) == status for status, codes in STATUSES.items() for code in codes)


@pytest.mark.parametrize("path", READS)
async def test_busy_storage_on_a_read_is_503_with_retry_after(path: str) -> None:
    """The ledger turns a busy or locked database on a read into MVU_STORAGE_BUSY; every read route
    answers it as a write does: 503, Retry-After, and none of the driver's text."""
    busy = MvuError(Code.STORAGE_BUSY, "(sqlite3.OperationalError) database is locked", statement="SELECT 1")
    async with client_of(Refusing(busy)) as client:
        response = await client.get(path)
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert (body["code"], body["status"]) == ("MVU_STORAGE_BUSY", 503)
    assert "locked" not in response.text and "statement" not in body


@pytest.mark.parametrize(("code", "read", "write"), [
    (Code.AMBIGUOUS, 409, 409), (Code.REVISION_CONFLICT, 409, 409), (Code.IDEMPOTENCY_CONFLICT, 409, 409),
    (Code.WRITE_DENIED, 403, 403), (Code.READ_ONLY, 403, 403), (Code.USAGE_DENIED, 403, 403),
    (Code.MIGRATION_REQUIRED, 400, 403), (Code.MISSING, 404, 404), (Code.STORAGE_BUSY, 503, 503),
    (Code.DISPOSED, 503, 503), (Code.STORAGE_CORRUPT, 500, 500), (Code.SCOPE_MISMATCH, 400, 400),
    (Code.AUTHORITY, 400, 400), (Code.STORAGE_LIMIT, 400, 400), (Code.LIMIT, 400, 400), (Code.SCHEMA, 400, 400),
    (Code.HISTORY_CHANGED, 400, 400),
])
async def test_the_status_of_each_code(code: Code, read: int, write: int) -> None:
    assert (status_of(code), status_of(code, write=True)) == (read, write)
    async with client_of(Refusing(MvuError(code, "refused", limit=10, used=3))) as client:
        answers = ((await client.get(READ), read), (await client.post(f"{MVU}/update", json=BODY), write))
        for response, status in answers:
            assert response.status_code == status
            assert response.headers["content-type"] == "application/problem+json"
            body = response.json()
            assert body["code"] == code.value and body["status"] == status
            if status == 503:
                assert response.headers["retry-after"] == "1"
            if status < 500:
                assert (body["detail"], body["limit"], body["used"]) == ("refused", 10, 3)
            else:
                assert "limit" not in body and body["detail"] != "refused"


def test_header_sources_change_conflict_statuses() -> None:
    assert status_of(Code.REVISION_CONFLICT, write=True, if_match=True) == 412
    assert status_of(Code.IDEMPOTENCY_CONFLICT, write=True, idempotency_key=True) == 422
    assert status_of(Code.REVISION_CONFLICT, write=True, idempotency_key=True) == 409


class Crashing:
    async def read_json(self, **_: Any) -> Any:
        raise RuntimeError("a bug")


async def test_an_unhandled_error_is_one_500_problem_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    async with client_of(Crashing()) as client:
        with caplog.at_level(logging.INFO):
            response = await client.get(READ)
    assert response.status_code == 500 and response.headers["content-type"] == "application/problem+json"
    assert response.json()["detail"] == "internal error" and "a bug" not in response.text
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None, errors
    assert sum(1 for record in caplog.records if f'"GET {MVU}/resource" 500' in record.getMessage()) == 1
