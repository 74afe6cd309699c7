"""The MCP client lifecycle: handshake, version negotiation, helpers; memory pair and stdio."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver.client.connection import Callbacks, ClientConnection
from host_receiver.client.options import ConnectionOptions
from host_receiver.errors import ProtocolError, RpcError, UnsupportedProtocolVersion
from host_receiver.protocol.types import Implementation
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION
from host_receiver.session import IncomingRequest, Session
from host_receiver.transports.memory import MemoryTransport
from host_receiver.transports.stdio import StdioTransport

pytestmark = pytest.mark.anyio

SERVER_SCRIPT = Path(__file__).parents[1] / "servers" / "stdio_mcp_server.py"


def tool(name: str) -> dict[str, Any]:
    """A ``tools/list`` entry: a name and the least input schema."""
    return {"name": name, "inputSchema": {"type": "object"}}


class FakeServer:
    """An MCP server played by a second session on the other end of a memory pair."""

    def __init__(self, version: str = LATEST_LEGACY_VERSION) -> None:
        self.version = version
        self.init_params: dict[str, Any] | None = None
        self.initialized = anyio.Event()
        self.tool_pages: dict[str | None, dict[str, Any]] = {None: {"tools": []}}
        self.init_result: dict[str, Any] | None = None
        self.session: Session | None = None

    async def handle(self, request: IncomingRequest) -> dict[str, Any]:
        params = request.params or {}
        if request.method == "initialize":
            self.init_params = params
            return self.init_result or {
                "protocolVersion": self.version,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake", "version": "9.9"},
                "instructions": "be nice",
            }
        if request.method == "tools/list":
            return self.tool_pages[params.get("cursor")]
        if request.method == "tools/call":
            token = request.progress_token
            if token is not None and self.session is not None:
                await self.session.notify(
                    "notifications/progress", {"progressToken": token, "progress": 1, "total": 2}
                )
            return {"content": [{"type": "text", "text": params["name"]}], "isError": False}
        raise RpcError(-32601, "no")

    async def on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/initialized":
            self.initialized.set()


@asynccontextmanager
async def connected(
    server: FakeServer, options: ConnectionOptions | None = None
) -> AsyncIterator[tuple[ClientConnection, MemoryTransport]]:
    transport = MemoryTransport()
    async with (
        Session(
            transport.peer, request_handler=server.handle, notification_handler=server.on_notification
        ) as server.session,
        ClientConnection.connect(transport, options, capabilities={"sampling": {}}) as conn,
    ):
        yield conn, transport


async def test_the_handshake_sends_what_mcp_asks_and_exposes_the_answer() -> None:
    server = FakeServer()
    async with connected(server, ConnectionOptions(client_info=Implementation(name="h", version="1"))) as (
        conn,
        transport,
    ):
        assert server.init_params == {
            "protocolVersion": LATEST_LEGACY_VERSION,
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "h", "version": "1"},
        }
        await server.initialized.wait()
        assert conn.protocol_version == LATEST_LEGACY_VERSION
        assert conn.server_info == Implementation(name="fake", version="9.9")
        assert conn.server_capabilities == {"tools": {"listChanged": True}}
        assert conn.instructions == "be nice"
        assert conn.session.name == "fake"
        client_end = transport._client  # the stream learnt the version and was asked to listen
        assert client_end.protocol_version == LATEST_LEGACY_VERSION
        assert client_end.listener_opened


async def test_an_older_supported_version_is_accepted() -> None:
    async with connected(FakeServer(version="2025-06-18")) as (conn, transport):
        assert conn.protocol_version == "2025-06-18"
        assert transport._client.protocol_version == "2025-06-18"


async def test_an_unsupported_version_closes_the_connection_with_a_clear_error() -> None:
    server = FakeServer(version="2099-01-01")
    with pytest.raises(UnsupportedProtocolVersion, match=r"'2099-01-01'.*supports 2025-11-25"):
        async with connected(server):
            pass  # pragma: no cover
    assert not server.initialized.is_set()


async def test_an_invalid_initialize_result_is_a_protocol_error() -> None:
    server = FakeServer()
    server.init_result = {"protocolVersion": LATEST_LEGACY_VERSION, "capabilities": {}}
    with pytest.raises(ProtocolError, match="invalid initialize result"):
        async with connected(server):
            pass  # pragma: no cover


async def test_list_tools_follows_cursors_and_refuses_loops() -> None:
    server = FakeServer()
    server.tool_pages = {
        None: {"tools": [tool("a")], "nextCursor": "2"},
        "2": {"tools": [tool("b"), tool("c")], "nextCursor": "3"},
        "3": {"tools": []},
    }
    async with connected(server) as (conn, _):
        assert [listed.name for listed in await conn.list_tools()] == ["a", "b", "c"]
        server.tool_pages["3"] = {"tools": [], "nextCursor": "2"}
        with pytest.raises(ProtocolError, match="repeated cursor"):
            await conn.list_tools()


async def test_call_tool_returns_the_result_with_progress() -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with connected(FakeServer()) as (conn, _):
        result = await conn.call_tool("t", {"x": 1}, on_progress=on_progress)
    assert result.text == "t" and result.is_error is False
    assert result.model_dump() == {"content": [{"type": "text", "text": "t"}], "isError": False}
    assert seen == [1.0]


async def test_over_stdio_negotiation_and_pagination() -> None:
    transport = StdioTransport(sys.executable, [str(SERVER_SCRIPT)], name="raw")
    async with ClientConnection.connect(transport, capabilities={"elicitation": {}}) as conn:
        assert conn.protocol_version == LATEST_LEGACY_VERSION
        sent = json.loads((conn.instructions or "").removeprefix("client sent "))
        assert sent["capabilities"] == {"elicitation": {}}
        assert sent["clientInfo"]["name"] == "host-receiver"
        assert len(await conn.list_tools()) == 8

    older = StdioTransport(sys.executable, [str(SERVER_SCRIPT), "--version", "2025-06-18"])
    async with ClientConnection.connect(older, capabilities={}) as conn:
        assert conn.protocol_version == "2025-06-18"

    unknown = StdioTransport(sys.executable, [str(SERVER_SCRIPT), "--version", "2024-01-01"])
    with pytest.raises(UnsupportedProtocolVersion):
        async with ClientConnection.connect(unknown, capabilities={}):
            pass  # pragma: no cover


def test_options_are_frozen_and_checked_when_they_are_made() -> None:
    options = ConnectionOptions(protocol="2025-11-25", max_input_rounds=3)
    with pytest.raises(FrozenInstanceError):
        options.protocol = "auto"  # type: ignore[misc]
    assert replace(options, protocol="auto").protocol == "auto" and options.protocol == "2025-11-25"
    with pytest.raises(ValueError, match=r"unknown protocol choice '2024-01-01' \(one of auto, 2026-07-28"):
        ConnectionOptions(protocol="2024-01-01")
    with pytest.raises(ValueError, match="max_input_rounds must be at least 1"):
        ConnectionOptions(max_input_rounds=0)


@pytest.mark.parametrize("given_as", ["keywords", "receiver"])
async def test_plain_callbacks_are_served_as_a_receiver_whichever_way_they_are_given(given_as: str) -> None:
    seen: list[IncomingRequest] = []
    noted: list[tuple[str, dict[str, Any] | None]] = []
    notified = anyio.Event()

    def decline(request: IncomingRequest) -> dict[str, Any]:
        seen.append(request)
        return {"action": "decline"}

    async def on_notification(method: str, params: dict[str, Any] | None) -> None:
        noted.append((method, params))
        notified.set()

    callbacks = Callbacks({"elicitation": {}}, decline, on_notification)
    serving: dict[str, Any] = (
        {
            "capabilities": {"elicitation": {}},
            "request_handler": decline,
            "notification_handler": on_notification,
        }
        if given_as == "keywords"
        else {"receiver": callbacks}
    )
    server, transport = FakeServer(), MemoryTransport()
    async with (
        Session(
            transport.peer, request_handler=server.handle, notification_handler=server.on_notification
        ) as server.session,
        ClientConnection.connect(transport, **serving) as conn,
    ):
        assert server.init_params is not None and server.init_params["capabilities"] == {"elicitation": {}}
        assert conn.requestor == callbacks
        params = {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}
        assert await server.session.request("elicitation/create", params) == {"action": "decline"}
        await server.session.notify("notifications/message", {"level": "info", "data": "hi"})
        with anyio.fail_after(5):
            await notified.wait()
    assert [(r.id, r.method, r.params) for r in seen] == [(1, "elicitation/create", params)]
    assert noted == [("notifications/message", {"level": "info", "data": "hi"})]


async def test_callbacks_without_a_request_handler_refuse_every_request() -> None:
    server, transport = FakeServer(), MemoryTransport()
    async with (
        Session(transport.peer, request_handler=server.handle) as server.session,
        ClientConnection.connect(transport) as conn,
    ):
        with pytest.raises(RpcError) as refused:
            await server.session.request("roots/list")
        assert refused.value.code == -32601
        assert conn.requestor == Callbacks()
        assert server.init_params is not None and server.init_params["capabilities"] == {}
