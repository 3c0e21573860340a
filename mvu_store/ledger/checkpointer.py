"""WAL checkpoints on a thread of their own (SQLite), off the writer's path.

In WAL mode a commit appends pages to the ``-wal`` file; a *checkpoint* copies them back into
the database file, and SQLite's default runs one inside whichever COMMIT crosses 1,000 WAL
pages, with its own fsyncs: every few hundred commits, one caller's write waited for all of
that. Here the writer only says that it committed (:meth:`Checkpointer.committed`); this
thread runs a ``PASSIVE`` checkpoint on a connection of its own at most every
:data:`CHECKPOINT_INTERVAL_S`, which never waits for and never blocks a reader or the writer.
Durability is unchanged: a commit is durable once its WAL frames are synced, before it is
acknowledged; a checkpoint only moves durable pages.

A checkpoint alone does not make the WAL small again: SQLite starts writing it over from its
beginning only at a write that finds *every* frame copied back. A pass on this thread never
leaves it so while the writer keeps committing (what was appended during the pass is left), so
the WAL grew to the fallback mark, and every commit appended to a growing file, whose sync then
also writes the file's new size (``benchmarks/commit_path.py``'s single writer lost about a
third of its speed to it). So once a pass finds the WAL past :data:`RESTART_PAGES`, the writer,
after its next commit and once that batch's callers have their answers, copies the few frames
the pass left itself (on its own thread and connection, where no commit can come between:
:meth:`Checkpointer.committed`), and its next write starts the WAL over: it is written over in
place, in a file that no longer grows. Below that mark the writer adds no sync of its own.

The writer keeps SQLite's own checkpoint as a fallback at a higher mark
(:data:`FALLBACK_AUTOCHECKPOINT_PAGES`): should this thread fall behind or fail (it logs and
retries on a fresh connection), the WAL stays bounded all the same.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from sqlalchemy import Engine

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL_S = 0.05
"""The least time between two checkpoints: about 1,000 pages of WAL at full write speed."""

RESTART_PAGES = 1_000
"""The WAL size from which the writer finishes a pass so that the WAL starts over (SQLite's own
checkpoint mark: about 4 MiB); each finish costs the writer a sync of the database file."""

FALLBACK_AUTOCHECKPOINT_PAGES = 10_000
"""Where the writer checkpoints by itself (about 40 MiB of WAL), if this thread has not."""


class Checkpointer:
    """A thread that checkpoints an SQLite database's WAL after commits, at a bounded rate."""

    def __init__(self, engine: Engine, name: str) -> None:
        self._engine = engine
        self._wake = threading.Event()  # a commit happened since the last checkpoint
        self._stop = threading.Event()
        self._failing = False  # one warning per run of failures, not one per pass
        # A pass over a WAL past RESTART_PAGES ended since the writer last finished one (set here,
        # cleared by the writer; a race costs at most one finishing checkpoint more or one later).
        self._restart_due = False
        self._thread = threading.Thread(target=self._run, name=f"mvu-checkpoint-{name}", daemon=True)
        self._thread.start()

    def committed(self, connection: Any) -> None:
        """Called by the writer, on its thread and ``connection`` (DB-API), after a batch that
        committed, once the batch's callers have their answers: wakes this thread, and finishes
        its last pass if that found the WAL past :data:`RESTART_PAGES` (see the module's docstring).

        Never raises: a failed finish leaves the WAL to this thread and the fallback mark.
        """
        if self._restart_due:
            self._restart_due = False
            try:
                _passive_checkpoint(connection)
            except Exception as error:  # the writer's next batch meets a failing database itself
                log.warning("the writer could not finish a WAL checkpoint (%s); the WAL grows until one does", error)
        if not self._wake.is_set():  # setting a set event still takes its lock and notifies
            self._wake.set()

    def close(self) -> None:
        """Stop the thread (after its current checkpoint, if one is running)."""
        self._stop.set()
        self._wake.set()
        self._thread.join()

    def _run(self) -> None:
        connection: Any = None
        try:
            while True:
                self._wake.wait()
                if self._stop.is_set():
                    return
                self._wake.clear()
                connection = self._checkpoint(connection)
                # Let commits gather before the next pass; a close ends the pause at once.
                if self._stop.wait(CHECKPOINT_INTERVAL_S):
                    return
        finally:
            if connection is not None:
                connection.close()

    def _checkpoint(self, connection: Any) -> Any:
        """One passive checkpoint; the connection to use next (None after a failure)."""
        try:
            if connection is None:
                connection = self._engine.raw_connection()
            self._restart_due = _passive_checkpoint(connection) >= RESTART_PAGES
        except Exception as error:  # the writer's fallback checkpoint still bounds the WAL
            if not self._failing:
                log.warning("background WAL checkpoints fail (%s); they are tried again after each commit", error)
            self._failing = True
            if connection is not None:
                with contextlib.suppress(Exception):
                    connection.invalidate()
            return None
        if self._failing:
            log.warning("background WAL checkpoints work again")
            self._failing = False
        return connection


def _passive_checkpoint(connection: Any) -> int:
    """Copy back what the WAL holds that no reader still needs; the WAL's size in pages (-1 when
    another checkpoint was under way)."""
    cursor = connection.cursor()
    try:
        _busy, pages, _copied = cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        cursor.close()
    return int(pages)
