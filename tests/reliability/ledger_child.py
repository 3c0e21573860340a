"""Child processes for the reliability tests (run with ``sys.executable``, never imported by pytest).

``crash URL LEDGER_ID RESOURCES``
    Imports, then waits for one line on standard input: PENDING, JSON ``[[resource, revision],
    ...]``, the commits that were in flight when the last child was killed (so the parent can
    start the next child while the current one runs, and the import time is hidden). Then opens
    the ledger LEDGER_ID at URL (SQLite or PostgreSQL) through the public async API, creates the resources named in
    RESOURCES (comma separated) when missing, prints ``READY``, retries PENDING, and commits
    forever: one task per resource, each a CAS chain. Before a
    commit it prints ``BEGIN r n``; once ``commit`` has returned (the commit is acknowledged,
    hence durable) it prints ``ACK r n``. Now and then it replays an acknowledged operation
    (``REPLAY r n``), sends a stale expected revision (``STALE r n``) to exercise the refusal
    paths between real commits, or forks the resource at the version it just committed
    (``FORKBEGIN fork-r-n`` / ``FORKED fork-r-n``). The parent kills it with SIGKILL at a random moment.

``increment DB RESOURCE COUNT``
    Adds 1 to ``variables["counter"]`` of RESOURCE, COUNT times, with read-head + CAS commit and
    retries on ``REVISION_CONFLICT`` / ``MVU_STORAGE_BUSY``. DB is an SQLite file's path or a
    database URL. Prints ``DONE <successes> <conflicts>``.

Every commit's content is a pure function of (resource, revision), so the parent can check any
row it finds without having been told about it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import sys
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import CommitRequest, Ledger, NewResource, open_ledger


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def state(resource: str, revision: int) -> dict[str, Any]:
    """The variables committed at ``revision`` of ``resource`` (sizes vary: 0.3 to 3.3 KiB)."""
    digest = hashlib.sha256(f"{resource}/{revision}".encode()).hexdigest()
    pad = (int(digest[:4], 16) % 3_000) + 100
    return {"stat_data": {"resource": resource, "n": revision, "digest": digest, "pad": digest[0] * pad}}


def operation_id(resource: str, revision: int) -> str:
    return f"op-{resource}-{revision}"


def fingerprint(resource: str, revision: int) -> str:
    return hashlib.sha256(f"fp/{resource}/{revision}".encode()).hexdigest()


def request(resource: str, revision: int) -> CommitRequest:
    """The commit that takes ``resource`` from ``revision - 1`` to ``revision``."""
    return CommitRequest(
        resource_id=resource,
        expected_revision=revision - 1,
        kind="manual",
        variables=state(resource, revision),
        fingerprint=fingerprint(resource, revision),
        source={"by": "crash-child", "n": revision, "manual": True},
        operation_id=operation_id(resource, revision),
    )


def new_resource(resource: str, initial: dict[str, Any] | None = None) -> NewResource:
    return NewResource(id=resource, kind="instance", initial=initial or state(resource, 0), definition={"t": 1})


async def ensure(ledger: Ledger, resource: str, initial: dict[str, Any] | None = None) -> None:
    if await ledger.resource(resource) is not None:
        return
    try:
        await ledger.create_resource(new_resource(resource, initial))
    except MvuError as error:  # another process created it first
        if error.code != Code.ID_CONFLICT:
            raise


async def chain(ledger: Ledger, resource: str, rng: random.Random) -> None:
    while True:
        head = await ledger.head(resource)
        revision = head.revision + 1
        emit(f"BEGIN {resource} {revision}")
        outcome = await ledger.commit(request(resource, revision))
        if outcome.revision != revision or outcome.replayed:
            emit(f"BAD {resource} {revision} {outcome}")
            raise SystemExit(3)
        emit(f"ACK {resource} {revision}")
        roll = rng.random()
        if roll < 0.05:
            # A fork at the version just committed: one row that links to the parent's history.
            fork_id = f"fork-{resource}-{revision}"
            emit(f"FORKBEGIN {fork_id}")
            await ledger.fork(resource, new_resource(fork_id, state(resource, 0)), at_key=outcome.version_key)
            emit(f"FORKED {fork_id}")
        elif roll < 0.1:
            # A client retrying an acknowledged request gets the stored result, nothing new.
            again = await ledger.commit(request(resource, revision))
            if not again.replayed or again.revision != revision:
                emit(f"BAD replay {resource} {revision} {again}")
                raise SystemExit(3)
            emit(f"REPLAY {resource} {revision}")
        elif roll < 0.2:
            stale = request(resource, revision)  # expects revision - 1: stale, new operation id
            stale = CommitRequest(**{**_fields(stale), "operation_id": f"stale-{resource}-{revision}",
                                     "fingerprint": "0" * 64})
            try:
                await ledger.commit(stale)
            except MvuError as error:
                if error.code != Code.REVISION_CONFLICT or error.details.get("current_revision") != revision:
                    emit(f"BAD stale {resource} {revision} {error!r}")
                    raise SystemExit(3) from None
                emit(f"STALE {resource} {revision}")
            else:
                emit(f"BAD stale accepted {resource} {revision}")
                raise SystemExit(3)


def _fields(req: CommitRequest) -> dict[str, Any]:
    return {name: getattr(req, name) for name in req.__dataclass_fields__}


async def crash(url: str, ledger_id: str, resources: list[str], pending: list[tuple[str, int]]) -> None:
    # The children write for a fixed time, so how much they store grows with the commit rate:
    # a budget far above it keeps this about crashes (budgets have their own tests).
    ledger = await open_ledger(url, ledger_id=ledger_id, synchronous="FULL", ledger_limit_bytes=1 << 40)
    for resource in resources:
        await ensure(ledger, resource)
    emit("READY")
    # Retry what the last child had in flight: it either committed (a replay now) or not (it
    # applies now); either way the client ends where it wanted to be, exactly once.
    for resource, revision in pending:
        outcome = await ledger.commit(request(resource, revision))
        if outcome.revision != revision:
            emit(f"BAD retry {resource} {revision} {outcome}")
            raise SystemExit(3)
        emit(f"RETRIED {resource} {revision} {'replayed' if outcome.replayed else 'applied'}")
        emit(f"ACK {resource} {revision}")
    rng = random.Random()
    await asyncio.gather(*(chain(ledger, resource, rng) for resource in resources))


async def increment(db: str, resource: str, count: int) -> None:
    ledger = await open_ledger(db if "://" in db else f"sqlite:///{db}", synchronous="FULL")
    try:
        await ensure(ledger, resource, {"counter": 0})
        emit("READY")
        successes = conflicts = 0
        while successes < count:
            head = await ledger.head(resource)
            value = head.variables["counter"]
            token = hashlib.sha256(f"{id(ledger)}/{successes}/{conflicts}".encode()).hexdigest()
            try:
                await ledger.commit(CommitRequest(
                    resource_id=resource, expected_revision=head.revision, kind="manual",
                    variables={"counter": value + 1}, fingerprint=token, source={"pid": token[:8], "manual": True},
                    operation_id=f"inc-{token}",
                ))
            except MvuError as error:
                if error.code not in (Code.REVISION_CONFLICT, Code.STORAGE_BUSY):
                    raise
                conflicts += 1
                continue
            successes += 1
        emit(f"DONE {successes} {conflicts}")
    finally:
        await ledger.close()


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "crash":
        pending = [(str(r), int(n)) for r, n in json.loads(sys.stdin.readline())]
        asyncio.run(crash(argv[1], argv[2], argv[3].split(","), pending))
    elif mode == "increment":
        asyncio.run(increment(argv[1], argv[2], int(argv[3])))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
