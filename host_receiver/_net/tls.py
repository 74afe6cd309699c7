"""TLS for the lean HTTP pool: an ``ssl.SSLObject`` of our own over an anyio socket stream.

anyio's ``TLSStream`` cannot process what an idle connection received without
waiting for more. A TLS 1.3 server may send session tickets (or close the
connection with ``close_notify``) while the connection is idle; either makes
the socket readable, and only reading the records tells a connection that is
still good from one the server closed. :meth:`TlsStream.is_idle_and_open`
reads exactly what is there, and never waits.

Rules:

* The handshake checks the certificate and host name as the ``ssl.SSLContext``
  says (the pool's is httpx's own, :func:`httpx.create_ssl_context`); the SNI is
  the host name given.
* As with httpx (anyio's ``standard_compatible=False``), a close without
  ``close_notify`` ends the stream like one with it: HTTP's own framing says
  whether a response was whole. Closing sends no ``close_notify``.
* ssl's errors are ``OSError``s: the pool reports them as it reports a socket's.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.abc

from host_receiver._net.socket_stream import socket_ready

__all__ = ["TlsStream"]

_T = TypeVar("_T")


class TlsStream(anyio.abc.AsyncResource):
    """TLS over a socket stream: ``send``, ``receive``, ``aclose``, and the idle check."""

    def __init__(
        self, transport: anyio.abc.SocketStream, context: ssl.SSLContext, hostname: str, read_size: int
    ) -> None:
        self.transport = transport
        self._read_size = read_size
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_hostname=hostname)

    @classmethod
    async def wrap(
        cls,
        connected: anyio.abc.SocketStream,
        context: ssl.SSLContext,
        hostname: str,
        *,
        read_size: int,
    ) -> TlsStream:
        """The handshake over ``connected`` (closed if it fails); the certificate must name ``hostname``."""
        try:
            tls = cls(connected, context, hostname, read_size)
            await tls._call(tls._ssl.do_handshake)
        except BaseException:
            await anyio.aclose_forcefully(connected)
            raise
        return tls

    async def _call(self, method: Callable[..., _T], *args: Any) -> _T:
        """Run an SSLObject method, moving records between it and the socket until it is done."""
        while True:
            try:
                result = method(*args)
            except ssl.SSLWantReadError:
                await self._flush()
                try:
                    self._incoming.write(await self.transport.receive(self._read_size))
                except anyio.EndOfStream:
                    self._incoming.write_eof()
            else:
                await self._flush()
                return result

    async def _flush(self) -> None:
        if self._outgoing.pending:
            await self.transport.send(self._outgoing.read())

    async def send(self, data: bytes) -> None:
        await self._call(self._ssl.write, data)

    async def receive(self, max_bytes: int) -> bytes:
        try:
            return await self._call(self._ssl.read, max_bytes)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # close_notify, or a close without one
            raise anyio.EndOfStream from None

    async def is_idle_and_open(self) -> bool:
        """Process what arrived while idle (session tickets, a close) without waiting for more.

        True when only TLS housekeeping came; False when the server closed the connection
        or sent application data nobody asked for.
        """
        while True:
            try:
                self._ssl.read(1)
                return False  # data nobody asked for
            except ssl.SSLWantReadError:
                if not socket_ready(self.transport, write=False):
                    return True
            except ssl.SSLError:  # a close, or a broken record
                return False
            try:  # the socket is readable: this returns at once
                self._incoming.write(await self.transport.receive(self._read_size))
            except (anyio.EndOfStream, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return False

    async def aclose(self) -> None:
        await anyio.aclose_forcefully(self.transport)
