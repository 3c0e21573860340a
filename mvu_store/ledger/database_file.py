"""The SQLite file a ledger opened, and whether the path still names it.

A file deleted or replaced under a running server keeps working for the process that holds it
open: every write is acknowledged into a file nobody will open again, and lost at the next start.
So the ledger remembers which file (device and inode) its path named when it opened, and the
writer asks before every batch: a path that names another file, or none, refuses the batch with
``MVU_STORAGE_GONE`` (one ``stat``, no database access) until the file is back.
"""

from __future__ import annotations

import os

from mvu_store.errors import Code, MvuError


class DatabaseFile:
    """The identity of the database file at ``path`` when the ledger opened it."""

    def __init__(self, path: str | None) -> None:
        if not path:
            raise MvuError(Code.CONFIG, "an embedded ledger needs a database file path")
        self.path = path
        self._identity = self._current()

    def check(self) -> None:
        """``MVU_STORAGE_GONE`` when the path no longer names the file opened (``MVU_STORAGE_IO``
        when it cannot be looked at)."""
        if self._current() != self._identity:
            raise MvuError(Code.STORAGE_GONE, f"the ledger's database file {self.path} was replaced under the "
                                              "running service; nothing was written (restart to use the new one)",
                           path=self.path)

    def _current(self) -> tuple[int, int]:
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            raise MvuError(Code.STORAGE_GONE, f"the ledger's database file {self.path} was deleted under the "
                                              "running service; nothing was written (put it back or restart)",
                           path=self.path) from None
        except OSError as error:
            raise MvuError(Code.STORAGE_IO, f"the ledger's database file {self.path} cannot be looked at: "
                                            f"{error.strerror}", path=self.path) from None
        return status.st_dev, status.st_ino
