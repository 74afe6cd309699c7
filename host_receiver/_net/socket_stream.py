"""A connected non-blocking socket as an anyio socket stream, with no event-loop transport between.

anyio's own stream over asyncio goes through a transport: every ``send``
yields to the event loop after writing, and every ``receive`` switches the
socket's reading on and off again. The lean HTTP pool writes a whole request
in one call and reads a response head that is usually there, so it uses
:meth:`PlainSocketStream.send_now` and :meth:`PlainSocketStream.receive_now`,
which never wait; only when the socket is not ready does a task wait for it,
with ``anyio.wait_writable`` / ``anyio.wait_readable`` (asyncio and trio).

Errors are the socket's own ``OSError``; the end of the stream is
``anyio.EndOfStream`` from :meth:`~PlainSocketStream.receive` and ``b""``
from :meth:`~PlainSocketStream.receive_now`.
"""

from __future__ import annotations

import select
import socket

import anyio
import anyio.abc

__all__ = ["PlainSocketStream", "socket_ready"]


class PlainSocketStream(anyio.abc.SocketStream):
    """A connected non-blocking socket, read and written directly (rules in the module docstring)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    @property
    def _raw_socket(self) -> socket.socket:
        return self._sock

    def send_now(self, data: bytes) -> bytes:
        """Write what the kernel takes without waiting; the rest, unsent (``b""`` when all went)."""
        try:
            sent = self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            return data
        return data[sent:]

    async def send(self, item: bytes) -> None:
        while item := self.send_now(item):
            await anyio.wait_writable(self._sock)

    def receive_now(self, max_bytes: int) -> bytes | None:
        """What has arrived (``b""``: the peer closed), or None when nothing has yet."""
        try:
            return self._sock.recv(max_bytes)
        except (BlockingIOError, InterruptedError):
            return None

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while (data := self.receive_now(max_bytes)) is None:
            await anyio.wait_readable(self._sock)
        if not data:
            raise anyio.EndOfStream
        return data

    def readable(self) -> bool:
        """Whether a read would not wait: data, or the end, has arrived."""
        return socket_ready(self._sock, write=False)

    async def send_eof(self) -> None:
        self._sock.shutdown(socket.SHUT_WR)

    async def aclose(self) -> None:
        if self._sock.fileno() >= 0:
            anyio.notify_closing(self._sock)  # a task waiting on it raises ClosedResourceError
            self._sock.close()


def socket_ready(of: socket.socket | anyio.abc.SocketStream, *, write: bool) -> bool:
    """Whether the socket can be written, or read (True when it is gone: there is an end to read)."""
    try:
        sock = of if isinstance(of, socket.socket) else of.extra(anyio.abc.SocketAttribute.raw_socket)
        fd = sock.fileno()
    except (OSError, anyio.TypedAttributeLookupError):
        return not write
    if fd < 0:
        return not write
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLOUT if write else select.POLLIN)
        return bool(poller.poll(0))
    readable, writable, _ = select.select([] if write else [fd], [fd] if write else [], [], 0)
    return bool(writable if write else readable)
