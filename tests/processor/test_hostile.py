"""Hostile card scripts: each ends in a typed error within the limits, the state is unharmed,
and the next turn (same registration, or a rebuilt engine after running out of memory) works."""

from __future__ import annotations

import pytest

from mvu_store.errors import Code
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from tests.processor.support import RESOURCE, SESSION, helper, hp, make_service, patch, revision

LIMIT, EXECUTION, OUTPUT = Code.COMMAND_HOOK_LIMIT, Code.COMMAND_HOOK_EXECUTION, Code.COMMAND_HOOK_OUTPUT

HOSTILE = [
    ("endless loop", "for (;;) {}", LIMIT),
    ("endless loop that catches", "for (;;) { try { for (;;) {} } catch (e) {} }", LIMIT),
    ("catastrophic regex", "/(a+)+$/.test('a'.repeat(40) + 'b');", LIMIT),
    # QuickJS either reports running out of memory or, on some allocation paths, crashes its
    # process: the engine process then ends and the turn fails as an execution error.
    ("memory bomb", "const keep = []; for (;;) keep.push('x'.repeat(65536) + keep.length);", (LIMIT, EXECUTION)),
    ("memory bomb of objects", "const keep = []; for (;;) keep.push({n: keep.length});", (LIMIT, EXECUTION)),
    ("string doubling", "let s = 'xy'; for (;;) s = s + s;", EXECUTION),  # QuickJS: "string too long"
    ("deep recursion", "const f = n => f(n + 1) + 1; f(0);", EXECUTION),
    ("recursion that swallows its overflow",
     "const f = () => { try { return f(); } catch (e) { return f(); } }; f();", LIMIT),
    ("Function through a constructor", "(() => {}).constructor('return globalThis')();", EXECUTION),
    ("Function through a generator", "Object.getPrototypeOf(function* () {}).constructor('yield 1');", EXECUTION),
    ("eval", "eval('1 + 1');", EXECUTION),
    ("a host module", "std.open('/etc/passwd', 'r');", EXECUTION),
    ("reaching Python", "__builtins__.open('/etc/passwd');", EXECUTION),
    ("throwing null", "throw null;", EXECUTION),
    ("throwing an object whose text never ends", "throw { toString() { for (;;) {} } };", EXECUTION),
    # Looking at what was thrown (is it QuickJS's out of memory?) runs the trap: the time limit ends it.
    ("throwing a proxy", "throw new Proxy({}, { get() { for (;;) {} } });", LIMIT),
    ("async callback", "return (async () => { commands.length = 0; })();", EXECUTION),
    ("a thenable", "return { then(resolve) { resolve(); } };", EXECUTION),
    ("editing a value", "commands[0].args[1] = '999';", OUTPUT),
    ("reordering", "commands.reverse();", OUTPUT),
    ("inventing a command", "commands.push({type: 'set', args: ['gold', '1']});", OUTPUT),
    ("too many commands", "for (let i = 0; i < 1001; i++) commands.push(commands[0]);", OUTPUT),
    ("a getter that spins", "Object.defineProperty(commands, 0, { get() { for (;;) {} } });", LIMIT),
    ("a changed baseline", "variables.stat_data.hp = 1;", EXECUTION),
    ("a poisoned Array prototype", "Array.prototype.push = () => { throw 1; }; Array.prototype.slice = null;"
     " commands.splice(0, 1, {type: 'set', args: ['hp', '1']});", OUTPUT),
]


@pytest.mark.parametrize(("body", "code"), [(body, code) for _, body, code in HOSTILE],
                         ids=[name for name, _, _ in HOSTILE])
async def test_a_hostile_callback_fails_its_turn_only(ledger: Ledger, body: str, code: str | tuple[str, ...]) -> None:
    host = MemoryHost()
    # Hostile on the reply that asks for it, harmless on every other one.
    service = make_service(ledger, host, helper(f"if (text.includes('HOSTILE')) {{ {body} }}"))
    await host.turn(SESSION, turn=1, user="go", reply="_.set('hp', 99);_.set('hp', 98); HOSTILE")
    assert await hp(service) == 10 and await revision(service) == 1  # a failed receipt, nothing applied
    facts = await service.facts(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    failed = [fact.get("detail") for fact in facts if fact.get("phase") == "failed"]
    assert len(failed) == 1 and failed[0] in (code if isinstance(code, tuple) else (code,))
    await host.turn(SESSION, turn=2, user="go", reply=patch(8))
    assert await hp(service) == 8
    await service.close()


@pytest.mark.parametrize(("source", "code"), [
    (helper("") + "\nfor (;;) {}", LIMIT),
    (helper("") + "\nthrow 'not an error';", EXECUTION),
    ("eventOn('global_Mvu_initialized', () => {}); Mvu.events.COMMAND_PARSED;", Code.COMMAND_HOOK_REGISTRATION),
])
async def test_a_script_that_cannot_start_fails_the_turn(ledger: Ledger, source: str, code: str) -> None:
    host = MemoryHost()
    service = make_service(ledger, host, source)
    await host.turn(SESSION, turn=1, user="go", reply=patch(8))
    facts = await service.facts(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert [fact.get("detail") for fact in facts if fact.get("phase") == "failed"] == [code]
    assert await hp(service) == 10
    record = await service.read(id=RESOURCE, scope={"authority": "local", "session_id": SESSION})
    assert record is not None and record.command_processor is None  # no registration was made
    await service.close()


async def test_a_prototype_to_json_changes_nothing_python_is_told(ledger: Ledger) -> None:
    """The prelude reads the commands and the variables field by field: a toJSON planted on
    Object.prototype is never called, so the reply's own commands run."""
    host = MemoryHost()
    service = make_service(ledger, host, helper(
        "Object.prototype.toJSON = function () { return {type: 'set', args: ['hp', '1']}; };"))
    for number, value in ((1, 7), (2, 8)):
        await host.turn(SESSION, turn=number, user="go", reply=patch(value))
        assert await hp(service) == value
    await service.close()
