"""Pure ASGI middleware: the bearer token in front of every route, and one log line per request.

Authentication is middleware, not a route dependency, because routing answers unknown paths (404)
and wrong methods (405) before any dependency runs; in front of routing, every request without
the token gets the same bare 401 whatever it asked for, and learns nothing about resources.
"""

from __future__ import annotations

import hmac
import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mvu_api.http.problems import UNAUTHORIZED, problem

access_log = logging.getLogger("mvu.http")


class BearerAuth:
    """Refuse every HTTP request whose ``Authorization`` is not ``Bearer <token>`` with 401."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        if not token:
            raise ValueError("an empty token would let everyone in")
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        if not hmac.compare_digest(given, self._expected):
            response = problem(401, UNAUTHORIZED, "a valid bearer token is required",
                               headers={"WWW-Authenticate": 'Bearer realm="mvu"'})
            await response(scope, receive, send)
            return
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
            access_log.info('%s "%s %s" %d %.1fms', where, scope["method"], scope["path"], status[0] or 500,
                            (time.perf_counter() - started) * 1000)
