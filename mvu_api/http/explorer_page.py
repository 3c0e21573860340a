"""The API explorer page (``/explorer/``), served by ``mvu serve`` itself from package data.

FastAPI's own ``/docs`` loads Swagger UI from a CDN, which many servers cannot reach, and the
Swagger UI Python bundles still ship a version that cannot read OpenAPI 3.1; so the explorer is a
small page of ours. It is public, as the inspector page is (it holds no state); it signs in with
the inspector's sign-in (the one-time link or the token form), and every call it makes goes
through the API behind that cookie. A browser that opens a route without a credential gets
:func:`token_page` instead of a bare 401.
"""

from __future__ import annotations

import html
from importlib.resources import files

from fastapi import FastAPI, Request
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from mvu_api.http.index import EXPLORER as PAGE
from mvu_api.http.index import INSPECTOR, wants_html
from mvu_api.http.inspector_page import PAGE_HEADERS
from mvu_api.inspector.signin import own_origin

STATIC = "/explorer/static"
PUBLIC_PATHS = (PAGE, "/explorer")
PUBLIC_PREFIXES = (f"{STATIC}/",)


def install_explorer(app: FastAPI) -> None:
    page = (files("mvu_api.explorer") / "static" / "index.html").read_text(encoding="utf-8")
    app.mount(STATIC, StaticFiles(packages=[("mvu_api.explorer", "static")]), name="explorer-static")

    async def show(request: Request) -> Response:
        return HTMLResponse(page, headers=PAGE_HEADERS)

    for path in PUBLIC_PATHS:
        app.add_api_route(path, show, methods=["GET", "HEAD"], include_in_schema=False)


def token_page(scope: Scope) -> Response | None:
    """For a browser that opened a route without the token (a ``GET`` that accepts HTML): a 401
    page that says what the token is and where to use it, naming nothing of the route. None for
    any other request, which gets the usual problem+json."""
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
    if scope["method"] not in ("GET", "HEAD") or not wants_html(headers.get("accept", "")):
        return None
    path = html.escape(scope["path"])
    origin = html.escape(own_origin(scope, headers))
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mvu-store: the token is needed</title></head>
<body>
<h1>This needs the server's token</h1>
<p><code>{path}</code> answers only a request that carries <code>Authorization: Bearer &lt;token&gt;</code>,
or a browser signed in to this server. The token is the one <code>mvu serve</code> printed at its first start; it
keeps it in <code>&lt;ledger&gt;.token</code> beside the ledger (<code>var/mvu.sqlite3.token</code> after
<code>make run</code>), unless it was given by <code>--token</code> or <code>MVU_TOKEN</code>.</p>
<ul>
<li>In the browser: open the <a href="{PAGE}">API explorer</a> (or the <a href="{INSPECTOR}">inspector</a>) and sign in
with the token or the one-time link <code>mvu serve</code> printed; the explorer lists every route and tries it.</li>
<li>From a shell: <code>curl -H "Authorization: Bearer $(cat var/mvu.sqlite3.token)" {origin}{path}</code></li>
</ul>
</body></html>
"""
    return HTMLResponse(body, status_code=401, headers={**PAGE_HEADERS, "WWW-Authenticate": 'Bearer realm="mvu"'})
