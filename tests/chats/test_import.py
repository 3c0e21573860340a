"""A SillyTavern chat into the ledger: sessions, versions of kind import, branches, one unit."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from mvu_store.cards.reader import CardDefinition
from mvu_store.chats import importer
from mvu_store.chats.importer import FROM_FIRST_STATE, ChatImport, import_chat
from mvu_store.errors import MvuError
from mvu_store.json_diff import json_diff
from mvu_store.jsonvalue import MAX_DEPTH, MAX_NODES, loads
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.ledger import tables as t
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost, play_turn
from tests.chats.synthetic import ChatSpec, chat_lines, chat_text, write_chat
from tests.ledger.change_fixtures import change_rows


def scope(session_id: str) -> dict[str, str]:
    return {"authority": "local", "session_id": session_id}


async def content(service: MvuService, summary: ChatImport) -> dict[str, Any]:
    """The stored state of the imported chat's instance."""
    assert summary.instance_id is not None
    record = await service.read(id=summary.instance_id, scope=scope(summary.session_id))
    assert record is not None
    return dict(record.content)


async def kinds(service: MvuService, summary: ChatImport) -> list[str]:
    assert summary.instance_id is not None
    return [entry.kind for entry in await service.history(id=summary.instance_id, scope=scope(summary.session_id))]


async def test_a_chat_imports_every_recorded_state_and_checks_each_reply(ledger: Ledger, tmp_path: Path) -> None:
    spec = ChatSpec(language="zh", turns=6, swipes=2, hidden=(3,), gap=1, edited=(5,))
    path = write_chat(tmp_path / "chat.jsonl", spec)
    summary = await import_chat(ledger, path)
    assert summary.imported and summary.template_from == FROM_FIRST_STATE
    assert summary.messages == 13
    # Turns 2..6 tracked: user + reply states on the shown line, turn 1 had no variables.
    assert summary.states == 10 + 3  # three even turns each add one swipe not shown
    assert len(summary.branches) == 3
    # Transitions: 5 shown replies + 3 swipes; the first tracked reply (turn 2) has its user's
    # state before it, so every one is checked; the edited turn differs.
    assert summary.agreed + summary.differed == 8 and summary.unchecked == 0
    assert summary.differed == 1
    [difference] = summary.differences
    assert difference["message"] == 10 and difference["swipe"] == 0 and difference["paths"] == ["/艾琳/金币"]
    assert await ledger.audit() == []

    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    last = chat_lines(spec)[-1]["variables"][-1]
    assert (await content(service, summary))["stat_data"] == last["stat_data"]
    assert await kinds(service, summary) == ["import"] * 10


async def test_the_same_file_twice_is_one_session(ledger: Ledger, tmp_path: Path) -> None:
    path = write_chat(tmp_path / "chat.jsonl", ChatSpec(language="en"))
    first = await import_chat(ledger, path)
    used = (await ledger.usage()).used_bytes
    again = await import_chat(ledger, path)
    assert not again.imported and again.to_dict() == {**first.to_dict(), "imported": False}
    assert (await ledger.usage()).used_bytes == used
    other = tmp_path / "other.jsonl"
    other.write_bytes(chat_text(chat_lines(ChatSpec(language="en", turns=2))))
    with pytest.raises(MvuError) as refused:
        await import_chat(ledger, other, session_id=first.session_id)
    assert refused.value.code == "MVU_ID_CONFLICT"


async def test_a_host_continues_the_imported_chat_from_its_last_state(ledger: Ledger, tmp_path: Path) -> None:
    spec = ChatSpec(language="en", turns=4, placeholder_schema=True)
    summary = await import_chat(ledger, write_chat(tmp_path / "chat.jsonl", spec))
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    session = summary.session_id
    result = await play_turn(service, host, session, turn=summary.next_turn, user="More.",
                             reply="_.add('Erin.gold', 10);//tip")
    assert result.error is None
    before = chat_lines(spec)[-1]["variables"][-1]["stat_data"]
    assert (await content(service, summary))["stat_data"]["Erin"]["gold"] == before["Erin"]["gold"] + 10
    assert (await kinds(service, summary))[-2:] == ["import", "reply"]


ERIN_SCHEMA = """
export const Schema = z.object({
  Erin: z.object({
    affection: z.tuple([z.coerce.number().transform(v => _.clamp(v, 0, 100)), z.string()]),
    gold: z.number(),
  }),
  turn: z.number(),
});
$(() => { registerMvuSchema(Schema); });
"""


def erin_card() -> CardDefinition:
    return CardDefinition(spec="chara_card_v2", name="Erin", initvar=("Erin:\n  affection: [10, '0 to 100']\n"
                                                                      "  gold: 5\nturn: 0\n",),
                          schema_source=ERIN_SCHEMA, greetings=())


async def test_with_a_card_its_declaration_checks_and_governs_the_continued_chat(ledger: Ledger,
                                                                                tmp_path: Path) -> None:
    spec = ChatSpec(language="en", turns=4, gap=0)
    summary = await import_chat(ledger, write_chat(tmp_path / "chat.jsonl", spec), card=erin_card())
    assert summary.template_from == "card" and summary.differed == 0
    assert summary.unchecked == 1  # the greeting: no state recorded before it
    assert summary.agreed == 4 + 2  # every reply, and the swipes of turns 2 and 4
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    result = await play_turn(service, host, summary.session_id, turn=summary.next_turn, user="Flirt.",
                             reply="_.set('Erin.affection[0]', 500);//smitten")
    assert result.error is None
    assert (await content(service, summary))["stat_data"]["Erin"]["affection"][0] == 100  # the card's clamp


async def _nothing_written(ledger: Ledger, session_id: str, used: int) -> None:
    assert await ledger.host_session(session_id) is None
    assert (await ledger.usage()).used_bytes == used
    assert await ledger.resources() == []


@pytest.mark.parametrize(("damage", "code"), [
    (lambda lines: lines.__setitem__(6, b'{"mes": "broken'), "MVU_JSON"),
    (lambda lines: lines.__setitem__(6, b'{"mes": "a", "swipes": ["a"], "swipe_id": 3}'), "MVU_JSON"),
    (lambda lines: lines.__setitem__(6, b'{"mes": "a", "variables": ["x"]}'), "MVU_JSON"),
    (lambda lines: lines.__setitem__(6, b'{"mes": "a", "mes": "b"}'), "MVU_JSON"),
    (lambda lines: lines.__setitem__(6, b'{"mes": "\\xff"}'.replace(b"\\xff", b"\xff")), "MVU_JSON"),
    (lambda lines: lines.__setitem__(6, b'{"mes": "a", "variables": [{"stat_data": {"big": "'
                                     + b"x" * (2 * 1024 * 1024) + b'"}}]}'), "MVU_LIMIT"),
    # The bounds of every state the service takes: values, depth, a prototype key, a key named
    # twice deep inside a state.
    (lambda lines: lines.__setitem__(6, b'{"mes": "a", "variables": [{"stat_data": {"many": ['
                                     + b",".join([b"0"] * (MAX_NODES + 1)) + b']}}]}'), "MVU_LIMIT"),
    (lambda lines: lines.__setitem__(6, b'{"mes": "a", "variables": [{"stat_data": {"deep": '
                                     + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b'}}]}'), "MVU_LIMIT"),
    (lambda lines: lines.__setitem__(6, b'{"mes": "a", "variables": [{"stat_data": {"a": {"__proto__": 1}}}]}'),
     "MVU_PATH"),
    (lambda lines: lines.__setitem__(6, b'{"mes": "a", "variables": [{"stat_data": {"a": {"b": 1, "b": 2}}}]}'),
     "MVU_JSON"),
])
async def test_a_bad_line_refuses_the_whole_file_naming_the_line(ledger: Ledger, tmp_path: Path, damage: Any,
                                                                 code: str) -> None:
    lines = chat_text(chat_lines(ChatSpec(language="zh", turns=5, gap=0))).splitlines()
    damage(lines)
    path = tmp_path / "chat.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    used = (await ledger.usage()).used_bytes
    with pytest.raises(MvuError) as refused:
        await import_chat(ledger, path, session_id="bad")
    assert refused.value.code == code and refused.value.details["line"] == 7
    await _nothing_written(ledger, "bad", used)


async def test_a_chat_over_the_ledgers_budget_is_refused_whole(ledger_url: str, tmp_path: Path) -> None:
    small = await open_ledger(ledger_url, ledger_id=f"small-{uuid.uuid4().hex[:8]}", ledger_limit_bytes=40_000)
    try:
        path = write_chat(tmp_path / "chat.jsonl", ChatSpec(language="en", turns=40, gap=0, padding=5))
        with pytest.raises(MvuError) as refused:
            await import_chat(small, path, session_id="big")
        assert refused.value.code == "PLAY_STORAGE_LIMIT" and refused.value.details["line"] > 2
        await _nothing_written(small, "big", 0)
    finally:
        await small.close()


async def test_an_imported_chat_survives_the_original_json_export_and_import(ledger: Ledger, ledger_url: str,
                                                                             tmp_path: Path) -> None:
    from mvu_store.ledger.transfer import export_directory, import_directory

    summary = await import_chat(ledger, write_chat(tmp_path / "chat.jsonl", ChatSpec(language="en", turns=4)))
    await export_directory(ledger, tmp_path / "out")
    other = await open_ledger(ledger_url, ledger_id=f"copy-{uuid.uuid4().hex[:8]}")
    try:
        await import_directory(other, tmp_path / "out")
        assert summary.instance_id is not None
        versions = await other.versions(summary.instance_id)
        assert [version.kind for version in versions] == ["import"] * len(versions) and versions
        assert await other.audit() == []
    finally:
        await other.close()


async def test_the_same_file_without_a_session_id_is_the_session_it_was_imported_as(ledger: Ledger,
                                                                                   tmp_path: Path) -> None:
    path = write_chat(tmp_path / "chat.jsonl", ChatSpec(language="zh", turns=2))
    first = await import_chat(ledger, path, session_id="named")
    again = await import_chat(ledger, path)
    assert again.session_id == "named" and not again.imported
    other = await import_chat(ledger, path, session_id="copy")  # a named session is a new one
    assert other.imported and other.session_id == "copy" and other.states == first.states


async def test_the_headers_names_are_the_sessions_for_the_turns_played_later(ledger: Ledger, tmp_path: Path) -> None:
    summary = await import_chat(ledger, write_chat(tmp_path / "chat.jsonl", ChatSpec(language="en", turns=2)))
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    result = await play_turn(service, host, summary.session_id, turn=summary.next_turn, user="Hi.",
                             reply="_.set('{{char}}.gold', 42);//a name in a path")
    assert result.error is None
    assert (await content(service, summary))["stat_data"]["Erin"]["gold"] == 42


async def test_a_swipe_branch_reads_as_its_own_session_and_goes_on(ledger: Ledger, tmp_path: Path) -> None:
    spec = ChatSpec(language="en", turns=2, swipes=2, gap=0)
    summary = await import_chat(ledger, write_chat(tmp_path / "chat.jsonl", spec))
    [branch] = summary.branches
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    [record] = await service.list(scope=scope(branch))
    swiped = next(line for line in chat_lines(spec) if len(line.get("swipes", [])) == 2)
    assert record.content["stat_data"] == swiped["variables"][0]["stat_data"]
    history = await service.history(id=record.id, scope=scope(branch))
    assert [entry.kind for entry in history][-1] == "import"
    stored = await host.session(branch)
    assert stored is not None and stored.header.parent_session == summary.session_id
    result = await play_turn(service, host, branch, turn=3, user="Go on.", reply="_.add('Erin.gold', 1);//go")
    assert result.error is None
    after = await service.read(id=record.id, scope=scope(branch))
    assert after is not None
    assert after.content["stat_data"]["Erin"]["gold"] == swiped["variables"][0]["stat_data"]["Erin"]["gold"] + 1


async def test_each_imported_state_records_what_it_changed_as_import_rows(ledger: Ledger, tmp_path: Path) -> None:
    spec = ChatSpec(language="en", turns=4, swipes=2, gap=0)
    summary = await import_chat(ledger, write_chat(tmp_path / "chat.jsonl", spec))
    rows = await change_rows(ledger)
    assert rows and {row["actor"] for row in rows} == {"import"} and {row["status"] for row in rows} == {"applied"}
    assert not any(row["derived"] for row in rows)
    # The chat's own instance: its rows, version by version, are the diffs of the states it holds.
    states = await _version_states(ledger, summary.instance_id)
    expected = [(position, item.to_json()) for position, (before, after) in enumerate(itertools.pairwise(states), 1)
                for item in json_diff(before, after).differences]
    got = [(row["position"], {"path": row["path"], "op": row["op"],
                              **({"before": loads(row["before"])} if row["before"] is not None else {}),
                              **({"after": loads(row["after"])} if row["after"] is not None else {})})
           for row in rows if row["resource_id"] == summary.instance_id and row["position"] > 0]
    assert got == expected and expected
    assert await ledger.audit() == []


async def _version_states(ledger: Ledger, resource_id: str | None) -> list[Any]:
    """The ``stat_data`` of each version of ``resource_id``, by position."""
    versions, blobs = t.versions.c, t.blobs.c
    query = select(blobs.body).select_from(t.versions.join(t.blobs, (blobs.ledger_id == versions.ledger_id) & (
        blobs.hash == versions.variables_hash))).where(versions.ledger_id == ledger.ledger_id,
                                                      versions.resource_id == resource_id).order_by(versions.position)

    def read(connection: Any) -> list[Any]:
        return [loads(body)["stat_data"] for (body,) in connection.execute(query)]

    return await ledger._store.read(read)


async def test_a_message_of_many_swipes_is_checked_within_its_own_size(ledger: Ledger, tmp_path: Path) -> None:
    """Each swipe is checked against the state before the message: a hostile line of many
    swipes with tiny states after a large one would cost swipes times that state. The first
    check is the line's own; the others are made while they cost at most CHECK_WORK_FACTOR times
    the bytes the line recorded, the rest count as unchecked."""
    lines = chat_lines(ChatSpec(language="en", turns=2, swipes=1, gap=0, padding=300, metadata_variables=False))
    (tmp_path / "before.jsonl").write_bytes(chat_text(lines))
    plain = await import_chat(ledger, tmp_path / "before.jsonl")
    many = 50
    lines.append({"name": "Erin", "is_user": False, "mes": "r0", "swipes": [f"r{i}" for i in range(many)],
                  "swipe_id": 0, "variables": [{"stat_data": {"n": i}} for i in range(many)]})
    path = tmp_path / "chat.jsonl"
    path.write_bytes(chat_text(lines))
    summary = await import_chat(ledger, path)
    assert summary.states == plain.states + many and len(summary.branches) == many - 1
    # The large state before (over 300 items) is checked once: fifty 12-byte states pay for no more.
    assert summary.differed == 1 and summary.unchecked - plain.unchecked == many - 1
    assert summary.differences[0]["line"] == len(lines)


async def test_a_summary_lists_the_first_differences_and_counts_them_all(ledger: Ledger, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "MAX_DIFFERENCES", 1)
    path = write_chat(tmp_path / "chat.jsonl", ChatSpec(language="en", turns=6, gap=0, edited=(3, 5)))
    summary = await import_chat(ledger, path)
    assert summary.differed == 2 and [difference["message"] for difference in summary.differences] == [6]


async def test_each_imported_version_carries_its_changes(ledger: Ledger, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[Any] = []
    add_version = importer.ChatImportRows.add_version

    def recording(rows: Any, version: Any) -> None:
        written.append(version)
        add_version(rows, version)

    monkeypatch.setattr(importer.ChatImportRows, "add_version", recording)
    spec = ChatSpec(language="en", turns=4)
    summary = await import_chat(ledger, write_chat(tmp_path / "chat.jsonl", spec))
    assert summary.imported and written
    for version in written:
        assert {row.actor for row in version.changes} <= {"import"}
        assert all(row.status == "applied" and row.op in ("add", "remove", "replace") for row in version.changes)
    # The first version is the chat's first state, the template's initial one: nothing changed;
    # later ones changed something, each a path of the state.
    assert written[0].changes == () and any(version.changes for version in written[1:])
    assert all(row.path.startswith("/") for version in written for row in version.changes)
