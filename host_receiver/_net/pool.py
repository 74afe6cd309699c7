"""A lean HTTP/1.1 connection pool for ``http://`` and ``https://`` peers, as an ``httpx`` transport.

(About 520 lines, one idea: the pool, its connections and their framing share
one lifecycle; apart, each would have to know the others' states.)

Local model backends (vLLM, Ollama, LM Studio) and MCP servers on loopback or a
private network are where hundreds of concurrent requests happen; httpcore's
pool walks every connection on every request and every close, so its cost
grows with the number of open connections. This one does not. The MCP
Streamable HTTP client and every provider use it through an ordinary
``httpx.AsyncClient(transport=...)``; :func:`lean_transport_for` chooses it,
once per client.

Rules:

* ``http`` and ``https`` URLs are served here; another scheme is
  :class:`httpx.UnsupportedProtocol`, as with httpx's own transport. Proxies
  are decided before this transport is chosen (:func:`lean_transport_for`):
  httpx ignores the proxy environment for a client with a custom transport.
* ``https`` verifies certificates as httpx does: the ``ssl.SSLContext`` is
  ``httpx.create_ssl_context(verify)`` (for ``verify=True``
  certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set; httpx
  uses no system trust store), made on the first https request, offering
  ALPN ``http/1.1`` only; the SNI and the name checked are the URL's host (or
  the ``sni_hostname`` extension). The TLS layer is :mod:`host_receiver._net.tls`.
* Idle connections are kept per origin (scheme, host, port) in a deque; a
  request takes the most recently used one, O(1). An idle connection whose
  socket has something to read (the server closed it, or sent something
  unasked; over TLS the records are processed first, so session tickets do
  not count) or that has been idle longer than ``keepalive_expiry`` is closed
  instead, before any byte is sent on it, and the request goes on to the next
  one or a fresh connection. At most ``max_keepalive_connections`` stay idle.
* At most ``max_connections`` are open; a request waits at most the ``pool``
  timeout for one (:class:`httpx.PoolTimeout`), closing an idle connection to
  another origin when that makes room.
* The protocol is HTTP/1.1 over anyio sockets (asyncio and trio), written and
  parsed by :mod:`host_receiver._net.wire` (llhttp when httptools is
  installed, h11 otherwise). An IP address is
  connected to with a socket of our own (:mod:`host_receiver._net.socket_stream`):
  a request is written, and a response read, without yielding to the event
  loop when the socket is ready, so a burst of requests goes out as it is
  built. A host name goes through ``anyio.connect_tcp`` (happy eyeballs).
* Failures are raised as httpx's own exceptions (``ConnectError``,
  ``ConnectTimeout``, ``WriteError``, ``ReadError``, ``ReadTimeout``,
  ``RemoteProtocolError`` ...), which the ``openai`` client retries as it
  would httpx's own transport's. A kept-alive connection that the server
  closes after the request was sent is such a failure ("Server disconnected
  without sending a response."): the server may have seen the request. A
  certificate refused is ``ConnectError`` with ssl's words, as httpx says it.
* Timeouts come from ``request.extensions["timeout"]``: ``connect`` for
  connecting (and again for the TLS handshake), ``write`` for a write that has
  to wait, ``read`` for each wait for response bytes, ``pool`` for waiting for
  a connection.
* The response body streams. The connection goes back to the pool once the
  body was read to the end and both sides allow keep-alive; a response closed
  before that (cancellation, an error), ending with ``Connection: close`` or
  followed by bytes nobody asked for closes it.
* :meth:`LeanTransport.aclose` closes the idle connections;
  connections still in use close when their responses do, and new requests
  are refused.

Fixed caps (docs/limits.md): ``_READ_SIZE``.
"""

from __future__ import annotations

import ipaddress
import math
import os
import socket
import ssl
import urllib.request
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx

from host_receiver._net import wire
from host_receiver._net.socket_stream import PlainSocketStream, socket_ready
from host_receiver._net.tls import TlsStream
from host_receiver.sanitize import safe_logger, safe_url

__all__ = ["DEFAULT_LIMITS", "LeanTransport", "lean_transport_for"]

logger = safe_logger("host_receiver.http")

#: Like the ``openai`` client's own pool (1,000 connections) but keeping them all alive:
#: a thousand concurrent calls should not reconnect 900 times on every round.
DEFAULT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=1000, keepalive_expiry=5.0)

_READ_SIZE = 64 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: (scheme, host, port): an idle connection serves requests to its own origin only.
_Origin = tuple[str, str, int]
#: What httpx's ``verify=`` takes: True (its CA bundle or SSL_CERT_FILE / SSL_CERT_DIR), False,
#: a CA file or directory, or an ``ssl.SSLContext``.
Verify = ssl.SSLContext | str | bool


def lean_transport_for(
    url: str, limits: httpx.Limits = DEFAULT_LIMITS, *, verify: Verify = True
) -> LeanTransport | None:
    """Our pool for an ``http`` or ``https`` URL that no proxy stands in front of; None for httpx's own.

    httpx honours ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` (and ``NO_PROXY``) only with
    its own transport, so a proxy that would carry requests to ``url`` means httpx's own.
    The choice is logged at DEBUG, once per client.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        logger.debug("%s: httpx's own transport (the lean pool serves http and https only)", safe_url(url))
        return None
    proxies = urllib.request.getproxies()
    if (proxies.get(scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(parts.hostname):
        logger.debug("%s: httpx's own transport (a proxy from the environment carries it)", safe_url(url))
        return None
    if scheme == "http":
        checked = ""
    elif verify is False:
        checked = " (certificates not checked: verify=False)"
    else:
        checked = " (certificates checked as httpx checks them)"
    logger.debug("%s: the lean pool%s", safe_url(url), checked)
    return LeanTransport(limits=limits, verify=verify)


class LeanTransport(httpx.AsyncBaseTransport):
    """An HTTP/1.1 keep-alive pool with O(1) checkout and return (rules in the module docstring)."""

    def __init__(self, *, limits: httpx.Limits = DEFAULT_LIMITS, verify: Verify = True) -> None:
        # httpx's None means "no limit".
        self._max_connections = math.inf if limits.max_connections is None else limits.max_connections
        self._max_idle = (
            math.inf if limits.max_keepalive_connections is None else limits.max_keepalive_connections
        )
        self._expiry = math.inf if limits.keepalive_expiry is None else limits.keepalive_expiry
        self._verify = verify
        self._ssl_context: ssl.SSLContext | None = None
        self._idle: dict[_Origin, deque[_Connection]] = {}
        self._idle_count = 0
        self._open = 0
        self._waiters: deque[anyio.Event] = deque()
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        scheme = request.url.scheme
        if scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{scheme}://'.", request=request
            )
        if self._closed:
            raise RuntimeError("the HTTP transport is closed")
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        origin = (scheme, request.url.host, request.url.port or _DEFAULT_PORTS[scheme])
        connection = await self._checkout(origin, timeouts, request)
        return await connection.exchange(request, timeouts)

    async def aclose(self) -> None:
        self._closed = True
        idle = [connection for connections in self._idle.values() for connection in connections]
        self._idle.clear()
        self._idle_count = 0
        for connection in idle:
            await connection.close()

    def _tls_context(self) -> ssl.SSLContext:
        """httpx's own context for ``verify`` (made on the first https request), offering HTTP/1.1 only."""
        if self._ssl_context is None:
            context = httpx.create_ssl_context(verify=self._verify)
            context.set_alpn_protocols(["http/1.1"])
            self._ssl_context = context
        return self._ssl_context

    # --- the pool ------------------------------------------------------------

    async def _checkout(
        self, origin: _Origin, timeouts: dict[str, float | None], request: httpx.Request
    ) -> _Connection:
        deadline: float | None = None
        while True:
            if (connection := await self._take_idle(origin)) is not None:
                return connection
            if self._open < self._max_connections:
                return await self._connect(origin, timeouts.get("connect"), request)
            if await self._evict_idle(keep=origin):
                continue
            if deadline is None:
                pool = timeouts.get("pool")
                deadline = anyio.current_time() + pool if pool is not None else math.inf
            await self._wait_for_room(deadline, request)

    async def _take_idle(self, origin: _Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        now = anyio.current_time()
        stale: list[_Connection] = []
        # The oldest are on the left: drop the expired ones, take the newest from the right.
        while idle and now - idle[0].idle_since > self._expiry:
            stale.append(idle.popleft())
        self._idle_count -= len(stale)
        for connection in stale:
            await connection.close()
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            try:
                usable = await connection.is_usable()  # over TLS it may read what is already there
            except BaseException:  # cancelled meanwhile
                await connection.close()
                raise
            if usable:
                return connection
            await connection.close()
        return None

    async def _evict_idle(self, *, keep: _Origin) -> bool:
        """Close the oldest idle connection of an origin other than ``keep``, to make room."""
        for origin, idle in self._idle.items():
            if origin != keep and idle:
                self._idle_count -= 1
                await idle.popleft().close()
                return True
        return False

    async def _wait_for_room(self, deadline: float, request: httpx.Request) -> None:
        event = anyio.Event()
        self._waiters.append(event)
        try:
            with _deadline(None if deadline == math.inf else deadline - anyio.current_time()):
                await event.wait()
        except BaseException as exc:
            if event.is_set():
                self._wake_one()  # pass on the wake-up this waiter will not use
            else:
                self._waiters.remove(event)
            if isinstance(exc, TimeoutError):
                raise httpx.PoolTimeout("no connection became free in time", request=request) from None
            raise

    def _wake_one(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()

    async def _connect(self, origin: _Origin, timeout: float | None, request: httpx.Request) -> _Connection:
        self._open += 1
        scheme, host, port = origin
        try:
            tcp = await _connect_tcp(host, port, timeout)
            connected: _Stream = tcp
            if scheme == "https":
                hostname = request.extensions.get("sni_hostname") or host
                with _deadline(timeout):  # the handshake has its own connect timeout, as in httpx
                    connected = await TlsStream.wrap(tcp, self._tls_context(), hostname, read_size=_READ_SIZE)
        except TimeoutError:
            self._closed_one()
            raise httpx.ConnectTimeout(
                f"connecting to {_authority(host, port)} timed out", request=request
            ) from None
        except (OSError, anyio.BrokenResourceError) as exc:  # ssl's errors are OSErrors
            self._closed_one()
            raise httpx.ConnectError(_describe(exc), request=request) from exc
        except BaseException:
            self._closed_one()
            raise
        return _Connection(self, origin, connected)

    def _closed_one(self) -> None:
        self._open -= 1
        self._wake_one()

    async def _give_back(self, connection: _Connection) -> None:
        """Keep ``connection`` for the next request to its origin, or close it."""
        if self._closed or self._idle_count >= self._max_idle:
            await connection.close()
            return
        connection.idle_since = anyio.current_time()
        self._idle.setdefault(connection.origin, deque()).append(connection)
        self._idle_count += 1
        self._wake_one()


_Stream = anyio.abc.SocketStream | TlsStream


class _Connection:
    """One socket and its HTTP/1.1 state (:mod:`.wire`); serves one request at a time."""

    def __init__(self, pool: LeanTransport, origin: _Origin, stream: _Stream) -> None:
        self.pool = pool
        self.origin = origin
        self.stream = stream
        self.wire = wire.new_wire()
        self.idle_since = 0.0
        self.closed = False

    async def is_usable(self) -> bool:
        """False when the idle socket has something to read: a close by the server, or garbage.

        Over TLS, what arrived is processed first: session tickets make a socket readable too.
        """
        stream = self.stream
        if isinstance(stream, PlainSocketStream):
            return not stream.readable()
        if isinstance(stream, TlsStream):
            return await stream.is_idle_and_open()
        return not socket_ready(stream, write=False)

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await anyio.aclose_forcefully(self.stream)
            self.pool._closed_one()

    async def _write(self, data: bytes, timeout: float | None) -> None:
        """Write ``data``; a socket of our own takes what it can at once without yielding."""
        stream = self.stream
        if isinstance(stream, PlainSocketStream) and not (data := stream.send_now(data)):
            return
        with _deadline(timeout):
            await stream.send(data)

    async def _read(self, timeout: float | None) -> bytes:
        """The next bytes from the server; ``b""`` at the end of the stream."""
        stream = self.stream
        if isinstance(stream, PlainSocketStream) and (data := stream.receive_now(_READ_SIZE)) is not None:
            return data
        try:
            with _deadline(timeout):
                return await stream.receive(_READ_SIZE)
        except anyio.EndOfStream:
            return b""

    async def exchange(self, request: httpx.Request, timeouts: dict[str, float | None]) -> httpx.Response:
        """Send ``request`` and read the response head; the body streams (``_Body``).

        A response complete with its head (an empty 202, a 204) gives the connection
        back at once, before its caller reads the (empty) body.
        """
        try:
            await self._send(request, timeouts.get("write"))
            head = await self._receive_head(request, timeouts.get("read"))
            first = self._next_now(request)
            if first is wire.END:
                await self.finish()
        except BaseException:
            await self.close()
            raise
        ended = first is wire.END
        return httpx.Response(
            head.status_code,
            headers=head.headers,
            stream=_NO_BODY if ended else _Body(self, request, timeouts.get("read"), first),
            extensions={"http_version": b"HTTP/" + head.http_version, "reason_phrase": head.reason},
        )

    async def _send(self, request: httpx.Request, timeout: float | None) -> None:
        line = self.wire
        try:
            head = line.request(request.method.encode("ascii"), request.url.raw_path, request.headers.raw)
            if isinstance(request.stream, httpx.ByteStream):
                body = b"".join(request.stream)  # a redirect's request has its stream, not its content
                await self._write(b"".join((head, line.data(body) if body else b"", line.end())), timeout)
                return
            if not isinstance(request.stream, httpx.AsyncByteStream):
                raise RuntimeError("a synchronous request body cannot be sent by an async transport")
            await self._write(head, timeout)
            async for chunk in request.stream:
                if chunk:
                    await self._write(line.data(chunk), timeout)
            await self._write(line.end(), timeout)
        except wire._LocalError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from exc
        except TimeoutError:
            raise httpx.WriteTimeout("sending the request timed out", request=request) from None
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpx.WriteError(_describe(exc), request=request) from exc

    async def _receive_head(self, request: httpx.Request, timeout: float | None) -> wire.Head:
        event = await self.next_event(request, timeout)
        if not isinstance(event, wire.Head):
            raise httpx.RemoteProtocolError(f"unexpected {event!r}", request=request)
        return event

    def _next_now(self, request: httpx.Request) -> wire.Event | None:
        """The next event from the bytes received, or None when more are needed."""
        try:
            return self.wire.next_event()
        except wire._RemoteError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc

    async def next_event(self, request: httpx.Request, timeout: float | None) -> wire.Event:
        line = self.wire
        while (event := self._next_now(request)) is None:
            try:
                data = await self._read(timeout)
            except TimeoutError:
                raise httpx.ReadTimeout("waiting for response data timed out", request=request) from None
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                raise httpx.ReadError(_describe(exc), request=request) from exc
            try:
                line.receive(data)
            except wire._RemoteError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        return event

    async def finish(self) -> None:
        """The response was read to the end: back to the pool if both sides allow it."""
        if self.wire.reusable():
            self.wire.next_cycle()
            await self.pool._give_back(self)
        else:
            await self.close()


#: The body of a response that ended with its head.
_NO_BODY = httpx.ByteStream(b"")


class _Body(httpx.AsyncByteStream):
    """The response body, read from the connection as the consumer asks for it."""

    def __init__(
        self,
        connection: _Connection,
        request: httpx.Request,
        timeout: float | None,
        first: wire.Event | None,
    ) -> None:
        self._connection = connection
        self._request = request
        self._timeout = timeout
        self._first = first  # an event parsed with the head
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        try:
            while not self._done:
                event, self._first = self._first, None
                if event is None:
                    event = await connection.next_event(self._request, self._timeout)
                if isinstance(event, bytes):
                    yield event
                elif event is wire.END:
                    self._done = True
                    await connection.finish()
                else:
                    raise httpx.RemoteProtocolError(f"unexpected {event!r}", request=self._request)
        except BaseException:
            # An error, a cancellation, or this iterator dropped unfinished. Only an unfinished
            # body closes the connection: httpx may iterate the stream again (the openai client
            # drains it so), and a finished connection may already serve another request.
            if not self._done:
                self._done = True
                await connection.close()
            raise

    async def aclose(self) -> None:
        if not self._done:  # not read to the end: the connection cannot serve another request
            self._done = True
            await self._connection.close()


async def _connect_tcp(host: str, port: int, timeout: float | None) -> anyio.abc.SocketStream:
    """A TCP connection: to an IP address, a socket of our own (``PlainSocketStream``); to a name, anyio's.

    anyio's ``connect_tcp`` races the addresses of a name (happy eyeballs) in a task
    group, which for an address alone costs about as much as the connection itself.
    A loopback connection is often complete as soon as ``connect`` returns; then
    this does not yield to the event loop at all.
    """
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = None
    if family is None:
        with _deadline(timeout):
            return await anyio.connect_tcp(host, port)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.connect((host, port))
        except (BlockingIOError, InterruptedError):
            if not socket_ready(sock, write=True):
                with _deadline(timeout):
                    await anyio.wait_writable(sock)
            error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                raise OSError(
                    error, f"connecting to {_authority(host, port)}: {os.strerror(error)}"
                ) from None
        return PlainSocketStream(sock)
    except BaseException:
        sock.close()
        raise


def _describe(exc: BaseException) -> str:
    """The error's text; anyio's stream errors have none of their own, their cause has."""
    cause = exc.__cause__ or exc.__context__
    return str(exc) or (str(cause) if cause is not None else "") or type(exc).__name__


def _deadline(timeout: float | None) -> AbstractContextManager[Any]:
    return anyio.fail_after(timeout) if timeout is not None else nullcontext()


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
