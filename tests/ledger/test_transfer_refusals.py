"""Malformed input is refused with the JSON pointer of its first problem, and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.ledger.transfer import import_directory
from mvu_store.ledger.transfer_rows import Snapshot
from tests.ledger.transfer_fixtures import LedgerBuilder, realistic

BUILD = realistic()
PLAY = BUILD.instances[0].id
TEMPLATE = next(iter(BUILD.templates))
TICKET = next(iter(BUILD.seeds))
LONG_ID = "mvu:" + "x" * 200


@dataclass(frozen=True)
class Case:
    name: str
    change: Callable[[dict[str, Any]], Any]
    """Edits the directory's files (name -> parsed JSON, or text to write as is)."""
    code: str
    path: str
    file: str = "mvu-instances.json"


def play(files: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = files["mvu-instances.json"]["resources"][PLAY]
    return record


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def setitem(target: dict[str, Any] | list[Any], key: Any, value: Any) -> None:
    target[key] = value


def shift_revisions(files: dict[str, Any]) -> None:
    """Every revision one higher: consistent but for the leading gap (the original starts at 1)."""
    record = play(files)
    for claim in (*record["versions"], *(op["result"] for op in record["managementOperations"]), record):
        claim["revision"] += 1


def only_a_failed_reply(files: dict[str, Any]) -> None:
    record = play(files)
    failed = {**record["versions"][2], "revision": 1}
    record.update(versions=[failed], revision=1, currentKey=failed["key"], checkpoints=[])
    del record["managementOperations"]


def truncate(files: dict[str, Any]) -> None:
    files["mvu-instances.json"] = json.dumps(files["mvu-instances.json"])[:-3]


CASES = [
    Case("truncated JSON", truncate, "MVU_JSON", ""),
    Case("NaN", lambda f: setitem(f, "mvu-instances.json", '{"version": 1, "resources": NaN}'), "MVU_JSON", ""),
    Case("huge exponent", lambda f: setitem(f, "mvu-instances.json", '{"version": 1, "resources": {}, "templates": '
                                            '{"t": {"initial": {"x": 1e999}}}}'),
         "MVU_JSON", "/templates/t/initial/x"),
    Case("lone surrogate", lambda f: setitem(f, "mvu-instances.json", '{"version": 1, "resources": {"\\ud800": {}}}'),
         "MVU_JSON", "/resources/\ud800"),
    Case("format version 2", lambda f: setitem(f["mvu-instances.json"], "version", 2), "MVU_VERSION", "/version"),
    Case("format version as text", lambda f: setitem(f["mvu-instances.json"], "version", "1"), "MVU_VERSION",
         "/version"),
    Case("no resources", lambda f: f["mvu-instances.json"].pop("resources"), "MVU_JSON", "/resources"),
    Case("resources as a list", lambda f: setitem(f["mvu-instances.json"], "resources", []), "MVU_JSON",
         "/resources"),
    Case("unknown top-level field", lambda f: setitem(f["mvu-instances.json"], "extra", 1), "MVU_JSON", "/extra"),
    Case("revision as text", lambda f: setitem(play(f)["versions"][1], "revision", "2"), "MVU_JSON",
         f"/resources/{PLAY}/versions/1/revision"),
    Case("the first of two problems", lambda f: [setitem(play(f)["versions"][i], "revision", None) for i in (4, 2)],
         "MVU_JSON", f"/resources/{PLAY}/versions/2/revision"),
    Case("__proto__ in a state", lambda f: setitem(play(f)["versions"][3]["variables"]["stat_data"], "__proto__", {}),
         "MVU_JSON", f"/resources/{PLAY}/versions/3/variables/stat_data/__proto__"),
    Case("constructor in a template", lambda f: setitem(f["mvu-instances.json"]["templates"][TEMPLATE],
                                                        "constructor", 1),
         "MVU_JSON", f"/templates/{TEMPLATE}/constructor"),
    Case("state over 2 MiB", lambda f: setitem(play(f)["versions"][0]["variables"], "big", "x" * (2 * 1024 * 1024)),
         "MVU_LIMIT", f"/resources/{PLAY}/versions/0/variables"),
    Case("state over 100,000 nodes", lambda f: setitem(play(f)["definition"]["initial"], "many", [0] * 100_001),
         "MVU_LIMIT", f"/resources/{PLAY}/definition/initial"),
    Case("state deeper than 64", lambda f: setitem(play(f)["checkpoints"][0]["variables"], "deep", nested(64)),
         "MVU_LIMIT", f"/resources/{PLAY}/checkpoints/0/variables"),
    Case("variables not an object", lambda f: setitem(play(f)["versions"][2], "variables", [1]), "MVU_JSON",
         f"/resources/{PLAY}/versions/2/variables"),
    Case("currentKey names no version", lambda f: setitem(play(f), "currentKey", "0" * 64), "MVU_JSON",
         f"/resources/{PLAY}/currentKey"),
    Case("missing currentKey", lambda f: play(f).pop("currentKey"), "MVU_JSON", f"/resources/{PLAY}/currentKey"),
    Case("duplicate version key", lambda f: setitem(play(f)["versions"][1], "key", play(f)["versions"][0]["key"]),
         "MVU_JSON", f"/resources/{PLAY}/versions/1/key"),
    Case("two commits at one revision", lambda f: setitem(play(f)["versions"][3], "revision", 2), "MVU_JSON",
         f"/resources/{PLAY}/versions/3/revision"),
    Case("a hole in the revisions", lambda f: [setitem(play(f)["versions"][6], "revision", 9),
                                               setitem(play(f), "revision", 9)],
         "MVU_JSON", f"/resources/{PLAY}/versions/6/revision"),
    Case("revisions that do not start at 1", shift_revisions, "MVU_JSON", f"/resources/{PLAY}/versions/0/revision"),
    Case("a record ahead of its newest commit", lambda f: setitem(play(f), "revision", 9), "MVU_JSON",
         f"/resources/{PLAY}/revision"),
    Case("a record behind its newest commit", lambda f: setitem(play(f), "revision", 7), "MVU_JSON",
         f"/resources/{PLAY}/revision"),
    Case("a management operation at a committed revision",
         lambda f: setitem(play(f)["managementOperations"][0]["result"], "revision", 5), "MVU_JSON",
         f"/resources/{PLAY}/managementOperations/0/result/revision"),
    Case("a management operation without a revision", lambda f: play(f)["managementOperations"][0]["result"].pop(
        "revision"), "MVU_JSON", f"/resources/{PLAY}/managementOperations/0/result/revision"),
    Case("a commit not written on the previous one",
         lambda f: setitem(play(f)["versions"][3], "parentKey", play(f)["versions"][0]["key"]), "MVU_JSON",
         f"/resources/{PLAY}/versions/3/parentKey"),
    Case("a first commit written on a failed reply",
         lambda f: setitem(play(f)["versions"][0], "parentKey", play(f)["versions"][2]["key"]), "MVU_JSON",
         f"/resources/{PLAY}/versions/0/parentKey"),
    Case("a failed reply that claims no revision of its own (it sits on the previous commit's)",
         lambda f: [setitem(play(f)["versions"][i], "revision", play(f)["versions"][i]["revision"] - 1)
                    for i in (2, 3, 4, 5, 6)] + [setitem(play(f)["managementOperations"][0]["result"], "revision", 6),
                                                 setitem(play(f), "revision", 7)],
         "MVU_JSON", f"/resources/{PLAY}/versions/2/revision"),
    Case("a failed reply after the newest commit, the record not moved by it",
         lambda f: [play(f)["versions"].append({**play(f)["versions"][2], "key": "f" * 64, "revision": 9})],
         "MVU_JSON", f"/resources/{PLAY}/revision"),
    Case("currentKey behind the newest commit", lambda f: setitem(play(f), "currentKey", play(f)["versions"][5]["key"]),
         "MVU_JSON", f"/resources/{PLAY}/currentKey"),
    Case("currentKey on a failed reply", lambda f: setitem(play(f), "currentKey", play(f)["versions"][2]["key"]),
         "MVU_JSON", f"/resources/{PLAY}/currentKey"),
    Case("currentKey on a failed reply, without any commit", only_a_failed_reply, "MVU_JSON",
         f"/resources/{PLAY}/currentKey"),
    Case("a failed reply's parentKey names nothing", lambda f: setitem(play(f)["versions"][2], "parentKey", "1" * 64),
         "MVU_JSON", f"/resources/{PLAY}/versions/2/parentKey"),
    Case("a checkpoint names no version", lambda f: setitem(play(f)["checkpoints"][1], "versionKey", "0" * 64),
         "MVU_JSON", f"/resources/{PLAY}/checkpoints/1/versionKey"),
    Case("two checkpoints for one turn", lambda f: setitem(play(f)["checkpoints"][1], "turn", 1), "MVU_JSON",
         f"/resources/{PLAY}/checkpoints/1/turn"),
    Case("checkpoints not an array", lambda f: setitem(play(f), "checkpoints", {}), "MVU_JSON",
         f"/resources/{PLAY}/checkpoints"),
    Case("odd management operation", lambda f: setitem(play(f)["managementOperations"][0], "extra", 1), "MVU_JSON",
         f"/resources/{PLAY}/managementOperations/0/extra"),
    Case("operation id used twice", lambda f: setitem(play(f)["managementOperations"][0], "id", "op-card-1"),
         "MVU_JSON", f"/resources/{PLAY}/managementOperations/0/id"),
    Case("definition without initial", lambda f: play(f)["definition"].pop("initial"), "MVU_JSON",
         f"/resources/{PLAY}/definition/initial"),
    Case("resource id too long", lambda f: setitem(f["mvu-instances.json"]["resources"], LONG_ID, play(f)),
         "MVU_JSON", f"/resources/{LONG_ID}"),
    Case("a template and a resource of one id, with activation boundaries",
         lambda f: setitem(f["mvu-instances.json"]["templates"], PLAY,
                           {**f["mvu-instances.json"]["templates"][TEMPLATE], "activationSeqs": {"s-1": 1}}),
         "MVU_JSON", f"/templates/{PLAY}/activationSeqs"),
    Case("a resource with a template's id, with activation boundaries",
         lambda f: setitem(f["mvu-instances.json"]["templates"], PLAY,
                           {k: v for k, v in f["mvu-instances.json"]["templates"][TEMPLATE].items()
                            if k != "activationSeqs"}),
         "MVU_JSON", f"/resources/{PLAY}/definition/activationSeqs"),
    Case("seed not installed nor not", lambda f: setitem(f["mvu-instances.json"]["seeds"][TICKET], "installed", "yes"),
         "MVU_JSON", f"/seeds/{TICKET}/installed"),
    Case("selection not an id", lambda f: setitem(f["mvu-instances.json"]["discoverySelections"], "s-1", 5),
         "MVU_JSON", "/discoverySelections/s-1"),
    Case("NUL in a session id", lambda f: setitem(f["mvu-instances.json"]["discoverySelections"], "a\x00b", None),
         "MVU_JSON", "/discoverySelections/a\x00b"),
    Case("facts format version", lambda f: setitem(f["mvu-facts.json"], "version", 3), "MVU_VERSION", "/version",
         "mvu-facts.json"),
    Case("more than 2,048 facts", lambda f: setitem(f["mvu-facts.json"], "records", [{}] * 2049), "MVU_LIMIT",
         "/records/2048", "mvu-facts.json"),
    Case("facts over 1 MiB", lambda f: setitem(f["mvu-facts.json"], "records", [{"detail": "x" * 300_000}] * 4),
         "MVU_LIMIT", "/records/3", "mvu-facts.json"),
    Case("fact phase too long", lambda f: setitem(f["mvu-facts.json"]["records"][1], "phase", "p" * 17), "MVU_JSON",
         "/records/1/phase", "mvu-facts.json"),
    Case("legacy format version", lambda f: setitem(f, "mvu-state.json", '{"version": 0, "resources": {}}'),
         "MVU_VERSION", "/version", "mvu-state.json"),
    Case("legacy without resources", lambda f: setitem(f, "mvu-state.json", '{"version": 1}'), "MVU_JSON",
         "/resources", "mvu-state.json"),
    Case("legacy not UTF-8", lambda f: setitem(f, "mvu-state.json", b'{"version": 1, "resources": {"\xff": 1}}'),
         "MVU_JSON", "", "mvu-state.json"),
]


def write(build: LedgerBuilder, directory: Path, change: Callable[[dict[str, Any]], Any]) -> Path:
    build.write(directory)
    files: dict[str, Any] = {name: json.loads((directory / name).read_text())
                             for name in ("mvu-instances.json", "mvu-facts.json")}
    files["mvu-state.json"] = (directory / "mvu-state.json").read_bytes()
    change(files)
    for name, value in files.items():
        data = value if isinstance(value, bytes) else value.encode() if isinstance(value, str) else json.dumps(value)
        (directory / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return directory


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_malformed_input_is_refused_with_its_path(ledger: Ledger, tmp_path: Path, case: Case) -> None:
    directory = write(realistic(), tmp_path, case.change)

    with pytest.raises(MvuError) as refused:
        await import_directory(ledger, directory)

    assert (refused.value.code, refused.value.details["path"], refused.value.details["file"]) == (
        case.code, case.path, case.file)
    assert (await ledger.usage()).used_bytes == 0
    assert await ledger.snapshot() == Snapshot()
