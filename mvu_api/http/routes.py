"""The trace primitives of DIGEST H-1 under ``/pmp-dsh-tavern/api/v1/mvu/``, one module per
family: reads (:mod:`mvu_api.http.reads`; changes and diffs: :mod:`mvu_api.http.change_reads`),
the edit (:mod:`mvu_api.http.writes`), the prompt
(:mod:`mvu_api.http.prompt`), card scripts (:mod:`mvu_api.http.cards`), the host routes that feed
sessions (:mod:`mvu_api.http.hosting`) and report card facts (:mod:`mvu_api.http.card_facts`); the
OpenAPI document is :mod:`mvu_api.http.docs`. Refusals are raised as ``MvuError`` and become
problem+json in :mod:`mvu_api.http.problems`.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from mvu_api.http.bodies import BODY_TIMEOUT_SECONDS
from mvu_api.http.card_facts import card_facts_router
from mvu_api.http.cards import cards_router
from mvu_api.http.change_reads import change_reads_router
from mvu_api.http.chats import chats_router
from mvu_api.http.hosting import hosting_router
from mvu_api.http.inspector_reads import inspector_router
from mvu_api.http.prompt import prompt_router
from mvu_api.http.reads import reads_router
from mvu_api.http.writes import writes_router
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost

API_PREFIX = "/pmp-dsh-tavern/api/v1"
MVU_PREFIX = f"{API_PREFIX}/mvu"


def build_router(service: MvuService, *, host: StoreHost | None = None, body_timeout: float = BODY_TIMEOUT_SECONDS,
                 stopping: asyncio.Event | None = None) -> APIRouter:
    """The routes; the host routes only when the service's host is ``host``, a store-backed one."""
    router = APIRouter(prefix="/mvu", tags=["mvu"])
    router.include_router(reads_router(service, host))
    router.include_router(writes_router(service, body_timeout=body_timeout, stopping=stopping))
    router.include_router(prompt_router(service, body_timeout=body_timeout, stopping=stopping), tags=["prompt"])
    router.include_router(cards_router(service, body_timeout=body_timeout, stopping=stopping))
    if host is not None:
        router.include_router(hosting_router(service, host, body_timeout=body_timeout, stopping=stopping),
                              tags=["host"])
        router.include_router(card_facts_router(host, body_timeout=body_timeout, stopping=stopping))
        router.include_router(inspector_router(host))
        router.include_router(chats_router(host.ledger, body_timeout=body_timeout))
    # Last: a request is matched against the routes in order, and the host's events (every turn
    # over HTTP) should not pay for reads a host asks for now and then (docs/performance.md).
    router.include_router(change_reads_router(service))
    return router
