"""``mvu serve``: migrate, serve the HTTP API, stop cleanly on SIGTERM / SIGINT.

It creates a new SQLite ledger only where none ever was: a missing file whose journal, lock
sidecar or token file is still beside it was deleted or moved, and serving an empty ledger
in its place would lose every acknowledged write without a word (``MVU_STORAGE_GONE``; an
operator who wants a fresh one says so with ``mvu db upgrade``).

The token comes from ``--token``, else ``$MVU_TOKEN``, else a file beside the SQLite ledger
(``<ledger>.token``, mode 0600), generated at first start and printed that once. Sessions are
kept in the ledger's own database (``StoreHost``) and fed over the host routes, so every
process serving the database sees every append at once; JSONL logs are brought in with
``mvu sessions import DIR``. ``--cors-origin`` (repeatable) lets browser pages from those
origins call it (:mod:`mvu_api.http.cors`). On a signal uvicorn stops accepting, lets in-flight
requests finish (a write either commits or, past the grace period, is cancelled before its turn
and writes nothing), then the service is closed and the ledger's engines disposed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import os
import secrets
import signal
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn

from mvu_api.http.app import OPENAPI_PATH, create_app
from mvu_api.http.bodies import BODY_TIMEOUT_SECONDS
from mvu_api.http.cors import allowed_origins
from mvu_api.http.h11_protocol import HEAD_TIMEOUT_SECONDS, with_head_timeout
from mvu_api.http.index import EXPLORER
from mvu_api.http.nonblocking_logs import nonblocking_logging
from mvu_api.http.routes import API_PREFIX, MVU_PREFIX
from mvu_api.http.start_files import taken_back_on_failure
from mvu_api.inspector.signin import CODE_LIFETIME_S, SIGNIN, SignIn
from mvu_store.errors import Code, MvuError
from mvu_store.ledger import Ledger, ledger_file, open_ledger, refuse_a_lost_file
from mvu_store.private_files import make_private_folders
from mvu_store.service import DEFAULT_SESSION_MEMORY_BYTES, MvuService
from mvu_store.store_host import StoreHost

GRACE_SECONDS = 30
MIN_TOKEN_CHARS = 16

# What the copies of the sessions in use may hold (``--session-memory-mib``; SessionCache).
SESSION_MEMORY_MIB = DEFAULT_SESSION_MEMORY_BYTES // (1024 * 1024)


@dataclass(frozen=True, slots=True)
class Token:
    value: str
    where: str
    """``--token``, ``$MVU_TOKEN`` or the file's path."""
    generated: bool = False


def token_path(url: str) -> Path | None:
    path = ledger_file(url)
    return None if path is None else Path(f"{path}.token")


def resolve_token(url: str, given: str | None) -> Token:
    """The bearer token, creating the ledger's token file (0600) on first start. A token given by
    ``--token`` or ``$MVU_TOKEN`` has at least ``MIN_TOKEN_CHARS`` characters (an empty one is
    refused, never read as "not given")."""
    if given is not None:
        return Token(_long_enough(given, "--token"), "--token")
    env = os.environ.get("MVU_TOKEN")
    if env is not None:
        return Token(_long_enough(env, "$MVU_TOKEN"), "$MVU_TOKEN")
    path = token_path(url)
    if path is None:
        raise MvuError(Code.CONFIG, "a server database has no directory for a token file: pass --token or set "
                                    "MVU_TOKEN")
    make_private_folders(path.parent)
    created = _create_token_file(path)
    if created is not None:
        return Token(created, str(path), generated=True)
    return Token(_read_token_file(path), str(path))


def _create_token_file(path: Path) -> str | None:
    """A new token in a new file at ``path`` (0600), or None when a file is already there.

    The token is written whole to a private temporary file first, then linked into place: a
    link is created only where no file is, so of two first starts at once one creates the
    file and the other reads it complete (an empty file is never seen half-written)."""
    value = secrets.token_urlsafe(32)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:  # mkstemp: 0600, ours
            file.write(value + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.link(temporary, path)
    except FileExistsError:
        return None
    finally:
        os.unlink(temporary)
    return value


def _read_token_file(path: Path) -> str:
    """The token of an existing file, which must be a regular file of this user, 0600."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as error:  # a link (dangling or not) at the path, or a file we cannot read
        raise MvuError(Code.CONFIG, f"{path} cannot be read as a token file ({error.strerror}): a token file is "
                                    "a regular file, not a link (delete it for a new token)") from None
    with os.fdopen(descriptor, encoding="utf-8") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise MvuError(Code.CONFIG, f"{path} is not a regular file: delete it for a new token")
        if status.st_uid != os.getuid():
            raise MvuError(Code.CONFIG, f"{path} belongs to another user: a token file must be yours (delete it "
                                        "for a new token)")
        if status.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise MvuError(Code.CONFIG, f"{path} is readable by others: chmod 600 it (or delete it for a new "
                                        "token)")
        value = file.read().strip()
    if not value:
        raise MvuError(Code.CONFIG, f"{path} is empty: delete it to generate a new token")
    return value


def _token_of_a_ledger_not_lost(url: str, given: str | None) -> Token:
    """:func:`resolve_token`, and then ``MVU_STORAGE_GONE`` for a SQLite file missing where a
    ledger was (its token file, as it was before this start, counts as a trace of it; a token
    file this start made is taken back with the rest, :func:`taken_back_on_failure`)."""
    path, token_file = ledger_file(url), token_path(url)
    had_token = token_file is not None and os.path.lexists(token_file)
    resolved = resolve_token(url, given)
    if path is not None:
        refuse_a_lost_file(str(path), *([str(token_file)] if had_token else []))
    return resolved


def _long_enough(token: str, where: str) -> str:
    if len(token.strip()) < MIN_TOKEN_CHARS or token != token.strip():
        raise MvuError(Code.CONFIG, f"{where} must be at least {MIN_TOKEN_CHARS} characters, without surrounding "
                                    "spaces (an empty one would not protect anything)")
    return token


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or ``MVU_CONFIG`` with one clear line (port in use, no such address)."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and
    # without it every keep-alive response waits out a delayed ACK (about 40 ms).
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM,
                             socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        # Listening before the URL is printed: a client that connects at once waits in the
        # backlog until uvicorn accepts, instead of being refused.
        listener.listen(2048)
    except OSError as error:
        listener.close()
        reason = error.strerror or str(error)
        if error.errno == errno.EADDRINUSE:
            reason += (": another program listens there; pick another port with --port N (`make run PORT=N`), "
                       "or --port 0 for any free one")
        raise MvuError(Code.CONFIG, f"cannot listen on {host}:{port}: {reason}") from None
    return listener


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handling (:class:`_Signals` holds the signals
    longer) and so without re-raising the caught signal after shutdown: the caller still has to
    close the service and dispose the engines, then exit 0. ``stopping`` is set at the first
    signal, so a request body still arriving is answered at once instead of holding the grace."""

    def __init__(self, config: uvicorn.Config, stopping: asyncio.Event, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(config)
        self._stopping = stopping
        self._loop = loop

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._loop.call_soon_threadsafe(self._stopping.set)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _Signals:
    """SIGINT and SIGTERM go to the server from before its first line is printed until the
    engines are disposed. uvicorn alone would restore the previous handlers as soon as it stops
    serving, and a second signal then (a supervisor repeating SIGTERM, a test stopping what it
    already signalled) would kill the process before the service is closed."""

    def __init__(self) -> None:
        self._originals: dict[int, Any] = {}

    def install(self, handler: Callable[[int, FrameType | None], None]) -> None:
        self._originals = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore(self) -> None:
        for sig, handler in self._originals.items():
            signal.signal(sig, handler)
        self._originals = {}


def _say(line: str) -> None:
    print(line, flush=True)


async def serve(*, db: str, ledger_id: str, host: str, port: int, token: str | None,
                body_timeout: float = BODY_TIMEOUT_SECONDS, head_timeout: float = HEAD_TIMEOUT_SECONDS,
                cors_origins: Sequence[str] = (), session_memory_mib: int = SESSION_MEMORY_MIB) -> int:
    with nonblocking_logging(sys.stderr):
        return await _serve(db=db, ledger_id=ledger_id, host=host, port=port, token=token,
                            body_timeout=body_timeout, head_timeout=head_timeout, cors_origins=cors_origins,
                            session_memory_mib=session_memory_mib)


def _check_limits(*, body_timeout: float, head_timeout: float, session_memory_mib: int) -> None:
    if not body_timeout > 0:
        raise MvuError(Code.CONFIG, "--body-timeout must be a positive number of seconds")
    if not head_timeout > 0:
        raise MvuError(Code.CONFIG, "--head-timeout must be a positive number of seconds")
    if not session_memory_mib >= 1:
        raise MvuError(Code.CONFIG, "--session-memory-mib must be a whole number of at least 1")


def _announce(listener: socket.socket, host: str, ledger: Ledger, resolved: Token, origins: Sequence[str],
              sign_in: SignIn) -> None:
    """What ``mvu serve`` prints once it listens: where, which ledger, the token, the links."""
    actual = listener.getsockname()[1]
    base = f"http://{f'[{host}]' if ':' in host else host}:{actual}"
    if not is_loopback(host):
        print(f"mvu serve: warning: listening on {host}, beyond this machine, over plain HTTP: the bearer token "
              "travels in clear; put TLS (a reverse proxy) in front or bind 127.0.0.1", file=sys.stderr,
              flush=True)
    _say(f"mvu serve: listening on {base}{API_PREFIX}/ (open it: the index of routes and guides)")
    _say(f"  ledger:   {ledger.url} (ledger id {ledger.ledger_id})")
    _say(f"  sessions: kept in the ledger, fed over {MVU_PREFIX}/sessions (`mvu sessions import DIR` brings "
         "JSONL logs in)")
    if resolved.generated:
        _say(f"  token:    {resolved.value}")
        _say(f"            (generated now and shown only this once; stored in {resolved.where}, mode 0600)")
    else:
        _say(f"  token:    from {resolved.where}")
    if origins:
        _say(f"  cors:     {', '.join(origins)}")
    _say(f"  inspector: {base}{SIGNIN}?code={sign_in.new_code()} (opens the page signed in; works once, "
         f"for {CODE_LIFETIME_S // 60} minutes)")
    _say(f"  explorer: {base}{EXPLORER} (every route, tried from the browser; sign in as for the inspector)")
    _say(f"  docs:     {base}{OPENAPI_PATH} (send 'Authorization: Bearer <token>')")


async def _serve(*, db: str, ledger_id: str, host: str, port: int, token: str | None, body_timeout: float,
                 head_timeout: float, cors_origins: Sequence[str], session_memory_mib: int) -> int:
    _check_limits(body_timeout=body_timeout, head_timeout=head_timeout, session_memory_mib=session_memory_mib)
    origins = allowed_origins(cors_origins)
    # Bound before any file is created or the ledger opened: a port in use is one line, and
    # touches nothing. A start that fails later takes back the token file and ledger it created.
    listener = bind(host, port)
    try:
        with taken_back_on_failure(db):
            resolved = _token_of_a_ledger_not_lost(db, token)
            ledger = await open_ledger(db, ledger_id=ledger_id, migrate_to_head=True)
    except BaseException:
        listener.close()
        raise
    signals = _Signals()
    try:
        store_host = StoreHost(ledger)
        service = MvuService(ledger=ledger, host=store_host, session_memory_bytes=session_memory_mib * 1024 * 1024)
        stopping = asyncio.Event()
        sign_in = SignIn(resolved.value)
        app = create_app(service, token=resolved.value, host=store_host, body_timeout=body_timeout, stopping=stopping,
                         cors_origins=origins, sign_in=sign_in)
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off", proxy_headers=False,
                                http=with_head_timeout(head_timeout),
                                server_header=False, timeout_graceful_shutdown=GRACE_SECONDS)
        server = _Server(config, stopping, asyncio.get_running_loop())
        # Before the first line: whoever reads the URL may signal at once, and the stop is clean.
        signals.install(server.handle_exit)
        _announce(listener, host, ledger, resolved, origins, sign_in)
        try:
            await server.serve(sockets=[listener])
        finally:
            await service.close()
    finally:
        listener.close()
        await ledger.close()
        signals.restore()
    _say("mvu serve: stopped")
    return 0
