"""Serve a peer server over stdio or Streamable HTTP on loopback: the peers' shared command line.

Shared by the peer scripts of this folder, each run as a script in its own
venv (the folder is then on ``sys.path``): it needs only ``anyio`` and
``uvicorn``, which every peer's MCP library brings.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio


def run_peer(
    description: str,
    stdio: Callable[[], Awaitable[None]],
    http: Callable[[int, bool], Awaitable[None]],
    on_http: Callable[[str], None],
) -> None:
    """A modern peer's ``main``: stdio by default; ``--port N [--http stateful|stateless]`` for HTTP.

    ``http`` gets the port and whether the legacy HTTP session is stateless;
    ``on_http`` is told the transport (``http-stateful``, ``http-stateless``)
    before serving starts, for the peer's reports.
    """
    parser = argparse.ArgumentParser(description=description.splitlines()[0] if description else None)
    parser.add_argument("--port", type=int, default=None, help="Streamable HTTP port (0 = free)")
    parser.add_argument(
        "--http", choices=("stateful", "stateless"), default="stateful", help="legacy HTTP session mode"
    )
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.port is None:
        anyio.run(stdio)
    else:
        on_http(f"http-{args.http}")
        anyio.run(http, args.port, args.http == "stateless")


async def serve_on_loopback(app: Any, port: int, path: str = "/mcp") -> None:
    """Serve ``app`` on 127.0.0.1:port; bind first so port 0 can be reported.

    Prints ``LISTENING <url>`` once the socket queues connections, which is
    when the tests may connect.
    """
    import uvicorn

    # IPPROTO_TCP, as uvicorn's own binding gets from getaddrinfo: asyncio disables Nagle only on
    # sockets whose proto says TCP, and with proto 0 every response (headers, then body in a
    # second write) waited about 40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}{path}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"LISTENING {url}", flush=True)
    await server.serve(sockets=[sock])
