"""The processor slot of the turn pipeline: what may filter a reply's commands before they run.

The pipeline parses a reply once, hands the parsed commands, in text order, to the service's
:class:`CommandProcessor`, and runs what it returns on every compare-and-swap attempt. The default
processor passes the commands through; a card's command processor (a Helper script run in a
sandbox, :mod:`mvu_store.processor`) plugs in here. A processor may only filter: what it
returns must be some of the commands it was given, in their original order (new writes, changed
values and reordering are refused); for a reply with no command at all, the one narrow repair of
its text (:func:`mvu_store.processor.repair.repairs`) is what it may filter. A processor that
raises, or returns something other than commands of this reply, leaves a failed receipt: the
state unchanged, the reply consumed.

The protocols both sides share live in the processor's port (:mod:`mvu_store.processor.port`);
here are the service's uses of them. A processor that can be revoked while a reply is on its way
(a card's registration) also implements :class:`~mvu_store.processor.port.Revocable`: the
pipeline asks it again right before the commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TypeGuard

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang import Command
from mvu_store.processor.port import CommandProcessor, ProcessorTurn, Revocable
from mvu_store.processor.repair import repairs
from mvu_store.service.catalog import Entry
from mvu_store.service.offload import off_loop
from mvu_store.service.openings import card_template_id_of
from mvu_store.service.session_view import LedgerReads


def revocable(processor: CommandProcessor) -> TypeGuard[Revocable]:
    """Whether ``processor`` is :class:`Revocable`, asked of its class once: ``isinstance``
    against a protocol looks up every member of the protocol on each call (tens of microseconds
    for a processor that is not one), and every turn asks."""
    return _revocable_class(type(processor))


@cache  # one entry per processor class: bounded by the program, not by its input
def _revocable_class(kind: type[CommandProcessor]) -> bool:
    return issubclass(kind, Revocable)


def claims(processor: CommandProcessor, resource_id: str, command_source: str | None) -> bool:
    return revocable(processor) and processor.claims(resource_id, command_source)


def check_current(processor: CommandProcessor, turn: ProcessorTurn | None) -> None:
    if turn is not None and revocable(processor):
        processor.check_current(turn)


async def registered_receipt(processor: CommandProcessor, entry: Entry,
                             reads: LedgerReads) -> dict[str, JsonValue] | None:
    """The receipt a read shows: the card's declaration is registered on the first read (C-1)."""
    if not revocable(processor):
        return None
    if not entry.takes_replies or entry.row is None:
        return processor.receipt(entry.id)
    source, _ = await command_source(entry, reads)
    return await processor.registered(entry.id, source)


async def command_source(entry: Entry, reads: LedgerReads) -> tuple[str | None, str | None]:
    """The command processor declaration the resource's card carries now, or the code it was
    refused with. An instance follows its card's current template, not the copy it was made
    from: disabling, changing or enabling the card's script (a new discovery) changes what runs
    for the sessions already playing it (C-1)."""
    definition = entry.definition
    template_id = definition.get("templateId")
    if isinstance(template_id, str):
        template = await reads.template(card_template_id_of(template_id))
        if isinstance(template, dict):
            definition = template
    source, refused = definition.get("commandSource"), definition.get("commandSourceError")
    return (source if isinstance(source, str) else None), (refused if isinstance(refused, str) else None)


class PassThrough:
    """The default processor: every parsed command runs, in text order."""

    async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
        return commands


async def processed(processor: CommandProcessor, commands: tuple[Command, ...],
                    turn: ProcessorTurn) -> list[Command]:
    """Run the processor; what it returns must be this reply's commands filtered, in order
    (else ``MVU_COMMAND_HOOK_OUTPUT``); a failure inside it is ``MVU_COMMAND_HOOK_EXECUTION``."""
    try:
        result = await processor.process(commands, turn)
    except MvuError:
        raise
    except Exception as error:  # a processor is foreign code: any failure is its own, typed
        raise MvuError(Code.COMMAND_HOOK_EXECUTION, f"the command processor failed: {type(error).__name__}",
                       resource_id=turn.resource_id) from error
    if isinstance(result, (str, bytes)) or not isinstance(result, Sequence):
        raise MvuError(Code.COMMAND_HOOK_OUTPUT, "the command processor must return a sequence of commands",
                       resource_id=turn.resource_id)
    chosen = list(result)
    # The repairs parse the reply's text again (up to a megabyte): in a worker thread.
    offered = commands or (tuple(repair.command for repair in await off_loop(lambda: repairs(turn.text)))
                           if chosen else ())
    remaining = iter(offered)
    # Each chosen command must be found after the previous one: a filtered subsequence.
    if not all(isinstance(command, Command) and any(command == offered for offered in remaining)
               for command in chosen):
        raise MvuError(Code.COMMAND_HOOK_OUTPUT, "the command processor may only filter the reply's commands, "
                                                 "in their order", resource_id=turn.resource_id)
    return chosen
