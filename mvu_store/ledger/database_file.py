"""The SQLite file a ledger opened, and whether the path still names it.

A file deleted or replaced under a running server keeps working for the process that holds it
open: every write is acknowledged into a file nobody will open again, and lost at the next start.
So the ledger remembers which file (device and inode) its path named when it opened, and the
writer asks before every batch: a path that names another file, or none, refuses the batch with
``MVU_STORAGE_GONE`` (one ``stat``, no database access) until the file is back.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from sqlalchemy.engine import make_url

from mvu_store.errors import Code, MvuError
from mvu_store.private_files import FILE_MODE, make_private_folders


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


def ledger_file(url: str) -> Path | None:
    """The path of a SQLite ledger file; None for a server database or ``:memory:``."""
    parsed = make_url(url)
    if not parsed.get_backend_name().startswith("sqlite") or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


LEFTOVERS = ("-wal", "-shm", ".locks")
"""What a ledger that was used leaves beside its file: SQLite's journal and index, and the
session locks' sidecar."""


def refuse_a_lost_file(path: str, *traces: str) -> None:
    """``MVU_STORAGE_GONE`` when the file at ``path`` is missing but what a ledger leaves beside it
    (:data:`LEFTOVERS`, and the ``traces`` the caller knows of, such as a server's token file)
    is there: the ledger existed and was deleted or moved, and a server that created an empty one
    in its place would present every acknowledged write as never made. A first start (nothing
    there) passes; so does a ledger an operator created on purpose (``mvu db upgrade``)."""
    if os.path.lexists(path):
        return
    found = [trace for trace in (*(path + suffix for suffix in LEFTOVERS), *traces) if os.path.lexists(trace)]
    if found:
        # Only a token file: also what a start of an older mvu left when it failed before creating the ledger.
        never = (f" (if no ledger was ever served here, delete {found[0]} instead)"
                 if found == [trace for trace in traces if os.path.lexists(trace)] else "")
        raise MvuError(Code.STORAGE_GONE, f"the ledger's database file {path} is missing, but {', '.join(found)} "
                                          f"{'shows' if len(found) == 1 else 'show'} that it existed: put it back "
                                          "(or point --db at it); to start afresh on purpose, run `mvu db upgrade` "
                                          f"first{never}", path=path, leftovers=found)


def create_if_missing(path: Path) -> None:
    """Create an empty database file (and its folders) where none is. The ledger creates its file
    here and only here: its engines never create a missing one (a file deleted under a running
    ledger must not come back empty at a pool's next connection)."""
    try:
        make_private_folders(path.parent)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE))
    except FileExistsError:
        return
    except OSError as error:
        code = Code.STORAGE_READ_ONLY if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else Code.STORAGE_IO
        raise MvuError(code, f"the ledger's database file {path} cannot be created: {error.strerror}",
                       path=str(path)) from None
