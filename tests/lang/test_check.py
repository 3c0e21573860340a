"""The per-command state check (a card's declared schema applied after every command, P-3)."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.lang import apply_update


def clamp_hp(stat_data: Any) -> Any:
    """A check that refuses a negative gold and clamps hp to 0..100 (a transform)."""
    if stat_data.get("gold", 0) < 0:
        raise MvuError(Code.SCHEMA, "gold must not be negative")
    return {**stat_data, "hp": max(0, min(100, stat_data["hp"]))}


def test_a_refused_command_is_undone_and_the_rest_still_runs() -> None:
    variables = {"stat_data": {"hp": 50, "gold": 3}}
    text = "_.set('gold', 3, -5);//theft\n_.add('hp', 70);//potion\n_.set('mood', 'glad');"
    result = apply_update(variables, text, check=clamp_hp)
    assert result.variables["stat_data"]["gold"] == 3
    assert result.variables["stat_data"]["hp"] == 100  # transformed by the check
    assert [d["code"] for d in result.diagnostics] == ["MVU_SCHEMA", "MVU_PATH_MISSING"]
    assert [d["index"] for d in result.diagnostics] == [0, 2]
    # Only the command that stayed is in the change log.
    assert [change["path"] for change in result.variables["delta_data"]["changes"]] == ["/hp"]
    assert variables == {"stat_data": {"hp": 50, "gold": 3}}


def test_a_check_failing_with_another_code_refuses_the_whole_update() -> None:
    def broken(stat_data: Any) -> Any:
        raise MvuError(Code.LIMIT, "interpreter budget")

    with pytest.raises(MvuError) as caught:
        apply_update({"stat_data": {"hp": 1}}, "_.set('hp', 2);", check=broken)
    assert caught.value.code == "MVU_LIMIT"


def test_without_a_check_nothing_is_validated() -> None:
    result = apply_update({"stat_data": {"hp": 50, "gold": 3}}, "_.set('gold', -5);")
    assert result.variables["stat_data"]["gold"] == -5
    assert result.diagnostics == ()


def test_a_declared_state_skips_the_native_schema() -> None:
    """With ``mvu_schema`` the declaration decides: no $meta extensibility checks, and the stored
    native schema is left as it was (the original checks and re-derives it only without one)."""
    schema = {"type": "object", "properties": {}, "extensible": True, "strictSet": True}
    variables = {
        "stat_data": {"bag": ["rope"], "friends": {"ann": 1}},
        "schema": schema,
        "mvu_schema": {"mvuSchema": 1, "interpreterVersion": 2, "source": "unused here"},
    }
    first = apply_update(variables, "_.insert('bag', 'torch');")
    patch = '<JSONPatch>[{"op":"add","path":"/friends/bob","value":2}]</JSONPatch>'
    second = apply_update(first.variables, patch + "\n_.insert('bag', 0, 'map');")
    assert second.diagnostics == ()
    assert second.variables["stat_data"] == {"bag": ["map", "rope", "torch"], "friends": {"ann": 1, "bob": 2}}
    assert second.variables["schema"] == schema


def test_without_a_declaration_the_derived_schema_still_refuses() -> None:
    first = apply_update({"stat_data": {"bag": ["rope"]}}, "_.set('bag', ['rope', 'axe']);")
    refused = apply_update(first.variables, "_.insert('bag', 'torch');")
    assert [d["code"] for d in refused.diagnostics] == ["MVU_SCHEMA"]
