"""Selection generations (mvu_store/service/selection_views.py): what a message capability and a
greeting view compare to know the session's selection is still the one they were made under."""

from __future__ import annotations

import pytest

from mvu_store.service import selection_views
from mvu_store.service.selection_views import ViewGenerations


def test_every_selection_call_issues_a_new_generation() -> None:
    views = ViewGenerations()
    never = views.generation("s")
    views.bump("s")
    first = views.generation("s")
    views.bump("s")
    assert len({never, first, views.generation("s")}) == 3
    assert views.generation("other") == never  # another session's selection leaves it alone


def test_a_forgotten_selection_never_restores_what_was_taken_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A generation taken before the session was ever selected (after a restart) must not match
    again once a later selection of the session is forgotten to make room for others: else a
    capability bound then would write again, after a reselection ended it."""
    monkeypatch.setattr(selection_views, "CAPACITY", 2)
    views = ViewGenerations()
    taken = views.generation("s")
    views.bump("s")  # the session selects again: what was taken ends
    assert views.generation("s") != taken
    views.bump("a")
    views.bump("b")  # "s" is forgotten to make room
    forgotten = views.generation("s")
    assert forgotten != taken
    views.bump("c")  # and another session is forgotten: still no old value comes back
    assert views.generation("s") not in (taken, forgotten)
    assert views.token("s", views.generation("s")) != views.token("s", taken)
