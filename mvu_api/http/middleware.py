"""Pure ASGI middleware: the bearer token in front of every route, one log line per request, and
one log line (with its traceback) per unhandled error.

Authentication is middleware, not a route dependency, because routing answers unknown paths (404)
and wrong methods (405) before any dependency runs; in front of routing, every request without
the token gets the same bare 401 whatever it asked for, and learns nothing about resources. The
exceptions are reads of the API index (:mod:`mvu_api.http.index`) and of the inspector page's
files, which name no resource, and the signed-in inspector page (``admits``, see
:mod:`mvu_api.inspector.signin`).
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable, Collection
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mvu_api.http.h11_protocol import AUTHENTICATED
from mvu_api.http.problems import UNAUTHORIZED, problem

access_log = logging.getLogger("mvu.http")
# nginx's "client closed request": logged for a client that left before its answer.
CLIENT_CLOSED = 499


def printable(text: str) -> str:
    """``text`` safe for one log line: backslash, double quote and every non-printable character
    (CR, LF, other controls, line separators) backslash-escaped, so a request cannot forge lines."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return text  # the usual path: nothing to escape
    out: list[str] = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            point = ord(char)
            out.append(f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}" if point < 0x10000
                       else f"\\U{point:08x}")
    return "".join(out)


def _bearer(header: bytes) -> bytes | None:
    """The credentials of ``Authorization: Bearer <token>``; the scheme is case-insensitive
    (RFC 9110 11.1)."""
    scheme, _, rest = header.partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    return rest.strip(b" \t")


class BearerAuth:
    """Refuse every HTTP request whose ``Authorization`` is not ``Bearer <token>`` (any case of the
    scheme) with 401, except ``GET`` and ``HEAD`` of the ``public`` paths (and of paths starting
    with one of ``public_prefixes``) and requests ``admits`` lets in without the token."""

    def __init__(self, app: ASGIApp, *, token: str, public: Collection[str] = (),
                 public_prefixes: tuple[str, ...] = (), admits: Callable[[Scope], bool] | None = None,
                 explain: Callable[[Scope], Response | None] | None = None) -> None:
        if not token:
            raise ValueError("an empty token would let everyone in")
        self.app = app
        self._expected = token.encode()
        self._public = frozenset(public)
        self._prefixes = public_prefixes
        self._admits = admits
        self._explain = explain

    def _public_read(self, scope: Scope) -> bool:
        path: str = scope["path"]
        return scope["method"] in ("GET", "HEAD") and (path in self._public or path.startswith(self._prefixes))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._public_read(scope):
            scope[AUTHENTICATED] = False
            await self.app(scope, receive, send)
            return
        given: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = _bearer(value)
                break
        if not hmac.compare_digest(given or b"", self._expected) and not (self._admits and self._admits(scope)):
            # A browser that opened the route gets a page saying what the token is (``explain``). Either
            # answer closes the connection: a client without the token holds no connection between tries.
            scope[AUTHENTICATED] = False
            response = (self._explain and self._explain(scope)) or problem(
                401, UNAUTHORIZED, "a valid bearer token is required",
                headers={"WWW-Authenticate": 'Bearer realm="mvu"'})
            response.headers["Connection"] = "close"
            await response(scope, receive, send)
            return
        scope[AUTHENTICATED] = True
        await self.app(scope, receive, send)


class AccessLog:
    """One line per request: client, method, path (never the query: scopes name sessions), status
    and duration, logged when the response has been sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: list[int] = [0]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            client: Any = scope.get("client")
            where = f"{client[0]}:{client[1]}" if client else "-"
            # The path is percent-decoded and not yet authenticated: escaped, never written raw.
            access_log.info('%s "%s %s" %d %.1fms', where, printable(scope["method"]), printable(scope["path"]),
                            status[0] or 500, (time.perf_counter() - started) * 1000)


class Crashes:
    """An unhandled exception becomes one ERROR line with its traceback and a 500 problem (if no
    answer has started), and goes no further: uvicorn and Starlette do not log it again."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = [False]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                started[0] = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as error:
            access_log.error("unhandled error on %s %s", printable(scope["method"]), printable(scope["path"]),
                             exc_info=error)
            if not started[0]:
                await problem(500, None, "internal error")(scope, receive, send)
