"""Import -> export gives the chat file back; the turns played since follow as new messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvu_store.chats.exporter import export_chat
from mvu_store.chats.importer import import_chat
from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.service import MvuService
from mvu_store.store_host import StoreHost, play_turn
from tests.chats.synthetic import ChatSpec, chat_lines, write_chat
from tests.chats.test_import import erin_card


def _variables(path: Path) -> list[list[object] | None]:
    return [json.loads(line).get("variables") for line in path.read_bytes().splitlines()[1:]]


@pytest.mark.parametrize("spec", [
    ChatSpec(language="zh", turns=7, swipes=3, hidden=(2, 5), gap=2, edited=(4,)),
    ChatSpec(language="en", turns=5, swipes=2, hidden=(), gap=0, placeholder_schema=False, metadata_variables=False),
    ChatSpec(language="en", turns=3, extra_keys={"initialized_lorebooks": {"a": ["b"]}, "card_notes": "kept"}),
])
async def test_import_then_export_gives_the_same_file(ledger: Ledger, tmp_path: Path, spec: ChatSpec) -> None:
    original = write_chat(tmp_path / "chat.jsonl", spec)
    summary = await import_chat(ledger, original)
    exported = tmp_path / "back.jsonl"
    assert await export_chat(ledger, summary.session_id, exported) == summary.messages
    assert exported.read_bytes() == original.read_bytes()


@pytest.mark.parametrize("card", [False, True])
async def test_a_file_written_otherwise_imports_to_what_json_stringify_would_have_written(
        ledger: Ledger, tmp_path: Path, card: bool) -> None:
    # Its lines are read the careful way and each state encoded: the same rows as the parts of
    # the lines as JSON.stringify writes them give (test_import_then_export_gives_the_same_file).
    spec = ChatSpec(language="zh", turns=5, swipes=3, hidden=(2,), gap=1)
    original = write_chat(tmp_path / "chat.jsonl", spec)
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in chat_lines(spec)),
                      encoding="utf-8")
    summary = await import_chat(ledger, spaced, card=erin_card() if card else None)
    exported = tmp_path / "back.jsonl"
    await export_chat(ledger, summary.session_id, exported)
    assert exported.read_bytes() == original.read_bytes()


async def test_with_a_card_the_declaration_added_to_each_state_is_not_exported(ledger: Ledger,
                                                                               tmp_path: Path) -> None:
    original = write_chat(tmp_path / "chat.jsonl", ChatSpec(language="en", turns=4, gap=0))
    summary = await import_chat(ledger, original, card=erin_card())
    exported = tmp_path / "back.jsonl"
    await export_chat(ledger, summary.session_id, exported)
    assert exported.read_bytes() == original.read_bytes()


async def test_turns_played_after_the_import_are_exported_with_their_states(ledger: Ledger, tmp_path: Path) -> None:
    original = write_chat(tmp_path / "chat.jsonl", ChatSpec(language="en", turns=2))
    summary = await import_chat(ledger, original)
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    await play_turn(service, host, summary.session_id, turn=summary.next_turn, user="Tip her.",
                    reply="_.add('Erin.gold', 10);//tip")
    exported = tmp_path / "back.jsonl"
    assert await export_chat(ledger, summary.session_id, exported) == summary.messages + 2
    lines = exported.read_bytes().splitlines()
    assert lines[:-2] == original.read_bytes().splitlines()
    user, reply = json.loads(lines[-2]), json.loads(lines[-1])
    before = json.loads(lines[-3])["variables"][-1]
    assert user["is_user"] and user["mes"] == "Tip her." and user["variables"] == [before]
    assert reply["mes"] == "_.add('Erin.gold', 10);//tip" and reply["swipes"] == [reply["mes"]]
    [after] = reply["variables"]
    assert list(after) == list(before)  # the chat's own shape: its keys in its order
    assert after["stat_data"]["Erin"]["gold"] == before["stat_data"]["Erin"]["gold"] + 10
    assert after["schema"] == before["schema"] and after["initialized_lorebooks"] == before["initialized_lorebooks"]
    # The exported file imports again, as a chat of its own, with every state it carries.
    again = await import_chat(ledger, exported)
    assert again.session_id != summary.session_id and again.states == summary.states + 2


async def test_an_unknown_session_is_missing(ledger: Ledger, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(MvuError) as refused:
        await export_chat(ledger, "nope", folder / "x.jsonl")
    assert refused.value.code == "MVU_MISSING"
    assert not any(folder.iterdir())  # not even the temporary file


async def test_the_object_form_of_variables_and_unrecorded_replies(ledger: Ledger, tmp_path: Path) -> None:
    header = {"user_name": "A", "character_name": "B", "create_date": "2024-01-01", "chat_metadata": {}}

    def state(gold: int) -> dict[str, object]:
        return {"stat_data": {"gold": gold}, "schema": "zod"}

    lines = [header,
             {"mes": "hi", "is_user": True, "variables": [state(1)]},
             {"mes": "_.add('gold', 1);", "swipes": ["_.add('gold', 2);", "_.add('gold', 1);"], "swipe_id": 1,
              "variables": {"0": state(3), "1": state(2)}},
             {"mes": "more", "is_user": True, "variables": [state(2)]},
             {"mes": "_.add('gold', 5);"},  # its floor's variables were cleaned: no state
             {"mes": "again", "is_user": True},
             {"mes": "_.add('gold', 1);", "variables": [state(8)]}]
    original = tmp_path / "chat.jsonl"
    original.write_bytes("".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
                                 for line in lines).encode())
    summary = await import_chat(ledger, original)
    # Both swipes of the first reply agree; the last one follows an unrecorded reply: unchecked.
    assert (summary.agreed, summary.differed, summary.unchecked) == (2, 0, 1)
    assert summary.states == 5 and len(summary.branches) == 1
    exported = tmp_path / "back.jsonl"
    await export_chat(ledger, summary.session_id, exported)
    assert exported.read_bytes() == original.read_bytes()


async def test_a_session_never_imported_exports_its_turns(ledger: Ledger, tmp_path: Path) -> None:
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    await service.discover(definition={"character_id": "hero", "name": "Hero", "initvar": ["hp: 50\ngold: 10\n"]})
    await host.create_session("plain", created_at=1_700_000_000_000)
    await service.select_character(session_id="plain", character_id="hero")
    await play_turn(service, host, "plain", turn=1, user="Rest.", reply="_.set('hp', 60);//rested")
    exported = tmp_path / "plain.jsonl"
    assert await export_chat(ledger, "plain", exported) == 2
    header, user, reply = (json.loads(line) for line in exported.read_bytes().splitlines())
    assert header["create_date"] == 1_700_000_000_000 and header["chat_metadata"] == {}
    assert user["is_user"] and user["mes"] == "Rest."
    assert user["variables"][0]["stat_data"] == {"hp": 50, "gold": 10}  # the instance's initial data
    assert reply["swipes"] == [reply["mes"]] and reply["swipe_id"] == 0
    [state] = reply["variables"]
    assert state["stat_data"] == {"hp": 60, "gold": 10}
    assert set(state) <= {"stat_data", "display_data", "delta_data", "schema"}
    # It imports as a chat of its own, its one reply checked against the state before it.
    summary = await import_chat(ledger, exported)
    assert summary.states == 2 and (summary.agreed, summary.differed, summary.unchecked) == (1, 0, 0)


async def test_a_reply_without_commands_agrees_only_with_an_unchanged_state(ledger: Ledger, tmp_path: Path) -> None:
    lines = [{"user_name": "A", "character_name": "B", "create_date": "2024-01-01", "chat_metadata": {}},
             {"mes": "hi", "is_user": True, "variables": [{"stat_data": {"gold": 1}}]},
             {"mes": "Nothing happens.", "swipes": ["Nothing happens.", "Still nothing."], "swipe_id": 0,
              "variables": [{"stat_data": {"gold": 1}}, {"stat_data": {"gold": 2}}]}]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = await import_chat(ledger, path)
    assert (summary.agreed, summary.differed) == (1, 1)
    assert summary.differences == [{"message": 1, "line": 3, "swipe": 1, "paths": ["/gold"], "count": 1}]


async def test_a_user_messages_swipes_keep_their_states_in_the_line(ledger: Ledger, tmp_path: Path) -> None:
    lines = [{"user_name": "A", "character_name": "B", "create_date": "2024-01-01", "chat_metadata": {}},
             {"mes": "b", "is_user": True, "swipes": ["a", "b"], "swipe_id": 1,
              "variables": [{"stat_data": {"gold": 0}}, {"stat_data": {"gold": 1}}]},
             {"mes": "_.add('gold', 1);", "variables": [{"stat_data": {"gold": 2}}]}]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = await import_chat(ledger, path)
    assert summary.states == 2 and summary.branches == [] and summary.agreed == 1
    exported = tmp_path / "back.jsonl"
    await export_chat(ledger, summary.session_id, exported)
    assert [json.loads(line) for line in exported.read_bytes().splitlines()] == lines


async def test_a_swipe_branch_exports_as_a_chat_with_the_swipes_state(ledger: Ledger, tmp_path: Path) -> None:
    spec = ChatSpec(language="en", turns=2, swipes=2, gap=0)
    summary = await import_chat(ledger, write_chat(tmp_path / "chat.jsonl", spec))
    [branch] = summary.branches
    exported = tmp_path / "branch.jsonl"
    assert await export_chat(ledger, branch, exported) == 2
    user, reply = (json.loads(line) for line in exported.read_bytes().splitlines()[1:])
    swiped = next(line for line in chat_lines(spec) if len(line.get("swipes", [])) == 2)
    assert user["mes"] == "I sit down and order a drink." and reply["mes"] == swiped["swipes"][0]
    assert reply["variables"][0]["stat_data"] == swiped["variables"][0]["stat_data"]


async def test_a_repeated_state_is_stored_once_and_one_only_python_finds_equal_is_not(ledger: Ledger,
                                                                                     tmp_path: Path) -> None:
    """A user's message keeps the state of the reply before it: the same JSON, one blob. A state
    Python finds equal (``true == 1``) but JSON does not is a state of its own."""
    header = {"user_name": "U", "character_name": "C", "create_date": "2024-01-01", "chat_metadata": {}}
    one = {"stat_data": {"a": 1, "b": [1.5, "x"]}, "display_data": {}, "delta_data": {}}
    true = {"stat_data": {"a": True, "b": [1.5, "x"]}, "display_data": {}, "delta_data": {}}
    lines = [header, {"name": "C", "is_user": False, "mes": "hi", "variables": [one]},
             {"name": "U", "is_user": True, "mes": "go", "variables": [json.loads(json.dumps(one))]},
             {"name": "C", "is_user": False, "mes": "<UpdateVariable>_.set('a', 1, true);</UpdateVariable>",
              "variables": [true]}]
    original = tmp_path / "chat.jsonl"
    original.write_text("".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines))
    used = (await ledger.usage()).used_bytes
    summary = await import_chat(ledger, original)
    assert summary.states == 3 and (summary.agreed, summary.differed) == (1, 0)
    exported = tmp_path / "exported.jsonl"
    await export_chat(ledger, summary.session_id, exported)
    assert exported.read_bytes() == original.read_bytes()
    assert summary.instance_id is not None
    first, kept, changed = [version.variables_hash for version in await ledger.versions(summary.instance_id)]
    assert first == kept != changed
    assert await ledger.audit() == [] and (await ledger.usage()).used_bytes > used
