"""Reading SillyTavern cards: JSON v2/v3, PNG chunks, [initvar] order, schema sources, refusals."""

from __future__ import annotations

import base64
import contextlib
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mvu_api.cli import main
from mvu_store.cards import read_card, summarize
from mvu_store.cards.png import SIGNATURE
from mvu_store.errors import MvuError

SCHEMA = """import { registerMvuSchema } from 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';
export const Schema = z.object({ hero: z.object({ hp: z.coerce.number() }) });
$(() => { registerMvuSchema(Schema); });
"""
OTHER_SCHEMA = SCHEMA.replace("hp:", "mp:")


def entry(comment: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"keys": [], "comment": comment, "content": content, "enabled": True, "insertion_order": 100, **extra}


def card(spec: str = "chara_card_v3", *, entries: list[dict[str, Any]] | None = None,
         extensions: dict[str, Any] | None = None, **data: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "Ann", "first_mes": "Hello", "alternate_greetings": [], **data}
    if entries is not None:
        body["character_book"] = {"entries": entries}
    if extensions is not None:
        body["extensions"] = extensions
    return {"spec": spec, "spec_version": "3.0" if spec.endswith("v3") else "2.0", "data": body}


def raw(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(**texts: dict[str, Any]) -> bytes:
    """A 1x1 PNG with one tEXt chunk per keyword, holding base64 JSON as SillyTavern writes it."""
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    image = chunk(b"IDAT", zlib.compress(b"\x00\x00"))
    text = b"".join(chunk(b"tEXt", key.encode() + b"\x00" + base64.b64encode(raw(value)))
                    for key, value in texts.items())
    return SIGNATURE + header + text + image + chunk(b"IEND", b"")


def code_of(data: bytes) -> str:
    with pytest.raises(MvuError) as caught:
        read_card(data)
    return caught.value.code


def test_v2_json_name_greetings_and_initvar_in_lorebook_order() -> None:
    entries = [
        entry("[InitVar] hero", "hero:\n  hp: 10", insertion_order=900),
        entry("plain lore", "hero: {hp: 99}"),
        entry("stats [INITVAR]", "<initvar>\n```yaml\nhero:\n  hp: 20\nbag: []\n```\n</initvar>", insertion_order=1),
    ]
    found = read_card(raw(card("chara_card_v2", entries=entries, alternate_greetings=["Hi again", "Yo"])))
    assert (found.spec, found.name) == ("chara_card_v2", "Ann")
    assert found.greetings == ("Hello", "Hi again", "Yo")
    # Array order, not insertion_order: MagVarUpdate merges entries as the lorebook lists them.
    assert found.initvar == (entries[0]["content"], entries[2]["content"])
    assert found.schema_source is None and found.problems == ()
    assert summarize(found)["statData"] == {"hero": "object", "bag": "array"}


@pytest.mark.parametrize("comment", ["[InitVar]初始化变量勿开", "[initvar] Do not enable", "[initvar]"])
def test_a_disabled_initvar_entry_is_read_and_is_a_note_not_a_problem(comment: str) -> None:
    found = read_card(raw(card(entries=[entry(comment, "a: 1", enabled=False)])))
    assert found.initvar == ("a: 1",)
    assert found.problems == ()
    assert len(found.notes) == 1 and "disabled" in found.notes[0]
    report = summarize(found)
    assert report["problems"] == [] and report["notes"] == list(found.notes)


@pytest.mark.parametrize("comment", [
    "[InitVar]变量初始化-勿开", "[initvar] keep disabled", "[InitVar] Vui lòng không mở"])
def test_an_enabled_entry_marked_to_stay_off_is_noted(comment: str) -> None:
    found = read_card(raw(card(entries=[entry(comment, "生命: 100")])))
    assert found.initvar == ("生命: 100",)
    assert found.problems == ()
    assert "keep it disabled" in found.notes[0]


def test_initvar_entries_with_name_macros_inspect_as_the_service_reads_them() -> None:
    report = summarize(read_card(raw(card(entries=[entry("[initvar]", "{{user}}:\n  好感度: 0\n名字: {{char}}")]))))
    assert [item["status"] for item in report["initvar"]] == ["ok"]
    assert report["statData"] == {"{{user}}": "object", "名字": "string"}


def test_an_enabled_plain_initvar_entry_has_no_note() -> None:
    found = read_card(raw(card(entries=[entry("[initvar] 初始化", "a: 1")])))
    assert found.notes == () and found.problems == ()


def script(content: str, name: str = "script", **extra: Any) -> dict[str, Any]:
    return {"type": "script", "enabled": True, "name": name, "content": content, **extra}


@pytest.mark.parametrize(("content", "name"), [
    ("import 'https://testingcf.jsdelivr.net/gh/author/cards/dist/白雪/schema.js';", "schema"),
    ("import 'https://cdn.jsdelivr.net/gh/author/cards@main/dist/白雪/脚本/变量结构/index.js';", "变量结构"),
    ("$(async () => { await import('https://example.org/cards/hero/index.js'); });", "Variable schema"),
    ("import 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';\n"
     "import 'https://example.org/hero/schema.js';", "hero"),
])
def test_a_schema_imported_from_a_url_is_found_but_not_runnable(content: str, name: str) -> None:
    helper = {"tavern_helper": {"scripts": [
        script("import 'https://testingcf.jsdelivr.net/gh/MagicalAstrogy/MagVarUpdate/artifact/bundle.js';", "MVU"),
        script(content, name)]}}
    found = read_card(raw(card(entries=[entry("[initvar]", "hp: 1")], extensions=helper)))
    assert found.schema_source is None
    assert found.schema_import is not None and found.schema_import.where == "tavern_helper.scripts[1]"
    assert found.schema_import.url.startswith("https://") and "mvu_zod" not in found.schema_import.url
    report = summarize(found)
    assert report["schema"] == {"found": True, "runnable": False, "importedFrom": found.schema_import.url,
                                "where": "tavern_helper.scripts[1]"}
    assert report["problems"] == []
    assert any(found.schema_import.url in note for note in report["notes"])


@pytest.mark.parametrize(("content", "name", "enabled"), [
    ("import 'https://example.org/cards/hero/status-bar.js';", "状态栏", True),  # not named a schema
    ("import 'https://example.org/cards/hero/schema.js';", "schema", False),  # switched off
    ("const url = 'https://example.org/schema.js';", "schema", True),  # no import
])
def test_other_imports_are_not_a_schema(content: str, name: str, enabled: bool) -> None:
    helper = {"tavern_helper": {"scripts": [script(content, name, enabled=enabled)]}}
    found = read_card(raw(card(extensions=helper)))
    assert found.schema_import is None
    assert summarize(found)["schema"] == {"found": False}


def test_an_inline_declaration_wins_over_an_import() -> None:
    helper = {"tavern_helper": {"scripts": [script("import 'https://example.org/schema.js';", "schema"),
                                            script(SCHEMA, "zod")]}}
    found = read_card(raw(card(extensions=helper)))
    assert found.schema_source == SCHEMA and found.schema_import is None


@pytest.mark.parametrize("shape", ["object", "pairs", "legacy_value", "legacy_flat", "folder"])
def test_schema_from_each_helper_script_shape(shape: str) -> None:
    script = {"type": "script", "enabled": True, "name": "schema", "id": "1", "content": SCHEMA}
    extensions = {
        "object": {"tavern_helper": {"scripts": [script], "variables": {}}},
        "pairs": {"tavern_helper": [["scripts", [script]], ["variables", {}]]},
        "legacy_value": {"TavernHelper_scripts": [{"type": "script", "value": script}]},
        "legacy_flat": {"TavernHelper_scripts": [script]},
        "folder": {"tavern_helper": {"scripts": [{"type": "folder", "enabled": True, "scripts": [script]}]}},
    }[shape]
    found = read_card(raw(card(extensions=extensions)))
    assert found.schema_source == SCHEMA
    assert summarize(found)["schema"] == {"found": True, "chars": len(SCHEMA), "compiles": True,
                                          "interpreterVersion": 2}


def test_disabled_scripts_and_folders_are_ignored() -> None:
    off = {"type": "script", "enabled": False, "content": SCHEMA}
    folder = {"type": "folder", "enabled": False, "scripts": [{"type": "script", "enabled": True, "content": SCHEMA}]}
    found = read_card(raw(card(extensions={"tavern_helper": {"scripts": [off, folder]}})))
    assert found.schema_source is None


def test_legacy_scripts_are_ignored_once_tavern_helper_exists() -> None:
    extensions = {"tavern_helper": {"scripts": []}, "TavernHelper_scripts": [{"value": {"content": SCHEMA}}]}
    assert read_card(raw(card(extensions=extensions))).schema_source is None


def test_schema_from_lorebook_entry_and_disabled_entry_ignored() -> None:
    found = read_card(raw(card(entries=[entry("zod", SCHEMA)])))
    assert found.schema_source == SCHEMA
    found = read_card(raw(card(entries=[entry("zod", SCHEMA, enabled=False)])))
    assert found.schema_source is None and "disabled" in found.problems[0]


def test_same_declaration_twice_is_one_and_different_ones_conflict() -> None:
    script = {"tavern_helper": {"scripts": [{"type": "script", "enabled": True, "content": SCHEMA}]}}
    assert read_card(raw(card(entries=[entry("zod", SCHEMA)], extensions=script))).schema_source == SCHEMA
    with pytest.raises(MvuError) as caught:
        read_card(raw(card(entries=[entry("zod", OTHER_SCHEMA)], extensions=script)))
    assert caught.value.code == "MVU_SCHEMA_CONFLICT"
    assert caught.value.details["sources"] == ["tavern_helper.scripts[0]", "lorebook entry 0"]


def test_uncompilable_schema_is_a_problem_not_a_crash() -> None:
    found = read_card(raw(card(entries=[entry("zod", "registerMvuSchema(eval('x'))")])))
    report = summarize(found)
    assert report["schema"]["compiles"] is False
    assert any("does not compile" in problem for problem in report["problems"])


def test_bad_initvar_entry_is_a_problem_line() -> None:
    report = summarize(read_card(raw(card(entries=[entry("[initvar]", "a: [1"), entry("[initvar]", "b: 2")]))))
    assert [item["status"] for item in report["initvar"]] == ["MVU_INITIALIZATION_INVALID", "ok"]
    assert report["statData"] == {}
    assert len(report["problems"]) == 2


def test_odd_fields_become_problems() -> None:
    found = read_card(raw(card(name=7, first_mes=None, alternate_greetings=["ok", 3],
                               extensions={"tavern_helper": {"scripts": ["junk"]}})), name="file")
    assert found.name == "file" and found.greetings == ("ok",)
    assert len(found.problems) == 3


def test_png_prefers_ccv3_over_chara() -> None:
    data = png(chara=card("chara_card_v2", name="Old"), ccv3=card(name="New"))
    found = read_card(data)
    assert (found.spec, found.name) == ("chara_card_v3", "New")
    only_v2 = read_card(png(chara=card("chara_card_v2", name="Old")))
    assert only_v2.name == "Old" and "ccv3" in only_v2.problems[0]


def test_png_bad_crc_truncated_and_cardless() -> None:
    good = png(ccv3=card())
    position = good.index(b"tEXt") + 10
    assert code_of(good[:position] + bytes([good[position] ^ 1]) + good[position + 1 :]) == "MVU_JSON"
    assert code_of(good[:-20]) == "MVU_JSON"
    assert code_of(good[: len(SIGNATURE) + 3]) == "MVU_JSON"
    assert code_of(png()) == "MVU_CONFIG"
    not_base64 = SIGNATURE + chunk(b"tEXt", b"ccv3\x00!!!") + chunk(b"IEND", b"")
    assert code_of(not_base64) == "MVU_JSON"


def test_non_card_json_and_not_json() -> None:
    assert code_of(b'{"name": "v1 card", "first_mes": "hi"}') == "MVU_CONFIG"
    assert code_of(b'{"spec": "chara_card_v2", "data": []}') == "MVU_CONFIG"
    assert code_of(b"[1, 2]") == "MVU_CONFIG"
    assert code_of(b"{not json") == "MVU_JSON"
    assert code_of(b"\xff\xfe") == "MVU_JSON"
    assert code_of(b"[" * 100_000) == "MVU_JSON"


def test_size_limits() -> None:
    assert code_of(b" " * (32 * 1024 * 1024 + 1)) == "MVU_LIMIT"
    assert code_of(b" " * (8 * 1024 * 1024 + 1)) == "MVU_LIMIT"
    big = SIGNATURE + chunk(b"tEXt", b"ccv3\x00" + b"A" * (12 * 1024 * 1024)) + chunk(b"IEND", b"")
    assert code_of(big) == "MVU_LIMIT"


def test_cli_inspect_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ann.png"
    path.write_bytes(png(ccv3=card(entries=[entry("[initvar]", "hero:\n  hp: 5\nname: Ann"), entry("zod", SCHEMA)])))
    assert main(["card", "inspect", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {
        "name": "Ann", "spec": "chara_card_v3", "greetings": 1,
        "initvar": [{"firstLine": "hero:", "status": "ok"}],
        "statData": {"hero": "object", "name": "string"},
        "schema": {"found": True, "chars": len(SCHEMA), "compiles": True, "interpreterVersion": 2},
        "problems": [], "notes": [],
    }
    assert main(["card", "inspect", str(path)]) == 0
    assert "[initvar] entry" in capsys.readouterr().out


def test_cli_inspect_names_a_declaration_the_original_would_refuse(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # S-8: a `while` loop compiles here; the original's interpreter refuses it.
    looping = SCHEMA + "\nconst count = (n) => { let i = 0; while (i < n) { i += 1; } return i; };\n"
    path = tmp_path / "loop.png"
    path.write_bytes(png(ccv3=card(entries=[entry("[initvar]", "hero:\n  hp: 5"), entry("zod", looping)])))
    assert main(["card", "inspect", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema"]["compiles"] is True
    [problem] = report["problems"]
    assert problem.startswith("the original's interpreter would refuse") and "S-8" in problem


def test_cli_inspect_failure_ends_with_the_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.json"
    path.write_text("{}")
    assert main(["card", "inspect", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "MVU_CONFIG"
    assert main(["card", "inspect", str(tmp_path / "missing.png")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "MVU_MISSING"


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=512), st.binary(max_size=256).map(lambda tail: SIGNATURE + tail),
                 st.binary(max_size=64).map(lambda body: SIGNATURE + chunk(b"tEXt", b"ccv3\x00" + body)
                                            + chunk(b"IEND", b""))))
def test_random_bytes_only_ever_raise_mvu_error(data: bytes) -> None:
    with contextlib.suppress(MvuError):
        read_card(data)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=12)
FIELDS = st.sampled_from(["name", "first_mes", "alternate_greetings", "character_book", "extensions"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(FIELDS, JSON | st.just({"entries": [{"comment": "[initvar]", "content": "registerMvuSchema"}]})
                       | st.just({"tavern_helper": [["scripts", [{"type": "folder"}]]]})))
def test_odd_card_shapes_only_ever_raise_mvu_error(data: dict[str, Any]) -> None:
    with contextlib.suppress(MvuError):
        summarize(read_card(raw({"spec": "chara_card_v2", "data": data})))


def yaml_entry(index: int, chars: int) -> dict[str, Any]:
    lines = [f"k{index}_{line}: {line}\n" for line in range(chars // 12)]
    return entry(f"[initvar] part {index}", "".join(lines))


def test_initvar_entries_share_one_slow_parse_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from mvu_store.lang import initvar

    parsed: list[int] = []
    real_load = initvar.load_yaml
    monkeypatch.setattr(initvar, "load_yaml", lambda text: parsed.append(len(text)) or real_load(text))
    # Each entry is far under the one-document limit; together they are over the card's budget.
    count = initvar.MAX_SLOW_PARSE_CHARS // 60_000 + 1
    over = card(entries=[yaml_entry(index, 60_000) for index in range(count)])
    with pytest.raises(MvuError) as caught:
        read_card(raw(over))
    assert caught.value.code == "MVU_LIMIT" and caught.value.details["limit"] == initvar.MAX_SLOW_PARSE_CHARS
    assert parsed == []  # refused before any entry was read
    with pytest.raises(MvuError) as merged:
        initvar.merge_entries([str(item["content"]) for item in over["data"]["character_book"]["entries"]])
    assert merged.value.code == "MVU_LIMIT" and parsed == []
    # Strict JSON entries are not slow to read and do not count; the YAML under the budget is read.
    json_entries = [entry(f"[initvar] json {index}", json.dumps({f"j{index}": ["x" * 40] * 2_000}))
                    for index in range(count)]
    found = read_card(raw(card(entries=[*json_entries, yaml_entry(99, 60_000)])))
    assert summarize(found)["statData"]["j0"] == "array" and parsed


def test_a_png_of_too_many_chunks_is_refused_at_the_cap() -> None:
    from mvu_store.cards.png import MAX_CHUNKS

    good = png(ccv3=card())
    end = len(good) - len(chunk(b"IEND", b""))
    empty = chunk(b"tEXt", b"")
    assert read_card(good[:end] + empty * (MAX_CHUNKS - 10) + good[end:]).name == "Ann"
    with pytest.raises(MvuError) as caught:
        read_card(good[:end] + empty * MAX_CHUNKS + good[end:])
    assert caught.value.code == "MVU_LIMIT" and caught.value.details == {"limit": MAX_CHUNKS, "kind": "chunks"}
