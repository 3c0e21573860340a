"""The service fixtures of tests/service (a MemoryHost attached to an MvuService on both engines)."""

from tests.service.conftest import host, service

__all__ = ["host", "service"]
