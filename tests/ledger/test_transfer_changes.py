"""``mvu export`` / ``mvu import`` and the ``changes`` rows: recorded rows travel as each
version's ``changes``, derived ones are derived again, and a round trip changes nothing."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sqlalchemy import and_, select

from mvu_store.ledger import Ledger
from mvu_store.ledger import tables as t
from mvu_store.ledger.transfer import export_directory, import_directory
from tests.ledger.change_fixtures import HERO, SWIPE, change_rows, play_story
from tests.ledger.test_transfer import as_json, read
from tests.ledger.transfer_fixtures import realistic

INSTANCES = "mvu-instances.json"
_FIELDS = ("seq", "turn", "path", "op", "status", "actor", "before", "after", "omitted", "command", "code", "reason",
           "message", "derived")


async def by_version(ledger: Ledger) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    """The rows by (resource, version key, seq): positions differ once a fork's history is copied."""
    c, v = t.changes.c, t.versions.c
    query = select(c.resource_id, v.key, *(c[name] for name in _FIELDS)).select_from(t.changes.join(
        t.versions, and_(v.ledger_id == c.ledger_id, v.resource_id == c.resource_id, v.position == c.position),
    )).where(c.ledger_id == ledger.ledger_id)

    def run(connection: Any) -> dict[tuple[str, str, int], tuple[Any, ...]]:
        return {(row.resource_id, row.key, row.seq): tuple(bool(x) if isinstance(x, bool | int) and name in (
            "omitted", "derived") else x for name, x in zip(_FIELDS, row[2:], strict=True))
            for row in connection.execute(query)}

    return await ledger._store.read(run)


async def _opening_rows(ledger: Ledger) -> list[dict[str, Any]]:
    """The rows of the resources' creations, without the ledger's own columns."""
    return [{name: value for name, value in row.items() if name != "bytes"}
            for row in await change_rows(ledger) if row["position"] == -1]


async def test_recorded_rows_survive_a_round_trip(ledger: Ledger, others: Callable[..., Awaitable[Ledger]],
                                                  tmp_path: Path) -> None:
    await play_story(ledger)
    await export_directory(ledger, tmp_path / "a")
    document = read(tmp_path / "a", INSTANCES)
    [turn_one] = [v for v in document["resources"][HERO]["versions"] if v["source"].get("turn") == 1]
    assert [entry["path"] for entry in turn_one["changes"]] == ["/hp", "/mood"]
    assert turn_one["changes"][1]["code"] == "MVU_SCHEMA" and "before" not in turn_one["changes"][1]
    # The opening's rows travel on the instance's record: no version holds them.
    assert document["resources"][HERO]["openingChanges"] == [
        {"path": "/name", "status": "applied", "actor": "opening", "op": "replace", "before": "stranger",
         "after": "Aria"}]
    assert "openingChanges" not in document["resources"][SWIPE]

    copy = await others()
    report = await import_directory(copy, tmp_path / "a")
    original, imported = await by_version(ledger), await by_version(copy)
    openings = [await _opening_rows(found) for found in (ledger, copy)]
    assert openings[0] == openings[1] and len(openings[0]) == 1
    assert report.created["changes"] == len(imported) + 1
    recorded = {key: row for key, row in imported.items() if not row[-1]}
    assert recorded == original  # every recorded row, as it was
    # The fork child's history now holds copies of its parent's versions: their rows are derived.
    derived = [key for key, row in imported.items() if row[-1]]
    assert derived and {key[0] for key in derived} == {SWIPE}
    assert await copy.audit() == []

    await export_directory(copy, tmp_path / "b")
    assert as_json(read(tmp_path / "b", INSTANCES)) == as_json(document)
    again = await import_directory(copy, tmp_path / "b")
    assert again.unchanged and await by_version(copy) == imported


async def test_the_original_files_get_derived_rows_and_export_without_them(
        ledger: Ledger, tmp_path: Path) -> None:
    source = realistic().write(tmp_path / "source")
    report = await import_directory(ledger, source)
    rows = await change_rows(ledger)
    assert rows and report.created["changes"] == len(rows) and all(row["derived"] for row in rows)
    assert {row["actor"] for row in rows} <= {"reply", "manual", "script", "initial", "import"}
    assert await ledger.audit() == []
    await export_directory(ledger, tmp_path / "out")
    assert as_json(read(tmp_path / "out", INSTANCES)) == as_json(read(source, INSTANCES))
    assert (await import_directory(ledger, source)).unchanged


async def test_changes_that_fit_no_row_stay_as_they_came(ledger: Ledger, others: Callable[..., Awaitable[Ledger]],
                                                         tmp_path: Path) -> None:
    await play_story(ledger)
    await export_directory(ledger, tmp_path / "a")
    document = read(tmp_path / "a", INSTANCES)
    versions = document["resources"][HERO]["versions"]
    odd = [{"path": "/hp", "status": "maybe", "actor": "reply"}]
    versions[1]["changes"] = odd
    document["resources"][HERO]["openingChanges"] = odd
    (tmp_path / "a" / INSTANCES).write_text(json.dumps(document))

    copy = await others()
    await import_directory(copy, tmp_path / "a")
    rows = [row for row in await change_rows(copy) if row["resource_id"] == HERO and row["position"] == 1]
    assert [(row["path"], row["after"], row["derived"]) for row in rows] == [("/hp", "5", True)]
    assert await _opening_rows(copy) == []  # nothing derives an opening's rows
    await export_directory(copy, tmp_path / "b")
    exported = read(tmp_path / "b", INSTANCES)["resources"][HERO]
    assert exported["versions"][1]["changes"] == odd and exported["openingChanges"] == odd
