"""A non-blocking TCP socket for the HTTP benchmarks, awaited with anyio.

Writes go straight to the kernel before the event loop gets a turn, as the
stdio wire writes its pipe; only bytes the socket buffer does not take wait,
and later writers queue behind them in order. Reads try the socket first and
wait for it only when it has nothing.
"""

from __future__ import annotations

import socket

import anyio

RECEIVE_SIZE = 1 << 16


class Socket:
    """One connection, server or client side (see the module docstring)."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self._writing = anyio.Lock()

    @classmethod
    async def connect(cls, host: str, port: int) -> Socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect((host, port))
        except BlockingIOError:
            await anyio.wait_writable(sock)
            error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                sock.close()
                raise OSError(error, f"cannot connect to {host}:{port}") from None
        return cls(sock)

    async def send(self, data: bytes) -> None:
        try:
            self._writing.acquire_nowait()  # no yield when nobody waits for the socket
        except anyio.WouldBlock:
            await self._writing.acquire()
        try:
            view = memoryview(data)
            while view:
                try:
                    view = view[self.sock.send(view) :]
                except BlockingIOError:
                    await anyio.wait_writable(self.sock)
        finally:
            self._writing.release()

    async def receive(self) -> bytes:
        """The next bytes that came; ``b""`` once the peer closed the connection."""
        while True:
            try:
                return self.sock.recv(RECEIVE_SIZE)
            except BlockingIOError:
                await anyio.wait_readable(self.sock)
            except ConnectionError:
                return b""

    def close(self) -> None:
        self.sock.close()
