"""The processor port: what the turn pipeline and a command processor agree on, and nothing more.

It sits at the bottom of the processor package (it imports neither the package's engine nor the
service), so the service depends on this port and the card processors implement it, with no
cycle between the two. Three shapes, each a capability the service asks for by protocol, never
by a concrete class:

* :class:`CommandProcessor`: any processor filters a reply's commands (the one required method);
* :class:`Revocable`: one whose decision can be revoked while a reply is on its way (a card's
  registration) is asked again right before the commit;
* :class:`CardRegistry`: one that runs cards' scripts under registrations the host may make and
  that end when the service closes. Its scripts receive a turn's variables serialised (never
  kept, never changed), so it is handed the head itself where any other processor gets a
  private copy (C-2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from mvu_store.host import Lease
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang import Command


@dataclass(frozen=True, slots=True)
class ProcessorTurn:
    """What a processor may know of the reply it filters (never more than the pipeline has)."""

    resource_id: str
    session_id: str
    turn: int
    message_seq: int
    text: str
    variables: JsonValue
    """The envelope the reply was decided on (the head at the decision): a private copy, which a
    processor may change without touching the state (C-2). A :class:`CardRegistry` gets the head
    itself, which it only serialises."""
    user_text: str = ""
    """The user's own text of the same turn (its last user message before the reply), or ''."""
    command_source: str | None = None
    """The command processor declaration the resource's card (or configuration) carries."""


@dataclass(frozen=True, slots=True)
class Registered:
    """A host registration: its receipt, and the disposer that removes this registration only."""

    receipt: dict[str, JsonValue]
    dispose: Callable[[], None]


@runtime_checkable
class CommandProcessor(Protocol):
    async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
        """The commands to run: ``commands`` filtered, in their original order."""
        ...


@runtime_checkable
class Revocable(Protocol):
    def claims(self, resource_id: str, command_source: str | None) -> bool:
        """Whether replies to the resource go through this processor (so a reply without a
        command, but with a repairable update, is worth processing)."""
        ...

    def check_current(self, turn: ProcessorTurn) -> None:
        """Synchronously before the commit: raise if what processed ``turn`` was revoked since."""
        ...

    def receipt(self, resource_id: str) -> dict[str, JsonValue] | None:
        """The resource's registration receipt, for its records (None: none)."""
        ...

    async def registered(self, resource_id: str, command_source: str | None) -> dict[str, JsonValue] | None:
        """:meth:`receipt`, after registering ``command_source`` if nothing is registered yet."""
        ...


@runtime_checkable
class CardRegistry(Revocable, Protocol):
    async def register(self, resource_id: str, source: str, *, lease: Lease | None = None) -> Registered:
        """Run ``source`` for ``resource_id`` as the host's registration, replacing the current one."""
        ...

    def dispose(self) -> None:
        """End every registration and interrupt every running script."""
        ...
