"""Where a request's CPU work runs: a few worker threads of their own, off the event loop.

Applying a reply (its commands and the declaration's checks), opening a greeting and reading a
card take from milliseconds to seconds (each bounded by its request's allowance,
:mod:`mvu_store.schema.allowance`). On the event loop, such work would stop the server from
answering every other session meanwhile; in a worker thread the loop still gets the
interpreter at least every switch interval (5 ms) while the work runs, so other sessions are
answered. That is true of Python code only: one long call into C that keeps the interpreter lock
(a regular expression backtracking over a long text) stops the loop from a thread as well, so
such scans must be linear. Threads, not processes: the work reads states and compiled declarations the service
already holds (a process would copy them in and out at every call and compile each declaration
again), and the allowance, not isolation, is what bounds it (``benchmarks/starvation.py``
measures both).

The pool is the service's own, apart from the default executor the ledger runs its database
calls in: CPU work never takes the threads reads need. A session's work stays in order because
its caller awaits it while holding the session's lock.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

WORKERS = 4
"""CPU work of this many requests runs at once; more wait for a thread (each ends within its
allowance's deadline)."""

_pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="mvu-cpu")


async def off_loop(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread, with the caller's context variables."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_pool, context.run, work)
