"""The service's side of the engine process (:mod:`mvu_store.processor.child`).

Every card script runs in one child Python process, never in the service's: QuickJS can crash
its process on some out-of-memory paths, and a crash there must cost a turn, not the service.
The event loop talks to the child itself, with no thread in between: it writes a request to the
child's stdin and a reader callback on the child's stdout resolves the request's future, so a
round trip costs two wake-ups (the child's and the loop's), not four. One request is in the
child at a time; the others wait in :class:`Worker`'s queues, one per *share* (a card's script:
its declaration's hash), taken in turn: each share's requests in their order, and one of each
waiting share before a second of any. A card whose script spends its whole budget on every reply
then delays another card's request by at most one of its own (the one running), however many of
its replies wait, instead of by all of them. A child that ends costs only the request it was
running. Cancellation does not wait for the child: the loop writes the
cancelled request's number into a shared 8-byte file the child's interrupt handler reads, and
the entry stops at the next interrupt poll.

A child that ends (crashed, killed) answers its running request with
``MVU_COMMAND_HOOK_EXECUTION``; the next request starts a new one, which answers a script it
never started with :class:`Unknown`, and the registry starts that script there again.

A :class:`Worker` belongs to the event loop that first used it; a call from another loop (the
first one closed) starts a new child for it.
"""

from __future__ import annotations

import asyncio
import json
import mmap
import os
import struct
import subprocess
import sys
import tempfile
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.processor.child import ENTRY_BUDGET, MEMORY_LIMIT, STACK_LIMIT, frame
from mvu_store.processor.prelude import PRELUDE

__all__ = ["ENTRY_BUDGET", "MEMORY_LIMIT", "STACK_LIMIT", "Cancel", "Unknown", "Worker"]

_CHILD = Path(__file__).with_name("child.py")
WATCHDOG = 60.0
"""Seconds of wall time the engine process has to answer one request before it is ended."""
_READ_SIZE = 1 << 16


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


def _failure(code: Code, message: str) -> dict[str, Any]:
    return {"error": [code.value, message, {}]}


def _settle(future: asyncio.Future[dict[str, Any]] | None, answer: dict[str, Any]) -> None:
    """Answer ``future`` unless it is done or its loop is gone."""
    if future is not None and not future.done() and not future.get_loop().is_closed():
        future.set_result(answer)


class _Child:
    """One engine process and the loop-side state of its pipes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, descriptor: int, on_lines: Any, on_end: Any) -> None:
        self.loop = loop
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(_CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, pass_fds=(descriptor,))
        assert self.process.stdin is not None and self.process.stdout is not None
        self._in, self._out = self.process.stdin.fileno(), self.process.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._received = bytearray()
        self._pending = bytearray()  # what a full pipe did not take yet
        self._on_lines, self._on_end = on_lines, on_end
        self.alive = True
        try:
            loop.add_reader(self._out, self._readable)
        except BaseException:  # the loop is closed: nothing would ever wait on the process
            self.alive = False
            self._close_process()
            raise
        self.write(frame({"op": "hello", "cancel": descriptor}, PRELUDE))

    def write(self, data: bytes) -> None:
        if not self.alive:
            return
        if self._pending:
            self._pending += data
            return
        try:
            written = os.write(self._in, data)
        except BlockingIOError:
            written = 0
        except OSError:  # the child is gone: its reader sees the end
            return
        if written < len(data):
            self._pending += data[written:]
            self.loop.add_writer(self._in, self._writable)

    def _writable(self) -> None:
        try:
            written = os.write(self._in, self._pending)
        except BlockingIOError:
            return
        except OSError:
            written = len(self._pending)
        del self._pending[:written]
        if not self._pending:
            self.loop.remove_writer(self._in)

    def _readable(self) -> None:
        try:
            data = os.read(self._out, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.end()
            self._on_end(self)
            return
        self._received += data
        if b"\n" in data:
            *lines, rest = self._received.split(b"\n")
            self._received = bytearray(rest)
            self._on_lines(self, lines)

    def end(self) -> None:
        """Stop watching the pipes and end the process (idempotent)."""
        if not self.alive:
            return
        self.alive = False
        if not self.loop.is_closed():
            self.loop.remove_reader(self._out)
            self.loop.remove_writer(self._in)
        self._close_process()

    def _close_process(self) -> None:
        self.process.kill()
        self.process.wait()
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.stdout.close()


_Queued = tuple[bytes, int, "asyncio.Future[dict[str, Any]] | None"]
"""A request's frame, its number and the future its answer settles (None: it has no answer)."""


class Worker:
    def __init__(self) -> None:
        self._child: _Child | None = None
        self._next = 0
        # Requests not yet sent, per share in order (a request with no future has no answer), the
        # shares in the order they are served next, and the one the child is running: its
        # number, its future and its watchdog.
        self._queues: OrderedDict[str, deque[_Queued]] = OrderedDict()
        self._served: str | None = None
        self._running: tuple[int, asyncio.Future[dict[str, Any]], asyncio.TimerHandle] | None = None
        # The shared file has no name once made: the child gets its descriptor, and nothing is
        # left behind however the service ends.
        descriptor, path = tempfile.mkstemp(prefix="mvu-processor-cancel-")
        os.unlink(path)
        os.write(descriptor, bytes(8))
        self._descriptor = descriptor
        self._shared = mmap.mmap(descriptor, 8)
        self._closed = False

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The engine process, while one runs."""
        return self._child.process if self._child is not None and self._child.alive else None

    async def call(self, request: dict[str, Any], body: str, cancel: Cancel, share: str = "") -> Any:
        """Send ``request`` with its ``body`` text in its turn among ``share``'s, wait for its
        answer (a failure is a fresh ``MvuError``)."""
        if self._closed:
            raise MvuError(Code.COMMAND_HOOK_DISPOSED, "the service's command processors were disposed")
        loop = asyncio.get_running_loop()
        self._next += 1
        number = self._next
        cancel.bind(self, number)
        if self._child is not None and self._child.loop is not loop:
            # The loop the child answered on is gone, and with it whatever waited there.
            self._abandon(_failure(Code.COMMAND_HOOK_DISPOSED, "the event loop of this request ended"))
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._enqueue(share, (frame({**request, "n": number}, body), number, future))
        self._pump(loop)
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

    def send(self, request: dict[str, Any], share: str = "") -> None:
        """Send a request that has no answer (forgetting a script), in order with ``share``'s others."""
        if self._closed or self._child is None or not self._child.alive or self._child.loop.is_closed():
            return  # no engine process knows any script
        self._enqueue(share, (frame(request, ""), 0, None))
        self._pump(self._child.loop)

    def cancel(self, request: int) -> None:
        """Stop ``request``: the running one at the child's next interrupt poll (the shared file
        names the highest request to stop, so only the running one is written there: a queued
        one would stop the one running ahead of it); a queued one is answered now and never sent."""
        if self._running is not None and self._running[0] == request:
            if not self._shared.closed and struct.unpack_from("<q", self._shared)[0] < request:
                struct.pack_into("<q", self._shared, 0, request)
            return
        for _, number, future in self._waiting():
            if number == request:
                _settle(future, _failure(Code.COMMAND_HOOK_DISPOSED, "the command processor was cancelled"))

    def close(self) -> None:
        """Stop the child and take no more requests; waiting calls end ``MVU_COMMAND_HOOK_DISPOSED``."""
        if self._closed:
            return
        self._closed = True
        self._abandon(_failure(Code.COMMAND_HOOK_DISPOSED, "the service's command processors were disposed"))
        self._shared.close()
        os.close(self._descriptor)

    # -- on the event loop --------------------------------------------------------------------------

    def _abandon(self, answer: dict[str, Any]) -> None:
        """End the child, answering its running request and every queued one with ``answer``."""
        if self._running is not None:
            self._finish(answer)
        for _, _, future in self._waiting():
            _settle(future, answer)
        self._queues.clear()
        if self._child is not None:
            self._child.end()
            self._child = None

    def _started(self, loop: asyncio.AbstractEventLoop) -> _Child:
        child = self._child
        if child is None or not child.alive or child.process.poll() is not None:
            if child is not None:
                child.end()
            child = self._child = _Child(loop, self._descriptor, self._answered, self._child_ended)
        return child

    def _enqueue(self, share: str, queued: _Queued) -> None:
        queue = self._queues.get(share)
        if queue is None:
            queue = self._queues[share] = deque()
            served = self._served
            if served is not None and served in self._queues:
                # The share served last waits behind one that arrives while its request runs.
                self._queues.move_to_end(served)
        queue.append(queued)

    def _waiting(self) -> list[_Queued]:
        return [queued for queue in self._queues.values() for queued in queue]

    def _next_queued(self) -> _Queued:
        """The next share's oldest request; the share then waits behind every other one."""
        share, queue = next(iter(self._queues.items()))
        self._served = share
        queued = queue.popleft()
        if queue:
            self._queues.move_to_end(share)
        else:
            del self._queues[share]
        return queued

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        """Send queued requests, each share in its turn, until one that waits for its answer is running."""
        while self._running is None and self._queues:
            data, number, future = self._next_queued()
            if future is not None and future.done():
                continue  # its caller was cancelled before it was sent
            try:
                child = self._started(loop)
            except (OSError, RuntimeError) as error:  # no process could be started (fds, memory)
                _settle(future, _failure(Code.COMMAND_HOOK_EXECUTION,
                                         f"the command processor's engine could not start: {type(error).__name__}"))
                continue
            child.write(data)
            if future is not None:
                # A watchdog far above any script's budget: an engine stuck where its interrupt
                # handler is never polled is ended, not waited for.
                self._running = (number, future, loop.call_later(WATCHDOG, self._stalled, child, number))

    def _finish(self, answer: dict[str, Any]) -> None:
        assert self._running is not None
        _, future, watchdog = self._running
        self._running = None
        watchdog.cancel()
        _settle(future, answer)

    def _answered(self, child: _Child, lines: list[bytearray]) -> None:
        for line in lines:
            answer: dict[str, Any] = json.loads(line)
            if self._running is not None and answer.get("n") == self._running[0]:
                self._finish(answer)
        self._pump(child.loop)

    def _child_ended(self, child: _Child) -> None:
        if child is self._child and self._running is not None:
            self._finish(_failure(Code.COMMAND_HOOK_EXECUTION, "the command processor's engine ended"))
        if not self._closed:
            self._pump(child.loop)

    def _stalled(self, child: _Child, number: int) -> None:
        if self._running is not None and self._running[0] == number:
            child.end()
            self._child_ended(child)

