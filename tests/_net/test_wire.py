"""The lean pool's HTTP/1.1 (host_receiver/_net/wire.py), on llhttp and on h11, against scripted servers.

Every test runs on both wires (llhttp is skipped when httptools is not
installed): each bound the pool keeps holds whichever parser reads the bytes.
The servers are raw sockets on loopback that answer each request with the
next scripted reply, so a test says exactly which bytes the pool gets.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_receiver._net import wire
from host_receiver._net.pool import LeanTransport

pytestmark = pytest.mark.anyio

#: Closes the connection after the reply before it.
CLOSE = b"<close>"
#: Sent in pieces, with a pause between them (a reply that arrives in several reads).
Pieces = tuple[bytes, ...]


@pytest.fixture(params=["llhttp", "h11"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The wire every connection of the test's pools uses."""
    if request.param == "llhttp" and not wire.HAVE_LLHTTP:
        pytest.skip("httptools is not installed (host-receiver[speed])")
    made: Callable[[], wire.Wire] = wire.LlhttpWire if request.param == "llhttp" else wire.H11Wire
    monkeypatch.setattr(wire, "new_wire", made)
    yield request.param


@dataclass
class Server:
    """Replies to requests in order, whichever connection they come on; counts connections."""

    replies: list[bytes | Pieces]
    url: str = ""
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)

    async def serve(self, stream: anyio.abc.SocketStream) -> None:
        self.connections += 1
        buffer = b""
        async with stream:
            while self.replies:
                while b"\r\n\r\n" not in buffer:
                    try:
                        buffer += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                self.requests.append(head)
                try:
                    buffer = await self._body(stream, head, buffer)
                except (anyio.EndOfStream, anyio.BrokenResourceError):  # the pool gave up on it
                    return
                reply = self.replies.pop(0)
                close = bool(self.replies) and self.replies[0] == CLOSE
                if close:
                    self.replies.pop(0)
                try:
                    for piece in reply if isinstance(reply, tuple) else (reply,):
                        await stream.send(piece)
                        if isinstance(reply, tuple):
                            await anyio.sleep(0.01)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the pool hung up
                    return
                if close:
                    return
            await anyio.sleep(0.2)  # let the pool read before the server goes

    async def _body(self, stream: anyio.abc.SocketStream, head: bytes, buffer: bytes) -> bytes:
        """Reads the request's body into ``self.requests`` (as part of its head's entry); the rest."""
        lowered = head.lower()
        if b"transfer-encoding: chunked" in lowered:
            while b"0\r\n\r\n" not in buffer:
                buffer += await stream.receive()
            body, _, rest = buffer.partition(b"0\r\n\r\n")
            self.requests.append(body + b"0\r\n\r\n")
            return rest
        for line in lowered.split(b"\r\n"):
            if line.startswith(b"content-length:"):
                length = int(line.split(b":")[1])
                while len(buffer) < length:
                    buffer += await stream.receive()
                self.requests.append(buffer[:length])
                return buffer[length:]
        return buffer


@asynccontextmanager
async def scripted(*replies: bytes | Pieces) -> AsyncIterator[Server]:
    server = Server(list(replies))
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with listener, anyio.create_task_group() as group:
        server.url = f"http://127.0.0.1:{listener.extra(anyio.abc.SocketAttribute.local_port)}"
        group.start_soon(listener.serve, server.serve)
        yield server
        group.cancel_scope.cancel()


@asynccontextmanager
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=LeanTransport(), timeout=5) as http:
        yield http


def ok(body: bytes, *headers: bytes) -> bytes:
    extra = b"".join(header + b"\r\n" for header in headers)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


async def test_content_length_bodies_are_read_and_the_connection_reused(parser: str) -> None:
    async with scripted(ok(b"one"), (ok(b"two")[:20], ok(b"two")[20:])) as server, client() as http:
        first = await http.get(server.url)
        second = await http.get(server.url)
    assert (first.content, second.content, first.headers["content-length"]) == (b"one", b"two", "3")
    assert (first.http_version, first.reason_phrase) == ("HTTP/1.1", "OK")
    assert server.connections == 1


async def test_a_chunked_body_with_trailers_is_read_and_the_connection_reused(parser: str) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"5\r\nhello\r\n",
        b"6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
    )
    async with scripted(chunked, ok(b"next")) as server, client() as http:
        first = await http.get(server.url)
        second = await http.get(server.url)
    assert (first.content, second.content) == (b"hello world", b"next")
    assert server.connections == 1


@pytest.mark.parametrize(
    "reply",
    [
        ok(b"bye", b"Connection: close"),
        b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nbye",
        b"HTTP/1.1 200 OK\r\n\r\nbye" + CLOSE,  # no framing: the body runs to the close
        ok(b"bye") + b"HTTP/1.1 200 OK\r\n",  # bytes nobody asked for after the response
        ok(b"bye") + b"garbage",
    ],
    ids=["connection-close", "http-1.0", "until-close", "a-response-unasked", "garbage-after"],
)
async def test_a_connection_the_response_does_not_leave_reusable_is_not_reused(
    parser: str, reply: bytes
) -> None:
    body, close, _ = reply.partition(CLOSE)
    replies = (body, CLOSE, ok(b"again")) if close else (reply, ok(b"again"))
    async with scripted(*replies) as server, client() as http:
        first = await http.get(server.url)
        second = await http.get(server.url)
    assert (first.content, second.content) == (b"bye", b"again")
    assert server.connections == 2


async def test_interim_responses_are_skipped(parser: str) -> None:
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
    async with scripted((interim, ok(b"final", b"X-Final: 1")), ok(b"next")) as server, client() as http:
        response = await http.post(server.url, content=b"x")
        second = await http.get(server.url)
    assert (response.status_code, response.content, response.headers.get("x-final")) == (200, b"final", "1")
    assert "link" not in response.headers
    assert second.content == b"next" and server.connections == 1


async def test_a_switch_of_protocols_nobody_asked_for_is_an_error(parser: str) -> None:
    switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    async with scripted(switch, ok(b"next")) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="switched protocols"):
            await http.get(server.url)
        assert (await http.get(server.url)).content == b"next"
    assert server.connections == 2


@pytest.mark.parametrize("status", [b"204 No Content", b"304 Not Modified"])
async def test_a_204_or_304_has_no_body_whatever_its_content_length(parser: str, status: bytes) -> None:
    reply = b"HTTP/1.1 %s\r\nContent-Length: 5\r\n\r\n" % status
    async with scripted(reply, ok(b"next")) as server, client() as http:
        first = await http.get(server.url)
        second = await http.get(server.url)
    assert (first.content, second.content) == (b"", b"next")
    assert server.connections == 1


async def test_a_head_response_has_no_body_whatever_its_content_length(parser: str) -> None:
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
    async with scripted(reply, ok(b"next")) as server, client() as http:
        head = await http.head(server.url)
        after = await http.get(server.url)
    assert (head.status_code, head.headers["content-length"], head.content) == (200, "5", b"")
    assert after.content == b"next"


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (b"", "Server disconnected without sending a response"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "Server disconnected without sending a response"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "received 3 bytes, expected 10"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "incomplete chunked read"),
    ],
    ids=["nothing", "half-a-head", "short-body", "short-chunk"],
)
async def test_a_close_before_the_response_is_complete_is_an_error_and_the_pool_serves_on(
    parser: str, reply: bytes, words: str
) -> None:
    async with scripted(reply, CLOSE, ok(b"next")) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match=words):
            await (await http.get(server.url)).aread()
        assert (await http.get(server.url)).content == b"next"


async def test_a_head_without_end_is_refused_at_16_kib(parser: str) -> None:
    endless = (b"HTTP/1.1 200 OK\r\n", *(b"X-Filler: " + b"f" * 1000 + b"\r\n",) * 40)
    big_but_bounded = ok(b"big", *(b"X-Filler-%d: " % i + b"f" * 1000 for i in range(12)))
    async with scripted(endless, CLOSE, big_but_bounded) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="Receive buffer too long"):
            await http.get(server.url)
        response = await http.get(server.url)
    assert response.content == b"big" and len(response.headers) == 13


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 2OO OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.6\r\n",
    ],
    ids=["status", "header-name", "content-length", "two-lengths", "not-http"],
)
async def test_a_malformed_response_is_an_error_and_the_pool_serves_on(parser: str, reply: bytes) -> None:
    async with scripted(reply, CLOSE, ok(b"next")) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get(server.url)
        assert (await http.get(server.url)).content == b"next"


@pytest.mark.parametrize(
    ("headers", "words"),
    [
        ({"X-Evil": "a\r\nInjected: yes"}, "Illegal header value"),
        ({"X-Evil": "a\nInjected: yes"}, "Illegal header value"),
        ({"X-Evil": "nul\x00"}, "Illegal header value"),
        ({"X Evil": "a"}, "Illegal header name"),
        ({"X-Evil:": "a"}, "Illegal header name"),
    ],
)
async def test_a_header_that_would_inject_is_refused_before_a_byte_is_sent(
    parser: str, headers: dict[str, str], words: str
) -> None:
    async with scripted(ok(b"next")) as server, client() as http:
        with pytest.raises(httpx.LocalProtocolError, match=words):
            await http.get(server.url, headers=headers)
        assert (await http.get(server.url)).content == b"next"
    assert len(server.requests) == 1 and b"Injected" not in server.requests[0]


async def test_request_bodies_are_framed_as_their_headers_say(parser: str) -> None:
    async def pieces() -> AsyncIterator[bytes]:
        yield b"stream"
        yield b""
        yield b"ed"

    async with scripted(ok(b"1"), ok(b"2")) as server, client() as http:
        await http.post(server.url, content=b"whole")
        await http.post(server.url, content=pieces())
    head, body, chunked_head, chunked = server.requests
    assert head.startswith(b"POST / HTTP/1.1\r\n") and b"\r\nHost: 127.0.0.1:" in head
    assert b"Content-Length: 5" in head and body == b"whole"
    assert b"Transfer-Encoding: chunked" in chunked_head
    assert chunked == b"6\r\nstream\r\n2\r\ned\r\n0\r\n\r\n"


async def test_a_body_other_than_its_content_length_is_refused(parser: str) -> None:
    async def pieces() -> AsyncIterator[bytes]:
        yield b"four"

    async with scripted(ok(b"1"), ok(b"2")) as server, client() as http:
        for length, words in (("3", "Too much data"), ("5", "Too little data")):
            with pytest.raises(httpx.LocalProtocolError, match=words):
                await http.post(server.url, content=pieces(), headers={"Content-Length": length})
        assert (await http.get(server.url)).content == b"1"


async def test_a_transfer_coding_other_than_chunked_is_refused_at_the_head(parser: str) -> None:
    gzip = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b"
    async with scripted(gzip, CLOSE, ok(b"next")) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="Only Transfer-Encoding: chunked is supported"):
            await http.get(server.url)
        assert (await http.get(server.url)).content == b"next"


async def test_lines_ended_by_a_bare_lf_are_read(parser: str) -> None:
    sloppy = b"HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 5\n\nsloppy"[:-1]
    async with scripted(sloppy, ok(b"next")) as server, client() as http:
        first = await http.get(server.url)
        second = await http.get(server.url)
    assert (first.content, first.headers["content-type"], second.content) == (b"slopp", "text/plain", b"next")
    assert server.connections == 1


def _read_all(made: Callable[[], wire.Wire], method: bytes, data: bytes, cuts: list[int]) -> list[object]:
    """What a wire makes of ``data`` received in pieces cut at ``cuts``, then a close."""
    line = made()
    line.request(method, b"/", [(b"Host", b"x")])
    line.end()
    seen: list[object] = []
    bounds = [0, *sorted(set(cuts)), len(data)]
    pieces = [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    try:
        for piece in [*pieces, b""]:
            line.receive(piece)
            while (event := line.next_event()) is not None:
                if isinstance(event, wire.Head):
                    seen.append((event.status_code, event.reason, event.http_version, event.headers))
                elif event is wire.END:
                    return [b"".join(e for e in seen if isinstance(e, bytes)), *seen[:1], "end"]
                else:
                    seen.append(event)
    except Exception as exc:  # the outcome compared is "an error", whichever
        return ["error", type(exc).__name__]
    return ["no end"]


_names = st.sampled_from([b"X-A", b"x-b", b"Content-Type", b"Mcp-Session-Id", b"Set-Cookie"])
_values = st.binary(min_size=1, max_size=30).filter(
    lambda v: v.strip(b" \t") == v and all(0x21 <= c <= 0x7E or c in b" \t" for c in v)
)


@given(
    status=st.sampled_from([200, 201, 202, 204, 304, 400, 404, 500]),
    headers=st.lists(st.tuples(_names, _values), max_size=6),
    body=st.binary(max_size=200),
    chunked=st.booleans(),
    interim=st.booleans(),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_both_wires_read_any_well_formed_response_alike(
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    chunked: bool,
    interim: bool,
    cuts: list[int],
) -> None:
    if not wire.HAVE_LLHTTP:
        pytest.skip("httptools is not installed (host-receiver[speed])")
    lines = b"".join(b"%s: %s\r\n" % header for header in headers)
    if status in (204, 304):
        framed = b""
    elif chunked:
        halves = [body[: len(body) // 2], body[len(body) // 2 :]]
        framed = b"".join(b"%x\r\n%s\r\n" % (len(h), h) for h in halves if h) + b"0\r\n\r\n"
        lines += b"Transfer-Encoding: chunked\r\n"
    else:
        framed = body
        lines += b"Content-Length: %d\r\n" % len(body)
    first = b"HTTP/1.1 100 Continue\r\n\r\n" if interim else b""
    data = first + b"HTTP/1.1 %d Some Reason\r\n%s\r\n%s" % (status, lines, framed)
    h11_read = _read_all(wire.H11Wire, b"GET", data, cuts)
    assert _read_all(wire.LlhttpWire, b"GET", data, cuts) == h11_read
    assert h11_read[-1] == "end"
