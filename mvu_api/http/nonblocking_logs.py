"""Logging that never blocks serving.

A server logs a line per request to stderr. Written in place, a stderr nobody reads (a pipe
whose reader stopped, a full terminal buffer) blocks the write, and with it the event loop:
the server stopped answering after about 640 requests. Here handlers only queue records
(bounded); one thread writes them. When the queue is full, records are dropped and counted,
and the next line written says how many were lost.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Iterator
from typing import TextIO

QUEUE_RECORDS = 10_000
"""Records held while stderr is slow; beyond them, records are dropped (and counted)."""

FORMAT = "%(asctime)s %(name)s %(message)s"
_STOP = None


class _Queueing(logging.Handler):
    """Puts records on the queue without waiting; counts those a full queue turns away."""

    def __init__(self, records: queue.Queue[str | None]) -> None:
        super().__init__()
        self._records = records
        self._dropped = 0
        self._mutex = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)  # here, on the caller's thread: its arguments may change later
            with self._mutex:
                if self._dropped:
                    self._records.put_nowait(self.format(_dropped_record(self._dropped)))
                    self._dropped = 0
                self._records.put_nowait(line)
        except queue.Full:
            with self._mutex:
                self._dropped += 1


def _dropped_record(count: int) -> logging.LogRecord:
    return logging.makeLogRecord({"name": "mvu.log", "levelno": logging.WARNING, "levelname": "WARNING",
                                  "msg": f"{count} log lines were dropped: stderr was not being read"})


def _write(records: queue.Queue[str | None], stream: TextIO) -> None:
    while (line := records.get()) is not _STOP:
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: the lines have nowhere to go
            pass


@contextlib.contextmanager
def nonblocking_logging(stream: TextIO, level: int = logging.INFO) -> Iterator[None]:
    """Route the root logger's records through a bounded queue to one writer thread on
    ``stream`` for the life of the block (a line still queued at its end is written if the
    stream takes it within a second)."""
    records: queue.Queue[str | None] = queue.Queue(QUEUE_RECORDS)
    handler = _Queueing(records)
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    root.handlers[:] = [handler]
    root.setLevel(level)
    writer = threading.Thread(target=_write, args=(records, stream), name="mvu-log", daemon=True)
    writer.start()
    try:
        yield
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        with contextlib.suppress(queue.Full):
            records.put(_STOP, timeout=1)
        writer.join(timeout=1)
