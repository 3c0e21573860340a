"""The engine process: every card script runs here, in a Python process of its own.

QuickJS can crash its whole process on some out-of-memory paths (seen with quickjs-bindings
0.1.1: an allocation failing while an error's backtrace is built), so no script runs inside the
service's process. This file is started as a script (``python -I child.py``) and takes nothing
from mvu_store, so it starts fast and shares no state with the service. A request is a frame
(:func:`frame`): one JSON header line, then ``size`` bytes of UTF-8 text (the header says how
many), so the largest part of a request, the payload or the source, is never escaped inside
JSON and parsed again. Each request that expects one gets one JSON answer line on stdout:

* first ``{"op": "hello", "cancel": fd}`` with the prelude's source: the descriptor of a file
  of 8 bytes the service writes the highest cancelled request number into (read by the
  interrupt handler);
* ``{"n": n, "op": "start", "key", "gate"}`` with the script's source answers the listener count;
* ``{"n": n, "op": "process", "key"}`` with the payload's JSON text answers the listeners'
  commands, or ``{"n": n, "unknown": true}`` for a key this process never started (it
  replaced one that ended);
* ``{"op": "drop", "key"}`` forgets a script (no answer).

An answer is ``{"n": n, "ok": value}`` or ``{"n": n, "error": [code, message, details]}``.

Limits per runtime (one per script): memory :data:`MEMORY_LIMIT`; :data:`ENTRY_BUDGET` seconds of
this process's CPU time per interpreter entry (one ``eval`` or one call), so a busy machine does
not eat a script's budget; stack :data:`STACK_LIMIT`. A runtime that ran out of memory is never
entered again: the script is started afresh from its source before its next turn.
"""

from __future__ import annotations

import json
import mmap
import struct
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import quickjs

MEMORY_LIMIT = 32 * 1024 * 1024
STACK_LIMIT = 256 * 1024
ENTRY_BUDGET = 0.25
MAX_OUTPUT_CHARS = 8 * 1024 * 1024
LIMIT, EXECUTION, OUTPUT = "MVU_COMMAND_HOOK_LIMIT", "MVU_COMMAND_HOOK_EXECUTION", "MVU_COMMAND_HOOK_OUTPUT"
REGISTRATION, DISPOSED = "MVU_COMMAND_HOOK_REGISTRATION", "MVU_COMMAND_HOOK_DISPOSED"
T = TypeVar("T")
# What QuickJS says when an allocation failed: after the first failure it often has no memory
# left even for the error object, and reports the exception as "null".
_OUT_OF_MEMORY = ("InternalError: out of memory", "null")
_FAILURES = {
    "threw": "a COMMAND_PARSED listener threw",
    "async": "a COMMAND_PARSED listener returned a promise: async listeners are refused",
    "baseline": "a COMMAND_PARSED listener changed the variables, which are read-only",
}


class Refusal(Exception):
    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code, self.message, self.details = code, message, details


class Unknown(Exception):
    """A key this process never started."""


class Clock:
    """The interrupt handler: past the entry's CPU deadline, or its request cancelled."""

    def __init__(self, cancelled: Callable[[int], bool]) -> None:
        self.deadline = 0.0
        self.request = 0
        self._cancelled = cancelled

    def __call__(self) -> bool:
        return time.thread_time() > self.deadline or self._cancelled(self.request)


class Sandbox:
    """One QuickJS runtime and context."""

    def __init__(self, clock: Clock) -> None:
        self._runtime = quickjs.Runtime()
        self._runtime.set_memory_limit(MEMORY_LIMIT)
        self._runtime.set_max_stack_size(STACK_LIMIT)
        self._runtime.set_interrupt_handler(clock)
        self._clock = clock
        self.context = self._runtime.new_context()
        self.broken = False

    def enter(self, work: Callable[[quickjs.Context], T]) -> T:
        """One interpreter entry under the limits; every failure is a :class:`Refusal`."""
        if self.broken:
            raise Refusal(DISPOSED, "the processor's engine was discarded (out of memory)")
        clock = self._clock
        clock.deadline = time.thread_time() + ENTRY_BUDGET
        try:
            return work(self.context)
        except quickjs.QuickJSError as error:
            message = str(error)
        except MemoryError:
            message = _OUT_OF_MEMORY[0]
        raise self._failure(message)

    def out_of_memory(self) -> Refusal:
        self.broken = True
        return Refusal(LIMIT, "the command processor ran out of memory", limit=MEMORY_LIMIT, kind="memory")

    def _failure(self, message: str) -> Refusal:
        if self._clock._cancelled(self._clock.request):
            return Refusal(DISPOSED, "the command processor was cancelled")
        if message in _OUT_OF_MEMORY:
            return self.out_of_memory()
        if message == "InternalError: interrupted":
            return Refusal(LIMIT, "the command processor ran past its time budget",
                           limit=int(ENTRY_BUDGET * 1000), kind="milliseconds")
        # The script's own message is not passed on: it is the card's text, not ours.
        return Refusal(EXECUTION, "the command processor threw")


class CardVM:
    """A card's script: the prelude, its gate global, its source, then ``global_Mvu_initialized``;
    it must have registered a ``COMMAND_PARSED`` listener by then."""

    def __init__(self, prelude: str, source: str, gate_global: str | None, clock: Clock) -> None:
        self._sandbox = sandbox = Sandbox(clock)
        api: Any = sandbox.enter(lambda context: context.eval(prelude))
        self._process = api.get("process")
        if gate_global is not None:
            gate = api.get("gate")
            sandbox.enter(lambda context: gate(gate_global))
        sandbox.enter(lambda context: context.eval(source))
        initialized = api.get("initialized")
        count = sandbox.enter(lambda context: initialized())
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise Refusal(REGISTRATION, "the script registered no Mvu.events.COMMAND_PARSED listener")
        self.listener_count = count

    @property
    def broken(self) -> bool:
        return self._sandbox.broken

    def process(self, payload: str) -> Any:
        """One turn: the payload's JSON text in; out, the commands as the listeners left them."""
        process = self._process
        answer = self._sandbox.enter(lambda context: process(payload))
        if isinstance(answer, quickjs.Value) and answer.is_string:
            answer = _text_of(answer)  # a string the binding did not convert (a rope)
        if not isinstance(answer, str) or len(answer) > MAX_OUTPUT_CHARS:
            raise Refusal(OUTPUT, "the command processor's answer is not bounded JSON text", limit=MAX_OUTPUT_CHARS)
        try:
            result = json.loads(answer)
        except (ValueError, RecursionError):
            raise Refusal(OUTPUT, "the command processor's answer is not JSON") from None
        if not isinstance(result, dict) or result.get("ok") is not True:
            why = result.get("why") if isinstance(result, dict) else None
            if why == "memory":
                raise self._sandbox.out_of_memory()
            raise Refusal(EXECUTION, _FAILURES.get(str(why), "the command processor failed"), reason=str(why))
        return result.get("commands")


def _text_of(value: quickjs.Value) -> Any:
    encoded = value.json()
    return json.loads(encoded) if encoded is not None else None


class Machines:
    """The scripts of this process by key; one that ran out of memory starts afresh."""

    def __init__(self, prelude: str, clock: Clock) -> None:
        self._prelude, self._clock = prelude, clock
        self._vms: dict[str, tuple[CardVM, str, str | None]] = {}

    def start(self, key: str, source: str, gate_global: str | None) -> int:
        vm = CardVM(self._prelude, source, gate_global, self._clock)
        self._vms[key] = (vm, source, gate_global)
        return vm.listener_count

    def process(self, key: str, payload: str) -> Any:
        held = self._vms.get(key)
        if held is None:
            raise Unknown(key)
        vm, source, gate_global = held
        if vm.broken:
            del self._vms[key], held, vm  # the old engine goes before the new one is made
            self.start(key, source, gate_global)
            vm = self._vms[key][0]
        return vm.process(payload)

    def drop(self, key: str) -> None:
        self._vms.pop(key, None)


def frame(header: dict[str, Any], body: str) -> bytes:
    """A request as the engine process reads it: ``header`` as a JSON line, then ``body``."""
    data = body.encode("utf-8", "surrogatepass")
    return json.dumps({**header, "size": len(data)}, ensure_ascii=False).encode() + b"\n" + data


def _frames(requests: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """The requests of ``requests`` (a binary stream) until it ends."""
    for line in requests:
        header = json.loads(line)
        data = requests.read(header["size"])
        if len(data) < header["size"]:
            return
        yield header, data.decode("utf-8", "surrogatepass")


def serve(requests: Any, answers: Any) -> None:
    """The request loop (until stdin closes)."""
    frames = _frames(requests)
    hello, prelude = next(frames)
    shared = mmap.mmap(hello["cancel"], 8)
    clock = Clock(lambda request: struct.unpack_from("<q", shared)[0] >= request)
    machines = Machines(prelude, clock)
    for request, body in frames:
        if request["op"] == "drop":
            machines.drop(request["key"])
            continue
        clock.request = request["n"]
        try:
            if request["op"] == "start":
                answer: dict[str, Any] = {"ok": machines.start(request["key"], body, request["gate"])}
            else:
                answer = {"ok": machines.process(request["key"], body)}
        except Unknown:
            answer = {"unknown": True}
        except Refusal as refusal:
            answer = {"error": [refusal.code, refusal.message, refusal.details]}
        except Exception as error:  # a fault of the binding: typed, and contained here
            answer = {"error": [EXECUTION, f"the command processor failed: {type(error).__name__}", {}]}
        answer["n"] = request["n"]
        # ASCII: a lone surrogate a script left in a view is escaped, not an encoding error.
        answers.write(json.dumps(answer).encode() + b"\n")
        answers.flush()


if __name__ == "__main__":
    sys.setrecursionlimit(10_000)
    serve(sys.stdin.buffer, sys.stdout.buffer)
