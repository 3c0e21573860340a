"""A recorded transition checked: agreement is equality as JSON, not as Python or as text."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.chats.verify import check_transition
from mvu_store.lang.macros import Names


def _check(before: dict[str, Any], commands: str, after: dict[str, Any]) -> dict[str, Any] | None:
    text = f"reply\n<UpdateVariable>\n{commands}\n</UpdateVariable>"
    return check_transition({"stat_data": before}, text, {"stat_data": after}, names=Names(), at=None)


@pytest.mark.parametrize(("before", "commands", "after"), [
    ({"hp": 4.5, "a": 1}, "_.add('hp', 0.5);", {"hp": 5, "a": 1}),  # 5.0 computed is the 5 recorded
    ({"a": 1, "b": 2}, "_.set('a', 1, 3);", {"b": 2, "a": 3}),  # another key order, the same object
    ({"a": [1, {"b": "x"}]}, "", {"a": [1, {"b": "x"}]}),  # no commands: the state as it was
])
def test_the_same_json_agrees(before: dict[str, Any], commands: str, after: dict[str, Any]) -> None:
    assert _check(before, commands, after) is None


@pytest.mark.parametrize(("before", "commands", "after", "paths"), [
    ({"on": 0}, "_.set('on', 0, 1);", {"on": True}, ["/on"]),  # Python's 1 == True, JSON's not
    ({"n": 1}, "_.set('n', 1, 2);", {"n": 2.5}, ["/n"]),
    ({"a": {"b": 1}}, "_.set('a.b', 1, 2);", {"a": {"b": 2, "c": 0}}, ["/a/c"]),
])
def test_a_difference_names_its_paths(before: dict[str, Any], commands: str, after: dict[str, Any],
                                      paths: list[str]) -> None:
    assert _check(before, commands, after) == {"paths": paths, "count": len(paths)}
