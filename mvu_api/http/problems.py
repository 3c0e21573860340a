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

# The table (the original host's mapping), then "400 otherwise".
_STATUS: dict[str, int] = {
    Code.AMBIGUOUS: 409,
    Code.REVISION_CONFLICT: 409,
    Code.IDEMPOTENCY_CONFLICT: 409,
    Code.WRITE_DENIED: 403,
    Code.READ_ONLY: 403,
    Code.USAGE_DENIED: 403,
    Code.MISSING: 404,
    # Storage that stayed busy, or a service shutting down: nothing was written, retry later.
    Code.STORAGE_BUSY: 503,
    Code.DISPOSED: 503,
    # Not the client's fault and not fixed by changing the request: an operator must look.
    Code.STORAGE_CORRUPT: 500,
}
# Refusals of an edit only: a legacy record can be read, never edited (L-1).
_WRITE_STATUS: dict[str, int] = {Code.MIGRATION_REQUIRED: 403}
RETRY_AFTER_SECONDS = 1
_SERVER_DETAIL = {503: "storage is busy or the service is stopping; nothing was written: retry later",
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
    return _STATUS.get(code, 400)


def title_of(code: str) -> str:
    """A short, stable title per code (RFC 9457: the same for every occurrence of a type)."""
    return code.removeprefix("MVU_").replace("_", " ").capitalize()


def problem(status: int, code: str | None, detail: str | None = None, *, headers: Mapping[str, str] | None = None,
            **members: Any) -> Response:
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
    extra = dict(headers or {})
    if status == 503:
        extra.setdefault("Retry-After", str(RETRY_AFTER_SECONDS))
    return Response(json.dumps(body, ensure_ascii=False, default=str, separators=(",", ":")), status_code=status,
                    media_type=PROBLEM_JSON, headers=extra)


def error_response(error: MvuError, *, write: bool = False, if_match: bool = False,
                   idempotency_key: bool = False) -> Response:
    status = status_of(error.code, write=write, if_match=if_match, idempotency_key=idempotency_key)
    # Storage failures keep their text in the server log; the client learns only the code.
    detail = error.message if status < 500 else _SERVER_DETAIL.get(status, "internal error")
    details = error.details if status < 500 else {}
    return problem(status, error.code, detail, **details)
