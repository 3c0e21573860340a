"""Files and folders only their owner may open.

Ledgers, their journals and lock sidecars, session logs, token files and exports hold people's
chats, so whatever mvu creates is its owner's alone: files 0600, folders 0700, through the
command line and the Python API alike, whatever the process's umask. (SQLite gives a ledger's
``-wal`` and ``-shm`` files the mode of the database file, so a private ledger has private
journals.) Existing files and folders keep the modes their owner gave them.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
FOLDER_MODE = 0o700


def make_private_folders(folder: Path) -> None:
    """Create ``folder`` and every missing folder above it, each 0700 (existing ones untouched)."""
    missing: list[Path] = []
    current = folder
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, FOLDER_MODE)
        except FileExistsError:  # made meanwhile by another process: theirs stays as it is
            continue


def private_opener(path: str, flags: int) -> int:
    """An ``opener`` for :func:`open` that creates a missing file 0600."""
    return os.open(path, flags | os.O_CLOEXEC, FILE_MODE)
