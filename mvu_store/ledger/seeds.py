"""Seeds: fork / swipe / retry tickets (DIGEST F-1 ... F-7), captured and installed atomically.

Installing a seed forks its children (``Resources``) and sets their activation boundaries
(``Selections``) in the same unit of work that marks the ticket installed, so it holds both.
"""

from __future__ import annotations

import dataclasses

from sqlalchemy import and_, bindparam, select, update

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import tables as t
from mvu_store.ledger.blob import Blob
from mvu_store.ledger.query import LEDGER, Query
from mvu_store.ledger.records import SeedChild, SeedRecord
from mvu_store.ledger.resources import Resources
from mvu_store.ledger.rows import columns, record
from mvu_store.ledger.rules import check_text
from mvu_store.ledger.selections import Selections
from mvu_store.ledger.store import Store
from mvu_store.ledger.writer import WriteTx

_sd, _r, _b = t.seeds.c, t.resources.c, t.blobs.c

_PENDING = Query(
    "seed-target-pending",
    lambda: select(_sd.ticket)
    .where(_sd.ledger_id == LEDGER, _sd.target_session_id == bindparam("target"), _sd.installed.is_(False))
    .limit(1),
)
"""An uninstalled seed that targets session ``target``, if there is one."""

_TARGET_TAKEN = Query(
    "seed-target-instance",
    lambda: select(_r.id)
    .where(_r.ledger_id == LEDGER, _r.kind == "instance", _r.session_id == bindparam("target"))
    .limit(1),
)
_SEED = Query(
    "seed",
    lambda: select(*columns(t.seeds, SeedRecord, without=("body",)), _b.body)
    .join(t.blobs, and_(_b.ledger_id == _sd.ledger_id, _b.hash == _sd.body_hash))
    .where(_sd.ledger_id == LEDGER, _sd.ticket == bindparam("ticket")),
)
_INSTALL = Query(
    "seed-install",
    lambda: update(t.seeds)
    .where(_sd.ledger_id == LEDGER, _sd.ticket == bindparam("ticket"), _sd.installed.is_(False))
    .values(installed=True, target_session_id=bindparam("target"), body_hash=bindparam("body_hash")),
)


class Seeds:
    """Capturing seed tickets and installing their children."""

    def __init__(self, store: Store, resources: Resources, selections: Selections) -> None:
        self._store, self._resources, self._selections = store, resources, selections

    async def put_seed(self, ticket: str, *, kind: str, source_session_id: str, target_session_id: str | None,
                       body: dict[str, JsonValue]) -> None:
        """Store a captured seed; a ticket is never reused (``MVU_ID_CONFLICT``).

        A seed that names its target session (a root swipe or retry) is ``MVU_SEED_CONFLICT``
        when another uninstalled seed targets that session or the session already has an
        instance: checked inside the unit, so two concurrent captures cannot both claim it.
        """
        check_text("ticket", ticket, 64)
        check_text("seed kind", kind, 16)
        check_text("session id", source_session_id, t.ID)
        check_text("session id", target_session_id, t.ID)
        blob = Blob.of(body)

        def work(tx: WriteTx) -> None:
            if target_session_id is not None and (
                tx.one(_PENDING, target=target_session_id) is not None
                or tx.one(_TARGET_TAKEN, target=target_session_id) is not None
            ):
                raise MvuError(Code.SEED_CONFLICT, "the target session already has state or a creation intent",
                               session_id=target_session_id)
            self._store.put_blob(tx, blob)
            self._store.insert_row(tx, t.seeds, {
                "ticket": ticket, "position": self._store.next_position(tx, t.seeds, None, None), "kind": kind,
                "source_session_id": source_session_id, "target_session_id": target_session_id,
                "installed": False, "body_hash": blob.hash,
            })

        await self._store.write(work)

    async def seed(self, ticket: str) -> SeedRecord | None:
        row = await self._store.read_one(_SEED, ticket=ticket)
        return None if row is None else record(SeedRecord, row, installed=bool(row["installed"]))

    async def seed_pending(self, target_session_id: str) -> bool:
        """Whether an uninstalled seed ticket targets this session (DIGEST F-5: MVU_SEED_PENDING)."""
        return await self._store.read_one(_PENDING, target=target_session_id) is not None

    async def install_seed(self, ticket: str, *, target_session_id: str, body: dict[str, JsonValue],
                           children: list[SeedChild]) -> None:
        """Install a seed's children and mark it installed, atomically: all of it or nothing.

        A ticket already installed (by anyone) is ``MVU_SEED_CONFLICT``; a child id that exists
        is ``MVU_ID_CONFLICT`` (the child was initialised before its seed).
        """
        check_text("session id", target_session_id, t.ID)
        blob = Blob.of(body)

        def work(tx: WriteTx) -> None:
            self._store.put_blob(tx, blob)
            if tx.execute(_INSTALL, ticket=ticket, target=target_session_id, body_hash=blob.hash).rowcount != 1:
                raise MvuError(Code.SEED_CONFLICT, "the seed is unknown or was already installed", ticket=ticket)
            for child in children:
                self._resources.insert_fork(tx, child.source_id, child.new, child.at_key)
                self._selections.set_activation(tx, child.new.id, target_session_id, child.activation_seq)
                for position, point in enumerate(child.checkpoints):
                    self._resources.insert_checkpoint(tx, dataclasses.replace(
                        point, resource_id=child.new.id, position=position, session_id=target_session_id))

        await self._store.write(work)
