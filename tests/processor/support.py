"""Card scripts and a service for the command processor tests.

``helper(body)`` is the shape of a real card's Helper script: it registers a ``COMMAND_PARSED``
listener ``(variables, commands, text) => { body }`` with ``eventMakeLast`` inside an
``eventOn('global_Mvu_initialized', ...)`` listener, and also registers at once (guarded by a
flag), as Tavern Helper scripts do when they may load after initialisation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.processor.declaration import Declaration
from mvu_store.processor.port import ProcessorTurn
from mvu_store.processor.registry import CardProcessors
from mvu_store.service import MvuService

RESOURCE = "mvu:test"
SESSION = "s"


def helper(body: str) -> str:
    return ("let registered = false;\n"
            "function register() {\n"
            "  if (registered) return;\n"
            "  registered = true;\n"
            "  eventMakeLast(Mvu.events.COMMAND_PARSED, (variables, commands, text) => {\n"
            f"    {body}\n"
            "  });\n"
            "}\n"
            "eventOn('global_Mvu_initialized', register);\n"
            "register();\n")


PASS = helper("")


def processor_turn(resource_id: str, seq: int, text: str) -> ProcessorTurn:
    """A reply of session ``s`` to ``resource_id`` at ``seq``, as the pipeline hands it over."""
    return ProcessorTurn(resource_id=resource_id, session_id="s", turn=1, message_seq=seq, text=text,
                         variables={"stat_data": {"hp": 1, "name": "a"}})


def code_of(error: BaseException) -> str:
    assert isinstance(error, MvuError)
    return error.code


class Interposed(CardProcessors):
    """Card processors that run ``after`` once, right after the next turn's script call returns
    (normally or not) and before the registration is re-checked: where a revocation can land."""

    def __init__(self) -> None:
        super().__init__()
        self.after: Callable[[], Awaitable[None] | None] | None = None
        self.turns = 0

    async def _call(self, request: dict[str, Any], body: str, made: Declaration) -> Any:
        try:
            return await super()._call(request, body, made)
        finally:
            if request["op"] == "process":
                self.turns += 1
                if self.after is not None:
                    action, self.after = self.after, None
                    pending = action()
                    if pending is not None:
                        await pending


def make_service(ledger: Ledger, host: MemoryHost, source: str | None = PASS, *,
                 processors: CardProcessors | None = None, initial: Any = None, **config: Any) -> MvuService:
    """A service with one shared resource ``mvu:test`` (session ``s``, ``hp: 10``) whose
    configured command processor is ``source``."""
    resource: dict[str, Any] = {"id": RESOURCE, "session_ids": [SESSION], "sharing": "shared",
                                "initial": initial if initial is not None else {"stat_data": {"hp": 10}}, **config}
    if source is not None:
        resource["command_source"] = source
    service = MvuService(ledger=ledger, host=host, resources=[resource], processor=processors or CardProcessors())
    host.attach(service)
    if SESSION not in host.session_ids():
        host.create_session(SESSION, created_at=1000)
    return service


async def hp(service: MvuService) -> Any:
    record = await service.read(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert record is not None
    return record.content["stat_data"]["hp"]  # type: ignore[index,call-overload]


async def revision(service: MvuService) -> int:
    record = await service.read(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert record is not None
    return record.revision


def patch(value: int) -> str:
    return f'<JSONPatch>[{{"op":"replace","path":"/hp","value":{value}}}]</JSONPatch>'
