"""Cross-origin access for hosts that run in a browser (``mvu serve --cors-origin ORIGIN``).

A browser sends a *preflight* (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``)
before any request that carries ``Authorization``, and it never puts the token on the preflight.
So :class:`Cors` sits in front of the bearer token: a preflight from a listed origin is answered
204 at once (the same answer on every path, so it tells nothing about routes or resources); every
other request goes on to the token as before, and its answer carries
``Access-Control-Allow-Origin`` when its origin is listed (401s included, so a page can tell a
wrong token from a network failure). An origin that is not listed gets no ``Access-Control-*``
header at all, and its preflight meets the token like any request (401).

Origins are compared as browsers serialize them (RFC 6454): lower-case scheme and host, no
default port, no path. ``*`` is refused: the API's writes are guarded only by the token, and a
list of the pages that may hold it keeps every other page from even reading the answers. ``null``
(sandboxed frames, ``file:`` pages) is refused because any page can make itself ``null``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mvu_store.errors import Code, MvuError

ALLOW_METHODS = "GET, POST, PUT"
ALLOW_HEADERS = "Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key"
EXPOSE_HEADERS = "ETag, Idempotent-Replayed, Retry-After"
MAX_AGE_SECONDS = 7200
"""How long a browser may reuse a preflight answer (Chromium caps it at two hours)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$")


def _refuse(value: str, why: str) -> MvuError:
    return MvuError(Code.CONFIG, f"--cors-origin {value!r}: {why}", origin=value)


def parse_origin(value: str) -> str:
    """``value`` as a browser sends it in ``Origin``: ``scheme://host[:port]`` with an http or https
    scheme, the scheme and host in lower case, a default port dropped; ``MVU_CONFIG`` otherwise."""
    if value == "*":
        raise _refuse(value, "a wildcard is not accepted; list each page origin that may call the API "
                             "(repeat --cors-origin)")
    if value.lower() == "null":
        raise _refuse(value, "the opaque origin 'null' is not accepted: any page can send it")
    if not value or value != value.strip() or "://" not in value:
        raise _refuse(value, "an origin is scheme://host[:port], such as https://chat.example or "
                             "http://localhost:8000")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as error:
        raise _refuse(value, f"not an origin ({error})") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise _refuse(value, "the scheme must be http or https")
    if parts.path or parts.query or parts.fragment or value.endswith(("?", "#")):
        raise _refuse(value, "an origin has no path, query or fragment (not even a trailing '/'): "
                             f"{scheme}://{parts.netloc}")
    if "@" in parts.netloc:
        raise _refuse(value, "an origin has no user name or password")
    host = parts.hostname or ""
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise _refuse(value, "the bracketed host is not an IPv6 address") from None
        host = f"[{host}]"
    elif not host.isascii():
        raise _refuse(value, "write the host in its ASCII (xn--) form, as browsers send it")
    elif not all(_LABEL.match(label) for label in host.split(".")):
        raise _refuse(value, "the host must be a DNS name or an IP address")
    if port == 0:
        raise _refuse(value, "port 0 is not a port a page can be served from")
    suffix = "" if port is None or port == _DEFAULT_PORTS[scheme] else f":{port}"
    return f"{scheme}://{host}{suffix}"


def allowed_origins(values: Iterable[str]) -> tuple[str, ...]:
    """Every ``--cors-origin`` normalized (:func:`parse_origin`), duplicates dropped, in order."""
    return tuple(dict.fromkeys(parse_origin(value) for value in values))


class Cors:
    """Answer preflights from ``origins`` before the token is checked, and mark the answers to
    their real requests readable by them (``Access-Control-Allow-Origin``)."""

    def __init__(self, app: ASGIApp, *, origins: Iterable[str]) -> None:
        self.app = app
        self._origins = frozenset(origin.encode("ascii") for origin in allowed_origins(origins))
        if not self._origins:
            raise ValueError("Cors without an origin would only add work")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin: bytes | None = None
        asks_method = False
        for name, value in scope["headers"]:
            if name == b"origin" and origin is None:
                origin = value
            elif name == b"access-control-request-method":
                asks_method = True
        allowed = origin.decode("ascii") if origin is not None and origin in self._origins else None
        if allowed is not None and scope["method"] == "OPTIONS" and asks_method:
            await Response(status_code=204, headers={
                "Access-Control-Allow-Origin": allowed,
                "Access-Control-Allow-Methods": ALLOW_METHODS,
                "Access-Control-Allow-Headers": ALLOW_HEADERS,
                "Access-Control-Max-Age": str(MAX_AGE_SECONDS),
                "Vary": "Origin",
            })(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                # Every answer depends on Origin once CORS is on: a cache must not hand one
                # origin's answer (with or without the allow header) to another.
                headers.add_vary_header("Origin")
                if allowed is not None:
                    headers["Access-Control-Allow-Origin"] = allowed
                    headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
            await send(message)

        await self.app(scope, receive, sending)
