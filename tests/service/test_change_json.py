"""The JSON ``changes_json`` and ``diff_json`` write without the models is the models' JSON: the
same answer, key by key, for any change a row can hold and any two states."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mvu_store.jsonvalue import canonical_text
from mvu_store.ledger import ChangeEntry, StatePoint
from mvu_store.service import Changes, StateDiff
from mvu_store.service.change_json import changes_text, diff_text
from mvu_store.service.change_reads import _change, _difference, _point, _state_diff

# Text a column holds: any but NUL and lone surrogates (change_rows._text replaces those).
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3), max_leaves=8)
stored = st.none() | json_values.map(canonical_text)


@st.composite
def entries(draw: Any) -> ChangeEntry:
    maybe_int = st.none() | st.integers(0, 2**40)
    return ChangeEntry(
        draw(texts), draw(st.integers(0, 2**31 - 1)), draw(st.integers(0, 1023)), draw(st.integers(1, 2**40)),
        draw(st.none() | texts), draw(maybe_int), draw(maybe_int), draw(texts), draw(st.none() | texts),
        draw(st.sampled_from(["applied", "refused", "ignored"])),
        draw(st.sampled_from(["reply", "opening", "script", "manual", "import", "initial"])), draw(stored),
        draw(stored), draw(st.booleans()), draw(st.none() | texts), draw(st.none() | texts),
        draw(st.none() | texts), draw(st.none() | texts), draw(st.booleans()), draw(st.booleans()))


@settings(max_examples=200, deadline=None)
@given(resource_id=texts, listed=st.lists(entries(), max_size=4), next_before=st.none() | st.integers(0, 2**31),
       truncated=st.booleans())
def test_a_page_of_changes_is_the_models_json(resource_id: str, listed: list[ChangeEntry], next_before: int | None,
                                               truncated: bool) -> None:
    typed = Changes(id=resource_id, changes=[_change(entry) for entry in listed], next_before=next_before,
                    truncated=truncated)
    assert json.loads(changes_text(resource_id, listed, next_before, truncated)) == typed.to_json()


@settings(max_examples=200, deadline=None)
@given(before=json_values, after=json_values, version_key=st.none() | texts)
def test_a_diff_is_the_models_json(before: Any, after: Any, version_key: str | None) -> None:
    start = StatePoint("mvu:a", 1, version_key, canonical_text({"stat_data": before}), "mvu:a")
    end = StatePoint("mvu:b", 2, "k", canonical_text({"stat_data": after, "display_data": {}}), "mvu:a")
    typed = StateDiff.model_validate({"from": _point(start), "to": _point(end), **_difference(start, end)})
    assert json.loads(diff_text(start, end, _state_diff(start, end))) == typed.to_json()
