"""What a failed ``mvu serve`` start takes back: the files and folders it created.

A start that fails (a bad token file, a ledger that cannot be migrated) must not leave a token
file or an empty database behind: the next start would read the token file as the trace of a
ledger that was lost (``MVU_STORAGE_GONE``), and the token generated for it was never shown to
anyone. So the start notes which of a SQLite ledger's paths are missing before it begins, and
removes those that exist when it fails. A server database has no such files.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from mvu_store.ledger import LEFTOVERS, ledger_file

# Beside the database file: SQLite's rollback journal (a migration may use one) and the token.
_BESIDE = ("", "-journal", ".token", *LEFTOVERS)


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and the folders above it that do not exist, deepest first."""
    missing: list[Path] = []
    while not folder.exists() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing


@contextlib.contextmanager
def taken_back_on_failure(url: str) -> Iterator[None]:
    """Run the start; if it raises, remove what it created beside the ledger ``url`` names."""
    path = ledger_file(url)
    if path is None:
        yield
        return
    files = [Path(f"{path}{suffix}") for suffix in _BESIDE if not os.path.lexists(f"{path}{suffix}")]
    folders = _missing_folders(path.parent)
    try:
        yield
    except BaseException:
        for file in files:
            with contextlib.suppress(FileNotFoundError):
                file.unlink()
        for folder in folders:
            with contextlib.suppress(OSError):  # not empty: something else was put there meanwhile
                folder.rmdir()
        raise
