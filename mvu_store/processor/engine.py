"""The service's side of the engine process (:mod:`mvu_store.processor.child`).

Every card script runs in one child Python process, never in the service's: QuickJS can crash
its process on some out-of-memory paths, and a crash there must cost a turn, not the service.
One thread of the service (:class:`Worker`) talks to the child, a request and its answer at a
time, so the event loop never blocks on it. Cancellation does not wait for the child: the loop
writes the cancelled request's number into a shared 8-byte file the child's interrupt handler
reads, and the entry stops at the next interrupt poll.

A child that ends (crashed, killed) answers its pending request with
``MVU_COMMAND_HOOK_EXECUTION``; the next request starts a new one, which answers a script it
never started with :class:`Unknown`, and the registry starts that script there again.
"""

from __future__ import annotations

import asyncio
import json
import mmap
import os
import select
import struct
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.processor.child import ENTRY_BUDGET, MEMORY_LIMIT, STACK_LIMIT
from mvu_store.processor.prelude import PRELUDE

__all__ = ["ENTRY_BUDGET", "MEMORY_LIMIT", "STACK_LIMIT", "Cancel", "Unknown", "Worker"]

_CHILD = Path(__file__).with_name("child.py")
WATCHDOG = 60.0
"""Seconds of wall time the engine process has to answer one request before it is ended."""


class Unknown(Exception):
    """The engine process does not know the script (it replaced one that ended)."""


class Cancel:
    """A token the event loop sets to stop the request it belongs to."""

    __slots__ = ("_request", "_worker", "cancelled", "reason")

    def __init__(self) -> None:
        self.cancelled = False
        self.reason = Code.COMMAND_HOOK_DISPOSED
        self._worker: Worker | None = None
        self._request = 0

    def bind(self, worker: Worker, request: int) -> None:
        self._worker, self._request = worker, request
        if self.cancelled:
            worker.cancel(request)

    def cancel(self, reason: Code = Code.COMMAND_HOOK_DISPOSED) -> None:
        self.reason = reason
        self.cancelled = True
        if self._worker is not None:
            self._worker.cancel(self._request)


class Worker:
    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mvu-processor")
        self._child: subprocess.Popen[bytes] | None = None
        self._next = 0
        self._lock = threading.Lock()
        # The shared file has no name once made: the child gets its descriptor, and nothing is
        # left behind however the service ends.
        descriptor, path = tempfile.mkstemp(prefix="mvu-processor-cancel-")
        os.unlink(path)
        os.write(descriptor, bytes(8))
        self._descriptor = descriptor
        self._shared = mmap.mmap(descriptor, 8)
        self._closed = False

    async def call(self, request: dict[str, Any], cancel: Cancel) -> Any:
        """Send ``request``, wait for its answer (a failure is a fresh ``MvuError``)."""
        if self._closed:
            raise MvuError(Code.COMMAND_HOOK_DISPOSED, "the service's command processors were disposed")
        self._next += 1
        request = {**request, "n": self._next}
        cancel.bind(self, self._next)
        future = asyncio.get_running_loop().run_in_executor(self._executor, self._exchange, request)
        try:
            answer = await future
        except asyncio.CancelledError:
            cancel.cancel()
            raise
        if answer.get("unknown") is True:
            raise Unknown()
        if "error" in answer:
            code, message, details = answer["error"]
            if cancel.cancelled:
                code = cancel.reason.value
            raise MvuError(code, message, **details)
        return answer["ok"]

    def send(self, request: dict[str, Any]) -> None:
        """Send a request that has no answer (forgetting a script), in order with the others."""
        if not self._closed:
            self._executor.submit(self._write, request)

    def cancel(self, request: int) -> None:
        """Stop ``request`` (and any earlier one) at the child's next interrupt poll."""
        with self._lock:
            if not self._shared.closed and struct.unpack_from("<q", self._shared)[0] < request:
                struct.pack_into("<q", self._shared, 0, request)

    def close(self) -> None:
        """Stop the child and take no more requests."""
        if self._closed:
            return
        self._closed = True
        self.cancel(self._next)
        self._executor.submit(self._stop)
        self._executor.shutdown(wait=False)

    # -- on the worker thread ----------------------------------------------------------------------

    def _started(self) -> subprocess.Popen[bytes]:
        child = self._child
        if child is None or child.poll() is not None:
            child = self._child = subprocess.Popen(
                [sys.executable, "-I", str(_CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, pass_fds=(self._descriptor,))
            self._put(child, {"prelude": PRELUDE, "cancel": self._descriptor})
        return child

    @staticmethod
    def _put(child: subprocess.Popen[bytes], request: dict[str, Any]) -> None:
        assert child.stdin is not None
        child.stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
        child.stdin.flush()

    def _write(self, request: dict[str, Any]) -> None:
        with suppress(OSError):  # the child is gone: so is what the request was about
            self._put(self._started(), request)

    def _exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            child = self._started()
            self._put(child, request)
            assert child.stdout is not None
            # A watchdog far above any script's budget: an engine stuck where its interrupt
            # handler is never polled is ended, not waited for.
            ready, _, _ = select.select([child.stdout], [], [], WATCHDOG)
            line = child.stdout.readline() if ready else b""
        except OSError:
            line = b""
        if not line:
            self._kill()
            return {"error": [Code.COMMAND_HOOK_EXECUTION.value, "the command processor's engine ended", {}]}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _kill(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.kill()
            child.wait()

    def _stop(self) -> None:
        self._kill()
        with self._lock:
            self._shared.close()
        os.close(self._descriptor)
