"""The processor slot of the turn pipeline: what may filter a reply's commands before they run.

The pipeline parses a reply once, hands the parsed commands, in text order, to the service's
:class:`CommandProcessor`, and runs what it returns on every compare-and-swap attempt. The default
processor passes the commands through; a card's command processor (a Helper script run in a
sandbox) plugs in here. A processor may only filter: what it returns must be some of the
commands it was given, in their original order (new writes, changed values and reordering are
refused). A processor that raises, or returns something other than commands of
this reply, leaves a failed receipt: the state unchanged, the reply consumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from mvu_store.errors import Code, MvuError
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
    """The envelope the reply was decided on (the head at the decision)."""


@runtime_checkable
class CommandProcessor(Protocol):
    async def process(self, commands: tuple[Command, ...], turn: ProcessorTurn) -> Sequence[Command]:
        """The commands to run: ``commands`` filtered, in their original order."""
        ...


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
    remaining = iter(commands)
    # Each chosen command must be found after the previous one: a filtered subsequence.
    if not all(isinstance(command, Command) and any(command == offered for offered in remaining)
               for command in chosen):
        raise MvuError(Code.COMMAND_HOOK_OUTPUT, "the command processor may only filter the reply's commands, "
                                                 "in their order", resource_id=turn.resource_id)
    return chosen
