"""The API index: what someone who opens the URL ``mvu serve`` printed sees.

It is the one answer given without the token (a browser cannot send one), so it says only what
the OpenAPI document says to anyone holding the token: the routes and their summaries, where the
document and the guides are. It names no resource, session or ledger. A browser (``Accept:
text/html``) gets a small page with links; anything else gets the same as JSON.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from mvu_api.http.routes import API_PREFIX

INDEX_PATHS = ("/", f"{API_PREFIX}/", API_PREFIX)
"""Where the index answers: the API's root, which ``mvu serve`` prints (with or without its
slash, as people type it), and the server's root."""
GUIDES = {
    "README.md": "what the store does, the two commands, a first turn",
    "ARCHITECTURE.md": "the code's layers and rooms, and where a new feature goes",
    "docs/python-api.md": "the Python API, call by call",
    "docs/http-api.md": "the HTTP API: state routes, host routes, errors, the original's transport",
    "docs/cli.md": "the mvu command",
    "docs/serving.md": "running mvu serve: what it serves, its token, the inspector and the explorer",
    "docs/host-protocol.md": "feeding sessions over HTTP, route by route, with curl",
    "docs/host-events.md": "the session and event format the store reads",
    "docs/requirements.md": "what the requirement ids in the texts promise",
    "docs/json-ledger.md": "the original JSON ledger files that mvu import reads and mvu export writes",
    "docs/inspector.md": "the inspector page: signing in, what it shows, editing the latest state",
}
"""The guides in the mvu-store repository (they are not served: the package does not carry them)."""
INSPECTOR = "/inspector/"
"""The inspector page's path (``mvu serve`` prints a link that signs a browser in to it)."""
EXPLORER = "/explorer/"
"""The API explorer's path: every operation of the OpenAPI document, tried from the browser."""


def describe(app: FastAPI, openapi_path: str) -> dict[str, Any]:
    """The index as JSON: its links and every route of the OpenAPI document, in its order."""
    routes = [{"method": method.upper(), "path": path, "summary": operation.get("summary", "")}
              for path, operations in app.openapi().get("paths", {}).items()
              for method, operation in operations.items()]
    return {
        "name": app.title,
        "api": API_PREFIX,
        "links": {"openapi": openapi_path, "explorer": EXPLORER, "inspector": INSPECTOR},
        "authorization": "Every route but this index needs 'Authorization: Bearer <token>': the token mvu serve "
                         "printed at first start (kept in <ledger>.token), or its --token / MVU_TOKEN.",
        "routes": routes,
        "guides": GUIDES,
    }


def _page(index: dict[str, Any]) -> str:
    def text(value: object) -> str:
        return html.escape(str(value))

    links: dict[str, str] = index["links"]
    inspector = (f'<a href="{text(links["inspector"])}">inspector</a>: each chat\'s state turn by turn (sign in with '
                 "the link mvu serve printed)")
    rows = "\n".join(f"<tr><td>{text(r['method'])}</td><td><code>{text(r['path'])}</code></td>"
                     f"<td>{text(r['summary'])}</td></tr>" for r in index["routes"])
    guides = "\n".join(f"<li><code>{text(name)}</code>: {text(about)}</li>" for name, about in index["guides"].items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{text(index["name"])} API</title></head>
<body>
<h1>{text(index["name"])} API</h1>
<p>{text(index["authorization"])}</p>
<ul>
<li><a href="{text(links["explorer"])}">API explorer</a>: every route below, tried from the browser (sign in with the
token or the link mvu serve printed)</li>
<li><a href="{text(links["openapi"])}">OpenAPI document</a> (send the token)</li>
<li>{inspector}</li>
</ul>
<h2>Routes</h2>
<table>
<tr><th>method</th><th>path</th><th>what it does</th></tr>
{rows}
</table>
<h2>Guides, in the mvu-store repository</h2>
<ul>
{guides}
</ul>
</body></html>
"""


def wants_html(accept: str) -> bool:
    return any(part.split(";")[0].strip() == "text/html" for part in accept.split(","))


def install_index(app: FastAPI, openapi_path: str, paths: Sequence[str] = INDEX_PATHS) -> None:
    """Answer ``GET`` (and ``HEAD``) on ``paths`` with the index; it stays out of the OpenAPI
    document, which describes the API's operations for hosts."""

    async def index(request: Request) -> Response:
        described = describe(app, openapi_path)
        if wants_html(request.headers.get("accept", "")):
            return HTMLResponse(_page(described))
        return JSONResponse(described)

    for path in paths:
        app.add_api_route(path, index, methods=["GET", "HEAD"], include_in_schema=False)
