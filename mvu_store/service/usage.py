"""Usage policy, management and observers (DIGEST I-8, A-3, A-4, F-4).

A trusted host registers usage handlers; with a ``dsh-memory-manager`` registration every source
is *managed*: a reply runs only on an explicit decision (no fallback to native); without one it
runs natively. A decision is valid for the registration epoch it was made in: registering or
removing a handler while a decision is pending cancels the commit (``MVU_USAGE_CANCELLED``).
Observers receive the facts after they are written; they never take part in a transaction and a
failing observer never fails anything.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease, holds
from mvu_store.jsonvalue import JsonValue, normalize
from mvu_store.service.validation import validate_strategy

MANAGER_PROVIDER = "dsh-memory-manager"

UsageHandler = Callable[[dict[str, Any]], Any]
"""Receives ``{on, id, scope, event, managementMode, variables}``; returns None (no opinion) or
``{enabled, configRevision?, strategy?, reason?, checkCurrent?}``, directly or as an awaitable;
``checkCurrent``, a synchronous function, answers True while the decision still stands."""

Observer = Callable[[dict[str, JsonValue]], Any]
Dispose = Callable[[], None]

log = logging.getLogger("mvu_store.usage")


@dataclass(frozen=True, slots=True)
class Decision:
    enabled: bool
    config_revision: JsonValue
    epoch: int
    decided: bool
    reason: str | None = None
    leases: tuple[Lease, ...] = ()
    """The handlers' own leases on their answers (``checkCurrent``)."""


@dataclass(eq=False, slots=True)
class _Registration:
    handler: UsageHandler
    provider_id: str | None


class Usage:
    """The registered usage handlers and observers of one service."""

    def __init__(self) -> None:
        self._handlers: list[_Registration] = []
        self._observers: list[Observer] = []
        # Async listeners run as tasks of their own (kept here until done), never awaited inside
        # the session's work: a listener that reads the session would otherwise wait for itself.
        self._listening: set[asyncio.Task[None]] = set()
        self.epoch = 0
        self._changed = asyncio.Event()
        """Set (and replaced) when the registrations change: pending decisions stop waiting."""

    # -- registration -----------------------------------------------------------------------------

    def register(self, handler: UsageHandler, provider_id: str | None = None) -> Dispose:
        if not callable(handler):
            raise MvuError(Code.USAGE, "a usage handler must be callable")
        if provider_id is not None and (not isinstance(provider_id, str) or not provider_id):
            raise MvuError(Code.USAGE, "provider_id must be a non-empty string")
        registration = _Registration(handler, provider_id)
        self._handlers.append(registration)
        self._next_epoch()

        def dispose() -> None:
            if registration in self._handlers:
                self._handlers.remove(registration)
                self._next_epoch()

        return dispose

    def _next_epoch(self) -> None:
        """A registration changed: decisions pending under the old ones are cancelled now."""
        self.epoch += 1
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def managed(self) -> bool:
        """Whether a memory manager is registered: then sources are ``managed`` (I-8)."""
        return any(item.provider_id == MANAGER_PROVIDER for item in self._handlers)

    def mode(self) -> str:
        return "managed" if self.managed else "native"

    def check_epoch(self, decision: Decision) -> None:
        """Synchronously, just before a commit: the registrations the decision saw still stand,
        and so does every handler's answer that came with a lease."""
        if decision.epoch != self.epoch:
            raise MvuError(Code.USAGE_CANCELLED, "a usage handler was registered or removed during the decision")
        if not all(holds(lease) for lease in decision.leases):
            raise MvuError(Code.USAGE_CANCELLED, "a usage handler's decision no longer holds (its checkCurrent)")

    # -- decisions --------------------------------------------------------------------------------

    async def decide(self, on: str, *, resource_id: str, scope: dict[str, JsonValue], event: dict[str, JsonValue],
                     variables: JsonValue, signal: asyncio.Event | None = None) -> Decision:
        """Ask every handler; all must enable. A managed source needs the manager's own decision:
        another handler's answer never stands in for it."""
        epoch, mode, answers = await self.answers(on, resource_id=resource_id, scope=scope, event=event,
                                                  variables=variables, signal=signal)
        enabled, decided, config_revision, reason = True, False, None, None
        leases: list[Lease] = []
        for provider_id, answer in answers:
            if answer is None:
                continue
            if lease_of(answer) is not None:  # None, as no key, gives no lease
                lease = sync_lease(answer)
                if lease is None:
                    raise MvuError(Code.USAGE, "a decision's checkCurrent is a synchronous function")
                leases.append(lease)
            decided = decided or mode != "managed" or provider_id == MANAGER_PROVIDER
            enabled = enabled and answer["enabled"]
            revision = answer.get("configRevision", answer.get("config_revision"))
            config_revision = revision if revision is not None else config_revision
            if isinstance(answer.get("reason"), str):
                reason = answer["reason"][:300]
        return Decision(enabled and (mode != "managed" or decided), config_revision, epoch, decided, reason,
                        tuple(leases))

    async def answers(self, on: str, *, resource_id: str, scope: dict[str, JsonValue], event: dict[str, JsonValue],
                      variables: JsonValue, signal: asyncio.Event | None = None,
                      ) -> tuple[int, str, list[tuple[str | None, dict[str, Any] | None]]]:
        """Every registered handler's answer (None: no opinion), each checked for its shape and
        strategy, with the registration epoch and management mode they were asked under."""
        epoch, changed = self.epoch, self._changed
        mode = self.mode()
        answers: list[tuple[str | None, dict[str, Any] | None]] = []
        for registration in list(self._handlers):
            request = {"on": on, "id": resource_id, "scope": scope, "event": event, "managementMode": mode}
            request = normalize(request)[0]
            assert isinstance(request, dict)
            request["variables"] = normalize(variables)[0]
            try:
                answer = registration.handler(request)
                if inspect.isawaitable(answer):
                    answer = await _unless_changed(answer, changed, signal)
            except MvuError:
                self._cancelled_since(epoch)
                raise
            except Exception as error:
                self._cancelled_since(epoch)
                raise MvuError(Code.USAGE, f"the usage handler failed: {type(error).__name__}") from None
            self._cancelled_since(epoch)
            if answer is not None:
                if not isinstance(answer, dict) or not isinstance(answer.get("enabled"), bool):
                    raise MvuError(Code.USAGE, "a usage decision is None or {enabled: bool, ...}")
                validate_strategy(on, answer.get("strategy"))
            answers.append((registration.provider_id, answer))
        return epoch, mode, answers

    def _cancelled_since(self, epoch: int) -> None:
        if self.epoch != epoch:
            raise MvuError(Code.USAGE_CANCELLED, "a usage handler was registered or removed during the decision")

    # -- observers --------------------------------------------------------------------------------

    def observe(self, listener: Observer) -> Dispose:
        if not callable(listener):
            raise MvuError(Code.USAGE, "an observer must be callable")
        self._observers.append(listener)

        def dispose() -> None:
            if listener in self._observers:
                self._observers.remove(listener)

        return dispose

    async def notify(self, facts: list[dict[str, JsonValue]]) -> None:
        """Give each observer its own copy of each fact; an observer's failure is only logged.
        An awaitable a listener returns runs on its own, outside the caller's lock."""
        for listener in list(self._observers):
            for fact in facts:
                try:
                    result = listener(dict(fact))
                    if inspect.isawaitable(result):
                        task = asyncio.ensure_future(_guarded(result))
                        self._listening.add(task)
                        task.add_done_callback(self._listening.discard)
                except Exception as error:  # an observer can never fail what it observed
                    log.warning("observer failed: %r", error)


def lease_of(answer: dict[str, Any]) -> Any:
    """A handler's ``checkCurrent`` (or ``check_current``) as it gave it; None: none."""
    return answer.get("checkCurrent", answer.get("check_current"))


def sync_lease(answer: dict[str, Any]) -> Lease | None:
    """A handler's lease on its answer (``checkCurrent``), when it gives a synchronous function."""
    lease = lease_of(answer)
    if not callable(lease) or inspect.iscoroutinefunction(lease):
        return None
    return lease  # type: ignore[no-any-return]


async def _unless_changed(answer: Awaitable[Any], changed: asyncio.Event, signal: asyncio.Event | None) -> Any:
    """The handler's answer, unless the registrations change or the caller cancels first: then
    the pending handler is cancelled and so is the decision (removing a handler cancels
    uncommitted work, A-3)."""
    task = asyncio.ensure_future(answer)
    stops = [asyncio.ensure_future(changed.wait())]
    if signal is not None:
        stops.append(asyncio.ensure_future(signal.wait()))
    try:
        await asyncio.wait([task, *stops], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for stop in stops:
            stop.cancel()
    if task.done():
        return task.result()
    task.cancel()
    if signal is not None and signal.is_set():
        raise asyncio.CancelledError("cancelled by the caller's signal")
    raise MvuError(Code.USAGE_CANCELLED, "a usage handler was registered or removed during the decision")


async def _guarded(result: Awaitable[Any]) -> None:
    try:
        await result
    except asyncio.CancelledError:
        raise
    except Exception as error:
        log.warning("observer failed: %r", error)
