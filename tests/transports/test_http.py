"""The Streamable HTTP transport against a real HTTP server on loopback (tests/servers/http_server.py)."""

from __future__ import annotations

import itertools
import json
import ssl
import tracemalloc
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from host_receiver.auth import MemoryTokenStore, OAuth
from host_receiver.client.connection import ClientConnection
from host_receiver.client.options import ConnectionOptions
from host_receiver.errors import (
    PARSE_ERROR,
    MissingCapability,
    RpcError,
    SessionExpired,
    TransportError,
    UnsupportedProtocolVersion,
)
from host_receiver.protocol.jsonrpc import Request, Response
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION
from host_receiver.session import IncomingRequest
from host_receiver.transports import _http_exchange
from host_receiver.transports import http as http_module
from host_receiver.transports._sse import Event, read_events
from host_receiver.transports.http import CONNECTION_CLOSED, HttpTransport
from tests.servers.http_server import StreamableHttpServer

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True, params=["lean", "httpx"])
def pool(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on both pools a client can send through: ours, and httpx's own."""
    if request.param == "httpx":
        monkeypatch.setattr(http_module, "lean_transport_for", lambda url: None)
    return str(request.param)


@pytest.fixture
def server(tls: ssl.SSLContext | None) -> Iterator[StreamableHttpServer]:
    with StreamableHttpServer(tls=tls) as running:
        yield running


class BearerAuth(httpx.Auth):
    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["authorization"] = "Bearer t0ken"
        yield request


async def answer(request: IncomingRequest) -> dict[str, Any]:
    if request.method == "elicitation/create":
        return {"action": "accept", "content": {"n": 1}}
    return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


@asynccontextmanager
async def connect(url: str, **kwargs: Any) -> AsyncIterator[ClientConnection]:
    notes: list[tuple[str, Any]] = kwargs.pop("notes", [])
    noted: anyio.Event | None = kwargs.pop("noted", None)  # set once ``noted_after`` notes came
    noted_after: int = kwargs.pop("noted_after", 0)

    async def on_notification(method: str, params: dict[str, Any] | None) -> None:
        notes.append((method, params))
        if noted is not None and len(notes) >= noted_after:
            noted.set()

    transport = HttpTransport(url, **kwargs)
    async with ClientConnection.connect(
        transport,
        capabilities={"sampling": {}, "elicitation": {}},
        request_handler=answer,
        notification_handler=on_notification,
    ) as conn:
        yield conn


async def wait_until(server: StreamableHttpServer, predicate: Any) -> None:
    await anyio.to_thread.run_sync(server.wait_for, predicate)


async def test_headers_session_id_and_order_of_the_handshake(server: StreamableHttpServer) -> None:
    async with connect(server.url, headers={"x-host": "tests"}, auth=BearerAuth()) as conn:
        assert (await conn.call_tool("json")).text == "json"
        session_id = server.session.session_id
    steps = [(r.verb, r.rpc_method) for r in server.requests]
    # The dual-era probe first: this legacy server answers it 400 (no session), so the handshake follows.
    assert steps[:4] == [
        ("POST", "server/discover"),
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
    ]
    assert steps[-1] == ("DELETE", None)
    probe, first, *later = server.requests
    assert probe.headers["mcp-protocol-version"] == "2026-07-28"
    assert probe.headers["mcp-method"] == "server/discover"
    assert "mcp-session-id" not in probe.headers
    assert "mcp-session-id" not in first.headers and "mcp-protocol-version" not in first.headers
    for recorded in later:
        assert recorded.headers["mcp-session-id"] == session_id
        assert recorded.headers["mcp-protocol-version"] == LATEST_LEGACY_VERSION
    for recorded in server.requests:
        assert recorded.headers["x-host"] == "tests"
        assert recorded.headers["authorization"] == "Bearer t0ken"
        expected = "text/event-stream" if recorded.verb == "GET" else "application/json, text/event-stream"
        assert recorded.headers["accept"] == expected


MODERN_ERRORS = [
    pytest.param(
        {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2099-01-01"]}},
        UnsupportedProtocolVersion,
        "it supports 2099-01-01",
        id="unsupported-version",
    ),
    pytest.param(
        {
            "code": -32021,
            "message": "Missing required client capability",
            "data": {"requiredCapabilities": {"elicitation": {"url": {}}}},
        },
        MissingCapability,
        r"elicitation\.url",
        id="missing-capability",
    ),
]


@pytest.mark.parametrize(("error", "raised", "words"), MODERN_ERRORS)
async def test_a_400_whose_body_is_a_modern_error_identifies_a_modern_server(
    error: dict[str, Any], raised: type[Exception], words: str, tls: ssl.SSLContext | None
) -> None:
    """The HTTP binding's backward compatibility: inspect a 400's body before falling back."""
    with StreamableHttpServer(discover_error=error, tls=tls) as server, pytest.raises(raised, match=words):
        async with connect(server.url):
            pass
    assert [r.rpc_method for r in server.requests] == ["server/discover"]  # no initialize followed


@pytest.mark.slow
async def test_a_server_silent_on_the_probe_is_a_timeout_not_a_legacy_server(
    tls: ssl.SSLContext | None,
) -> None:
    """On HTTP a legacy server answers with a status: silence is no sign of one."""
    with StreamableHttpServer(discover_silent=True, tls=tls) as server:
        transport = HttpTransport(server.url)
        options = ConnectionOptions(discover_timeout=0.1, init_timeout=1.0)
        opened = ClientConnection.connect(transport, options, capabilities={})
        with pytest.raises(TimeoutError, match="did not answer server/discover"):
            async with opened:
                pass
    assert [r.rpc_method for r in server.requests] == ["server/discover"]


async def test_an_sse_answer_carries_progress_and_a_server_request(server: StreamableHttpServer) -> None:
    progress: list[tuple[float, float | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total))

    async with connect(server.url) as conn:
        result = await conn.call_tool("sse", on_progress=on_progress)
    assert result.text == 'client answered {"action": "accept", "content": {"n": 1}}'
    assert progress == [(1.0, 2.0)]
    # The client's answer to the server's request went back as its own POST, accepted with 202.
    assert any(m.get("id") == "srv-1" and "result" in m for m in server.received)


async def test_server_requests_on_the_get_stream_are_answered(server: StreamableHttpServer) -> None:
    async with connect(server.url):
        request = {"jsonrpc": "2.0", "id": "g-1", "method": "sampling/createMessage", "params": {}}
        server.push(request)
        reply = await anyio.to_thread.run_sync(server.answer_to, "g-1")
    assert reply["result"]["model"] == "m"


async def test_the_get_stream_resumes_with_last_event_id(server: StreamableHttpServer) -> None:
    notes: list[tuple[str, Any]] = []
    both = anyio.Event()
    async with connect(server.url, notes=notes, noted=both, noted_after=2):
        server.push({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": 1}})
        server.hang_up(10, missed=[{"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": 2}}])
        reply = await anyio.to_thread.run_sync(_push_and_wait, server)
        assert reply["result"]["model"] == "m"
        # The replayed notification is handled by its own task: it may come after the reply.
        with anyio.fail_after(5):
            await both.wait()
    assert notes == [("notifications/message", {"n": 1}), ("notifications/message", {"n": 2})]
    gets = [r.headers for r in server.requests if r.verb == "GET"]
    assert len(gets) == 2
    assert "last-event-id" not in gets[0]
    # The resumed GET names the last event before the hang-up (the missed one comes right after it;
    # the test's push of g-2 may land on either side of the hang-up).
    missed = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": 2}})
    last_seen = server.session.get_log.events.index(missed) - 1
    assert gets[1]["last-event-id"] == f"get-{server.session.session_id}:{last_seen}"


def _push_and_wait(server: StreamableHttpServer) -> dict[str, Any]:
    server.push({"jsonrpc": "2.0", "id": "g-2", "method": "sampling/createMessage", "params": {}})
    return server.answer_to("g-2")


async def test_a_broken_answer_stream_is_resumed(server: StreamableHttpServer) -> None:
    async with connect(server.url) as conn:
        assert (await conn.call_tool("drop")).text == "resumed"
    resumed = [r.headers for r in server.requests if r.verb == "GET" and "last-event-id" in r.headers]
    assert len(resumed) == 1 and resumed[0]["last-event-id"].startswith("post-")


async def test_an_answer_stream_that_cannot_be_resumed_fails_the_request(
    server: StreamableHttpServer,
) -> None:
    async with connect(server.url) as conn:
        with pytest.raises(RpcError) as caught:
            await conn.call_tool("cut")
        assert caught.value.code == CONNECTION_CLOSED
        assert (await conn.call_tool("json")).text == "json"


async def test_a_server_without_get_stream_is_fine(tls: ssl.SSLContext | None) -> None:
    with StreamableHttpServer(get_stream=False, tls=tls) as server:
        async with connect(server.url) as conn:
            assert (await conn.call_tool("json")).text == "json"
        assert [r.verb for r in server.requests].count("GET") == 1


async def test_http_errors_are_transport_errors(server: StreamableHttpServer) -> None:
    async with connect(server.url) as conn:
        with pytest.raises(TransportError, match=r"HTTP 500.*something broke"):
            await conn.call_tool("crash")
        await conn.ping()  # the connection is still good


async def test_an_expired_session_is_a_clear_error_and_ends_the_connection(
    server: StreamableHttpServer,
) -> None:
    async with connect(server.url) as conn:
        server.expire()
        with pytest.raises(SessionExpired, match="HTTP 404"):
            await conn.ping()
        await conn.wait_closed()
        assert "HTTP 404" in (conn.session.closed_reason or "")
    assert [r.verb for r in server.requests].count("DELETE") == 0


async def test_an_unreachable_server_is_a_transport_error(tls: ssl.SSLContext | None) -> None:
    with StreamableHttpServer(tls=tls) as server:
        url = server.url
    with pytest.raises(TransportError, match="POST to"):
        async with connect(url):
            pass  # pragma: no cover


async def test_notify_soon_posts_every_message_side_by_side(server: StreamableHttpServer) -> None:
    async with connect(server.url) as conn:
        for n in range(20):
            conn.session.notify_soon("notifications/message", {"level": "info", "data": n})
        await wait_until(
            server, lambda: sum(m.get("method") == "notifications/message" for m in server.received) == 20
        )
    sent = [m["params"]["data"] for m in server.received if m.get("method") == "notifications/message"]
    assert sorted(sent) == list(range(20))  # every one arrived (posts run side by side)


# --- size: nothing is read beyond max_message_size ------------------------------------------------

LIMIT = 1024 * 1024


@pytest.mark.parametrize("id_last", [False, True], ids=["id-in-head", "id-after-the-payload"])
async def test_a_json_answer_that_never_ends_fails_that_call_and_the_connection_serves_on(
    server: StreamableHttpServer, id_last: bool
) -> None:
    """Read to the limit and no further: unbounded, the endless body would be read until the timeout."""
    async with connect(server.url, max_message_size=LIMIT) as conn:
        with anyio.fail_after(60), pytest.raises(RpcError) as caught:
            await conn.call_tool("huge-json", {"endless": True, "id_last": id_last})
        assert caught.value.code == PARSE_ERROR
        assert f"sent an invalid response: Message longer than {LIMIT} bytes dropped" in caught.value.message
        assert (await conn.call_tool("json")).text == "json"


async def test_a_json_answer_over_the_limit_is_refused_even_when_it_ends(
    server: StreamableHttpServer,
) -> None:
    async with connect(server.url, max_message_size=LIMIT) as conn:
        assert (await conn.call_tool("huge-json", {"size": LIMIT - 1000})).text.startswith("xxx")
        with pytest.raises(RpcError, match=f"Message longer than {LIMIT} bytes"):
            await conn.call_tool("huge-json", {"size": 3 * LIMIT})


async def test_a_gzip_answer_is_read_inflated(server: StreamableHttpServer) -> None:
    async with connect(server.url) as conn:
        result = await conn.call_tool("gzip-json", {"size": 200_000})
    assert set(result.text) == {"x"} and 199_000 < len(result.text) < 200_000  # the body, less its envelope
    assert [r.headers.get("accept-encoding") for r in server.requests if r.rpc_method == "tools/call"] == [
        "gzip, deflate"
    ]


@pytest.mark.slow
async def test_a_gzip_answer_that_inflates_beyond_the_limit_is_never_held_whole(
    server: StreamableHttpServer,
) -> None:
    """64 MB inflated from some 64 KB on the wire: counted as it inflates, not after each read."""
    tracemalloc.start()
    try:
        async with connect(server.url, max_message_size=LIMIT) as conn:
            with pytest.raises(RpcError, match=f"Message longer than {LIMIT} bytes"):
                await conn.call_tool("gzip-json", {"size": 64 * LIMIT})
            _, peak = tracemalloc.get_traced_memory()
            assert (await conn.call_tool("json")).text == "json"
    finally:
        tracemalloc.stop()
    assert peak < 4 * LIMIT  # read whole per network read (httpx decoding): 10 MB


@pytest.mark.slow
async def test_a_server_request_over_the_limit_in_an_sse_stream_is_answered_from_its_head(
    server: StreamableHttpServer,
) -> None:
    """-32700 with its id, as on stdio, without the event ever being held whole; the stream goes on."""
    tracemalloc.start()
    try:
        async with connect(server.url, max_message_size=LIMIT) as conn:
            result = await conn.call_tool("huge-sse", {"size": 64 * LIMIT})
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    reply = next(m for m in server.received if m.get("id") == "srv-big")
    assert reply["error"] == {"code": PARSE_ERROR, "message": f"Message longer than {LIMIT} bytes dropped"}
    assert result.text == "after the big one: True"  # the answer came on the same stream, after it
    assert peak < 16 * LIMIT  # a 64 MB event, never buffered whole (the bound is generous)


async def test_an_error_status_with_a_body_that_never_ends_is_an_http_error(
    server: StreamableHttpServer,
) -> None:
    async with connect(server.url, max_message_size=LIMIT) as conn:
        with anyio.fail_after(60), pytest.raises(TransportError, match=r"HTTP 500 .*: \{") as caught:
            await conn.call_tool("huge-error", {"endless": True})
        assert len(str(caught.value)) < 1_000
        await conn.ping()


@pytest.mark.slow
@given(
    events=st.lists(st.tuples(st.text(max_size=300), st.sampled_from(["", "7", "a:b"])), max_size=6),
    ending=st.sampled_from(["\n", "\r", "\r\n"]),
    cuts=st.lists(st.integers(min_value=0, max_value=5_000), max_size=8),
)
def test_the_event_reader_reads_the_same_events_however_the_bytes_are_cut(
    events: list[tuple[str, str]], ending: str, cuts: list[int]
) -> None:
    """The transport's bounded SSE reader: any chunking, any line ending; a big event kept to its head."""
    limit = 256
    wire = "\ufeff" + "".join(
        (f"id: {event_id}{ending}" if event_id else "")
        + "".join(f"data: {line}{ending}" for line in data.replace("\r", "").split("\n"))
        + ending
        for data, event_id in events
    )
    raw = wire.encode()
    got = anyio.run(_read_all, [raw[start:end] for start, end in _pieces(len(raw), cuts)], limit)
    assert len(got) == len(events)
    last_id = ""
    for event, (data, event_id) in zip(got, events, strict=True):
        last_id = event_id or last_id
        assert event.id == last_id
        text = data.replace("\r", "")
        if len(text.encode()) + 1 > limit:  # its lines and their line ends
            assert event.data is None and text.encode().startswith(event.head) and event.head
        else:
            assert event.data == text


async def test_an_event_whose_data_is_a_bare_nul_is_data_not_the_cut_marker() -> None:
    """The reader marks a cut event with a token no server can know; a NUL a server sends is data."""
    got = await _read_all([b"data: \x00\n\ndata: a\ndata: \x00\n\n"], 256)
    assert [(e.data, e.head) for e in got] == [("\x00", b""), ("a\n\x00", b"")]


async def test_the_event_reader_follows_the_event_stream_format_in_any_chunks() -> None:
    """Comments, field names without a value, ``event``, ``retry``, an ``id`` kept for the
    events after it (one holding a NUL ignored), a blank line that sets nothing, a last event
    without its blank line: read as the format says, however the bytes are cut."""
    wire = (
        b": a comment\r\n\r\n"  # nothing set: no event
        b"event: status\rdata\rdata:x\r\rretry: 250\n\n"  # a CR-ended event; an empty data line first
        b"id: 7\ndata:  two spaces\n\n"
        b"id: bad\x00id\nretry: soon\nnot-a-field: 1\ndata: \xff\xfe\n\n"  # the id and retry ignored
        b"data: unfinished"
    )
    expected = [
        Event("status", "\nx"),
        Event("message", "", "", 250),
        Event("message", " two spaces", "7"),
        Event("message", "\ufffd\ufffd", "7"),
    ]
    assert await _read_all([wire], 256) == expected
    for size in (1, 2, 3, 5, 7):  # every way of cutting it
        assert await _read_all([wire[i : i + size] for i in range(0, len(wire), size)], 256) == expected


async def _read_all(chunks: list[bytes], limit: int) -> list[Event]:
    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return [event async for event in read_events(stream(), limit)]


def _pieces(size: int, cuts: list[int]) -> list[tuple[int, int]]:
    points = sorted({0, size, *(c for c in cuts if c < size)})
    return list(itertools.pairwise(points))


async def test_posts_reuse_a_kept_alive_connection(server: StreamableHttpServer) -> None:
    async with connect(server.url) as conn:
        for n in range(5):
            await conn.session.notify("notifications/message", {"level": "info", "data": n})
    ports = [r.port for r in server.requests if r.rpc_method == "notifications/message"]
    assert len(ports) == 5
    assert len(set(ports)) == 1  # each 202 was read to its end, so its connection went back to the pool


async def test_an_sse_answer_read_to_its_end_leaves_its_connection_to_the_next_post(
    server: StreamableHttpServer,
) -> None:
    async with connect(server.url) as conn:
        for _ in range(5):
            assert (await conn.call_tool("sse-kept")).text == "kept"
    ports = [r.port for r in server.requests if r.rpc_method == "tools/call"]
    assert len(ports) == 5
    assert len(set(ports)) == 1  # each stream was read past its answer to its end: no new connection


async def test_an_sse_answer_that_stays_open_answers_at_once_and_is_closed_soon_after(
    server: StreamableHttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server keeps the stream open after the result until the client hangs up.

    The client reads such a stream on for ``_END_AFTER_ANSWER`` (half a second) in case it ends;
    a twentieth of that here, as what is tested is that it closes the stream, not when.
    """
    monkeypatch.setattr(_http_exchange, "_END_AFTER_ANSWER", 0.05)
    async with connect(server.url) as conn:
        assert (await conn.call_tool("sse-linger")).text == "kept"  # not held up by the open stream
        await wait_until(server, lambda: server.hung_up == 1)  # the client closed it, unasked
        assert (await conn.call_tool("json")).text == "json"


async def test_an_endpoint_that_redirects_with_307_gets_the_same_post_again(
    server: StreamableHttpServer,
) -> None:
    """A server mounted at ``/mcp/`` answers ``/mcp`` with a 307: the body is sent again, on both pools."""
    async with connect(server.url.replace("/mcp", "/moved")) as conn:
        assert (await conn.call_tool("json")).text == "json"


async def test_a_cookie_the_server_sets_comes_back_on_every_later_request(tls: ssl.SSLContext | None) -> None:
    """A load balancer's sticky session: set on the initialize answer, sent on every request after it."""
    with StreamableHttpServer(tls=tls, cookie="lb=node-1; Path=/") as server:
        async with connect(server.url) as conn:
            assert (await conn.call_tool("json")).text == "json"
            await conn.ping()
    methods = [r.rpc_method for r in server.requests]
    later = server.requests[methods.index("initialize") + 1 :]
    assert {r.verb for r in later} == {"POST", "GET", "DELETE"}
    assert [r.headers.get("cookie") for r in later] == ["lb=node-1"] * len(later)


class ChallengeDrivenBearer(httpx.Auth):
    """A credential only once challenged, then on every request: OAuth's promise, in small."""

    challenge_driven = True

    def __init__(self) -> None:
        self.token: str | None = None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self.token is not None:
            request.headers["authorization"] = f"Bearer {self.token}"
        response = yield request
        if response.status_code == 401 and self.token is None:
            self.token = "t0ken"
            request.headers["authorization"] = "Bearer t0ken"
            yield request


@pytest.fixture
def through_client(monkeypatch: pytest.MonkeyPatch) -> list[httpx.Request]:
    """The requests sent through ``httpx.AsyncClient`` (the rest went straight to the pool)."""
    sent: list[httpx.Request] = []
    send = httpx.AsyncClient.send

    async def spy(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        sent.append(request)
        return await send(self, request, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "send", spy)
    return sent


async def test_an_oauth_connection_that_is_asked_for_nothing_sends_past_the_client_after_its_first_request(
    server: StreamableHttpServer, pool: str, through_client: list[httpx.Request]
) -> None:
    """OAuth left the initialize bare and it was answered: the rest goes straight to the lean pool."""
    if pool != "lean":
        pytest.skip("the lean pool's path")
    async with connect(server.url, auth=OAuth(store=MemoryTokenStore())) as conn:
        assert (await conn.call_tool("json")).text == "json"
        await conn.ping()
    assert [r.method for r in through_client] == ["POST"]  # the initialize, through the auth
    assert len(server.requests) >= 5  # initialize, initialized, GET, the call, ping, DELETE
    assert all("authorization" not in r.headers for r in server.requests)


async def test_a_server_that_asks_for_a_credential_later_gets_the_refused_request_again_with_it(
    tls: ssl.SSLContext | None,
) -> None:
    """The 401 on a request sent past the client: the auth answers it and every later request has it."""
    auth = ChallengeDrivenBearer()
    with StreamableHttpServer(tls=tls, bearer_from=4) as server:
        async with connect(server.url, auth=auth) as conn:
            assert (await conn.call_tool("json")).text == "json"
            await conn.ping()
    bare_refused = [(r.verb, r.rpc_method) for r in server.requests[3:] if "authorization" not in r.headers]
    with_token = [(r.verb, r.rpc_method) for r in server.requests if r.headers.get("authorization")]
    assert bare_refused, "the server asked from its fourth request on"
    assert all(request in with_token for request in bare_refused)  # each sent again, with the token
    assert [r.verb for r in server.requests[-2:]] == ["POST", "DELETE"]
    assert all(r.headers.get("authorization") == "Bearer t0ken" for r in server.requests[-2:])


async def test_connections_of_a_burst_stay_open_for_the_next_one(
    server: StreamableHttpServer, pool: str
) -> None:
    """Keep-alive without a fixed cap: httpx's own pool keeps 20 and reconnects for the rest."""
    if pool != "lean":
        pytest.skip("the lean pool's rule")
    async with connect(server.url) as conn:
        for _ in range(2):
            async with anyio.create_task_group() as burst:
                for _ in range(40):
                    burst.start_soon(conn.ping)
    ports = {r.port for r in server.requests if r.rpc_method == "ping"}
    assert len(ports) <= 41  # the second burst reused the first one's connections


async def test_a_proxy_in_the_environment_carries_the_requests(
    server: StreamableHttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpx honours the proxy variables only with its own pool: then that one is used.

    An https request goes through the proxy's tunnel (CONNECT), which this proxy refuses.
    """
    seen: list[bytes] = []

    async def proxy(client: anyio.abc.SocketStream) -> None:
        async with client:
            seen.append(await client.receive())
            await client.send(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, proxy)
        with pytest.raises(TransportError, match="502"):
            async with connect(server.url):
                pass
        tg.cancel_scope.cancel()
    authority = server.url.split("/")[2]
    expected = f"POST {server.url}" if server.url.startswith("http:") else f"CONNECT {authority}"
    assert seen[0].startswith(f"{expected} HTTP/1.1".encode())
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    async with connect(server.url) as conn:  # a host the proxy does not cover: straight to it
        await conn.ping()


async def test_aclose_deletes_the_session_once_and_ends_sending_and_receiving(
    server: StreamableHttpServer,
) -> None:
    async with HttpTransport(server.url).connect() as stream:
        await stream.send(Request(1, "initialize", {"protocolVersion": LATEST_LEGACY_VERSION}))
        assert isinstance(await stream.receive(), Response)
        await stream.aclose()
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
        with pytest.raises(TransportError, match="is closed"):
            await stream.send(Request(2, "ping"))
    assert [r.verb for r in server.requests] == ["POST", "DELETE"]  # leaving the context DELETEs no more
