"""The one compare-and-swap retry loop every writer of a resource's head goes through.

A conflict means another writer moved the head: the work is redone on the new head, a bounded
number of times (a livelock ends as ``REVISION_CONFLICT``). A writer whose expected revision is
the caller's own (a manual edit, a management operation) passes ``attempts=1``: its conflict is
the caller's to resolve, and is raised as it came.
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
                  head: Head | None = None, attempts: int = CAS_ATTEMPTS, doing: str = "writing") -> T:
    """Run ``attempt(head)`` until it does not conflict; ``head``: the one just read, if any."""
    current = head if head is not None else await ledger.head(resource_id)
    for tried in range(1, attempts + 1):
        try:
            return await attempt(current)
        except MvuError as error:
            if error.code != Code.REVISION_CONFLICT or tried == attempts == 1:
                raise
        current = await ledger.head(resource_id)
    raise MvuError(Code.REVISION_CONFLICT, f"the resource kept changing while {doing}", id=resource_id)
