"""https in the lean pool beside httpx's own, against a loopback TLS server with certificates of a test CA.

The server (standard library ``ssl`` in threads) numbers its connections, so
reuse shows in what it records; after each reply it can close the connection
(with or without ``close_notify``) or send bytes nobody asked for. One test
drives the TLS layer (``host_receiver._net.tls``) alone, idle right after its
handshake with the server's session tickets unread.
"""

from __future__ import annotations

import logging
import socketserver
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import httpx
import pytest
import trustme

from host_receiver._net.pool import LeanTransport, lean_transport_for
from host_receiver._net.socket_stream import socket_ready
from host_receiver._net.tls import TlsStream
from tests.transports.conftest import server_context

pytestmark = pytest.mark.anyio

BODY = b'{"ok": true}'
REPLY = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)
CHUNKED = (
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\n"
    + BODY[:5]
    + b"\r\n7\r\n"
    + BODY[5:]
    + b"\r\n0\r\n\r\n"
)


class TlsServer(socketserver.ThreadingTCPServer):
    """HTTP/1.1 over TLS on 127.0.0.1: every request gets ``reply`` (None: no answer), then ``after`` happens.

    ``after``: ``keep`` (the connection stays open), ``close_notify`` (TLS closed, then the
    socket), ``fin`` (the socket closed without ``close_notify``), ``data`` (bytes nobody asked for).
    """

    daemon_threads = True

    def __init__(self, context: ssl.SSLContext, *, reply: bytes | None = REPLY, after: str = "keep") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.context = context
        self.reply = reply
        self.after = after
        self.changed = threading.Condition()
        self.accepted = 0
        self.requests: list[int] = []  # the connection each request came on
        self.ended: list[int] = []  # connections the client closed
        self.acted = 0  # ``after`` done this often
        self.alpn: list[str | None] = []
        self.names: list[str | None] = []  # the SNI each handshake named
        context.sni_callback = self._sni

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def _sni(self, _sock: Any, name: str | None, _context: ssl.SSLContext) -> None:
        self.names.append(name)

    def note(self, change: Callable[[], None]) -> None:
        with self.changed:
            change()
            self.changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool]) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout=10)

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client hanging up is no error
        pass


class _Handler(socketserver.BaseRequestHandler):
    server: TlsServer

    def handle(self) -> None:
        server = self.server
        with server.changed:
            server.accepted += 1
            number = server.accepted
        try:
            conn = server.context.wrap_socket(self.request, server_side=True)
        except OSError:  # the client refused the certificate
            return
        server.note(lambda: server.alpn.append(conn.selected_alpn_protocol()))
        reader = conn.makefile("rb")
        try:
            while (line := reader.readline()) not in (b"", b"\r\n"):  # a request head, or the end
                head = [line]
                while (line := reader.readline()) not in (b"", b"\r\n"):
                    head.append(line)
                length = next(
                    (int(h.split(b":")[1]) for h in head if h.lower().startswith(b"content-length:")), 0
                )
                reader.read(length)
                server.note(lambda: server.requests.append(number))
                if server.reply is None:
                    reader.read()  # no answer: until the client hangs up
                    break
                conn.sendall(server.reply)
                if self.act(conn):
                    return
        except OSError:
            pass
        server.note(lambda: server.ended.append(number))

    def act(self, conn: ssl.SSLSocket) -> bool:
        """Do what the server does after a reply; True when that closed the connection."""
        server = self.server
        after = server.after
        if after == "data":
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
        elif after == "close_notify":
            conn.setblocking(False)
            with suppress(ssl.SSLWantReadError):
                conn.unwrap()  # sends close_notify; waiting for the client's would block
        if after in ("close_notify", "fin"):
            conn.close()
        server.note(lambda: setattr(server, "acted", server.acted + 1))
        return after in ("close_notify", "fin")


@contextmanager
def serving(context: ssl.SSLContext, **kwargs: Any) -> Iterator[TlsServer]:
    server = TlsServer(context, **kwargs)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["lean", "httpx"])
def pool(request: pytest.FixtureRequest) -> str:
    """What holds for https holds on both pools: ours, and httpx's own."""
    return str(request.param)


def transport(pool: str, **kwargs: Any) -> httpx.AsyncBaseTransport:
    return LeanTransport(**kwargs) if pool == "lean" else httpx.AsyncHTTPTransport(**kwargs)


@pytest.fixture
def trusted(ca_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients trust the test CA as a user makes them: through ``SSL_CERT_FILE``."""
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


@pytest.fixture
def untrusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients trust what httpx trusts by default (certifi's bundle), not the test CA."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


@pytest.fixture
def context(ca: trustme.CA) -> ssl.SSLContext:
    """The server's: a certificate for 127.0.0.1 and localhost; TLS 1.3; ALPN offering h2 too."""
    made = server_context(ca, "127.0.0.1", "localhost")
    made.minimum_version = ssl.TLSVersion.TLSv1_3
    made.set_alpn_protocols(["h2", "http/1.1"])
    return made


async def get_all(pool: str, url: str, times: int, **kwargs: Any) -> list[bytes]:
    async with httpx.AsyncClient(transport=transport(pool, **kwargs)) as client:
        return [(await client.get(url)).content for _ in range(times)]


async def refusal(make: Callable[[], httpx.AsyncBaseTransport], url: str) -> str:
    async with httpx.AsyncClient(transport=make()) as client:
        with pytest.raises(httpx.ConnectError) as caught:
            await client.get(url)
    return str(caught.value)


# --- verification ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "words"),
    [("127.0.0.1", "IP address mismatch"), ("localhost", "Hostname mismatch")],
)
async def test_a_certificate_for_another_name_is_refused_in_httpxs_words(
    ca: trustme.CA, trusted: None, host: str, words: str, anyio_backend: str
) -> None:
    with serving(server_context(ca, "other.example")) as server:
        url = f"https://{host}:{server.port}/"
        ours, theirs = await refusal(LeanTransport, url), await refusal(httpx.AsyncHTTPTransport, url)
    assert ours == theirs or (anyio_backend == "trio" and theirs == "")  # httpcore's trio backend: no text
    assert "CERTIFICATE_VERIFY_FAILED" in ours and words in ours
    assert server.requests == []


async def test_a_certificate_from_an_authority_nobody_trusts_is_refused_in_httpxs_words(
    context: ssl.SSLContext, untrusted: None, anyio_backend: str
) -> None:
    with serving(context) as server:
        url = f"https://127.0.0.1:{server.port}/"
        ours, theirs = await refusal(LeanTransport, url), await refusal(httpx.AsyncHTTPTransport, url)
    assert ours == theirs or (anyio_backend == "trio" and theirs == "")  # httpcore's trio backend: no text
    assert "certificate verify failed" in ours
    assert server.requests == []


async def test_verify_reaches_the_pool_as_httpx_takes_it(
    pool: str, ca: trustme.CA, context: ssl.SSLContext, untrusted: None
) -> None:
    """An SSLContext that trusts the CA, or no verification at all; the environment is not read then."""
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    with serving(context) as server:
        url = f"https://127.0.0.1:{server.port}/"
        assert await get_all(pool, url, 1, verify=trusting) == [BODY]
        assert await get_all(pool, url, 1, verify=False) == [BODY]


# --- keep-alive and the server's close -----------------------------------------------


async def test_tls_connections_are_kept_alive_and_offer_http_1_1_only(
    pool: str, context: ssl.SSLContext, trusted: None
) -> None:
    with serving(context) as server:
        url = f"https://localhost:{server.port}/"
        assert await get_all(pool, url, 5) == [BODY] * 5
    assert server.requests == [1] * 5  # TLS 1.3 session tickets did not pass for a close
    assert server.alpn == ["http/1.1"]  # the server would have taken h2
    assert server.names == ["localhost"]  # SNI


async def test_the_sni_hostname_extension_names_the_server_to_reach_and_to_check(
    pool: str, context: ssl.SSLContext, trusted: None
) -> None:
    with serving(context) as server:
        url = f"https://127.0.0.1:{server.port}/"
        async with httpx.AsyncClient(transport=transport(pool)) as client:
            assert (await client.get(url, extensions={"sni_hostname": "localhost"})).content == BODY
        async with httpx.AsyncClient(transport=transport(pool)) as client:  # a new connection, another name
            with pytest.raises(httpx.ConnectError):  # the certificate does not name it
                await client.get(url, extensions={"sni_hostname": "other.example"})
    assert server.names == ["localhost", "other.example"]


async def test_session_tickets_on_an_idle_tls_connection_are_read_and_it_stays_usable(
    ca: trustme.CA, context: ssl.SSLContext
) -> None:
    """TLS 1.3 tickets come after the handshake and make the socket readable: not a close.

    Straight after its handshake a connection is idle with the server's tickets unread,
    where a check of the socket alone would take it for closed.
    """
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    with serving(context) as server:
        tcp = await anyio.connect_tcp("127.0.0.1", server.port)
        tls = await TlsStream.wrap(tcp, trusting, "127.0.0.1", read_size=65536)
        await anyio.to_thread.run_sync(server.wait_for, lambda: server.alpn != [])  # its handshake is done
        try:
            assert socket_ready(tls.transport, write=False)  # the tickets
            assert await tls.is_idle_and_open()
            assert not socket_ready(tls.transport, write=False)  # read and processed
            await tls.send(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            reply = b""
            while not reply.endswith(BODY):
                reply += await tls.receive(65536)
        finally:
            await tls.aclose()
    assert reply == REPLY


@pytest.mark.parametrize("after", ["close_notify", "fin", "data"])
async def test_an_idle_tls_connection_the_server_closed_or_spoke_on_is_not_reused(
    pool: str, context: ssl.SSLContext, trusted: None, after: str, request: pytest.FixtureRequest
) -> None:
    if pool == "httpx" and after == "data":
        # httpcore looks at the socket only; the bytes already sit in its TLS buffer, and the next
        # request on that connection reads them as its response ("illegal header line").
        request.applymarker(pytest.mark.xfail(strict=True, reason="httpx's pool reuses it"))
    with serving(context, after=after) as server:
        url = f"https://127.0.0.1:{server.port}/"
        async with httpx.AsyncClient(transport=transport(pool)) as client:
            assert (await client.get(url)).content == BODY
            await anyio.to_thread.run_sync(server.wait_for, lambda: server.acted == 1)
            assert (await client.get(url)).content == BODY  # no error: a new connection
    assert server.requests == [1, 2]


async def test_a_chunked_reply_over_tls_is_read_and_its_connection_kept(
    pool: str, context: ssl.SSLContext, trusted: None
) -> None:
    with serving(context, reply=CHUNKED) as server:
        assert await get_all(pool, f"https://127.0.0.1:{server.port}/", 2) == [BODY] * 2
    assert server.requests == [1, 1]


async def test_a_redirect_from_http_to_https_is_followed_with_the_certificate_checked(
    pool: str, context: ssl.SSLContext, trusted: None
) -> None:
    """A client made for an http URL reaches https too: its context is made on the first https request."""

    async def redirect(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive()
            location = f"https://localhost:{server.port}/"
            await stream.send(f"HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\n\r\n".encode())

    with serving(context) as server:
        async with (
            await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(listener.serve, redirect)
            url = f"http://127.0.0.1:{listener.extra(anyio.abc.SocketAttribute.local_port)}/"
            async with httpx.AsyncClient(transport=transport(pool), follow_redirects=True) as client:
                response = await client.get(url)
            tg.cancel_scope.cancel()
    assert (response.url.scheme, response.content) == ("https", BODY)
    assert server.names == ["localhost"]


# --- timeouts and cancellation drop the connection -----------------------------------


async def test_a_read_timeout_over_tls_drops_the_connection(
    pool: str, context: ssl.SSLContext, trusted: None
) -> None:
    with serving(context, reply=None) as server:
        async with httpx.AsyncClient(transport=transport(pool), timeout=httpx.Timeout(5, read=0.2)) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get(f"https://127.0.0.1:{server.port}/")
        await anyio.to_thread.run_sync(server.wait_for, lambda: server.ended == [1])


async def test_a_cancelled_request_over_tls_drops_its_connection(
    pool: str, context: ssl.SSLContext, trusted: None
) -> None:
    with serving(context, reply=None) as server:
        async with httpx.AsyncClient(transport=transport(pool)) as client, anyio.create_task_group() as tg:
            tg.start_soon(client.get, f"https://127.0.0.1:{server.port}/")
            await anyio.to_thread.run_sync(server.wait_for, lambda: server.requests == [1])
            tg.cancel_scope.cancel()
        await anyio.to_thread.run_sync(server.wait_for, lambda: server.ended == [1])


async def test_a_handshake_that_never_comes_is_a_connect_timeout(pool: str, trusted: None) -> None:
    """A server that takes the connection and says nothing: the connect timeout bounds the handshake too."""

    async def mute(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await anyio.sleep_forever()

    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(listener.serve, mute)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with httpx.AsyncClient(
            transport=transport(pool), timeout=httpx.Timeout(5, connect=0.2)
        ) as client:
            with pytest.raises(httpx.ConnectTimeout):
                await client.get(f"https://127.0.0.1:{port}/")
        tg.cancel_scope.cancel()


# --- the choice of pool ---------------------------------------------------------------


def test_the_choice_of_pool_for_https_is_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.DEBUG, logger="host_receiver.http")
    assert isinstance(lean_transport_for("https://models.example/v1"), LeanTransport)
    assert isinstance(lean_transport_for("https://models.example/v1", verify=False), LeanTransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert lean_transport_for("https://models.example/v1") is None
    assert [r.getMessage() for r in caplog.records] == [
        "https://models.example/v1: the lean pool (certificates checked as httpx checks them)",
        "https://models.example/v1: the lean pool (certificates not checked: verify=False)",
        "https://models.example/v1: httpx's own transport (a proxy from the environment carries it)",
    ]
