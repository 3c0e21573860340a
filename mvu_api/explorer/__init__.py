"""The API explorer: a page of ``mvu serve`` that lists the OpenAPI document's operations and sends them.

This package holds the page's files (package data under ``static/``);
:mod:`~mvu_api.http.explorer_page` serves them.
"""
