"""The one compare-and-swap commit loop of the writers that choose their own expected revision
(a reply's version, a failed receipt).

A conflict means another writer moved the head: the work is redone on the new head, a bounded
number of times (a livelock ends as ``REVISION_CONFLICT``). Manual edits and management
operations commit under the caller's expected revision instead: their conflict is the caller's.
An attempt whose checks before the commit fail raises :class:`Refused`, which ends the loop
without a retry: the refusal is the caller's to report, with nothing recorded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import Ledger
from mvu_store.ledger.records import Head

T = TypeVar("T")

CAS_ATTEMPTS = 16


class Refused(Exception):
    """A check before a commit failed: the refusal is raised as it is, with nothing recorded."""

    def __init__(self, error: MvuError) -> None:
        super().__init__(error.code)
        self.error = error


def refusing(check: Callable[[], None]) -> None:
    """Run the synchronous checks before a commit; a refusal ends the loop as :class:`Refused`."""
    try:
        check()
    except MvuError as refusal:
        raise Refused(refusal) from None


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
