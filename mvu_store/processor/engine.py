"""The QuickJS engine a card's command processor runs in: limits, one worker thread, typed errors.

A QuickJS runtime must be used from the thread that made it, so every runtime lives on one
worker thread (:class:`Worker`, a single-thread executor) and every call into it is a job on that
thread. Each processor has a runtime of its own (:class:`Sandbox`): its memory limit and its
interrupt handler are its own, and one card's memory bomb cannot starve another card.

Limits (see docs/processor.md):

* memory: :data:`MEMORY_LIMIT` per runtime; out of memory poisons a QuickJS runtime (every later
  call fails), so the sandbox is marked broken and never entered again;
* time: :data:`ENTRY_BUDGET` seconds of the worker thread's CPU time per interpreter entry (one
  ``eval`` or one call), so a busy machine does not eat a script's budget; the interrupt handler
  also stops an entry as soon as its :class:`Cancel` token is set from the event loop;
* stack: :data:`STACK_LIMIT`, so deep recursion is a catchable ``RangeError``-like error, never a
  crash of the process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import TypeVar

import quickjs

from mvu_store.errors import Code, MvuError

MEMORY_LIMIT = 32 * 1024 * 1024
STACK_LIMIT = 256 * 1024
ENTRY_BUDGET = 0.25
"""Seconds of CPU time one interpreter entry may take."""

T = TypeVar("T")
# What QuickJS says when an allocation failed: after the first failure it often has no memory
# left even for the error object, and reports the exception as "null".
_OUT_OF_MEMORY = ("InternalError: out of memory", "null")


class Cancel:
    """A token the event loop sets to stop the entry it belongs to (a plain flag: the worker
    thread only reads it, and a bool assignment is atomic under the GIL)."""

    __slots__ = ("cancelled", "reason")

    def __init__(self) -> None:
        self.cancelled = False
        self.reason = Code.COMMAND_HOOK_DISPOSED

    def cancel(self, reason: Code = Code.COMMAND_HOOK_DISPOSED) -> None:
        self.reason = reason
        self.cancelled = True


class Worker:
    """The one thread that owns every runtime made through it."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mvu-processor")

    async def run(self, job: Callable[[], T], cancel: Cancel) -> T:
        """Run ``job`` on the worker thread; if the awaiting task is cancelled, the job's entry
        is interrupted (or, not started yet, never runs)."""
        future = asyncio.get_running_loop().run_in_executor(self._executor, job)
        try:
            return await future
        except asyncio.CancelledError:
            cancel.cancel()
            raise

    def submit(self, job: Callable[[], object]) -> None:
        """Run ``job`` on the worker thread, not waiting for it (releasing a runtime there)."""
        with suppress(RuntimeError):  # shut down: the thread is ending, so is what it held
            self._executor.submit(job)

    def close(self) -> None:
        """Stop taking jobs; the thread ends once the queued ones are done (they are cancelled
        by their tokens, so that is soon)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


class Sandbox:
    """One QuickJS runtime and context. Make it, and use it, only on the worker thread."""

    def __init__(self) -> None:
        self._runtime = quickjs.Runtime()
        self._runtime.set_memory_limit(MEMORY_LIMIT)
        self._runtime.set_max_stack_size(STACK_LIMIT)
        self._deadline = 0.0
        self._cancel = Cancel()
        self._runtime.set_interrupt_handler(self._interrupt)
        self.context = self._runtime.new_context()
        self.broken = False

    def _interrupt(self) -> bool:
        return self._cancel.cancelled or time.thread_time() > self._deadline

    def enter(self, work: Callable[[quickjs.Context], T], cancel: Cancel) -> T:
        """One interpreter entry under the limits; every failure is a typed ``MvuError``."""
        if self.broken:
            raise MvuError(Code.COMMAND_HOOK_DISPOSED, "the processor's engine was discarded (out of memory)")
        if cancel.cancelled:
            raise MvuError(cancel.reason, "the command processor was cancelled")
        self._cancel = cancel
        self._deadline = time.thread_time() + ENTRY_BUDGET
        try:
            return work(self.context)
        except quickjs.QuickJSError as error:
            raise self._failure(str(error), cancel) from None
        except MemoryError:
            raise self.out_of_memory() from None
        finally:
            self._cancel = Cancel()

    def out_of_memory(self) -> MvuError:
        """Mark the runtime broken (out of memory, it fails every later call: never reuse it)."""
        self.broken = True
        return MvuError(Code.COMMAND_HOOK_LIMIT, "the command processor ran out of memory",
                        limit=MEMORY_LIMIT, kind="memory")

    def _failure(self, message: str, cancel: Cancel) -> MvuError:
        if cancel.cancelled:
            return MvuError(cancel.reason, "the command processor was cancelled")
        if message in _OUT_OF_MEMORY:
            return self.out_of_memory()
        if message == "InternalError: interrupted":
            return MvuError(Code.COMMAND_HOOK_LIMIT, "the command processor ran past its time budget",
                            limit=int(ENTRY_BUDGET * 1000), kind="milliseconds")
        # The script's own message is not passed on: it is the card's text, not ours.
        return MvuError(Code.COMMAND_HOOK_EXECUTION, "the command processor threw")
