"""Card command processors of a service: one registration per state instance, run before commits.

:class:`CardProcessors` is the service's :class:`~mvu_store.processor.port.CardRegistry`.
For each reply it finds the resource's registration: one the host made with
:meth:`register` (``origin="host"``), else one made on first use from the declaration the
resource's card carries (``origin="card"``). Without either, the commands pass through.

Registration rules:

* at most one active registration per resource; a new one replaces (and deactivates) the old;
* a disposer only removes its own registration, never a newer one;
* a card registration ends when the card no longer carries that declaration (disabled or
  changed: the next reply registers the new one, or none);
* a host registration may come with a source lease (the host's word that the source is still
  the one to run, as the original's resolver gives with its source): once it no longer holds,
  the registration ends, and a reply it was processing is cancelled;
* :meth:`dispose` (the service closing) ends all of them and interrupts running scripts.

A reply's processing re-checks, synchronously after every await (the call into the worker) and
again right before the commit (:meth:`check_current`), that the service is open and the
registration it ran under is still the current one, its source lease included: else
``MVU_COMMAND_HOOK_DISPOSED`` or ``MVU_USAGE_CANCELLED``, both of which leave the reply
unrecorded for a retry. That holds on error exits too: a script failure under a revoked
registration is a cancellation, not a receipt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mvu_store.bounded import BoundedCache, Generations
from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease, holds
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang import Command
from mvu_store.processor.adapter import commands_back, views
from mvu_store.processor.declaration import PROTOCOL_VERSION, Declaration, declaration, utf16_length
from mvu_store.processor.engine import Cancel, Unknown, Worker
from mvu_store.processor.port import ProcessorTurn, Registered
from mvu_store.processor.repair import repairs

MAX_USER_TEXT_UNITS = 64 * 1024
"""UTF-16 code units of the turn's user text the gate may read; longer text is dropped whole."""
_TURNS = 4096
_STARTS = 65_536
"""Resources whose registration starts are counted; one forgotten cancels a start still running."""


@dataclass(eq=False, slots=True)
class Registration:
    resource_id: str
    declaration: Declaration
    origin: Literal["card", "host"]
    listener_count: int
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    lease: Lease | None = None
    """The host's source lease, if it gave one."""
    active: bool = True

    def current(self) -> bool:
        """Still active, and its source lease (if any) still holds."""
        return self.active and (self.lease is None or holds(self.lease))

    def receipt(self) -> dict[str, JsonValue]:
        """Proof of registration only (never of a state change: only a commit proves that)."""
        return {"protocolVersion": PROTOCOL_VERSION, "registered": True, "registrationId": self.id,
                "source": self.declaration.source, "sha256": self.declaration.sha256,
                "listenerCount": self.listener_count}


class CardProcessors:
    def __init__(self) -> None:
        self._worker: Worker | None = None
        self._current: dict[str, Registration] = {}
        # Per resource, a generation each start issues: a start still current sees its own
        # (bounded: a resource forgotten reads as started again, which cancels, never as unchanged).
        self._generation: Generations[str] = Generations(_STARTS)
        self._running: set[Cancel] = set()
        # Per resource: the card registration being started, and its source, which replies that
        # arrive meanwhile with the same source wait for instead of starting their own.
        self._pending: dict[str, tuple[str, asyncio.Future[Registration]]] = {}
        self._used: BoundedCache[tuple[str, str, int], Registration] = BoundedCache(_TURNS)
        self.disposed = False

    # -- registrations ----------------------------------------------------------------------------

    async def register(self, resource_id: str, source: str, *, lease: Lease | None = None) -> Registered:
        """Start ``source`` for ``resource_id`` as the host's registration, replacing the current
        one (``MVU_USAGE_CANCELLED`` if another registration for it was made meanwhile, or
        ``lease`` stopped holding while it started); ``lease``: the host's source lease."""
        made = declaration(source)
        if made is None:
            raise MvuError(Code.COMMAND_HOOK_DECLARATION, "the script declares no command processor "
                           "(eventOn('global_Mvu_initialized', ...) and Mvu.events.COMMAND_PARSED)")
        if lease is not None and not callable(lease):
            raise MvuError(Code.CONFIG, "a source lease is a function answering True while the source holds")
        if lease is not None and not holds(lease):
            raise MvuError(Code.USAGE_CANCELLED, "the command processor's source lease does not hold", id=resource_id)
        registration = await self._start(resource_id, made, "host", lease)
        return Registered(registration.receipt(), lambda: self._drop(registration))

    async def _start(self, resource_id: str, made: Declaration, origin: Literal["card", "host"],
                     lease: Lease | None = None) -> Registration:
        self._alive()
        self._generation.bump(resource_id)
        generation = self._generation.generation(resource_id)
        key = str(uuid.uuid4())
        try:
            count = await self._begin(key, made)
        except MvuError:
            self._still_starting(resource_id, generation)  # a revoked start is a cancellation, not a failure
            raise
        try:
            self._still_starting(resource_id, generation)
        except MvuError:
            self._release(key, made)
            raise
        registration = Registration(resource_id, made, origin, count, key, lease)
        if not registration.current():
            self._release(key, made)
            raise MvuError(Code.USAGE_CANCELLED, "the command processor's source lease ended while it started",
                           id=resource_id)
        old = self._current.get(resource_id)
        if old is not None:
            self._drop(old)
        self._current[resource_id] = registration
        return registration

    def _still_starting(self, resource_id: str, generation: int) -> None:
        self._alive()
        if self._generation.generation(resource_id) != generation:
            raise MvuError(Code.USAGE_CANCELLED, "the command processor was registered again meanwhile",
                           id=resource_id)

    def _drop(self, registration: Registration) -> None:
        """End ``registration``; a newer one for the same resource is left alone."""
        if self._current.get(registration.resource_id) is registration:
            del self._current[registration.resource_id]
        registration.active = False
        self._release(registration.id, registration.declaration)

    def _release(self, key: str, made: Declaration) -> None:
        if self._worker is not None:
            self._worker.send({"op": "drop", "key": key}, made.sha256)

    async def _begin(self, key: str, made: Declaration) -> int:
        """Start ``made`` in the engine process under ``key``; its listener count."""
        count: int = await self._call({"op": "start", "key": key, "gate": made.gate_global}, made.source, made)
        return count

    def receipt(self, resource_id: str) -> dict[str, JsonValue] | None:
        registration = self._current.get(resource_id)
        return registration.receipt() if registration is not None and registration.current() else None

    def claims(self, resource_id: str, command_source: str | None) -> bool:
        """Whether a reply to ``resource_id`` goes through a card's script."""
        return resource_id in self._current or command_source is not None

    def dispose(self) -> None:
        """End every registration and interrupt every running script (``MVU_COMMAND_HOOK_DISPOSED``)."""
        self.disposed = True
        for cancel in list(self._running):
            cancel.cancel(Code.COMMAND_HOOK_DISPOSED)
        for registration in list(self._current.values()):
            self._drop(registration)
        if self._worker is not None:
            self._worker.close()

    # -- one reply --------------------------------------------------------------------------------

    async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
        registration = await self._registration(turn.resource_id, turn.command_source)
        if registration is None:
            self._used.pop(_key(turn))  # an earlier, cancelled try of this reply ran under one
            return commands
        repaired = repairs(turn.text) if not commands else ()
        user_text = turn.user_text if utf16_length(turn.user_text) <= MAX_USER_TEXT_UNITS else ""
        payload = json.dumps({"variables": turn.variables, "commands": views(commands), "text": turn.text,
                              "userText": user_text}, ensure_ascii=False)
        self._used.put(_key(turn), registration)
        try:
            request = {"op": "process", "key": registration.id}
            try:
                result = await self._call(request, payload, registration.declaration)
            except Unknown:
                # The engine process was replaced (the old one ended): the script starts again there.
                registration.listener_count = await self._begin(registration.id, registration.declaration)
                self._check(registration)
                result = await self._call(request, payload, registration.declaration)
        except MvuError:
            self._check(registration)  # a revoked registration turns any failure into a cancellation
            raise
        self._check(registration)
        return commands_back(result, commands or tuple(repair.command for repair in repaired), repaired)

    def check_current(self, turn: ProcessorTurn) -> None:
        """Synchronously before the commit: the registration the reply ran under still stands."""
        registration = self._used.get(_key(turn))
        if registration is not None:
            self._check(registration)

    async def registered(self, resource_id: str, command_source: str | None) -> dict[str, JsonValue] | None:
        """The resource's receipt, registering the card's declaration first if it has none yet
        (a read, as the original's reads do: the script starts once, and every read after it
        shows the same registration). A script that cannot start shows no receipt here; the
        reply that needs it fails with the reason."""
        with contextlib.suppress(MvuError):
            await self._registration(resource_id, command_source)
        return self.receipt(resource_id)

    async def _registration(self, resource_id: str, command_source: str | None) -> Registration | None:
        current = self._current.get(resource_id)
        if current is not None and not current.current():
            self._drop(current)  # the host's source lease ended: its source is no longer the one to run
            current = None
        if current is not None and (current.origin == "host" or current.declaration.source == command_source):
            return current
        if current is not None:
            self._drop(current)  # the card no longer carries that declaration
        if command_source is None:
            return None
        pending = self._pending.get(resource_id)
        if pending is not None and pending[0] == command_source:
            return await asyncio.shield(pending[1])
        made = declaration(command_source)
        if made is None:
            raise MvuError(Code.COMMAND_HOOK_DECLARATION, "the card's command processor is not a declaration")
        started = asyncio.ensure_future(self._start(resource_id, made, "card"))
        entry = self._pending[resource_id] = (made.source, started)
        try:
            # Shielded: a waiter that is cancelled does not cancel the start the others wait for.
            return await asyncio.shield(started)
        finally:
            if self._pending.get(resource_id) is entry:
                del self._pending[resource_id]

    def _check(self, registration: Registration) -> None:
        self._alive()
        if registration.active and not registration.current():
            self._drop(registration)  # its source lease ended
        if not registration.active or self._current.get(registration.resource_id) is not registration:
            raise MvuError(Code.USAGE_CANCELLED, "the command processor was replaced or removed meanwhile",
                           id=registration.resource_id)

    def _alive(self) -> None:
        if self.disposed:
            raise MvuError(Code.COMMAND_HOOK_DISPOSED, "the service's command processors were disposed")

    async def _call(self, request: dict[str, Any], body: str, made: Declaration) -> Any:
        """``request`` in the engine process, in its turn among the requests of ``made``'s
        script (every card's script gets its share of the engine, :mod:`~mvu_store.processor.engine`)."""
        if self._worker is None:
            self._worker = Worker()
        cancel = Cancel()
        self._running.add(cancel)
        try:
            return await self._worker.call(request, body, cancel, made.sha256)
        finally:
            self._running.discard(cancel)


def _key(turn: ProcessorTurn) -> tuple[str, str, int]:
    return turn.resource_id, turn.session_id, turn.message_seq
