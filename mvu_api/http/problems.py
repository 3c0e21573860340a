"""Errors on the wire: RFC 9457 ``application/problem+json``, the one place codes become statuses.

Every refusal the service makes is an :class:`MvuError`; here it becomes ``{type, title, status,
detail, code, ...details}`` with the details' keys in camelCase (``expectedRevision``,
``currentRevision``, ``limit``, ``used``). Transport refusals (no token, unknown route, wrong
method, oversize body, malformed query) use the same shape so a client reads one kind of error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic.alias_generators import to_camel
from starlette.responses import Response

from mvu_store.errors import Code, MvuError

PROBLEM_JSON = "application/problem+json"

# Transport-level codes (not the service's): a missing or wrong token, and an unknown route.
UNAUTHORIZED = "MVU_UNAUTHORIZED"
NOT_FOUND = "MVU_NOT_FOUND"
# The request body did not all arrive in time (408).
BODY_TIMEOUT = "MVU_BODY_TIMEOUT"

# Every code's status, each code named once (tests/http/test_problems.py checks the table is
# complete): a new Code fails that test until its status is decided here.
STATUSES: dict[int, tuple[Code, ...]] = {
    # The request as sent is refused; another request (or another state) can succeed.
    400: (Code.AUTHORITY, Code.SCOPE, Code.SCOPE_MISMATCH, Code.OPERATION, Code.JSON, Code.LIMIT, Code.STORAGE_LIMIT,
          Code.PATH, Code.PATH_MISSING, Code.PARSE, Code.UNSUPPORTED, Code.SCHEMA, Code.SCHEMA_CODE,
          Code.SCHEMA_CONFLICT, Code.INITIALIZATION_INVALID, Code.INITIALIZATION_MISSING, Code.CONFIG, Code.VERSION,
          Code.READ_FAILED, Code.HISTORY_UNAVAILABLE, Code.HISTORY_CHANGED, Code.SESSION_IDENTITY,
          Code.SESSION_LEASE, Code.SEED, Code.SEED_PENDING, Code.SEED_REQUIRED, Code.SEED_MISMATCH,
          Code.SEED_CONFLICT, Code.BASELINE_REQUIRED, Code.USAGE, Code.USAGE_CANCELLED, Code.COMMAND_HOOK_LIMIT,
          Code.COMMAND_HOOK_CONFLICT, Code.COMMAND_HOOK_DISPOSED, Code.COMMAND_HOOK_EXECUTION,
          Code.COMMAND_HOOK_REGISTRATION, Code.COMMAND_HOOK_OUTPUT, Code.COMMAND_HOOK_DECLARATION,
          # A legacy record can be read, never edited (L-1): 403 on an edit, see _WRITE_STATUS.
          Code.MIGRATION_REQUIRED),
    403: (Code.WRITE_DENIED, Code.READ_ONLY, Code.USAGE_DENIED),
    404: (Code.MISSING,),
    # The request is fine but the stored state disagrees with it (a stale revision, an id or a
    # session event already taken by something else, a session that ends before the batch).
    409: (Code.AMBIGUOUS, Code.REVISION_CONFLICT, Code.IDEMPOTENCY_CONFLICT, Code.ID_CONFLICT, Code.EVENT_CONFLICT,
          Code.EVENT_GAP, Code.PREVIEW_STATE_UNAVAILABLE),
    # Not the client's fault and not fixed by changing the request: an operator must look.
    500: (Code.STORAGE_CORRUPT, Code.STORAGE_GONE,
          # Only ever reported beside a commit that stood (fact_errors), never raised; a store fault.
          Code.FACT_WRITE),
    # Storage that stayed busy (on a read or a write), full, read-only or failing with an I/O
    # error, or a service shutting down: nothing was written, retry later (Retry-After).
    503: (Code.STORAGE_BUSY, Code.STORAGE_FULL, Code.STORAGE_READ_ONLY, Code.STORAGE_IO, Code.DISPOSED),
}
_STATUS: dict[str, int] = {code: status for status, codes in STATUSES.items() for code in codes}
# Refusals of an edit only.
_WRITE_STATUS: dict[str, int] = {Code.MIGRATION_REQUIRED: 403}
# A code outside Code (MvuError also takes a plain string; none is raised today).
_OTHER_STATUS = 400
RETRY_AFTER_SECONDS = 1
_SERVER_DETAIL = {503: "storage is busy, full or failing, or the service is stopping; nothing was written: retry later",
                  500: "the ledger failed a structural check; an operator must look at it"}

_TITLES = {401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           412: "Precondition Failed",
           413: "Content Too Large", 422: "Unprocessable Content", 500: "Internal Server Error",
           503: "Service Unavailable"}


def status_of(code: str, *, write: bool = False, if_match: bool = False, idempotency_key: bool = False) -> int:
    """The HTTP status of a refusal ``code``.

    ``write``: the request was an edit. ``if_match`` / ``idempotency_key``: the expected revision
    or operation id came from that header, where HTTP's own conventions apply (a stale
    ``If-Match`` is 412, a reused ``Idempotency-Key`` with another payload 422).
    """
    if code == Code.REVISION_CONFLICT and if_match:
        return 412
    if code == Code.IDEMPOTENCY_CONFLICT and idempotency_key:
        return 422
    if write and code in _WRITE_STATUS:
        return _WRITE_STATUS[code]
    return _STATUS.get(code, _OTHER_STATUS)


def title_of(code: str) -> str:
    """A short, stable title per code (RFC 9457: the same for every occurrence of a type)."""
    return code.removeprefix("MVU_").replace("_", " ").capitalize()


def problem_body(status: int, code: str | None, detail: str | None = None, **members: Any) -> dict[str, Any]:
    """An RFC 9457 problem object (also carried inside a 200 answer, see ``hosting.py``)."""
    body: dict[str, Any] = {
        "type": f"urn:mvu-store:problem:{code}" if code else "about:blank",
        "title": title_of(code) if code else _TITLES.get(status, "Error"),
        "status": status,
    }
    if detail:
        body["detail"] = detail
    if code:
        body["code"] = code
    for key, value in members.items():
        body.setdefault(to_camel(key), value)
    return body


def problem(status: int, code: str | None, detail: str | None = None, *, headers: Mapping[str, str] | None = None,
            **members: Any) -> Response:
    extra = dict(headers or {})
    if status == 503:
        extra.setdefault("Retry-After", str(RETRY_AFTER_SECONDS))
    return Response(json.dumps(problem_body(status, code, detail, **members), ensure_ascii=False, default=str,
                               separators=(",", ":")), status_code=status, media_type=PROBLEM_JSON, headers=extra)


def _refusal(error: MvuError, **where: bool) -> tuple[int, str, dict[str, Any]]:
    status = status_of(error.code, **where)
    # Storage failures keep their text in the server log; the client learns only the code.
    detail = error.message if status < 500 else _SERVER_DETAIL.get(status, "internal error")
    return status, detail, (error.details if status < 500 else {})


def error_body(error: MvuError) -> dict[str, Any]:
    """The problem object of a refusal, with its HTTP status as ``status`` (for an answer that
    carries it, see ``hosting.py``)."""
    status, detail, details = _refusal(error)
    body: dict[str, Any] = json.loads(json.dumps(problem_body(status, error.code, detail, **details), default=str))
    return body


def error_response(error: MvuError, *, write: bool = False, if_match: bool = False,
                   idempotency_key: bool = False) -> Response:
    status, detail, details = _refusal(error, write=write, if_match=if_match, idempotency_key=idempotency_key)
    return problem(status, error.code, detail, **details)
