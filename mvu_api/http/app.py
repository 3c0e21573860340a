"""The ASGI application: routes, problem+json for every refusal, the token in front of it all."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from mvu_api.http.bodies import BODY_TIMEOUT_SECONDS
from mvu_api.http.cors import Cors, allowed_origins
from mvu_api.http.docs import DESCRIPTION, install_openapi
from mvu_api.http.explorer_page import PUBLIC_PATHS as EXPLORER_PATHS
from mvu_api.http.explorer_page import PUBLIC_PREFIXES as EXPLORER_PREFIXES
from mvu_api.http.explorer_page import install_explorer, token_page
from mvu_api.http.index import INDEX_PATHS, install_index
from mvu_api.http.inspector_page import PUBLIC_PATHS, PUBLIC_PREFIXES, install_inspector
from mvu_api.http.middleware import CLIENT_CLOSED, AccessLog, BearerAuth, Crashes
from mvu_api.http.original_wire import original_router
from mvu_api.http.problems import NOT_FOUND, error_response, problem
from mvu_api.http.routes import API_PREFIX, build_router
from mvu_api.inspector.signin import SignIn
from mvu_store.errors import Code, MvuError
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost

OPENAPI_PATH = f"{API_PREFIX}/openapi.json"


def create_app(service: MvuService, *, token: str, host: StoreHost | None = None,
               body_timeout: float = BODY_TIMEOUT_SECONDS, stopping: asyncio.Event | None = None,
               cors_origins: Iterable[str] = (), sign_in: SignIn | None = None) -> FastAPI:
    """The HTTP API over ``service``; every route but the index requires ``Bearer <token>``.

    ``host``: the service's host when it is a :class:`StoreHost`; it adds the host routes.
    ``body_timeout``: seconds for a whole update body to arrive (408 past it). ``stopping``: set
    when the server begins to stop; a body still arriving then is answered 503 at once.
    ``cors_origins``: the browser origins (``https://chat.example``) whose preflights are answered
    without the token and whose pages may read the answers (:mod:`mvu_api.http.cors`); a malformed
    one is ``MVU_CONFIG`` here, not at the first request (Starlette builds middleware late).
    ``sign_in``: the inspector page's sign-in (``mvu serve`` prints its one-time link); without
    it the page is served but only the token form signs it in.
    """
    origins = allowed_origins(cors_origins)
    # redirect_slashes=False: "/mvu/resources/" is an unknown route (404 problem), not a 307.
    app = FastAPI(title="mvu-store", version="1", description=DESCRIPTION, openapi_url=OPENAPI_PATH,
                  docs_url=None, redoc_url=None, redirect_slashes=False)
    app.include_router(build_router(service, host=host, body_timeout=body_timeout, stopping=stopping),
                       prefix=API_PREFIX)
    app.include_router(original_router(service, body_timeout=body_timeout, stopping=stopping), prefix=API_PREFIX)

    _answer_refusals_as_problems(app)
    install_openapi(app)
    install_index(app, OPENAPI_PATH)
    sign_in = sign_in or SignIn(token)
    install_inspector(app, sign_in)
    install_explorer(app)
    # Unhandled errors: logged once and answered 500 problem+json here, inside Starlette's
    # ServerErrorMiddleware, which would log (and re-raise to uvicorn, which logs) again.
    app.add_middleware(Crashes)
    app.add_middleware(BearerAuth, token=token, public=(*INDEX_PATHS, *PUBLIC_PATHS, *EXPLORER_PATHS),
                       public_prefixes=(*PUBLIC_PREFIXES, *EXPLORER_PREFIXES), admits=sign_in.admits,
                       explain=token_page)
    if origins:
        # In front of the token: a browser never sends it on a preflight.
        app.add_middleware(Cors, origins=origins)
    # Outermost: the log sees every answer, 401s included.
    app.add_middleware(AccessLog)
    return app


def _answer_refusals_as_problems(app: FastAPI) -> None:
    """Every refusal, the service's or the transport's, as problem+json (:mod:`problems`)."""
    @app.exception_handler(MvuError)
    async def refused(request: Request, error: Exception) -> Response:
        assert isinstance(error, MvuError)
        state = request.state
        return error_response(error, write=getattr(state, "write", False), if_match=getattr(state, "if_match", False),
                              idempotency_key=getattr(state, "idempotency_key", False))

    @app.exception_handler(HTTPException)
    async def transport(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code == 404:
            return problem(404, NOT_FOUND, "no such route", headers=error.headers)
        if error.status_code == 405:
            return problem(405, Code.OPERATION, f"{request.method} is not allowed here", headers=error.headers)
        return problem(error.status_code, Code.OPERATION, str(error.detail), headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        issues = [{"pointer": "/" + "/".join(str(part) for part in issue.get("loc", ())),
                   "message": str(issue.get("msg", ""))} for issue in error.errors()]
        about_scope = any("scope" in issue["pointer"].split("/") for issue in issues)
        return problem(400, Code.SCOPE if about_scope else Code.OPERATION,
                       issues[0]["message"] if issues else "malformed request", errors=issues)

    @app.exception_handler(ClientDisconnect)
    async def gone(request: Request, error: Exception) -> Response:
        # The client left mid-body: nobody reads an answer. The access log's one line says 499.
        return Response(status_code=CLIENT_CLOSED)
