"""Serving the inbox alone: hypercorn on the host's own event loop, asyncio or trio.

Rules:

- ``listen`` is ``HOST:PORT`` (``[::1]:PORT`` for IPv6); port 0 takes a free
  one. The socket is bound here, before the server starts, so that
  :attr:`WebInbox.url` is known when the block is entered.
- Loopback is the default. Another address is used as given, with a warning
  on the ``host_receiver.web`` logger unless TLS is configured (``certfile``
  and ``keyfile``, both or neither).
- The ``Host`` headers taken are ``HOST:PORT`` as listened on (for loopback
  also ``localhost``, ``127.0.0.1`` and ``[::1]`` with the port); a wildcard
  address (``0.0.0.0``, ``::``) takes any, the credentials still apply.
- Why hypercorn: it runs on asyncio and on trio (anyio hosts run on either),
  serves HTTP/1.1 and HTTP/2, and takes a bound socket.
- Leaving the block ends every event stream, then stops the server (open
  connections get a second to finish).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import anyio
import anyio.abc
import sniffio
from hypercorn.config import Config
from hypercorn.typing import ASGIFramework

from host_receiver.sanitize import safe_logger

if TYPE_CHECKING:
    from starlette.applications import Starlette


class Served(Protocol):
    """What is served (a host's inbox, a store-backed board): told where it listens, closed at the end."""

    origin: str | None
    allowed_hosts: set[str] | None

    def close(self) -> None: ...


_I = TypeVar("_I", bound=Served)

logger = safe_logger("host_receiver.web")
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[V6]:PORT``) as a host and a port; ValueError when it is neither."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{listen!r} is not HOST:PORT (port 0 for a free one)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(100)
    except OSError:
        sock.close()
        raise
    return sock


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@asynccontextmanager
async def serve(
    inbox: _I, app: Starlette, listen: str, *, certfile: str | None = None, keyfile: str | None = None
) -> AsyncIterator[_I]:
    """Serve ``app``, the page of ``inbox`` (or of a board), on ``listen`` for the block (module rules)."""
    if (certfile is None) != (keyfile is None):
        raise ValueError("TLS needs both a certificate and its key")
    host, port = parse_listen(listen)
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    tls = certfile is not None
    if not is_loopback(host) and not tls:
        logger.warning(
            "the web inbox listens on %s, beyond this machine, without TLS: its token and every "
            "answer cross the network in clear (give a certificate and key)",
            listen,
        )
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.errorlog = logging.getLogger("host_receiver.web.server")
    config.graceful_timeout = 1.0
    if tls:
        config.certfile, config.keyfile = certfile, keyfile
    wildcard = host in ("0.0.0.0", "::")
    names = {_shown(host), *(_LOOPBACK_NAMES if is_loopback(host) else ())}
    inbox.allowed_hosts = None if wildcard else {f"{n}:{port}".lower() for n in names}
    inbox.origin = f"{'https' if tls else 'http'}://{_shown(host)}:{port}"
    framework = cast(ASGIFramework, app)  # Starlette's ASGI types are looser than hypercorn's
    stop, stopped = anyio.Event(), anyio.Event()

    async def run(task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # On trio, anyio hands hypercorn trio's own TaskStatus (the ignore below).
        try:
            if sniffio.current_async_library() == "trio":
                from hypercorn.trio import serve as serve_trio

                await serve_trio(framework, config, shutdown_trigger=stop.wait, task_status=task_status)  # type: ignore[arg-type]
            else:
                from hypercorn.asyncio import serve as serve_asyncio

                task_status.started()
                await serve_asyncio(framework, config, shutdown_trigger=stop.wait)
        finally:
            stopped.set()

    async with anyio.create_task_group() as group:
        await group.start(run)
        try:
            yield inbox
        finally:
            inbox.close()
            stop.set()
            # Let hypercorn shut down by itself, even when the block failed: cancelled in the
            # middle of its graceful shutdown, its asyncio worker raises InvalidStateError.
            with anyio.move_on_after(2 * config.graceful_timeout + 1, shield=True):
                await stopped.wait()
