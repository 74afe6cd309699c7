"""Serve a peer server's ASGI app over Streamable HTTP on loopback.

Shared by the peer scripts of this folder, each run as a script in its own
venv (the folder is then on ``sys.path``): it needs only ``uvicorn``.
"""

from __future__ import annotations

import socket
from typing import Any


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
