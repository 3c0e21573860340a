"""Signing the inspector page in without pasting the token into it.

``mvu serve`` prints a one-time link (``/inspector/signin?code=…``, as Jupyter prints its own).
Opening it sets a session cookie (HttpOnly: no script reads it; SameSite=Strict: no other site's
page makes the browser send it) and sends the browser on to the page. The code works once and
for :data:`CODE_LIFETIME_S` (a link left in a terminal's scrollback or a log must not sign a
browser in days later); after that, or after a restart, the page's form takes the token instead
and does the same.

A cookie is a weaker credential than the bearer token, since the browser attaches it by itself,
so :meth:`SignIn.admits` takes it only from the page's own origin: a request whose ``Origin`` (or
``Sec-Fetch-Site``) says it came from elsewhere is refused, and a request that changes state must
also carry the session's anti-forgery token in ``X-MVU-CSRF``. The page gets that token from
``GET /inspector/session``, an answer no other origin can read (the API allows no credentialed
cross-origin reads), so a page on another port of the same host cannot forge it either.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

from starlette.types import Scope

SIGNIN = "/inspector/signin"
COOKIE = "mvu_inspector"
CSRF_HEADER = "x-mvu-csrf"
CODE_LIFETIME_S = 10 * 60
"""How long the one-time link's code works after it was printed."""
MAX_SESSIONS = 64
"""Signed-in browsers kept in memory; past it the oldest is signed out (a restart signs out all)."""
_SAFE = frozenset({"GET", "HEAD"})
_SAME = frozenset({"same-origin", "none"})


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def own_origin(scope: Scope, headers: Mapping[str, str]) -> str:
    """The origin the request was sent to, as a browser spells it in ``Origin``."""
    return f"{scope.get('scheme', 'http')}://{headers.get('host', '')}"


def same_origin(scope: Scope, headers: Mapping[str, str]) -> bool:
    """Nothing in the request says another origin sent it (a browser always says so for a
    cross-origin fetch; Chromium and Firefox say ``Sec-Fetch-Site`` on every request)."""
    origin = headers.get("origin")
    if origin is not None and origin != own_origin(scope, headers):
        return False
    site = headers.get("sec-fetch-site")
    return site is None or site in _SAME


class SignIn:
    """The one-time link's code and the signed-in browsers (cookie value -> anti-forgery token)."""

    def __init__(self, token: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._token = token.encode()
        self._clock = clock
        self._code: str | None = None
        self._expires = 0.0
        self._sessions: OrderedDict[str, str] = OrderedDict()

    def new_code(self) -> str:
        """A fresh one-time code (any earlier one stops working), good for :data:`CODE_LIFETIME_S`."""
        self._code = secrets.token_urlsafe(24)
        self._expires = self._clock() + CODE_LIFETIME_S
        return self._code

    def redeem(self, code: str) -> str | None:
        """A new session's cookie value for the pending one-time code, which is then spent; None
        for another code or one past its lifetime (which is then spent too)."""
        pending = self._code
        if pending is None or not hmac.compare_digest(code.encode(), pending.encode()):
            return None
        self._code = None
        return self._open() if self._clock() < self._expires else None

    def with_token(self, token: str) -> str | None:
        """A new session's cookie value for the bearer token, typed into the page's form."""
        return self._open() if hmac.compare_digest(token.encode(), self._token) else None

    def _open(self) -> str:
        cookie = secrets.token_urlsafe(32)
        self._sessions[cookie] = secrets.token_urlsafe(24)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return cookie

    def close(self, cookie: str) -> None:
        self._sessions.pop(cookie, None)

    def session_of(self, scope: Scope) -> tuple[str, str] | None:
        """``(cookie, anti-forgery token)`` of the request's signed-in browser, if any."""
        cookie = _cookie(_headers(scope).get("cookie", ""), COOKIE)
        if cookie is None:
            return None
        csrf = self._sessions.get(cookie)
        return None if csrf is None else (cookie, csrf)

    def admits(self, scope: Scope) -> bool:
        """The request comes from a signed-in page of this server: its cookie, its own origin, and
        for anything but a read the anti-forgery header. The token form's ``POST`` needs no
        credential: the token is what it checks."""
        if scope["path"] == SIGNIN and scope["method"] == "POST":
            return True
        found = self.session_of(scope)
        if found is None:
            return False
        headers = _headers(scope)
        if not same_origin(scope, headers):
            return False
        if scope["method"] in _SAFE:
            return True
        return hmac.compare_digest(headers.get(CSRF_HEADER, "").encode(), found[1].encode())
