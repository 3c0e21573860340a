"""The inspector: a page per chat to see the state turn by turn and fix the latest one.

:mod:`~mvu_api.inspector.page` serves the page (package data under ``static/``) and signs it in
(:mod:`~mvu_api.inspector.signin`); :mod:`~mvu_api.inspector.sessions` adds the two reads the
trace routes do not give. docs/inspector.md describes the page.
"""
