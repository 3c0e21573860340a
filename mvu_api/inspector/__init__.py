"""The inspector: a page per chat to see the state turn by turn and fix the latest one.

This package holds the page (package data under ``static/``) and its sign-in
(:mod:`~mvu_api.inspector.signin`), and no route: :mod:`~mvu_api.http.inspector_page` serves the
page and its sign-in routes, :mod:`~mvu_api.http.inspector_reads` the two reads the trace routes do
not give (every route lives in :mod:`mvu_api.http`, which imports this package, never the other
way). docs/inspector.md describes the page.
"""
