"""HTTP API v1: ``create_app(service, token=...)`` and ``mvu serve`` (see :mod:`mvu_api.http.serve`)."""

from mvu_api.http.app import OPENAPI_PATH, create_app
from mvu_api.http.routes import API_PREFIX, MVU_PREFIX

__all__ = ["API_PREFIX", "MVU_PREFIX", "OPENAPI_PATH", "create_app"]
