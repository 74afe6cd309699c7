"""The 2026-07-28 HTTP binding's mirrored headers: values, x-mcp-header annotations, rejected tools,
and the seam: the connection computes them, the HTTP stream sends what a request carries."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from host_receiver.client._mirror import (
    HeaderMirror,
    encode_value,
    param_headers,
    request_headers,
    tool_header_paths,
)
from host_receiver.client.connection import ClientConnection
from host_receiver.errors import HttpStatusError, InvalidMessage, InvalidToolHeaders, TransportError
from host_receiver.protocol.jsonrpc import Message, Request
from host_receiver.testing import FakeServer, ToolCall
from host_receiver.transports.base import Binding, MessageStream, StreamAttribute, Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.memory import MemoryTransport
from tests.servers.http_server import StreamableHttpServer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_values_are_encoded_as_the_spec_table_says(value: str, header: str) -> None:
    assert encode_value(value) == header


def test_the_standard_headers_of_each_method() -> None:
    assert request_headers("tools/call", {"name": "get_weather"}, "2026-07-28") == {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "get_weather",
    }
    assert request_headers("resources/read", {"uri": "file:///a b"}, "2026-07-28")["mcp-name"].startswith(
        "file:///a b"
    )
    assert request_headers("tasks/get", {"taskId": "t-1"}, "2026-07-28")["mcp-name"] == "t-1"
    assert "mcp-name" not in request_headers("server/discover", {}, "2026-07-28")


def tool(properties: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", "properties": properties}}


def test_annotated_arguments_become_mcp_param_headers() -> None:
    paths = tool_header_paths(
        tool(
            {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "opts": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            }
        )
    )
    assert paths == {"Region": ("region",), "N": ("opts", "n"), "Dry-Run": ("dry",)}
    headers = param_headers(paths, {"region": "eu-west", "opts": {"n": -7}, "dry": False})
    assert headers == {"mcp-param-region": "eu-west", "mcp-param-n": "-7", "mcp-param-dry-run": "false"}
    assert param_headers(paths, {"region": None}) == {}  # null or absent: no header
    with pytest.raises(InvalidToolHeaders, match="safe integer"):
        param_headers(paths, {"opts": {"n": 2**60}})


@pytest.mark.parametrize(
    ("properties", "why"),
    [
        ({"a": {"type": "string", "x-mcp-header": ""}}, "not an HTTP header token"),
        ({"a": {"type": "string", "x-mcp-header": "Bad Name"}}, "not an HTTP header token"),
        ({"a": {"type": "number", "x-mcp-header": "A"}}, "string, integer or boolean"),
        (
            {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}},
            "twice",
        ),
        ({"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}, "through properties"),
        ({"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}, "through properties"),
    ],
)
def test_invalid_annotations_are_refused(properties: dict[str, Any], why: str) -> None:
    with pytest.raises(InvalidToolHeaders, match=why):
        tool_header_paths(tool(properties))


def test_http_leaves_out_tools_with_invalid_annotations_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    good = {"name": "good", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}
    bad = {**tool({"a": {"type": "number", "x-mcp-header": "A"}}), "name": "bad"}
    with caplog.at_level(logging.WARNING):
        assert HeaderMirror().accept_tools([good, bad], "srv") == [good]
    assert "left out tool 'bad' of srv" in caplog.text


# --- the seam: the connection computes the headers, the stream sends them ---------------------

MODERN = "2026-07-28"
REGION = {
    "name": "deploy",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
        },
    },
}
BAD = {
    "name": "bad",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
}


class _MirroringBinding(Binding):
    mirrors_headers = True


class _HeaderRecorder(MessageStream):
    """An in-memory stream whose binding mirrors headers, as HTTP's does; it records each request's."""

    def __init__(self, inner: MessageStream, sent: list[tuple[str, Mapping[str, str] | None]]) -> None:
        self._inner = inner
        self._sent = sent
        self._binding = _MirroringBinding()

    async def send(self, message: Message) -> None:
        if isinstance(message, Request):
            self._sent.append((message.method, message.headers))
        await self._inner.send(message)

    async def receive(self) -> Message | InvalidMessage:
        return await self._inner.receive()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {StreamAttribute.binding: lambda: self._binding}


class _Recording(Transport):
    def __init__(self, inner: MemoryTransport, mirrors: bool) -> None:
        self.inner = inner
        self.mirrors = mirrors
        self.sent: list[tuple[str, Mapping[str, str] | None]] = []

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[MessageStream]:
        async with self.inner.connect() as stream:
            yield _HeaderRecorder(stream, self.sent) if self.mirrors else stream


async def deploy(call: ToolCall) -> str:
    return "ok"


def tools_list(request: Request) -> Any:
    async def answer() -> dict[str, Any]:
        return {"tools": [REGION, BAD]}

    return answer()


@pytest.mark.parametrize("mirrors", [True, False], ids=["binding-mirrors", "no-binding"])
async def test_the_connection_mirrors_headers_only_for_a_binding_that_asks(mirrors: bool) -> None:
    server = FakeServer(protocol_version=MODERN, tools={"deploy": deploy}, methods={"tools/list": tools_list})
    transport = _Recording(server.transport, mirrors)
    async with server, ClientConnection.connect(transport, capabilities={}) as connection:
        names = [t.name for t in await connection.list_tools()]
        await connection.call_tool("deploy", {"region": "eu-west", "n": 3})
    if not mirrors:  # stdio and memory: every tool, no headers
        assert names == ["deploy", "bad"]
        return
    assert names == ["deploy"]  # the tool whose annotations break the rules is left out
    assert [method for method, _ in transport.sent] == ["server/discover", "tools/list", "tools/call"]
    assert transport.sent[0][1] == {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"}
    assert transport.sent[2][1] == {
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "deploy",
        "mcp-param-region": "eu-west",
        "mcp-param-n": "3",
    }


async def test_an_argument_that_cannot_be_a_header_fails_the_call_before_sending() -> None:
    server = FakeServer(protocol_version=MODERN, tools={"deploy": deploy}, methods={"tools/list": tools_list})
    transport = _Recording(server.transport, mirrors=True)
    async with server, ClientConnection.connect(transport, capabilities={}) as connection:
        await connection.list_tools()
        with pytest.raises(TransportError, match="cannot send tools/call: argument n is beyond the safe"):
            await connection.call_tool("deploy", {"n": 2**60})
    assert [method for method, _ in transport.sent] == ["server/discover", "tools/list"]


@pytest.fixture
def http_server() -> Iterator[StreamableHttpServer]:
    with StreamableHttpServer() as running:
        yield running


async def test_the_http_stream_sends_the_headers_a_request_carries(http_server: StreamableHttpServer) -> None:
    async with HttpTransport(http_server.url).connect() as stream:
        headers = {"mcp-method": "anything/at-all", "mcp-param-x": "1"}
        with pytest.raises(HttpStatusError):  # this legacy server wants a session first
            await stream.send(Request(1, "server/discover", {}, headers))
    assert http_server.requests[0].headers["mcp-method"] == "anything/at-all"
    assert http_server.requests[0].headers["mcp-param-x"] == "1"


async def test_a_tool_not_listed_yet_is_listed_once_before_its_call_so_its_headers_go_with_it() -> None:
    server = FakeServer(protocol_version=MODERN, tools={"deploy": deploy}, methods={"tools/list": tools_list})
    transport = _Recording(server.transport, mirrors=True)
    changed = anyio.Event()

    async def on_notification(method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/tools/list_changed":
            changed.set()

    connected = ClientConnection.connect(transport, capabilities={}, notification_handler=on_notification)
    async with server, connected as connection:
        await connection.call_tool("deploy", {"region": "eu-west", "n": 3})
        await connection.call_tool("deploy", {"region": "us-east"})  # known now: no second list
        await server.notify("notifications/tools/list_changed")
        await changed.wait()
        await connection.call_tool("deploy", {"region": "ap-south"})  # listed again: it may have changed
    sent = [method for method, _ in transport.sent]
    assert sent == ["server/discover", "tools/list", "tools/call", "tools/call", "tools/list", "tools/call"]
    regions = [h["mcp-param-region"] for m, h in transport.sent if m == "tools/call" and h is not None]
    assert regions == ["eu-west", "us-east", "ap-south"]


async def test_a_tool_with_invalid_header_annotations_is_refused_naming_the_annotation() -> None:
    server = FakeServer(protocol_version=MODERN, tools={"deploy": deploy}, methods={"tools/list": tools_list})
    transport = _Recording(server.transport, mirrors=True)
    async with server, ClientConnection.connect(transport, capabilities={}) as connection:
        refused = r"tool 'bad' .* is not called: .*x-mcp-header on a needs a string, integer or boolean"
        with pytest.raises(InvalidToolHeaders, match=refused):
            await connection.call_tool("bad", {"a": 1.5})
    assert [method for method, _ in transport.sent] == ["server/discover", "tools/list"]  # no call went


async def test_on_stdio_a_call_needs_no_list_first() -> None:
    server = FakeServer(protocol_version=MODERN, tools={"deploy": deploy}, methods={"tools/list": tools_list})
    transport = _Recording(server.transport, mirrors=False)
    async with server, ClientConnection.connect(transport, capabilities={}) as connection:
        assert (await connection.call_tool("deploy", {"region": "eu-west"})).text == "ok"
    assert server.requests_of("tools/list") == []
