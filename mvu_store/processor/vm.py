"""A card's processor script, started in a sandbox of its own. Worker thread only.

Start-up: the prelude, the declaration's gate global (if it names one), the card's source, then
``global_Mvu_initialized``; the script must have registered at least one ``COMMAND_PARSED``
listener by then (else ``MVU_COMMAND_HOOK_REGISTRATION``). Each turn is one call with JSON text
in and JSON text out.
"""

from __future__ import annotations

import json
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.processor.engine import Cancel, Sandbox
from mvu_store.processor.prelude import PRELUDE

MAX_OUTPUT_CHARS = 8 * 1024 * 1024
_FAILURES = {
    "threw": "a COMMAND_PARSED listener threw",
    "async": "a COMMAND_PARSED listener returned a promise: async listeners are refused",
    "baseline": "a COMMAND_PARSED listener changed the variables, which are read-only",
    "busy": "the command processor was entered again while it ran",
}


class CardVM:
    def __init__(self, source: str, gate_global: str | None, cancel: Cancel) -> None:
        self._sandbox = sandbox = Sandbox()
        api: Any = sandbox.enter(lambda context: context.eval(PRELUDE), cancel)
        self._process = api.get("process")
        if gate_global is not None:
            gate = api.get("gate")
            sandbox.enter(lambda context: gate(gate_global), cancel)
        sandbox.enter(lambda context: context.eval(source), cancel)
        initialized = api.get("initialized")
        count = sandbox.enter(lambda context: initialized(), cancel)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise MvuError(Code.COMMAND_HOOK_REGISTRATION,
                           "the script registered no Mvu.events.COMMAND_PARSED listener")
        self.listener_count = count

    @property
    def broken(self) -> bool:
        """Whether the engine was discarded (out of memory): a new VM is needed."""
        return self._sandbox.broken

    def process(self, payload: str, cancel: Cancel) -> Any:
        """One turn: the payload's JSON text in; out, the commands as the listeners left them
        (any JSON value: the caller checks it)."""
        process = self._process
        answer = self._sandbox.enter(lambda context: process(payload), cancel)
        if not isinstance(answer, str) or len(answer) > MAX_OUTPUT_CHARS:
            raise MvuError(Code.COMMAND_HOOK_OUTPUT, "the command processor's answer is not bounded JSON text",
                           limit=MAX_OUTPUT_CHARS)
        try:
            result = json.loads(answer)
        except (ValueError, RecursionError):
            raise MvuError(Code.COMMAND_HOOK_OUTPUT, "the command processor's answer is not JSON") from None
        if not isinstance(result, dict) or result.get("ok") is not True:
            why = result.get("why") if isinstance(result, dict) else None
            if why == "memory":
                raise self._sandbox.out_of_memory()
            raise MvuError(Code.COMMAND_HOOK_EXECUTION, _FAILURES.get(str(why), "the command processor failed"),
                           reason=str(why))
        return result.get("commands")
