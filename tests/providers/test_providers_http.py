"""The HTTP pools under the OpenAI provider (ours and httpx's), over loopback sockets, on asyncio and trio.

The fake OpenAI server numbers its connections, so reuse shows in what it
records. Odd server behaviour (``Connection: close``, a body cut short, a
connection dropped after the request arrived, chunked bodies, a proxy) comes
from a tiny scripted HTTP server that runs in the test's own event loop.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.abc
import httpx
import pytest

from host_receiver._net.pool import LeanTransport
from host_receiver.errors import ProviderError
from host_receiver.protocol.types import CreateMessageRequestParams, dump
from providers import ModelInfo, OpenAIProvider, ProviderRegistry, SamplingLimits, SamplingProgress
from providers.backends._settings import HttpTransport
from tests.fake_openai import Completion, FakeOpenAI

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789abcdef"
MODEL = ModelInfo("gpt-test", "fake")
PARAMS = CreateMessageRequestParams.model_validate(
    {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 16}
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(params=["lean", "httpx"])
def transport(request: pytest.FixtureRequest) -> HttpTransport:
    """Every behaviour holds on both HTTP pools: ours and httpx's own."""
    return cast(HttpTransport, request.param)


def provider(transport: HttpTransport, url: str, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider("fake", [MODEL], api_key=KEY, base_url=url, http_transport=transport, **kwargs)


@asynccontextmanager
async def opened(transport: HttpTransport, url: str, **kwargs: Any) -> AsyncIterator[OpenAIProvider]:
    """A provider for ``url`` on ``transport``, closed when the block ends."""
    p = provider(transport, url, **kwargs)
    try:
        yield p
    finally:
        await p.aclose()


async def sample(p: OpenAIProvider, *, streamed: bool = False) -> str:
    async def sink(update: SamplingProgress) -> None:
        pass

    result = dump(await p.sample(PARAMS, MODEL, sink if streamed else None))
    return str(result["content"]["text"])


def connections(fake: FakeOpenAI) -> list[int]:
    return [r.connection for r in fake.requests]


# --- a scripted raw HTTP server ----------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the raw server does with one request: send ``data`` (maybe nothing), then maybe hang up."""

    data: bytes = b""
    hang_up: bool = False


@dataclass
class RawServer:
    """HTTP/1.1 on 127.0.0.1: reads each request whole, then follows the next :class:`Answer`."""

    answers: deque[Answer]
    port: int = 0
    accepted: int = 0
    requests: list[tuple[int, str]] = field(default_factory=list)  # (connection, request line)
    closed_by_client: list[int] = field(default_factory=list)
    changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def wait_closed_by_client(self, connection: int) -> None:
        with anyio.fail_after(10):
            while connection not in self.closed_by_client:
                await self.changed.wait()

    async def serve(self, stream: anyio.abc.SocketStream) -> None:
        self.accepted += 1
        number = self.accepted
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    buffer += await stream.receive()
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                length = next(
                    (
                        int(line.split(":", 1)[1])
                        for line in lines
                        if line.lower().startswith("content-length:")
                    ),
                    0,
                )
                while len(buffer) < length:
                    buffer += await stream.receive()
                buffer = buffer[length:]
                self.requests.append((number, lines[0]))
                answer = self.answers.popleft() if self.answers else Answer(json_reply("default"))
                if answer.data:
                    await stream.send(answer.data)
                if answer.hang_up:
                    return
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            self.closed_by_client.append(number)
            self.changed.set()
            self.changed = anyio.Event()
        finally:
            await anyio.aclose_forcefully(stream)


@asynccontextmanager
async def raw_server(*answers: Answer) -> AsyncIterator[RawServer]:
    server = RawServer(deque(answers))
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.serve)
        yield server
        tg.cancel_scope.cancel()


def completion_body(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps({"id": "c", "object": "chat.completion", "model": "m", "choices": [choice]}).encode()


def json_reply(text: str, *, chunked: bool = False, close: bool = False) -> bytes:
    body = completion_body(text)
    head = ["HTTP/1.1 200 OK", "Content-Type: application/json"]
    if close:
        head.append("Connection: close")
    if chunked:
        head.append("Transfer-Encoding: chunked")
        parts = [body[:7], body[7:]]
        body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"
    else:
        head.append(f"Content-Length: {len(body)}")
    return "\r\n".join(head).encode() + b"\r\n\r\n" + body


# --- reuse -----------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_sequential_calls_share_one_connection(
    transport: HttpTransport, fake: FakeOpenAI, streamed: bool
) -> None:
    async with opened(transport, fake.url) as p:
        texts = [await sample(p, streamed=streamed) for _ in range(4)]
    assert texts == ["Hello from fake-openai."] * 4
    assert connections(fake) == [1, 1, 1, 1]


@pytest.mark.slow
async def test_a_second_burst_reuses_the_connections_of_the_first(transport: HttpTransport) -> None:
    with FakeOpenAI(delay=0.2) as fake:
        async with opened(transport, fake.url) as p:
            for _ in range(2):
                async with anyio.create_task_group() as tg:
                    for _ in range(20):
                        tg.start_soon(sample, p)
        assert len(fake.requests) == 40
        # At most 20 calls were ever in flight, so 20 connections serve all 40.
        assert len(set(connections(fake))) <= 20


async def test_an_idle_connection_the_server_closed_is_replaced_without_an_error(
    transport: HttpTransport, fake: FakeOpenAI
) -> None:
    async with opened(transport, fake.url, max_retries=0) as p:
        assert await sample(p) == "Hello from fake-openai."
        await anyio.to_thread.run_sync(fake.close_idle_connections)
        assert await sample(p) == "Hello from fake-openai."
    assert connections(fake) == [1, 2]


@pytest.mark.parametrize(
    ("first", "connections_used"),
    [
        pytest.param(
            Answer(json_reply("one", chunked=True)), [1, 1], id="chunked-then-content-length-reuses"
        ),
        pytest.param(
            Answer(json_reply("one", close=True), hang_up=True), [1, 2], id="connection-close-not-reused"
        ),
        pytest.param(
            Answer(json_reply("one") + b"HTTP/1.1 200 OK\r\n"), [1, 2], id="trailing-bytes-not-reused"
        ),
    ],
)
async def test_whether_a_connection_is_reused_after_a_reply(
    transport: HttpTransport, first: Answer, connections_used: list[int], request: pytest.FixtureRequest
) -> None:
    if transport == "httpx" and "trailing-bytes" in request.node.name:
        # httpcore keeps a connection whose reply was followed by bytes nobody asked for; the next
        # request on it reads them as its response ("illegal header line"). Our pool closes it.
        request.applymarker(pytest.mark.xfail(strict=True, reason="httpx's pool reuses it"))
    async with (
        raw_server(first, Answer(json_reply("two"))) as server,
        opened(transport, server.url, max_retries=0) as p,
    ):
        assert [await sample(p), await sample(p)] == ["one", "two"]
    assert [number for number, _ in server.requests] == connections_used


# --- failures ----------------------------------------------------------------------


def cut_short() -> Answer:
    body = completion_body("lost")
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return Answer(head.encode() + body[:20], hang_up=True)


async def test_a_body_cut_short_is_a_connection_error(transport: HttpTransport) -> None:
    async with raw_server(cut_short()) as server, opened(transport, server.url, max_retries=0) as p:
        with pytest.raises(ProviderError, match="connection failed: peer closed connection without sending"):
            await sample(p)


async def test_a_body_cut_short_is_retried_by_the_client_on_a_new_connection(
    transport: HttpTransport, quick_sdk_retries: None
) -> None:
    async with (
        raw_server(cut_short(), Answer(json_reply("second try"))) as server,
        opened(transport, server.url, max_retries=1) as p,
    ):
        assert await sample(p) == "second try"
    assert [number for number, _ in server.requests] == [1, 2]


async def test_a_kept_alive_connection_dropped_after_the_request_arrived(
    transport: HttpTransport, quick_sdk_retries: None
) -> None:
    # The server may have seen the request: the transport reports it, the client's retry sends it again.
    answers = Answer(json_reply("one")), Answer(hang_up=True), Answer(json_reply("two"))
    async with raw_server(*answers) as server, opened(transport, server.url, max_retries=1) as p:
        assert [await sample(p), await sample(p)] == ["one", "two"]
    assert [number for number, _ in server.requests] == [1, 1, 2]

    async with (
        raw_server(Answer(json_reply("one")), Answer(hang_up=True)) as server,
        opened(transport, server.url, max_retries=0) as p,
    ):
        assert await sample(p) == "one"
        with pytest.raises(ProviderError, match="connection failed: Server disconnected without sending"):
            await sample(p)


async def test_json_sent_as_another_content_type_is_read_and_other_text_refused(
    transport: HttpTransport,
) -> None:
    body = completion_body("plain text type")
    sloppy = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n"
    html = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 6\r\n\r\n<html>"
    async with (
        raw_server(Answer(sloppy.encode() + body), Answer(html)) as server,
        opened(transport, server.url, max_retries=0) as p,
    ):
        assert await sample(p) == "plain text type"
        with pytest.raises(ProviderError, match="the backend's reply is not JSON"):
            await sample(p)


# --- cancellation and closing ----------------------------------------------------------


async def test_a_cancelled_call_closes_its_connection(transport: HttpTransport, fake: FakeOpenAI) -> None:
    fake.queue(Completion(delay=30))
    async with opened(transport, fake.url) as p:
        async with anyio.create_task_group() as tg:
            tg.start_soon(sample, p)
            assert await anyio.to_thread.run_sync(fake.wait_for_requests, 1, 10)
            tg.cancel_scope.cancel()
        assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)
        assert await sample(p) == "Hello from fake-openai."
    assert connections(fake) == [1, 2]


async def test_a_cancelled_stream_closes_its_connection(transport: HttpTransport, fake: FakeOpenAI) -> None:
    fake.queue(Completion(text=" ".join(["word"] * 100), chunk_delay=0.05))
    started = anyio.Event()

    async def sink(update: SamplingProgress) -> None:
        started.set()

    async with opened(transport, fake.url) as p:
        async with anyio.create_task_group() as tg:
            tg.start_soon(p.sample, PARAMS, MODEL, sink)
            await started.wait()
            tg.cancel_scope.cancel()
        assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)
        assert not fake.requests[0].completed
        assert await sample(p, streamed=True) == "Hello from fake-openai."
    assert connections(fake) == [1, 2]


async def test_closing_the_provider_closes_its_idle_connections(transport: HttpTransport) -> None:
    async with raw_server() as server:
        p = provider(transport, server.url)
        assert await sample(p) == "default"
        await p.aclose()
        await server.wait_closed_by_client(1)


# --- timeouts -----------------------------------------------------------------------------


async def test_a_read_timeout_ends_the_call_and_drops_the_connection(
    transport: HttpTransport, fake: FakeOpenAI
) -> None:
    fake.queue(Completion(delay=30))
    async with opened(transport, fake.url, timeout=0.3, max_retries=2) as p:
        with pytest.raises(ProviderError, match=r"no response within 0\.3 s \(not retried\)$"):
            await sample(p)
        assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)
        assert await sample(p) == "Hello from fake-openai."
    assert connections(fake) == [1, 2]


# --- limits -------------------------------------------------------------------------------


async def test_a_redirected_call_keeps_its_size_cap(transport: HttpTransport) -> None:
    """The request httpx makes to follow a redirect belongs to the same call, under the same limits."""
    moved = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/chat/completions\r\nContent-Length: 0\r\n\r\n"
    big = json_reply("x" * 1_200_000)  # over the byte cap of 1,000 characters (1,060,576 bytes)
    async with raw_server(Answer(moved), Answer(big)) as server:
        p = provider(transport, server.url, max_retries=0)
        routes = ProviderRegistry([p], limits=SamplingLimits(max_reply_chars=1_000))
        async with routes:
            with pytest.raises(ProviderError, match="the reply is over this host's size cap"):
                await routes.plan(PARAMS, "srv").sample(None)
    assert [line for _, line in server.requests] == [
        "POST /v1/chat/completions HTTP/1.1",
        "POST /v2/chat/completions HTTP/1.1",
    ]


def pool(transport: HttpTransport, limits: httpx.Limits) -> httpx.AsyncBaseTransport:
    return LeanTransport(limits=limits) if transport == "lean" else httpx.AsyncHTTPTransport(limits=limits)


async def test_requests_beyond_max_connections_wait_for_a_free_one(transport: HttpTransport) -> None:
    with FakeOpenAI(delay=0.1) as fake:
        limited = pool(transport, httpx.Limits(max_connections=2))
        async with httpx.AsyncClient(transport=limited, base_url=fake.url) as client:
            statuses: list[int] = []

            async def post() -> None:
                response = await client.post("/chat/completions", json={"model": "m", "messages": []})
                statuses.append(response.status_code)

            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(post)
        assert statuses == [200] * 6
        assert set(connections(fake)) <= {1, 2}


async def test_pool_timeout(transport: HttpTransport, fake: FakeOpenAI) -> None:
    fake.queue(Completion(delay=30))
    limited = pool(transport, httpx.Limits(max_connections=1))
    async with httpx.AsyncClient(transport=limited, base_url=fake.url) as client:
        body = {"model": "m", "messages": []}

        async def hold_the_only_connection() -> None:
            await client.post("/chat/completions", json=body)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold_the_only_connection)
            assert await anyio.to_thread.run_sync(fake.wait_for_requests, 1, 10)
            with pytest.raises(httpx.PoolTimeout):
                await client.post("/chat/completions", json=body, timeout=httpx.Timeout(10, pool=0.2))
            tg.cancel_scope.cancel()
    assert len(fake.requests) == 1


async def test_an_empty_answer_gives_its_connection_back_before_it_is_read() -> None:
    """A 202 without a body frees its connection with its head: the next request needs no other.

    (httpx's own pool keeps the connection until the response is closed.)
    """
    accepted = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    async with raw_server(Answer(accepted), Answer(accepted)) as server:
        limited = LeanTransport(limits=httpx.Limits(max_connections=1))
        client = httpx.AsyncClient(transport=limited, base_url=server.url)
        async with client, client.stream("POST", "/a", content=b"{}") as first:
            second = await client.post("/b", content=b"{}", timeout=httpx.Timeout(10, pool=0.5))
            assert (first.status_code, second.status_code) == (202, 202)
            assert await first.aread() == b""
    assert [connection for connection, _ in server.requests] == [1, 1]


# --- proxies ----------------------------------------------------------------------------


async def test_an_http_proxy_from_the_environment_is_used(
    transport: HttpTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with raw_server(Answer(json_reply("via the proxy"))) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
        async with opened(transport, "http://backend.invalid:8000/v1", max_retries=0) as p:
            assert await sample(p) == "via the proxy"
    assert proxy.requests == [(1, "POST http://backend.invalid:8000/v1/chat/completions HTTP/1.1")]
