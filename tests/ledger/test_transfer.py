"""Import and export of the original JSON ledger files, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import dumps, normalize
from mvu_store.ledger import CommitRequest, Ledger
from mvu_store.ledger import tables as t
from mvu_store.ledger.transfer import export_directory, import_directory
from mvu_store.ledger.transfer_rows import Snapshot
from tests.ledger.transfer_fixtures import LEGACY_TEXT, LedgerBuilder, realistic

FILES = ("mvu-instances.json", "mvu-facts.json")


def as_json(value: Any) -> str:
    """Canonical text: equal as JSON (key order aside, 8.5 == 8.5, 12.0 == 12) means equal text."""
    normalized, _, _ = normalize(value, max_nodes=10**9, max_depth=10**9)
    return dumps(normalized)


def read(directory: Path, name: str) -> Any:
    return json.loads((directory / name).read_text())


def state(snap: Snapshot) -> str:
    return as_json({"templates": snap.templates, "resources": snap.resources, "seeds": snap.seeds,
                    "selections": snap.selections, "facts": snap.facts,
                    "legacy": {name: data.decode() for name, data in snap.legacy.items()}})


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return realistic().write(tmp_path / "source")


async def test_export_of_an_import_equals_the_original_files(ledger: Ledger, source: Path, tmp_path: Path) -> None:
    report = await import_directory(ledger, source)
    assert report.created["resources"] == 4
    assert report.created["versions"] == 15
    assert not report.unchanged

    exported = await export_directory(ledger, tmp_path / "out")

    assert set(exported.files) == {*FILES, "mvu-state.json"}
    for name in FILES:
        assert as_json(read(tmp_path / "out", name)) == as_json(read(source, name))
    # The legacy file, odd whitespace and all, comes back byte for byte.
    assert (tmp_path / "out" / "mvu-state.json").read_bytes() == LEGACY_TEXT.encode()
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]


async def test_import_export_import_is_a_fixed_point(ledger: Ledger, others: Callable[..., Awaitable[Ledger]],
                                                     source: Path,
                                                     tmp_path: Path) -> None:
    await import_directory(ledger, source)
    await export_directory(ledger, tmp_path / "first")
    second = await others()
    await import_directory(second, tmp_path / "first")
    await export_directory(second, tmp_path / "second")

    for name in (*FILES, "mvu-state.json"):
        assert (tmp_path / "second" / name).read_bytes() == (tmp_path / "first" / name).read_bytes()
    assert state(await second.snapshot()) == state(await ledger.snapshot())
    assert (await second.usage()).used_bytes == (await ledger.usage()).used_bytes


async def test_importing_twice_changes_nothing(ledger: Ledger, source: Path) -> None:
    first = await import_directory(ledger, source)
    usage, before = await ledger.usage(), state(await ledger.snapshot())

    again = await import_directory(ledger, source)

    assert again.unchanged
    assert again.bytes_charged == 0
    assert again.skipped == {"templates": 2, "resources": 4, "seeds": 1, "discoverySelections": 2, "facts": 3,
                             "legacyFiles": 1}
    assert first.bytes_charged == usage.used_bytes
    assert await ledger.usage() == usage
    assert state(await ledger.snapshot()) == before


async def test_imported_data_passes_the_audit(ledger: Ledger, source: Path) -> None:
    await import_directory(ledger, source)
    assert await ledger.audit() == []


async def test_rows_say_what_the_records_were(ledger: Ledger, source: Path) -> None:
    build = realistic()
    play, child = build.instances[0], build.instances[1]
    await import_directory(ledger, source)

    kinds = [v.kind for v in await ledger.versions(play.id)]
    assert kinds == ["card", "reply", "failed", "reply", "manual", "card", "reply"]
    assert {v.kind for v in await ledger.versions(child.id)} == {"inherited", "reply"}

    resource = await ledger.resource(play.id)
    assert resource is not None
    # Eight claims: seven versions (the failed reply's included) and one management operation.
    assert (resource.kind, resource.revision, resource.management_mode) == ("instance", 8, "managed")
    assert resource.head_key == play.record["currentKey"]
    assert (resource.template_id, resource.session_id) == (play.record["definition"]["templateId"], "s-1")
    definition = await ledger.blob(resource.definition_hash)
    assert not {"initial", "activationSeqs"} & set(definition)
    assert (await ledger.head(play.id)).variables == play.variables
    child_row = await ledger.resource(child.id)
    assert child_row is not None
    assert set(child_row.meta) == {"seed", "futureField"}

    def receipts(connection: Any) -> list[Any]:
        c = t.receipts.c
        return list(connection.execute(
            select(c.operation_id, c.kind, c.version_key)
            .where(c.ledger_id == ledger.ledger_id, c.resource_id == play.id).order_by(c.position)))

    rows = [tuple(row) for row in await ledger._store.read(receipts)]
    keys = {v["operationId"]: v["key"] for v in play.record["versions"] if "operationId" in v}
    assert rows == [("op-open", "commit", keys["op-open"]), ("op-manual-1", "commit", keys["op-manual-1"]),
                    ("op-card-1", "commit", keys["op-card-1"]), ("op-manage-1", "management", None)]


async def test_an_imported_operation_id_replays_its_stored_result(ledger: Ledger, source: Path) -> None:
    play = realistic().instances[0]
    manual = next(v for v in play.record["versions"] if v.get("operationId") == "op-manual-1")
    await import_directory(ledger, source)

    outcome = await ledger.commit(CommitRequest(
        play.id, manual["revision"] - 1, "manual", manual["variables"], manual["fingerprint"], manual["source"],
        operation_id="op-manual-1"))

    assert outcome.replayed
    assert outcome.result == manual["result"]


async def test_a_budget_too_small_refuses_the_whole_import(others: Callable[..., Awaitable[Ledger]],
                                                           source: Path) -> None:
    small = await others(ledger_limit_bytes=10_000)

    with pytest.raises(MvuError) as refused:
        await import_directory(small, source)

    assert refused.value.code == "PLAY_STORAGE_LIMIT"
    assert refused.value.details["limit"] == 10_000
    assert refused.value.details["used"] == 0
    assert refused.value.details["requested"] > 10_000
    assert (await small.usage()).used_bytes == 0
    assert await small.snapshot() == Snapshot()
    assert await small.audit() == []


async def test_a_different_record_under_an_existing_id_is_refused(ledger: Ledger, source: Path,
                                                                  tmp_path: Path) -> None:
    await import_directory(ledger, source)
    before = state(await ledger.snapshot())
    build = realistic()
    build.instances[2].record["recoveryError"]["code"] = "MVU_HISTORY_CHANGED"
    build.template("carol", hp=1)  # new, but the import is refused as a whole

    with pytest.raises(MvuError) as refused:
        await import_directory(ledger, build.write(tmp_path / "changed"))

    assert refused.value.code == "MVU_ID_CONFLICT"
    assert refused.value.details["path"] == f"/resources/{build.instances[2].id}"
    assert state(await ledger.snapshot()) == before


async def test_a_disjoint_directory_merges_into_a_non_empty_ledger(ledger: Ledger, source: Path,
                                                                   tmp_path: Path) -> None:
    await import_directory(ledger, source)
    build = realistic()
    carol = build.template("carol", hp=1)
    build.instance(carol, "s-7").reply(1, hp=2)
    build.facts.append({"phase": "commit", "recordedAt": 1, "id": "new"})

    report = await import_directory(ledger, build.write(tmp_path / "more"))

    assert (report.created["templates"], report.created["resources"], report.created["facts"]) == (1, 1, 1)
    assert report.skipped["resources"] == 4
    await export_directory(ledger, tmp_path / "out")
    assert as_json(read(tmp_path / "out", "mvu-instances.json")) == as_json(build.instances_document())
    assert await ledger.audit() == []


async def test_a_ledger_that_moved_on_is_not_overwritten(ledger: Ledger, source: Path) -> None:
    play = realistic().instances[0]
    await import_directory(ledger, source)
    head = await ledger.head(play.id)
    await ledger.commit(CommitRequest(play.id, head.revision, "reply", head.variables, "f" * 64,
                                      {"sessionId": "s-1", "messageSeq": 99}))

    with pytest.raises(MvuError) as refused:
        await import_directory(ledger, source)
    assert refused.value.code == "MVU_ID_CONFLICT"


async def test_an_empty_or_missing_directory_is_refused(ledger: Ledger, tmp_path: Path) -> None:
    for directory in (tmp_path, tmp_path / "nowhere"):
        with pytest.raises(MvuError) as refused:
            await import_directory(ledger, directory)
        assert refused.value.code == "MVU_MISSING"


async def test_an_empty_ledger_exports_an_empty_instances_file(ledger: Ledger, tmp_path: Path) -> None:
    report = await export_directory(ledger, tmp_path / "out")
    assert list(report.files) == ["mvu-instances.json"]
    assert read(tmp_path / "out", "mvu-instances.json") == {"version": 1, "resources": {}}


async def test_export_replaces_files_atomically(ledger: Ledger, source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mvu-instances.json").write_text("stale")
    (out / "notes.txt").write_text("mine")
    await import_directory(ledger, source)

    await export_directory(ledger, out)

    assert as_json(read(out, "mvu-instances.json")) == as_json(read(source, "mvu-instances.json"))
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == ["mvu-facts.json", "mvu-instances.json", "mvu-state.json",
                                                     "notes.txt"]


async def test_odd_but_valid_shapes_come_back_exactly(ledger: Ledger, tmp_path: Path) -> None:
    """Fields that fit no column (nulls, odd types, empty lists, unknown fields) ride in meta."""
    build = realistic()
    play, untouched = build.instances[0], build.instances[2]
    play.record["versions"][1]["fingerprint"] = None
    play.record["versions"][2]["parentKey"] = 7
    play.record["versions"][2]["error"] = {"code": "MVU_PARSE", "detail": "not a short code"}
    play.record["versions"][3]["extra"] = [1, {"nested": True}]
    play.record["checkpoints"][0]["sessionId"] = ""
    play.record["checkpoints"][1].pop("sessionId")
    play.record["checkpoints"][1]["versionKey"] = None
    play.record["definition"]["activationSeqs"] = {"s-1": "three"}
    play.record["managementMode"] = None
    untouched.record["managementOperations"] = []
    untouched.record["definition"]["activationSeqs"] = {}
    build.seeds[next(iter(build.seeds))]["items"] = 5
    build.selections["s-10"] = None
    source = build.write(tmp_path / "odd")

    await import_directory(ledger, source)
    await export_directory(ledger, tmp_path / "out")

    assert as_json(read(tmp_path / "out", "mvu-instances.json")) == as_json(read(source, "mvu-instances.json"))
    assert await ledger.audit() == []


async def test_a_file_without_the_optional_maps_exports_without_them(ledger: Ledger, tmp_path: Path) -> None:
    build = realistic()
    document = {"version": 1, "resources": {i.id: i.record for i in build.instances[2:]}}
    (tmp_path / "mvu-instances.json").write_text(json.dumps(document))

    await import_directory(ledger, tmp_path)
    await export_directory(ledger, tmp_path / "out")

    assert as_json(read(tmp_path / "out", "mvu-instances.json")) == as_json(document)


async def test_a_directory_with_only_legacy_state_and_facts(ledger: Ledger, tmp_path: Path) -> None:
    build = realistic()
    (tmp_path / "mvu-state.json").write_bytes(LEGACY_TEXT.encode())
    (tmp_path / "mvu-facts.json").write_text(json.dumps({"version": 1, "records": build.facts}))

    report = await import_directory(ledger, tmp_path)
    await export_directory(ledger, tmp_path / "out")

    assert (report.created["legacyFiles"], report.created["facts"], report.created["resources"]) == (1, 3, 0)
    assert report.bytes_charged == len(LEGACY_TEXT.encode())  # facts have their own bound, not the budget
    assert (tmp_path / "out" / "mvu-state.json").read_bytes() == LEGACY_TEXT.encode()
    assert read(tmp_path / "out", "mvu-facts.json") == {"version": 1, "records": build.facts}
    assert await ledger.audit() == []


async def test_a_different_legacy_file_is_refused(ledger: Ledger, tmp_path: Path) -> None:
    (tmp_path / "mvu-state.json").write_bytes(LEGACY_TEXT.encode())
    await import_directory(ledger, tmp_path)
    (tmp_path / "mvu-state.json").write_bytes(LEGACY_TEXT.replace("7.50", "7.5").encode())

    with pytest.raises(MvuError) as refused:
        await import_directory(ledger, tmp_path)

    assert (refused.value.code, refused.value.details["file"]) == ("MVU_ID_CONFLICT", "mvu-state.json")


def facts_directory(directory: Path, first: int, count: int, **fields: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    records = [{"phase": "commit", "recordedAt": 1_700_000_000_000 + first + index, "id": f"f{first + index}",
                **fields} for index in range(count)]
    (directory / "mvu-facts.json").write_text(json.dumps({"version": 1, "records": records}))
    return directory


async def test_facts_evicted_after_an_import_are_not_imported_again(ledger: Ledger, tmp_path: Path) -> None:
    old = facts_directory(tmp_path / "old", 0, 3)
    await import_directory(ledger, old)
    # Newer facts evict the first of the three, then all of them.
    for name, first, count, evicted in (("newer", 10, 2_046, 1), ("newest", 3_000, 2_048, 3)):
        await import_directory(ledger, facts_directory(tmp_path / name, first, count))
        stored = [fact["id"] for fact in await ledger.facts()]
        assert len(stored) == 2_048 and [i for i in stored if i in {"f0", "f1", "f2"}] == ["f0", "f1", "f2"][evicted:]

        again = await import_directory(ledger, old)

        assert again.unchanged and again.skipped["facts"] == 3
        assert [fact["id"] for fact in await ledger.facts()] == stored
    # A record newer than every stored one is still new, in the same file.
    document = read(old, "mvu-facts.json")
    document["records"].append({"phase": "commit", "recordedAt": 1_700_000_009_000, "id": "later"})
    (old / "mvu-facts.json").write_text(json.dumps(document))
    report = await import_directory(ledger, old)
    assert (report.created["facts"], report.skipped["facts"]) == (1, 3)
    assert (await ledger.facts())[-1]["id"] == "later"
    assert await ledger.audit() == []


async def test_facts_before_any_eviction_are_compared_by_content(ledger: Ledger, tmp_path: Path) -> None:
    await import_directory(ledger, facts_directory(tmp_path / "late", 100, 2))
    report = await import_directory(ledger, facts_directory(tmp_path / "early", 0, 2))
    assert report.created["facts"] == 2  # older than what is stored, but nothing was ever evicted


@pytest.mark.parametrize("shape", ["failures between and after commits", "a failure before any commit"])
async def test_an_original_file_whose_failed_replies_claim_revisions_round_trips(
        ledger: Ledger, tmp_path: Path, shape: str) -> None:
    build = LedgerBuilder()
    play = build.instance(build.template("alice", hp=10), "s-1")
    if shape == "a failure before any commit":
        play.failed(1)
        expected_head = None
    else:
        play.reply(1, hp=9)
        play.failed(2, error="MVU_LIMIT")
        expected_head = play.reply(3, hp=8)
        play.failed(4)
    source = build.write(tmp_path / "source")

    await import_directory(ledger, source)

    assert await ledger.audit() == []
    head = await ledger.head(play.id)
    assert (head.revision, head.version_key) == (play.record["revision"], expected_head)
    assert head.variables == play.variables
    await export_directory(ledger, tmp_path / "out")
    # The original writes no empty maps (no seeds, no selections here); the builder does.
    original = {name: value for name, value in read(source, "mvu-instances.json").items() if value != {}}
    assert as_json(read(tmp_path / "out", "mvu-instances.json")) == as_json(original)
    # The CAS counter is the original's: the revision read before the last failure is stale.
    with pytest.raises(MvuError) as refused:
        await ledger.commit(CommitRequest(play.id, head.revision - 1, "reply", head.variables, "f" * 64,
                                          {"sessionId": "s-1", "messageSeq": 99}))
    assert refused.value.code == "REVISION_CONFLICT"
    outcome = await ledger.commit(CommitRequest(play.id, head.revision, "reply", head.variables, "f" * 64,
                                                {"sessionId": "s-1", "messageSeq": 99}))
    assert outcome.revision == head.revision + 1
    assert [v.parent_key for v in await ledger.versions(play.id)][-1] == expected_head
    assert await ledger.audit() == []


def activation_rows(ledger: Ledger) -> Callable[[Any], list[tuple[Any, ...]]]:
    def read_rows(connection: Any) -> list[tuple[Any, ...]]:
        c = t.activations.c
        return [tuple(row) for row in connection.execute(
            select(c.owner_id, c.session_id, c.seq).where(c.ledger_id == ledger.ledger_id)
            .order_by(c.owner_id, c.session_id))]
    return read_rows


async def test_a_templates_activation_seqs_are_rows_and_come_back(ledger: Ledger, tmp_path: Path) -> None:
    build = LedgerBuilder()
    alice = build.template("alice", hp=10)
    build.templates[alice]["activationSeqs"] = {"s-old": 4, "s-new": 2**40}
    odd = build.template("bob", gold=1)
    build.templates[odd]["activationSeqs"] = {"s-1": "three"}  # not boundaries: kept in the definition as is
    build.instance(alice, "s-1").reply(1, hp=9)
    source = build.write(tmp_path / "source")

    report = await import_directory(ledger, source)

    assert report.created["activations"] == 3  # two of the template's, one of the instance's
    play = build.instances[0]
    assert await ledger._store.read(activation_rows(ledger)) == sorted([
        (alice, "s-new", 2**40), (alice, "s-old", 4), (play.id, "s-1", 3)])
    stored = await ledger.templates()
    assert "activationSeqs" not in stored[alice]  # type: ignore[operator]
    assert stored[odd]["activationSeqs"] == {"s-1": "three"}  # type: ignore[index,call-overload]
    await export_directory(ledger, tmp_path / "out")
    original = {name: value for name, value in read(source, "mvu-instances.json").items() if value != {}}
    assert as_json(read(tmp_path / "out", "mvu-instances.json")) == as_json(original)
    assert (await import_directory(ledger, source)).unchanged
    assert await ledger.audit() == []


async def test_template_activation_rows_merge_with_a_stored_map_rows_winning(
        ledger: Ledger, others: Callable[..., Awaitable[Ledger]], tmp_path: Path) -> None:
    template = "mvu:character-" + "a" * 32
    await ledger.put_template(template, {"id": template, "sessionIds": ["*"], "initial": {"stat_data": {}},
                                         "activationSeqs": {"s-a": 1, "s-b": 2}})
    # What the service does when it discovers a boundary: a row owned by the template.
    store = ledger._store
    await store.write(lambda tx: [store.insert_row(tx, t.activations, {"owner_id": template, "session_id": s,
                                                                       "seq": n})
                                  for s, n in (("s-b", 5), ("s-c", 7))])

    exported = (await ledger.snapshot()).templates[template]

    assert exported["activationSeqs"] == {"s-a": 1, "s-b": 5, "s-c": 7}  # type: ignore[index,call-overload]
    assert await ledger.audit() == []
    await export_directory(ledger, tmp_path / "first")
    copy = await others()
    await import_directory(copy, tmp_path / "first")
    assert await copy._store.read(activation_rows(copy)) == [(template, "s-a", 1), (template, "s-b", 5),
                                                      (template, "s-c", 7)]
    await export_directory(copy, tmp_path / "second")
    assert (tmp_path / "second" / "mvu-instances.json").read_bytes() == (
        tmp_path / "first" / "mvu-instances.json").read_bytes()
    assert await copy.audit() == []
