"""Trigger facts around every store and manual update (DIGEST A-4, A-5).

A fact says that something was observed (``started``, ``triggered``, ``skipped``, ``applied``,
``failed``, ``completed``), never what the state or the chat says: the ledger keeps only the
whitelisted scalar fields. The facts of one update are written together, after its commit, in a
unit of their own: ``applied`` with ``state-committed`` is only ever written once the state
really changed, and a fact write that fails is reported (``IngestReport.fact_errors``, the log)
without turning the commit that succeeded into a failure.
"""

from __future__ import annotations

import logging
import time

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import Ledger
from mvu_store.service.usage import Usage

log = logging.getLogger("mvu_store.facts")


class Facts:
    """Collects the facts of one update and writes them in one unit."""

    def __init__(self, **common: JsonValue) -> None:
        self._common = {key: value for key, value in common.items() if value is not None}
        self.records: list[dict[str, JsonValue]] = []

    def add(self, phase: str, **fields: JsonValue) -> None:
        record: dict[str, JsonValue] = {"phase": phase, **self._common, "recordedAt": int(time.time() * 1000)}
        record.update({key: value for key, value in fields.items() if value is not None})
        self.records.append(record)

    async def write(self, ledger: Ledger, usage: Usage) -> str | None:
        """Store the facts, then tell the observers; the error code of a failed write (reported,
        never raised), or None."""
        if not self.records:
            return None
        failure: str | None = None
        try:
            await ledger.append_facts(self.records)
        except MvuError as error:
            log.warning("fact write failed (the state commit stands): %s", error)
            failure = error.code
        except Exception as error:  # an optional write must never fail the update it observed
            log.warning("fact write failed (the state commit stands): %r", error)
            failure = "MVU_FACT_WRITE"
        await usage.notify(self.records)
        return failure

