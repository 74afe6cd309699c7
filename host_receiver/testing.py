"""For host authors' own tests: an MCP server played in memory, no process, no network.

Two levels. :class:`FakeServer` plays a whole server on a
:class:`MemoryTransport`, for tests of a host's connections;
:class:`RecordingPeer` stands for a server when a test drives a
:class:`~host_receiver.receiver.Receiver` directly
(``async with receiver.attach(RecordingPeer()) as requestor``).

    async def summarise(call: ToolCall) -> str:
        reply = await call.request("sampling/createMessage", {"messages": [...], "maxTokens": 50})
        return reply["content"]["text"]

    async with FakeServer(tools={"summarise": summarise}) as server, Host(receiver) as host:
        connection = await host.connect("fake", server.transport)
        result = await connection.call_tool("summarise")

Rules:

- A :class:`FakeServer` answers ``initialize`` (with ``protocol_version``,
  default the latest legacy version, and ``capabilities``), ``ping``,
  ``tools/list`` (its tools, one page) and ``tools/call`` (the tool's async
  function; an unknown tool is -32602); anything else is -32601. A tool function gets a
  :class:`ToolCall` and returns a ``CallToolResult`` dict or a string (one
  text block); an ``RpcError`` it raises is the call's error response.
- ``call.request(...)`` (inside a tool) and ``server.request(...)`` (from the
  test) send a request to the host and return its result, or raise
  ``RpcError`` with the host's error.
- What the host sent is recorded: :attr:`FakeServer.initialize_params`,
  :attr:`FakeServer.notifications` in arrival order, and the
  :attr:`FakeServer.initialized` event.
- Frames cross as JSON text, as on a pipe (:class:`MemoryTransport`). One
  server serves one connection; leaving its ``async with`` ends it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio

from host_receiver.protocol.errors import invalid_params, method_not_found
from host_receiver.protocol.jsonrpc import Request
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION
from host_receiver.session import Session
from host_receiver.transports.memory import MemoryStream, MemoryTransport, create_memory_pair

__all__ = [
    "FakeServer",
    "MemoryStream",
    "MemoryTransport",
    "RecordingPeer",
    "ToolCall",
    "ToolFunction",
    "create_memory_pair",
]


@dataclass
class RecordingPeer:
    """A :class:`~host_receiver.peer.Peer` that keeps every notification sent to it, in order."""

    name: str = "server"
    protocol_version: str = LATEST_LEGACY_VERSION
    notifications: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.notify_soon(method, params)

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.notifications.append((method, params))


@dataclass(frozen=True)
class ToolCall:
    """One ``tools/call`` as a fake tool sees it."""

    name: str
    arguments: dict[str, Any]
    #: ``_meta.progressToken`` of the call, if the host asked for progress.
    progress_token: str | int | None
    _session: Session

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request to the host (sampling, elicitation, ``tasks/*``) and return its result."""
        return await self._session.request(method, params)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification to the host."""
        await self._session.notify(method, params)


#: A fake tool: returns a ``CallToolResult`` dict, or a string for one text block.
ToolFunction = Callable[[ToolCall], Awaitable[dict[str, Any] | str]]


class FakeServer:
    """An MCP server played in memory for tests (rules in the module docstring)."""

    def __init__(
        self,
        *,
        tools: Mapping[str, ToolFunction] | None = None,
        protocol_version: str = LATEST_LEGACY_VERSION,
        capabilities: dict[str, Any] | None = None,
        name: str = "fake-server",
    ) -> None:
        self.tools = dict(tools or {})
        self.protocol_version = protocol_version
        self.capabilities = capabilities if capabilities is not None else {"tools": {}}
        self.name = name
        #: Connect a host here: ``host.connect("name", server.transport)``.
        self.transport = MemoryTransport()
        #: The params of the host's ``initialize`` request, once it came.
        self.initialize_params: dict[str, Any] | None = None
        #: Set when the host sent ``notifications/initialized``.
        self.initialized = anyio.Event()
        #: Every other notification from the host, in arrival order.
        self.notifications: list[tuple[str, dict[str, Any] | None]] = []
        self._session = Session(
            self.transport.peer,
            request_handler=self._answer,
            notification_handler=self._on_notification,
            name="host",
        )
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> FakeServer:
        await self._stack.enter_async_context(self._session)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()
        await self.transport.peer.aclose()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request to the host and return its result (RpcError for an error answer)."""
        return await self._session.request(method, params)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification to the host."""
        await self._session.notify(method, params)

    def notifications_of(self, method: str) -> list[dict[str, Any] | None]:
        """The params of every notification ``method`` received so far."""
        return [params for name, params in self.notifications if name == method]

    async def _answer(self, request: Request) -> dict[str, Any]:
        params = request.params or {}
        if request.method == "initialize":
            self.initialize_params = params
            return {
                "protocolVersion": self.protocol_version,
                "capabilities": self.capabilities,
                "serverInfo": {"name": self.name, "version": "0"},
            }
        if request.method == "tools/list":
            return {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in self.tools]}
        if request.method == "tools/call":
            if params.get("name") not in self.tools:
                raise invalid_params(f"Unknown tool: {params.get('name')!r}")
            call = ToolCall(
                name=params["name"],
                arguments=dict(params.get("arguments") or {}),
                progress_token=request.progress_token,
                _session=self._session,
            )
            outcome = await self.tools[call.name](call)
            if isinstance(outcome, str):
                return {"content": [{"type": "text", "text": outcome}], "isError": False}
            return outcome
        raise method_not_found(request.method)

    async def _on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/initialized":
            self.initialized.set()
        else:
            self.notifications.append((method, params))
