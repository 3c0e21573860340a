"""SQLAlchemy's pool errors as one log line each.

When a pooled PostgreSQL connection dies (``pg_terminate_backend``, a server restart), returning
it to the pool fails its reset, and SQLAlchemy logs ``Exception during reset or similar`` with
the whole traceback: 36 tracebacks in 30 s of terminated backends, against the one line per
request the server's log promises. The request itself already got its typed answer (the
driver's error is translated where it was raised), so the pool's record is only a note: it is
kept, as one line naming the error, and its traceback is dropped.
"""

from __future__ import annotations

import logging

from sqlalchemy.pool import QueuePool


class OneLine(logging.Filter):
    """Fold a record's exception into its message, one line, and drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            what = " ".join(str(error).split())
            record.msg = f"{record.getMessage()}: {type(error).__name__}: {what[:300]}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


_ONE_LINE = OneLine()


def install() -> None:
    """Put the filter on the pool's logger (once: a logger keeps one copy of a filter)."""
    logging.getLogger(f"{QueuePool.__module__}.{QueuePool.__name__}").addFilter(_ONE_LINE)
