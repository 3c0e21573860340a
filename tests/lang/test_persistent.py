"""States are persistent: every command builds a new state and leaves the earlier ones as they
were, so the state a check saw stays valid (the schema's memo relies on it) and the undo of a
refused command is the previous state itself."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from lang_support import Recorder, text_of

from mvu_store.lang import apply_update, initialize_variables, parse_commands

META = initialize_variables(
    [
        "hero: {$meta: {extensible: true}, hp: [100, health], gold: 5, bag: [rope, lamp], tags: {a: 1}}\n"
        'party: [{"$arrayMeta": true, "$meta": {"extensible": true, "template": {"hp": 10}}}, {"hp": 3}]\n'
        "npc: {$meta: {extensible: true, template: {mood: calm}}, bob: {mood: sad}}\n"
        "open: {$meta: {extensible: true, recursiveExtensible: true}, deep: {x: [1, 2]}}\n"
    ]
)
PLAIN = {"stat_data": {"hero": {"hp": 50, "gold": 5, "bag": ["rope", "lamp"], "tags": {"a": 1}}, "day": 1}}
V2 = {**PLAIN, "mvu_schema": {"mvuSchema": 1, "interpreterVersion": 2, "source": "..."}}

COMMANDS = [
    "_.set('hero.hp', 40);",
    "_.set('hero.gold', '7');",
    "_.set('hero.tags', undefined);",
    "_.set('hero.tags.b', 2);",
    "_.add('hero.gold', 5);",
    "_.add('hero.hp', -1);",
    "_.insert('hero.bag', 'sword');",
    "_.insert('hero.bag', 0, 'torch');",
    "_.insert('hero', 'pet', {name: 'cat', $meta: {extensible: true}});",
    "_.insert('hero', {extra: {deep: [1]}});",
    "_.insert('hero.tags', 'c', 3);",
    "_.insert('party', {name: 'Ann'});",
    "_.insert('npc', 'amy', {age: 3});",
    "_.insert('open.deep', 'y', {z: 1});",
    "_.insert('open.deep.x', 9);",
    "_.delete('hero.tags.a');",
    "_.delete('hero.bag', 'rope');",
    "_.delete('hero.bag', 0);",
    "_.delete('hero.bag.1');",
    "_.delete('hero.tags', 0);",
    "_.delete('day');",
    "_.set('hero.tags', {$meta: {extensible: true}, name: 'dog'}); _.insert('hero', 'late', 1);",
    "_.set('missing.path', 1);",
    "_.set('a.b', 1);",
    "_.insert('new.list', 'k', 'v');",
    '<JSONPatch>[{"op": "replace", "path": "/hero/gold", "value": 1}]</JSONPatch>',
    '<JSONPatch>[{"op": "delta", "path": "/hero/gold", "value": 2}]</JSONPatch>',
    '<JSONPatch>[{"op": "add", "path": "/hero/bag/-", "value": "gem"}]</JSONPatch>',
    '<JSONPatch>[{"op": "insert", "path": "/hero/tags/q", "value": {"r": 1}}]</JSONPatch>',
    '<JSONPatch>[{"op": "remove", "path": "/hero/tags/a"}]</JSONPatch>',
    '<JSONPatch>[{"op": "move", "from": "/hero/gold", "path": "/hero/coins"}]</JSONPatch>',
]
ENVELOPES = {"meta": META, "plain": PLAIN, "v2": V2}


def run(envelope: dict[str, Any], text: str, recorder: Recorder) -> Any:
    return apply_update(envelope, text, check=recorder, validator=recorder)


@pytest.mark.parametrize("name", ENVELOPES)
@pytest.mark.parametrize("command", COMMANDS)
def test_no_command_changes_a_state_built_before(name: str, command: str) -> None:
    envelope = ENVELOPES[name]
    frozen = copy.deepcopy(envelope)
    recorder = Recorder()
    # Each command runs on the state the ones before it left, and twice, so every kind meets a
    # state that is shared with an earlier one.
    result = run(envelope, f"_.set('hero.gold', 6);\n{command}\n{command}\n_.add('hero.gold', 1);", recorder)
    assert recorder.checks >= 2
    recorder.assert_unchanged()
    assert envelope == frozen
    assert text_of(result.variables["display_data"]) == text_of(result.variables["stat_data"])


def without_diagnostics(variables: dict[str, Any]) -> str:
    return text_of({key: value for key, value in variables.items() if key != "update_diagnostics"})


@pytest.mark.parametrize("name", ENVELOPES)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_refused_command_leaves_no_trace(name: str, command: str) -> None:
    envelope = ENVELOPES[name]
    before, after = "_.set('hero.gold', 6);", "_.add('hero.gold', 1);\n_.insert('hero.bag', 'last');"
    first = parse_commands(command)[0]  # only it is refused: an entry may hold more
    # How many checks the command asks for when every one refuses (an insert creating its
    # container under a declaration asks twice: for an object, then for an array).
    alone = Recorder(refuse_call=1, refuse_count=100)
    run(envelope, command[first.start : first.end], alone)
    # A command the check sees is refused by it (the first call is for `before`, the next ones
    # for the command); one refused before any check (a missing path ...) is refused on its own.
    checked = alone.checks > 0
    refused = Recorder(refuse_call=2, refuse_count=alone.checks) if checked else Recorder()
    result = run(envelope, f"{before}\n{command}\n{after}", refused)
    expected = run(envelope, f"{before}\n{command[: first.start]}{command[first.end :]}\n{after}", Recorder())
    codes = [entry["code"] for entry in result.diagnostics][:1]
    assert codes == ["MVU_SCHEMA"] if checked else codes != []
    assert without_diagnostics(result.variables) == without_diagnostics(expected.variables)
    refused.assert_unchanged()


def test_an_insert_next_to_a_child_carrying_meta_cleans_only_the_new_state() -> None:
    recorder = Recorder()
    text = "_.set('hero.tags', {$meta: {extensible: true}, name: 'cat'});\n_.insert('hero', 'owl', {$meta: {}, a: 1});"
    result = run(META, text, recorder)
    recorder.assert_unchanged()
    assert "$meta" in recorder.seen[0][0]["hero"]["tags"]  # the state after the set keeps it
    assert result.variables["stat_data"]["hero"]["tags"] == {"name": "cat"}
    assert result.variables["stat_data"]["hero"]["owl"] == {"a": 1}
    assert result.variables["delta_data"]["changes"][1]["value"] == {"a": 1}
