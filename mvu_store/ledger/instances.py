"""A session's selection and its instances: the writes of allocation (DIGEST I-2 ... I-5).

Each is one unit of work: what a session selected moves with the activation boundaries it sets,
and an instance is created with its boundary, so a reader never sees one without the other.
"""

from __future__ import annotations

from mvu_store.errors import Code, MvuError
from mvu_store.ledger.records import NewResource
from mvu_store.ledger.resources import Resources
from mvu_store.ledger.selections import Selections
from mvu_store.ledger.store import Store
from mvu_store.ledger.writer import WriteTx


class Instances:
    """Recording selections and creating instances, each with its activation boundary."""

    def __init__(self, store: Store, resources: Resources, selections: Selections) -> None:
        self._store, self._resources, self._selections = store, resources, selections

    async def record_selection(self, session_id: str, template_id: str | None, *, instance_id: str | None,
                               boundary: int) -> None:
        """Record the template ``session_id`` selected (None: an explicit unselect); a selected
        template, and the session's instance of it (``instance_id``) when it exists, become
        active from event ``boundary``."""

        def work(tx: WriteTx) -> None:
            self._selections.set_selection(tx, session_id, template_id)
            if template_id is None:
                return
            self._selections.set_activation(tx, template_id, session_id, boundary)
            if instance_id is not None and self._resources.resource_exists(tx, instance_id):
                self._selections.set_activation(tx, instance_id, session_id, boundary)

        await self._store.write(work)

    async def create_instance(self, new: NewResource, *, boundary: int) -> None:
        """Create the instance ``new`` of its session, active from event ``boundary``
        (``MVU_ID_CONFLICT`` when it exists)."""
        session_id = new.session_id
        if session_id is None:
            raise MvuError(Code.OPERATION, f"instance {new.id!r} names no session", id=new.id)

        def work(tx: WriteTx) -> None:
            self._resources.insert_resource(tx, new)
            self._selections.set_activation(tx, new.id, session_id, boundary)

        await self._store.write(work)
