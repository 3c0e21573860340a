"""What is wrong with a ledger, if anything: its file's structure, its damaged rows, and the
findings of the ``audit_*`` views (``audit.py``), the same SQL an auditor runs."""

from __future__ import annotations

from sqlalchemy import text

from mvu_store.errors import Code, MvuError
from mvu_store.ledger.damage import damaged_rows
from mvu_store.ledger.query import Query
from mvu_store.ledger.records import Finding
from mvu_store.ledger.store import Store

_FINDINGS = Query(
    "audit-findings",
    lambda: text("SELECT check_name, ledger_id, subject, detail FROM audit_findings WHERE ledger_id = :ledger_id"),
)


class Findings:
    """Checking a ledger: :meth:`audit` runs every check, :meth:`damage` those a reader needs."""

    def __init__(self, store: Store) -> None:
        self._store = store

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
            rows = await self._store.read_all(_FINDINGS)
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
        store = self._store
        return await store.read(lambda connection: damaged_rows(connection, store.ledger_id, embedded=store.embedded))

    async def integrity(self) -> list[Finding]:
        """SQLite's ``PRAGMA integrity_check`` of an embedded ledger's file: one ``integrity``
        finding per problem it names (or the error of a check that cannot read past the
        damage), naming the file; none for a sound file or a server database."""
        if not self._store.embedded:
            return []
        try:
            problems = [str(row[0]) for row in await self._store.read(
                lambda connection: connection.exec_driver_sql("PRAGMA integrity_check(20)").all())]
        except MvuError as error:
            if error.code != Code.STORAGE_CORRUPT:
                raise
            problems = [error.message]
        if problems == ["ok"]:
            return []
        where = self._store.file_path or self._store.url
        return [Finding("integrity", self._store.ledger_id, where, problem) for problem in problems]
