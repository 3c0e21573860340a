"""The ASGI application: routes, problem+json for every refusal, the token in front of it all."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from starlette.exceptions import HTTPException
from starlette.responses import Response

from mvu_api.http.middleware import AccessLog, BearerAuth
from mvu_api.http.problems import NOT_FOUND, error_response, problem
from mvu_api.http.routes import API_PREFIX, build_router
from mvu_store.errors import Code, MvuError
from mvu_store.service import MvuService

OPENAPI_PATH = f"{API_PREFIX}/openapi.json"
log = logging.getLogger("mvu.http")

DESCRIPTION = """The MVU state service over HTTP (DIGEST H-1).

Every request needs `Authorization: Bearer <token>`. Reads take the scope as JSON in the query
string; the update body is `{id, scope, content, expectedRevision, operationId}`. Errors are
RFC 9457 problem+json with the stable `code` as an extension member (`REVISION_CONFLICT` carries
`expectedRevision` and `currentRevision`, `PLAY_STORAGE_LIMIT` `limit` and `used`)."""


def create_app(service: MvuService, *, token: str) -> FastAPI:
    """The HTTP API over ``service``; every route requires ``Bearer <token>``."""
    app = FastAPI(title="mvu-store", version="1", description=DESCRIPTION, openapi_url=OPENAPI_PATH,
                  docs_url=None, redoc_url=None)
    app.include_router(build_router(service), prefix=API_PREFIX)

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

    @app.exception_handler(Exception)
    async def crashed(request: Request, error: Exception) -> Response:
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=error)
        return problem(500, None, "internal error")

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "The token `mvu serve` printed at first start (or --token / MVU_TOKEN)"}}
            schema["security"] = [{"bearer": []}]
            # Malformed parameters are 400 problems here, not FastAPI's 422 (422 means a reused
            # Idempotency-Key): drop the generated validation responses.
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    generated = operation.get("responses", {}).get("422", {})
                    if "HTTPValidationError" in str(generated):
                        del operation["responses"]["422"]
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(BearerAuth, token=token)
    # Outermost: the log sees every answer, 401s included.
    app.add_middleware(AccessLog)
    return app
