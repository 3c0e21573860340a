"""What every route shares on the wire: the JSON ``scope`` (in the query or a body), ETags,
``If-Match`` and ``If-None-Match``, the camelCase-only rule and the JSON answer.

HTTP is stricter than the Python service: camelCase keys only, a non-empty ``sessionId`` always
(DIGEST H-1), and strong ETags only. Each refusal is an ``MvuError`` (problem+json in
:mod:`mvu_api.http.problems`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from starlette.responses import Response

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import unique_keys
from mvu_store.service import MAX_SESSION_ID, off_loop

MAX_SCOPE_CHARS = 4_000
HISTORICAL_KEYS = ("messageId", "endEventId")
_SCOPE_FIELDS = frozenset({"authority", "sessionId", *HISTORICAL_KEYS})
# The Python service also takes snake_case; the wire is camelCase only.
SNAKE = {"session_id": "sessionId", "message_id": "messageId", "end_event_id": "endEventId",
         "expected_revision": "expectedRevision", "operation_id": "operationId", "created_at": "createdAt",
         "format_version": "formatVersion", "parent_session": "parentSession",
         "inherited_event_count": "inheritedEventCount", "character_id": "characterId", "at_event_id": "atEventId",
         "prefix_end_event_id": "prefixEndEventId", "target_session_id": "targetSessionId"}
# Strong ETags only (RFC 9110 13.1.1: If-Match uses the strong comparison, so a weak tag never
# matches); a weak one is refused with 400 rather than read as the revision it names. A read's
# ETag adds a digest of its answer to the revision (see record_etag); the revision decides.
_ETAG = re.compile(r'^\s*"r(0|[1-9][0-9]{0,17})(?:-[0-9a-f]{16})?"\s*$')
_WEAK_ETAG = re.compile(r'^\s*W/', re.IGNORECASE)
# One entity-tag of a list (RFC 9110 8.8.3): W/ for a weak one, then a quoted opaque tag.
_ENTITY_TAG = re.compile(r'(W/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*')


def parse_scope_param(raw: str, *, historical: bool = False) -> dict[str, Any]:
    """The ``scope`` query parameter: a JSON object of bounded size; historical coordinates only
    where ``historical`` (``/resource``)."""
    if len(raw) > MAX_SCOPE_CHARS:
        raise MvuError(Code.LIMIT, f"scope is at most {MAX_SCOPE_CHARS} characters", field="scope",
                       limit=MAX_SCOPE_CHARS)
    try:
        value = json.loads(raw, object_pairs_hook=unique_keys)
    except (ValueError, RecursionError):
        raise MvuError(Code.SCOPE, "scope must be a JSON object") from None
    return check_wire_scope(value, historical=historical)


def check_wire_scope(value: Any, *, historical: bool = False) -> dict[str, Any]:
    """A scope as HTTP accepts it, stricter than the service: camelCase keys only, a non-empty
    ``sessionId`` always (the sessionless management view stays in-process, DIGEST H-1), and
    ``messageId`` / ``endEventId`` only where ``historical``."""
    if not isinstance(value, dict):
        raise MvuError(Code.SCOPE, "scope must be a JSON object", field="scope")
    for key in value:
        if key in SNAKE:
            raise MvuError(Code.SCOPE, f"scope.{key} is not a wire field: the wire is camelCase ({SNAKE[key]})",
                           field=f"scope.{key}")
        if key not in _SCOPE_FIELDS:
            raise MvuError(Code.SCOPE, f"unknown scope field {str(key)[:64]!r}", field=f"scope.{str(key)[:64]}")
    if not historical and any(key in value for key in HISTORICAL_KEYS):
        raise MvuError(Code.SCOPE, "only /mvu/resource reads a historical scope (messageId / endEventId)",
                       field="scope")
    session_id = value.get("sessionId")
    if not isinstance(session_id, str) or not session_id or len(session_id) > MAX_SESSION_ID:
        raise MvuError(Code.SCOPE, f"scope.sessionId is required: a string of 1 to {MAX_SESSION_ID} characters "
                                   "(the management view is not served over HTTP)", field="scope.sessionId")
    return value  # the service checks the rest (authority, historical coordinates) as for any caller


def etag(revision: int) -> str:
    """The strong ETag of a revision: ``"r<revision>"`` (an edit's answer)."""
    return f'"r{revision}"'


def record_etag(revision: int, digest: str) -> str:
    """The strong ETag of a read's answer: ``"r<revision>-<digest>"``, the record's revision and
    the first 16 hex digits of ``digest``, the sha256 of the answer's bytes. The revision alone
    does not tell two answers apart: a historical read's ``currentRevision`` moves on while its
    revision stays, and the ``managementMode`` changes with the registered managers. With the digest, two answers share
    an ETag only when they are the same bytes, as a strong validator must (RFC 9110 8.8.1)."""
    return f'"r{revision}-{digest[:16]}"'


def if_match_revision(header: str) -> int:
    """The revision an ``If-Match`` header names: exactly one strong ETag from a read
    (:func:`record_etag`) or an edit (:func:`etag`); the edit is conditional on that revision."""
    if _WEAK_ETAG.match(header):
        raise MvuError(Code.OPERATION, "If-Match needs a strong ETag: a weak one (W/...) never matches "
                                       "(RFC 9110 strong comparison)")
    match = _ETAG.match(header)
    if match is None:
        raise MvuError(Code.OPERATION, 'If-Match takes one ETag "r<revision>" (or "r<revision>-<digest>") from '
                                       "a read or an edit")
    return int(match.group(1))


def none_match(header: str, current: str) -> bool:
    """Whether an ``If-None-Match`` header matches the ``current`` ETag, so the answer is 304
    (RFC 9110 13.1.2): ``*``, or a list of entity-tags one of which equals ``current`` by the
    weak comparison (``W/"x"`` matches ``"x"``). A header that is not such a list matches nothing:
    it is ignored, and the answer is the full one."""
    if header.strip(" \t") == "*":
        return True
    opaque = current.removeprefix("W/")
    matched, position, size = False, 0, len(header)
    while True:
        while position < size and header[position] in " \t,":  # a list may hold empty elements
            position += 1
        if position == size:
            return matched
        tag = _ENTITY_TAG.match(header, position)
        if tag is None or (tag.end() < size and header[tag.end()] != ","):
            return False
        matched = matched or tag.group(2) == opaque
        position = tag.end()


def conditional_response(condition: str | None, body: str | bytes, revision: int, digest: str) -> Response:
    """A JSON answer with its :func:`record_etag`, or 304 with no body when ``condition`` (the
    request's ``If-None-Match``) names that ETag: pollers of a read pay for a body only when it
    changed."""
    tag = record_etag(revision, digest)
    if condition is not None and none_match(condition, tag):
        return Response(status_code=304, headers={"ETag": tag})
    return Response(body, media_type="application/json", headers={"ETag": tag})


def json_text(data: Any) -> str:
    """Compact JSON, non-ASCII as is (the service's ``to_json()`` output is already camelCase)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def json_response(data: Any, *, headers: dict[str, str] | None = None) -> Response:
    """An answer of :func:`json_text`."""
    return Response(json_text(data), media_type="application/json", headers=headers)


async def json_list_response(items: Sequence[Any], to_json: Callable[[Any], Any]) -> Response:
    """An answer of :func:`json_text` of ``[to_json(item) for item in items]``, made in a worker
    thread one item at a time: a history holds up to a thousand states of up to 2 MiB, seconds
    of encoding, and one call into the JSON encoder keeps the interpreter (the event loop gets it
    back between items only)."""
    body = await off_loop(lambda: ("[" + ",".join(json_text(to_json(item)) for item in items) + "]").encode())
    return Response(body, media_type="application/json")
