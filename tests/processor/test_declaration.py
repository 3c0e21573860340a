"""Recognising a command processor declaration, and the one an enabled card carries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mvu_store.cards import read_card
from mvu_store.errors import Code, MvuError
from mvu_store.processor.declaration import MAX_SOURCE_UNITS, card_declaration, declaration
from tests.processor.support import PASS, helper

GATED = helper("const gate = globalThis.fixtureGate;\n"
               "    if (!gate.extractOperationBlock(gate.latestUserText()).includes('allow')) commands.length = 0;")


def test_a_complete_declaration_is_recognised_with_its_source_and_hash() -> None:
    made = declaration(PASS)
    assert made is not None and made.source == PASS and made.gate_global is None
    assert len(made.sha256) == 64


@pytest.mark.parametrize("source", [
    None, 42, "", "console.log('hi')",
    "eventOn('global_Mvu_initialized', f);",  # never names COMMAND_PARSED
    "x.COMMAND_PARSED; eventOn(other, f); const s = 'global_Mvu_initialized';",  # not the init listener
    "x['COMMAND_PARSED']; eventOn('global_Mvu_initialized', f);",  # a computed name does not count
    "x.COMMAND_PARSED; window.eventOn('global_Mvu_initialized', f);",  # not the bare eventOn
])
def test_what_is_not_a_declaration(source: Any) -> None:
    assert declaration(source) is None


@pytest.mark.parametrize("source", [
    "import x from 'y';\n" + PASS,
    "export const a = 1;\n" + PASS,
    PASS + "\nimport('os').then(os => os.exec(['id']));",
    PASS + "\n function (",
])
def test_a_declaration_must_be_a_complete_inline_script(source: str) -> None:
    with pytest.raises(MvuError) as caught:
        declaration(source)
    assert caught.value.code == Code.COMMAND_HOOK_DECLARATION


def test_a_declaration_over_64_ki_code_units_is_refused() -> None:
    # An astral character is two code units: half as many of them reach the limit.
    padding = "//" + "😀" * (MAX_SOURCE_UNITS // 2) + "\n"
    with pytest.raises(MvuError) as caught:
        declaration(padding + PASS)
    assert caught.value.code == Code.COMMAND_HOOK_LIMIT
    assert declaration("//" + "a" * (MAX_SOURCE_UNITS - len(PASS) - 3) + "\n" + PASS) is not None


def test_the_gate_global_is_found_and_checked() -> None:
    made = declaration(GATED)
    assert made is not None and made.gate_global == "fixtureGate"
    two = GATED + "\nconst other = globalThis.secondGate; other.latestUserText(); other.extractOperationBlock('');"
    for source in (two, GATED.replace("fixtureGate", "Mvu"), GATED.replace("fixtureGate", "__proto__")):
        with pytest.raises(MvuError) as caught:
            declaration(source)
        assert caught.value.code == Code.COMMAND_HOOK_DECLARATION


def _card(scripts: list[Any]) -> dict[str, Any]:
    # Tavern Helper stores its settings as [key, value] pairs.
    return {"spec": "chara_card_v3", "data": {"extensions": {"tavern_helper": [["scripts", scripts]]}}}


def _script(content: str, **flags: Any) -> dict[str, Any]:
    return {"type": "script", "name": "s", "content": content, **flags}


def test_enabled_declarations_are_singular_and_disabled_folders_hide_their_children() -> None:
    other = helper("commands.length = 0;")
    found = card_declaration(_card([_script(PASS), _script(other, enabled=False)]))
    assert found is not None and found.source == PASS
    folder = {"type": "folder", "enabled": False, "scripts": [_script(other, enabled=True)]}
    assert card_declaration(_card([folder])) is None
    assert card_declaration(_card([{"value": _script(other, disabled=True)}])) is None
    # The same declaration twice is one declaration; two different ones conflict.
    assert card_declaration(_card([_script(PASS), _script(PASS)])) is not None
    with pytest.raises(MvuError) as caught:
        card_declaration(_card([_script(PASS), {"type": "folder", "scripts": [_script(other)]}]))
    assert caught.value.code == Code.COMMAND_HOOK_CONFLICT


def test_a_card_without_scripts_has_no_declaration() -> None:
    assert card_declaration({"spec": "chara_card_v3", "data": {}}) is None
    assert card_declaration({"source": {"raw": _card([_script(PASS)])}}) is not None


def test_a_card_file_gives_its_declaration_to_discovery() -> None:
    card = _card([_script(PASS)])
    card["data"]["name"] = "Guarded"
    read = read_card(json.dumps(card).encode())
    assert read.command_source == PASS and read.definition("guarded")["command_source"] == PASS
    conflicting = _card([_script(PASS), _script(helper("commands.length = 0;"))])
    conflicting["data"]["name"] = "Two"
    read = read_card(json.dumps(conflicting).encode())
    assert read.command_source is None and any("MVU_COMMAND_HOOK_CONFLICT" in line for line in read.problems)
    assert read.command_source_error == "MVU_COMMAND_HOOK_CONFLICT"
    assert read.definition("two")["command_source_error"] == "MVU_COMMAND_HOOK_CONFLICT"
