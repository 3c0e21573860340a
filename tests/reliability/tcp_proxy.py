"""A TCP relay to the test PostgreSQL server that a test can cut and restore, to make the database
unreachable under a running ledger or server (connections reset, new ones refused), and a
listener that accepts connections and never answers (a server that hangs)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


class Relay:
    """``127.0.0.1:<port>`` relayed to ``target`` while open; :meth:`cut` resets every relayed
    connection and refuses new ones until :meth:`restore`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open = True
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if not self._open:
                    _reset(client)
                    continue
                try:
                    upstream = socket.create_connection(self._target, timeout=10)
                except OSError:
                    _reset(client)
                    continue
                upstream.settimeout(None)
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            self._open = False
            sockets, self._sockets = self._sockets, []
        for relayed in sockets:
            _reset(relayed)

    def restore(self) -> None:
        with self._lock:
            self._open = True

    def close(self) -> None:
        self.cut()
        self._listener.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    for end in (source, sink):
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)


def _reset(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
    connection.close()


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A port whose connections are accepted (by the kernel's backlog) and never answered."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
