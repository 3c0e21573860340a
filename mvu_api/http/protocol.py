"""uvicorn's HTTP/1.1 protocol with a deadline for each request's head.

uvicorn closes a keep-alive connection that stays idle after a response, but a connection
that opens and sends nothing, or sends its headers a byte at a time (a slowloris), is kept
for ever: enough of them hold the server's file descriptors and memory. Here every request's
head (request line and headers) must arrive within ``head_timeout`` seconds of the connection
opening or of the previous response, else the connection is closed. The body has its own
deadline (``--body-timeout``, answered with 408 by the middleware).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_SECONDS = 10.0

log = logging.getLogger("mvu.http")


def with_head_timeout(seconds: float) -> type[H11Protocol]:
    """The protocol class for uvicorn's ``http=`` with this deadline for a request's head."""

    class HeadDeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a request's head arrived: its body has a deadline of its own
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request's head

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                where: Any = self.client
                log.info("%s closed: no request head within %.1f s", f"{where[0]}:{where[1]}" if where else "-",
                         seconds)
                self.transport.close()

    return HeadDeadlineProtocol
