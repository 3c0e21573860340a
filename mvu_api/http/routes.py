"""The trace primitives of DIGEST H-1 under ``/pmp-dsh-tavern/api/v1/mvu/``, one module per
family: reads (:mod:`mvu_api.http.reads`), the edit (:mod:`mvu_api.http.writes`); the OpenAPI
document is :mod:`mvu_api.http.docs`. Refusals are raised as ``MvuError`` and become
problem+json in :mod:`mvu_api.http.problems`.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from mvu_api.http.bodies import BODY_TIMEOUT_SECONDS
from mvu_api.http.reads import reads_router
from mvu_api.http.writes import writes_router
from mvu_store.service import MvuService

API_PREFIX = "/pmp-dsh-tavern/api/v1"
MVU_PREFIX = f"{API_PREFIX}/mvu"


def build_router(service: MvuService, *, body_timeout: float = BODY_TIMEOUT_SECONDS,
                 stopping: asyncio.Event | None = None) -> APIRouter:
    router = APIRouter(prefix="/mvu", tags=["mvu"])
    router.include_router(reads_router(service))
    router.include_router(writes_router(service, body_timeout=body_timeout, stopping=stopping))
    return router
