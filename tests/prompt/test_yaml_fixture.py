"""The world-book macro's output against the original implementation's, byte for byte.

``fixtures/yaml_inputs.json`` holds the states and entry texts we wrote (nested maps and lists,
multi-line and ambiguous strings, integer-like keys, ``$`` keys, Chinese text, long lines that
fold, control characters). ``fixtures/yaml_cases.json`` holds what JS-Slash-Runner's macro module
and the ``yaml`` 2.x package print for them, made by ``fixtures/generate.mjs``. To regenerate it
(node 20; nothing here needs node at test time)::

    mkdir /tmp/gen && cd /tmp/gen && npm init -y
    npm install yaml@2.9.0 lodash@4.18.1 lodash-omitdeep@1.9.0 esbuild@0.24
    git -C <JS-Slash-Runner checkout> show c62cdc36:src/function/macro_like.ts > macro_like.ts
    node <repository>/tests/prompt/fixtures/generate.mjs macro_like.ts

The versions are those JS-Slash-Runner's lockfile names at that commit, except lodash-omitdeep: it
locks 1.10.1, the registry this was made with holds 1.9.0 at most. yaml 2.9.1 writes the same
bytes for these cases. The script bundles the macro module with stubs for the two host
modules it imports (the chat and the variable store, which hand it each case's variables) and
runs each case through it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mvu_store.prompt import expand_message_variables, format_message_variable, yaml_stringify

FIXTURES = Path(__file__).parent / "fixtures"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


INPUTS = _load("yaml_inputs.json")
CASES = _load("yaml_cases.json")
STATES = list(zip(INPUTS["states"], CASES["states"], strict=True))
MACROS = list(zip(INPUTS["macros"], CASES["macros"], strict=True))


def test_the_fixture_covers_enough_states_and_lines_up() -> None:
    assert len(STATES) >= 40
    assert all(given["name"] == expected["name"] for given, expected in STATES + MACROS)


@pytest.mark.parametrize(("given", "expected"), STATES, ids=[given["name"] for given, _ in STATES])
def test_yaml_text_matches_the_yaml_package(given: dict[str, Any], expected: dict[str, Any]) -> None:
    assert yaml_stringify(given["value"]) == expected["yaml"]


@pytest.mark.parametrize(("given", "expected"), STATES, ids=[given["name"] for given, _ in STATES])
def test_macro_text_for_a_state_matches(given: dict[str, Any], expected: dict[str, Any]) -> None:
    prefix = given.get("prefix", "")
    assert prefix + format_message_variable(given["value"], prefix) == expected["text"]


@pytest.mark.parametrize(("given", "expected"), MACROS, ids=[given["name"] for given, _ in MACROS])
def test_entry_text_expands_as_the_original_does(given: dict[str, Any], expected: dict[str, Any]) -> None:
    assert expand_message_variables(given["text"], given["variables"]) == expected["expanded"]
