"""Trigger facts around every store and manual update (DIGEST A-4, A-5).

A fact says that something was observed (``started``, ``triggered``, ``skipped``, ``applied``,
``failed``, ``completed``), never what the state or the chat says: the ledger keeps only the
whitelisted scalar fields. The facts of one update are written together, in its commit's
transaction (:attr:`~mvu_store.ledger.CommitRequest.facts`): ``applied`` with ``state-committed``
is durable exactly when the changed state is. Facts the store refuses are rolled back alone and
reported (``IngestReport.fact_errors``, the log) without turning the commit into a failure. The
facts of an update that commits nothing (a failure of the store) are written in a unit of their own.
"""

from __future__ import annotations

import logging
import time

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import CommitOutcome, Ledger
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

    def copy(self) -> Facts:
        """The facts so far, to be ended by one commit attempt (another attempt starts again)."""
        ended = Facts()
        ended._common, ended.records = self._common, list(self.records)
        return ended

    async def committed(self, outcome: CommitOutcome, usage: Usage) -> str | None:
        """These facts went with ``outcome``'s commit: tell the observers; the error code of
        the facts' refusal (reported, never raised), or None."""
        if outcome.fact_error is not None:
            log.warning("fact write failed (the state commit stands): %s", outcome.fact_error)
        await usage.notify(self.records)
        return outcome.fact_error

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
            failure = Code.FACT_WRITE.value
        await usage.notify(self.records)
        return failure

