"""The one compare-and-swap retry loop of the writers that choose their own expected revision
(a reply's version, a failed receipt).

A conflict means another writer moved the head: the work is redone on the new head, a bounded
number of times (a livelock ends as ``REVISION_CONFLICT``). Manual edits and management
operations commit under the caller's expected revision instead: their conflict is the caller's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import Ledger
from mvu_store.ledger.records import Head

T = TypeVar("T")

CAS_ATTEMPTS = 16


async def on_head(ledger: Ledger, resource_id: str, attempt: Callable[[Head], Awaitable[T]], *,
                  head: Head | None = None, doing: str = "writing") -> T:
    """Run ``attempt(head)`` until it does not conflict; ``head``: the one just read, if any."""
    current = head if head is not None else await ledger.head(resource_id)
    for tried in range(1, CAS_ATTEMPTS + 1):
        try:
            return await attempt(current)
        except MvuError as error:
            if error.code != Code.REVISION_CONFLICT:
                raise
        if tried < CAS_ATTEMPTS:
            current = await ledger.head(resource_id)
    raise MvuError(Code.REVISION_CONFLICT, f"the resource kept changing while {doing}", id=resource_id)
