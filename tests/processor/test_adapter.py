"""Command views out, commands back: filtering passes, everything else is refused; the two
narrow repairs. Pure Python (no script runs here)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.lang import parse_commands
from mvu_store.lang.commands import MAX_COMMANDS
from mvu_store.processor.adapter import commands_back, views
from mvu_store.processor.repair import repairs

# The string value looks like a command, but without its ";" it is none.
MIXED = ("_.set('hp',10,1);\n"
         "<JSONPatch>" + json.dumps([
             {"op": "move", "from": "/a~1b/x.y", "path": "/c~0d/[k]"},
             {"op": "add", "path": "/list/0", "value": {"name": "x"}},
             {"op": "replace", "path": '/quote"key', "value": "_.set('hp',999)"},
         ]) + "</JSONPatch>\n"
         "_.delete('list',2);")


def _refused(result: Any, offered: Any, repaired: Any = ()) -> str:
    with pytest.raises(MvuError) as caught:
        commands_back(result, offered, repaired)
    return caught.value.code


def test_views_round_trip_in_source_order_with_pointer_escapes_kept() -> None:
    commands = parse_commands(MIXED)
    shown = views(commands)
    assert [view["type"] for view in shown] == ["set", "move", "insert", "set", "delete"]  # type: ignore[index]
    assert shown[0] == {"type": "set", "args": ["hp", "10", "1"], "full_match": "_.set('hp',10,1)", "reason": ""}
    # The call's own text: no ';', no reason, however the arguments and the reason are written.
    tricky = views(parse_commands("_.set('a', 'x);y', 2);// why; (not) this\n_.add('n', (1));"))
    assert [view["full_match"] for view in tricky] == ["_.set('a', 'x);y', 2)", "_.add('n', (1))"]  # type: ignore[index]
    assert tricky[0]["reason"] == "why; (not) this"  # type: ignore[index]
    assert shown[1]["args"] == ["/a~1b/x.y", "/c~0d/[k]"]  # type: ignore[index]
    assert shown[1]["reason"] == "json_patch"  # type: ignore[index]
    assert commands_back(shown, commands, ()) == commands
    assert shown[3]["args"][0] == '["quote\\"key"]'  # type: ignore[index]
    assert views(parse_commands("_.set('a.b[0]', 1);_.set('x.y', 2);"))[1]["args"] == ["x.y", "2"]  # type: ignore[index]


def test_only_filtering_passes() -> None:
    commands = parse_commands(MIXED)
    shown = views(commands)
    assert commands_back([shown[0], shown[4]], commands, ()) == [commands[0], commands[4]]
    assert commands_back([], commands, ()) == []
    # full_match and reason are the script's to change: they are not what a view is matched by.
    assert commands_back([{**shown[0], "full_match": "", "reason": "why"}], commands, ()) == [commands[0]]
    assert _refused(list(reversed(shown)), commands) == Code.COMMAND_HOOK_OUTPUT
    assert _refused([*shown, shown[4]], commands) == Code.COMMAND_HOOK_OUTPUT  # duplicated
    assert _refused([{"type": "set", "args": ["hp", "999"]}], commands) == Code.COMMAND_HOOK_OUTPUT
    assert _refused([{**shown[0], "args": ["hp", "11", "1"]}], commands) == Code.COMMAND_HOOK_OUTPUT
    assert _refused([{"type": "eval", "args": []}], commands) == Code.COMMAND_HOOK_OUTPUT
    assert _refused([{"type": "set", "args": ["hp", 1]}], commands) == Code.COMMAND_HOOK_OUTPUT
    assert _refused({"length": 0}, commands) == Code.COMMAND_HOOK_OUTPUT
    assert _refused([None], commands) == Code.COMMAND_HOOK_OUTPUT
    assert _refused([shown[0]] * 1001, commands) == Code.COMMAND_HOOK_OUTPUT


def test_an_alias_names_its_canonical_type() -> None:
    commands = parse_commands("_.assign('list', 0, 1);")
    assert commands_back([{"type": "assign", "args": ["list", "0", "1"]}], commands, ()) == commands


def test_the_missing_value_separator_repair_is_narrow() -> None:
    text = '<JSONPatch>[{"op":"replace","path":"/hp":{"n":1}}]</JSONPatch>'
    assert parse_commands(text) == []
    (repair,) = repairs(text)
    assert (repair.command.type, repair.command.path) == ("set", ("hp",))
    assert (repair.type, repair.args, repair.full_match) == ("set", ("hp", '{"n":1}'),
                                                            '{"op":"replace","path":"/hp","value":{"n":1}}')
    pushed = {"type": "set", "args": ["hp", '{"n":1}'], "full_match": repair.full_match}
    assert commands_back([pushed], [repair.command], [repair]) == [repair.command]
    # A changed value under the repair's own text is refused, as is any other push.
    changed = {**pushed, "args": ["hp", '{"n":2}']}
    assert _refused([changed], [repair.command], [repair]) == Code.COMMAND_HOOK_OUTPUT
    assert _refused([{"type": "set", "args": ["hp", "9"]}], [repair.command], [repair]) == Code.COMMAND_HOOK_OUTPUT
    # A scalar after the colon, two blocks, or an op outside add/replace/remove: no repair.
    assert repairs('<JSONPatch>[{"op":"replace","path":"/hp":1}]</JSONPatch>') == ()
    assert repairs(text + text) == ()
    assert repairs('<JSONPatch>[{"op":"copy","path":"/hp":{"n":1}}]</JSONPatch>') == ()



def test_every_operation_of_a_patch_is_repaired_in_place_up_to_the_command_limit() -> None:
    """Each operation gets its own value back (the repair joins the pieces once), as many as a
    reply may hold commands; one more and nothing is repaired, as the parse would refuse it."""
    def block(count: int) -> str:
        return "<JSONPatch>[" + ",".join(f'{{"op":"replace","path":"/v{n}":{{"n":{n}}}}}' for n in range(count)) \
            + "]</JSONPatch>"

    found = repairs(block(MAX_COMMANDS))
    assert [(repair.args, repair.full_match) for repair in found] == [
        ((f"v{n}", f'{{"n":{n}}}'), f'{{"op":"replace","path":"/v{n}","value":{{"n":{n}}}}}')
        for n in range(MAX_COMMANDS)]
    assert repairs(block(MAX_COMMANDS + 1)) == ()

def test_the_update_variable_array_repair() -> None:
    body = '[{"op":"add","path":"/list/0","value":{"a":1}},{"op":"remove","path":"/old"}]'
    found = repairs(f"<UpdateVariable>\n```json\n{body}\n```\n</UpdateVariable>")
    assert [(item.type, item.args) for item in found] == [("insert", ("list", "0", '{"a":1}')), ("delete", ("old",))]
    assert repairs(f"<UpdateVariable><b>{body}</b></UpdateVariable>") == ()  # markup inside: not a bare array
    assert repairs(f"<UpdateVariable>{body}</UpdateVariable><JSONPatch></JSONPatch>") == ()
    assert repairs('<UpdateVariable>[{"op":"replace","path":"/hp","value":1,"x":2}]</UpdateVariable>') == ()
    assert repairs("<UpdateVariable>[]</UpdateVariable>") == ()


@pytest.mark.parametrize(("text", "code"), [
    ('<JSONPatch>[{"op":"replace","path":"/__proto__/x","value":1}]</JSONPatch>', Code.PATH),
    ("_.set('hp', 1);" + " " * (1024 * 1024), Code.LIMIT),
])
def test_unsafe_replies_are_refused_before_any_script_runs(text: str, code: str) -> None:
    with pytest.raises(MvuError) as caught:
        parse_commands(text)
    assert caught.value.code == code
