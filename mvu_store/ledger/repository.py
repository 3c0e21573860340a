"""The Ledger: the one public face of the store, made of one part per concern.

=================  ==========================================================================
``store.py``       engines, the writer, the session locks (``locks.py``), the read and write
                   boundaries (driver errors translated on both), blobs, rows and their bytes,
                   append positions, the budget
``commits.py``     versions under row-version CAS, idempotency receipts, the management mode
``resources.py``   create, fork and lineage, heads, blobs, versions, checkpoints
``sessions.py``    selections, activation boundaries, templates, legacy files
``seeds.py``       fork / swipe / retry tickets: capture and install
``facts.py``       the bounded facts store and the usage counters
``views.py``       what a session's read needs, gathered in one round trip
``host_sessions``  the store-backed host's sessions and events (outside the budget)
``row_batch``      many rows in one statement per table (a chat import's)
=================  ==========================================================================

The parts are mixins of one :class:`~mvu_store.ledger.store.Store`, not objects the ledger holds
and forwards to: every part's units of work call the same few steps (``put_blob``,
``insert_row``, ``next_position``) inside one transaction, a seed install runs a fork and an
activation in its own unit, and the service and importers call some of those steps (for
example ``set_activation`` or ``insert_resource``) in theirs. Composition would need every
public method written twice (the part's and the forwarding one) and the steps passed around;
with mixins each method is written once, in the module of its concern, and ``Ledger`` is the
sum. A part depends only on ``Store``, except ``Seeds``, which builds on ``Resources`` and
``Sessions`` because installing a seed forks and activates, and ``Views``, which reads what all
of them store.
"""

from __future__ import annotations

from sqlalchemy import text

from mvu_store.errors import Code, MvuError
from mvu_store.ledger.commits import Commits
from mvu_store.ledger.damage import damaged_rows
from mvu_store.ledger.facts import Facts
from mvu_store.ledger.host_sessions import HostSessions
from mvu_store.ledger.query import Query
from mvu_store.ledger.records import Finding
from mvu_store.ledger.row_batch import RowBatches
from mvu_store.ledger.views import Views

_FINDINGS = Query(
    "audit-findings",
    lambda: text("SELECT check_name, ledger_id, subject, detail FROM audit_findings WHERE ledger_id = :ledger_id"),
)




class Ledger(Commits, Views, Facts, HostSessions, RowBatches):
    """One budget domain of the store. Create with :func:`mvu_store.ledger.open_ledger`."""

    async def audit(self) -> list[Finding]:
        """Run the ``audit_*`` views (the same SQL an auditor runs) for this ledger.

        On SQLite the file's structure is checked first (:meth:`integrity`): a damaged file is
        reported as ``integrity`` findings, and the views, whose answers over damaged pages
        would mean nothing, are not run. Then each row's content (:meth:`damaged_rows`); when a
        view cannot read past a damaged row, the rows found are the findings."""
        structure = await self.integrity()
        if structure:
            return structure
        damaged = await self.damaged_rows()
        try:
            rows = await self.read_all(_FINDINGS)
        except MvuError as error:
            if not damaged or error.code != Code.STORAGE_CORRUPT:
                raise
            return damaged  # a view read a damaged row: the rows found are the answer
        return [*damaged, *(Finding(row["check_name"], row["ledger_id"], row["subject"], row["detail"])
                            for row in rows)]

    async def damage(self) -> list[Finding]:
        """The file's structural damage (:meth:`integrity`), else its damaged rows; empty for a
        sound ledger."""
        return await self.integrity() or await self.damaged_rows()

    async def damaged_rows(self) -> list[Finding]:
        """Each row whose content is damaged (``damaged_row``: a text that is not UTF-8, a JSON
        column that is not JSON, a state that does not match its hash; see ``damage.py``)."""
        embedded = self._dialect.embedded
        return await self.read(lambda connection: damaged_rows(connection, self.ledger_id, embedded=embedded))

    async def integrity(self) -> list[Finding]:
        """SQLite's ``PRAGMA integrity_check`` of an embedded ledger's file: one ``integrity``
        finding per problem it names (or the error of a check that cannot read past the
        damage), naming the file; none for a sound file or a server database."""
        if not self._dialect.embedded:
            return []
        try:
            problems = [str(row[0]) for row in await self.read(
                lambda connection: connection.exec_driver_sql("PRAGMA integrity_check(20)").all())]
        except MvuError as error:
            if error.code != Code.STORAGE_CORRUPT:
                raise
            problems = [error.message]
        if problems == ["ok"]:
            return []
        where = self._file.path if self._file is not None else self.url
        return [Finding("integrity", self.ledger_id, where, problem) for problem in problems]
