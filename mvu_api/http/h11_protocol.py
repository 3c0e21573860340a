"""uvicorn's HTTP/1.1 protocol with the limits a server facing any client needs.

- **A deadline for each request's head.** uvicorn closes a keep-alive connection that stays
  idle after a response, but a connection that opens and sends nothing, or sends its headers a
  byte at a time (a slowloris), is kept for ever: enough of them hold the server's file
  descriptors and memory. Here every request's head (request line and headers) must arrive
  within ``head_timeout`` seconds of the connection opening or of the previous response, else
  the connection is closed. The body has its own deadline (``--body-timeout``, answered with
  408 by the middleware).
- **A bound on a head's size**, :data:`MAX_HEAD_BYTES`: h11 checks its own bound only on a head
  that has not all arrived, so a large one that arrives in one read passed whole; here a head
  that does not end within the bound is answered 431 ``MVU_HEAD_TOO_LARGE`` and the connection
  closed, however it arrives.
- **A bound on open connections**, :data:`MAX_CONNECTIONS`, that clients without the token cannot
  fill: a connection is *unproven* until a request on it passed the bearer check (the middleware
  marks the request's scope with :data:`AUTHENTICATED`; a 401 closes its connection). When one
  more connection arrives at the bound, the oldest unproven connection that is waiting for a
  request head (or sending a head slowly), or answering a request without the token (a public
  read whose client does not read the answer), is dropped to make room; only when none is (every
  connection is proven or inside a request with the token) is the new one answered 503
  ``MVU_TOO_MANY_CONNECTIONS`` (with ``Retry-After``) and closed at once. So 512 connections
  sending a wrong token, a slow head or public reads they never read never keep a client with the
  token out.
- **Typed answers to malformed requests**: what h11 cannot parse is a 400 ``MVU_BAD_REQUEST``
  problem instead of uvicorn's plain text.

Each of these refusals is one line of the log.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from mvu_api.http.problems import problem

HEAD_TIMEOUT_SECONDS = 10.0
MAX_HEAD_BYTES = 16 * 1024
"""The request line and headers of one request, with their line ends."""
MAX_CONNECTIONS = 512
"""Open connections at once; the listening socket's backlog holds up to 2,048 more waiting."""

AUTHENTICATED = "mvu.authenticated"
"""The scope key :class:`~mvu_api.http.middleware.BearerAuth` sets on a request once checked:
True when its credentials let it in (its connection is proven), False when it is answered without
them (a public read, a 401); absent before the check."""

# Transport-level codes, as in ``problems.py``.
HEAD_TOO_LARGE = "MVU_HEAD_TOO_LARGE"
BAD_REQUEST = "MVU_BAD_REQUEST"
TOO_MANY_CONNECTIONS = "MVU_TOO_MANY_CONNECTIONS"

_REASONS = {400: "Bad Request", 431: "Request Header Fields Too Large", 503: "Service Unavailable"}
_HEAD_END = b"\r\n\r\n"

log = logging.getLogger("mvu.http")


class HeadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with the limits above; :func:`with_head_timeout` makes a server's
    subclass, which holds its limits and its unproven connections."""

    head_seconds: ClassVar[float]
    max_head_bytes: ClassVar[int]
    max_connections: ClassVar[int]
    unproven: ClassVar[dict[HeadDeadlineProtocol, None]]
    """This server's connections not yet proven, oldest first."""
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.unproven[self] = None
        if len(self.connections) > self.max_connections and not self._make_room():
            self._refuse(503, TOO_MANY_CONNECTIONS, f"the server holds {self.max_connections} connections, its "
                                                    "most: retry later")
            return
        self._arm()

    def _make_room(self) -> bool:
        """Close the oldest unproven connection that can give up its slot, if there is one."""
        waiting = next((other for other in self.unproven if other is not self and other._yields_slot()), None)
        if waiting is None:
            return False
        waiting._disarm()
        log.info("%s closed: no request with the token yet, and a new connection needs its slot", waiting._peer())
        # Not close(), which waits for the answer buffered to be read: a client that never
        # reads would keep the slot.
        waiting.transport.abort()
        del self.unproven[waiting]
        return True

    def _yields_slot(self) -> bool:
        """Waiting for a request head, or answering one without the token (a public read, a
        401): a client that pipelines public reads and never reads the answers keeps its
        connection inside a request, with no head deadline, for as long as it likes."""
        if self._deadline is not None:
            return True
        cycle: RequestResponseCycle | None = self.cycle
        return cycle is not None and cycle.scope.get(AUTHENTICATED) is False

    def data_received(self, data: bytes) -> None:
        # Only while a new request's head is awaited: after an early answer (a 413, say) the
        # rest of the previous request's body may still be arriving, and is no head.
        if self._deadline is not None and self.conn.their_state is h11.IDLE and self._head_too_large(data):
            self._refuse(431, HEAD_TOO_LARGE, f"a request's line and headers are at most {self.max_head_bytes} bytes",
                         limit=self.max_head_bytes)
            return
        super().data_received(data)

    def _head_too_large(self, data: bytes) -> bool:
        """Whether the head being received (buffered, then ``data``) does not end in the bound."""
        buffered = self.conn.trailing_data[0]
        if len(buffered) + len(data) <= self.max_head_bytes:
            return False
        head = (buffered + data)[:self.max_head_bytes + len(_HEAD_END)]
        return _HEAD_END not in head

    def send_400_response(self, msg: str) -> None:
        # uvicorn has already logged the malformed request (one line); the answer is a problem.
        self._refuse(400, BAD_REQUEST, "the request is not valid HTTP/1.1", logged=True)

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before:  # a request's head arrived: its body has a deadline of its own
            self._disarm()

    def on_response_complete(self) -> None:
        if self.scope.get(AUTHENTICATED):
            self.unproven.pop(self, None)
        finished = self.cycle
        super().on_response_complete()
        # uvicorn starts a pipelined request already read inside that call: a request under
        # way, not a head awaited (a deadline would close it, or let it be closed for room).
        if not self.transport.is_closing() and self.cycle is finished:
            self._arm()  # the next request's head

    def connection_lost(self, exc: Exception | None) -> None:
        self.unproven.pop(self, None)
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.head_seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            log.info("%s closed: no request head within %.1f s", self._peer(), self.head_seconds)
            self.transport.close()

    def _refuse(self, status: int, code: str, detail: str, *, logged: bool = False, **members: Any) -> None:
        """Answer ``status`` with a problem outside any request cycle, and close."""
        self._disarm()
        answer = problem(status, code, detail, headers={"Connection": "close"}, **members)
        head = f"HTTP/1.1 {status} {_REASONS[status]}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in answer.headers.items()) + "\r\n"
        self.transport.write(head.encode("latin-1") + bytes(answer.body))
        self.transport.close()
        if not logged:
            log.info("%s %s %s", self._peer(), status, code)

    def _peer(self) -> str:
        where: Any = self.client
        return f"{where[0]}:{where[1]}" if where else "-"


def with_head_timeout(seconds: float, *, max_head_bytes: int = MAX_HEAD_BYTES,
                      max_connections: int = MAX_CONNECTIONS) -> type[H11Protocol]:
    """The protocol class for uvicorn's ``http=`` with this deadline for a request's head."""

    class ServerProtocol(HeadDeadlineProtocol):
        """One server's: its limits and its own unproven connections."""

    ServerProtocol.head_seconds = seconds
    ServerProtocol.max_head_bytes = max_head_bytes
    ServerProtocol.max_connections = max_connections
    ServerProtocol.unproven = {}
    return ServerProtocol
