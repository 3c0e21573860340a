"""The inspector page and its sign-in routes, outside the API prefix (``/inspector/``).

The page and its scripts are package data and public (they hold no state: every answer with
state comes from the API, behind the token or the sign-in cookie). ``/inspector/signin`` takes
the one-time code of the link ``mvu serve`` prints (``GET``) or the token typed into the page's
form (``POST``); ``/inspector/session`` gives a signed-in page its anti-forgery token.
"""

from __future__ import annotations

import json
from importlib.resources import files

from fastapi import FastAPI, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from mvu_api.http.problems import UNAUTHORIZED, problem
from mvu_api.inspector.signin import COOKIE, SIGNIN, SignIn, same_origin
from mvu_store.errors import Code

PAGE = "/inspector/"
SESSION = "/inspector/session"
STATIC = "/inspector/static"
PUBLIC_PATHS = (PAGE, "/inspector", SIGNIN)
"""Read without a credential: the page itself and the sign-in link."""
PUBLIC_PREFIXES = (f"{STATIC}/",)
MAX_SIGNIN_BYTES = 4096
"""The token form's body: a token and its JSON braces; anything longer is refused unread."""
PAGE_HEADERS = {"Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
                                       "form-action 'self'"}


def _with_cookie(answer: Response, request: Request, cookie: str) -> Response:
    answer.set_cookie(COOKIE, cookie, httponly=True, samesite="strict", path="/",
                      secure=request.url.scheme == "https")
    return answer


async def _small_body(request: Request) -> bytes | None:
    """The body, or None past ``MAX_SIGNIN_BYTES`` (a route anyone may call reads no more)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_SIGNIN_BYTES:
            return None
    return body


def install_inspector(app: FastAPI, sign_in: SignIn) -> None:
    page = (files("mvu_api.inspector") / "static" / "index.html").read_text(encoding="utf-8")
    app.mount(STATIC, StaticFiles(packages=[("mvu_api.inspector", "static")]), name="inspector-static")

    async def show(request: Request) -> Response:
        return HTMLResponse(page, headers=PAGE_HEADERS)

    app.add_api_route(PAGE, show, methods=["GET", "HEAD"], include_in_schema=False)
    app.add_api_route("/inspector", show, methods=["GET", "HEAD"], include_in_schema=False)

    async def by_link(request: Request, code: str = "") -> Response:
        # A spent or wrong code lands on the page, which offers the token form.
        cookie = sign_in.redeem(code)
        if cookie is None:
            return RedirectResponse(f"{PAGE}?signin=spent", status_code=303, headers=PAGE_HEADERS)
        return _with_cookie(RedirectResponse(PAGE, status_code=303, headers=PAGE_HEADERS), request, cookie)

    async def by_token(request: Request) -> Response:
        if not same_origin(request.scope, request.headers):
            return problem(403, UNAUTHORIZED, "sign in from the inspector page itself")
        body = await _small_body(request)
        if body is None:
            return problem(413, Code.LIMIT, f"a sign-in is at most {MAX_SIGNIN_BYTES} bytes")
        try:
            token = json.loads(body).get("token")
        except (ValueError, AttributeError):
            token = None
        cookie = sign_in.with_token(token) if isinstance(token, str) else None
        if cookie is None:
            return problem(401, UNAUTHORIZED, "that is not the server's token")
        return _with_cookie(JSONResponse({"signedIn": True}, headers=PAGE_HEADERS), request, cookie)

    app.add_api_route(SIGNIN, by_link, methods=["GET"], include_in_schema=False)
    app.add_api_route(SIGNIN, by_token, methods=["POST"], include_in_schema=False)

    async def session(request: Request) -> Response:
        found = sign_in.session_of(request.scope)
        return JSONResponse({"signedIn": found is not None, "csrf": None if found is None else found[1]},
                            headers={"Cache-Control": "no-store"})

    async def sign_out(request: Request) -> Response:
        found = sign_in.session_of(request.scope)
        if found is not None:
            sign_in.close(found[0])
        answer = JSONResponse({"signedIn": False})
        answer.delete_cookie(COOKIE, path="/")
        return answer

    app.add_api_route(SESSION, session, methods=["GET"], include_in_schema=False)
    app.add_api_route(SESSION, sign_out, methods=["DELETE"], include_in_schema=False)
