"""The sandbox and its prelude, driven directly: the engine process's own classes, in the test's process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mvu_store.errors import Code
from mvu_store.processor.child import CardVM, Clock
from mvu_store.processor.child import Refusal as MvuError  # what the engine process answers with
from mvu_store.processor.prelude import PRELUDE
from tests.processor.support import helper

ONE = [{"type": "set", "args": ["hp", "7"], "full_match": "a", "reason": ""},
       {"type": "set", "args": ["hp", "8"], "full_match": "b", "reason": ""}]


def run(vm: CardVM, commands: Any = ONE, *, user_text: str = "", variables: Any = None) -> Any:
    payload = {"variables": variables if variables is not None else {"stat_data": {"hp": 10}},
               "commands": commands, "text": "reply", "userText": user_text}
    return vm.process(json.dumps(payload))


def start(source: str, gate: str | None = None) -> CardVM:
    return CardVM(PRELUDE, source, gate, Clock(lambda request: False))


def test_real_initialisation_make_last_ordering_and_deduplication() -> None:
    source = """
        const last = (v, commands) => { commands.shift(); };
        const first = (v, commands) => { commands.reverse(); };
        eventOn('global_Mvu_initialized', () => {
          eventMakeLast(Mvu.events.COMMAND_PARSED, last);
          eventOn(Mvu.events.COMMAND_PARSED, first);
          eventMakeLast(Mvu.events.COMMAND_PARSED, last);
          eventOn(Mvu.events.COMMAND_PARSED, first);  // already there: no second copy
        });
    """
    vm = start(source)
    assert vm.listener_count == 2
    # first reverses [7, 8], then last drops the head: only 7 is left.
    assert run(vm) == [ONE[0]]


def test_a_script_that_registers_no_listener_is_refused() -> None:
    with pytest.raises(MvuError) as caught:
        start("eventOn('global_Mvu_initialized', () => {}); Mvu.events.COMMAND_PARSED;")
    assert caught.value.code == Code.COMMAND_HOOK_REGISTRATION


def test_the_disposer_and_the_listener_bounds() -> None:
    vm = start("const off = eventOn(Mvu.events.COMMAND_PARSED, (v, c) => { c.length = 0; }); off();"
               "eventOn(Mvu.events.COMMAND_PARSED, () => {});")
    assert vm.listener_count == 1 and run(vm) == ONE
    with pytest.raises(MvuError) as caught:
        start("for (let i = 0; i < 17; i++) eventOn(Mvu.events.COMMAND_PARSED, () => {});")
    assert caught.value.code == Code.COMMAND_HOOK_EXECUTION
    with pytest.raises(MvuError):
        start("eventOn('no_such_event', () => {}); eventOn(Mvu.events.COMMAND_PARSED, () => {});")


@pytest.mark.parametrize(("body", "reason"), [
    ("variables.stat_data.hp = 1;", "baseline"),
    ("throw new Error('reject');", "threw"),
    ("fetch('https://example.com');", "threw"),
    ("return Promise.resolve();", "async"),
    ("return { then() {} };", "async"),
])
def test_baseline_and_sandbox_boundaries_fail_only_that_call(body: str, reason: str) -> None:
    vm = start(helper(f"if (text === 'reply' && commands.length === 2) {{ {body} }}"))
    variables = {"stat_data": {"hp": 10}}
    with pytest.raises(MvuError) as caught:
        run(vm, variables=variables)
    assert caught.value.code == Code.COMMAND_HOOK_EXECUTION and caught.value.details["reason"] == reason
    assert variables == {"stat_data": {"hp": 10}}
    assert run(vm, [ONE[1]]) == [ONE[1]]  # the next call is unharmed


def test_a_changed_argument_comes_back_for_python_to_refuse() -> None:
    vm = start(helper("commands[0].args[1] = '999';"))
    assert run(vm)[0]["args"] == ["hp", "999"]  # the adapter refuses it (see test_adapter)


GATED = helper("const gate = globalThis.fixtureGate;\n"
               "if (!gate.extractOperationBlock(gate.latestUserText()).includes('allow')) commands.length = 0;")
BLOCK = "<本轮APP操作>\n<本轮执行边界>本轮</本轮执行边界>\n<操作项>allow</操作项>\n</本轮APP操作>"


@pytest.mark.parametrize(("user_text", "kept"), [
    (BLOCK, 2),
    ("", 0),
    (BLOCK + BLOCK, 0),
    (BLOCK + "<本轮操作>", 0),
    ("<本轮操作><操作项>allow</操作项></本轮操作>", 0),  # no execution boundary
    ("<本轮操作>\n<本轮执行边界></本轮执行边界><操作项>allow" + "x" * 30_000 + "</本轮操作>", 0),
])
def test_the_user_operation_gate_narrows_and_is_cleared_between_calls(user_text: str, kept: int) -> None:
    vm = start(GATED, "fixtureGate")
    assert len(run(vm, user_text=user_text)) == kept
    assert run(vm) == []  # the previous call's user text is gone


def test_the_gate_normalises_the_block() -> None:
    vm = start(helper("commands.length = 0; commands.push({type: 'x', args: ["
                      "__commandGate.extractOperationBlock(__commandGate.latestUserText())]});"))
    block = run(vm, user_text=BLOCK)[0]["args"][0]
    assert block.startswith("<本轮操作>") and block.endswith("</本轮操作>") and "<操作项>allow" in block


def test_prelude_globals_cannot_be_replaced_and_code_from_strings_is_gone() -> None:
    probe = ("commands.length = 0; const out = [];"
             "try { eventOn = null; } catch (e) { out.push('eventOn fixed'); }"
             "out.push(typeof eval, typeof Function, String((function () {}).constructor),"
             "         String(Object.getPrototypeOf(async function () {}).constructor),"
             "         typeof require, typeof process, typeof std, typeof setTimeout, typeof XMLHttpRequest);"
             "commands.push({type: 'probe', args: out});")
    vm = start('"use strict";\n' + helper(probe))
    assert run(vm)[0]["args"] == ["eventOn fixed", "undefined", "undefined", "undefined", "undefined",
                                  "undefined", "undefined", "undefined", "undefined", "undefined"]


def test_replaced_builtins_do_not_change_how_the_prelude_works() -> None:
    vm = start(helper("JSON.stringify = () => '[]'; JSON.parse = () => ({}); Array.prototype.slice = null;"))
    assert run(vm) == ONE
    assert run(vm, [ONE[0]]) == [ONE[0]]


def test_a_long_answer_comes_back_as_text() -> None:
    # QuickJS keeps long concatenations as ropes, which the binding does not turn into text.
    many = [{"type": "set", "args": [f"hp{index}", str(index)], "full_match": "x" * 40, "reason": "r"}
            for index in range(600)]
    assert run(start(helper("")), many) == many
