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
        result = await connection.call_tool("summarise")  # a CallToolResult: result.text, result.is_error

Rules:

- A legacy :class:`FakeServer` (``protocol_version`` 2025-11-25, the default,
  or earlier) answers ``initialize`` with that version and its
  ``capabilities``, and ``ping``; a tool may push requests to the host with
  ``call.request(...)``. A modern one (``"2026-07-28"``) answers
  ``server/discover``, refuses ``initialize`` with -32022, and checks every
  request's ``_meta`` envelope (-32602 without one, -32022 for another
  version); its tools ask for input by returning an ``input_required``
  result and find the answers in ``call.input_responses`` and
  ``call.request_state`` on the retry.
- Both answer ``tools/list`` (their tools, one page) and ``tools/call`` (the
  tool's async function; an unknown tool is -32602), and any method in
  ``methods`` by its handler, which wins over the built-in answers
  (``tasks/get`` of a tasks-extension fake, a legacy fake's ``initialize``,
  or a modern fake's ``server/discover``, which may return
  :meth:`FakeServer.discover_result`);
  anything else is -32601. A tool returns a result dict or a string (one
  text block); an ``RpcError`` it raises is the call's error response.
- ``server.request(...)`` sends a request to the host (legacy) and returns
  its result, or raises ``RpcError`` with the host's error.
- What the host sent is recorded: every request in :attr:`FakeServer.requests`,
  :attr:`FakeServer.initialize_params`, the other notifications in
  :attr:`FakeServer.notifications`, and the :attr:`FakeServer.initialized` event.
- Frames cross as JSON text, as on a pipe (:class:`MemoryTransport`). One
  server serves one connection; leaving its ``async with`` ends it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from host_receiver._moved import moved_names
from host_receiver.errors import RpcError, invalid_params, method_not_found
from host_receiver.protocol.jsonrpc import Request
from host_receiver.protocol.modern import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    UNSUPPORTED_VERSION,
)
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, Era, rules_of
from host_receiver.session import Session
from host_receiver.transports.memory import MemoryTransport

__all__ = [
    "FakeServer",
    "MethodHandler",
    "RecordingPeer",
    "ToolCall",
    "ToolFunction",
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
    #: The request's ``_meta`` (a modern request's envelope among it).
    meta: dict[str, Any] = field(default_factory=dict)
    #: A modern retry's ``inputResponses`` (None on a first attempt).
    input_responses: dict[str, Any] | None = None
    #: A modern retry's ``requestState`` as it came back (None when there is none).
    request_state: Any = None

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request to the host (sampling, elicitation, ``tasks/*``) and return its result."""
        return await self._session.request(method, params)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification to the host."""
        await self._session.notify(method, params)


#: A fake tool: returns a result dict (a ``CallToolResult``, or ``input_required``), or a string.
ToolFunction = Callable[[ToolCall], Awaitable[dict[str, Any] | str]]
#: Answers one request of a method the fake serves besides the tools.
MethodHandler = Callable[[Request], Awaitable[dict[str, Any]]]


class FakeServer:
    """An MCP server played in memory for tests (rules in the module docstring)."""

    def __init__(
        self,
        *,
        tools: Mapping[str, ToolFunction] | None = None,
        methods: Mapping[str, MethodHandler] | None = None,
        protocol_version: str = LATEST_LEGACY_VERSION,
        capabilities: dict[str, Any] | None = None,
        name: str = "fake-server",
    ) -> None:
        self.tools = dict(tools or {})
        self.methods = dict(methods or {})
        self.protocol_version = protocol_version
        self.modern = rules_of(protocol_version).era is Era.MODERN
        self.capabilities = capabilities if capabilities is not None else {"tools": {}}
        self.name = name
        #: Connect a host here: ``host.connect("name", server.transport)``.
        self.transport = MemoryTransport()
        #: Every request the host sent, in arrival order (method and params).
        self.requests: list[Request] = []
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

    def requests_of(self, method: str) -> list[dict[str, Any]]:
        """The params of every request ``method`` received so far."""
        return [r.params or {} for r in self.requests if r.method == method]

    async def _answer(self, request: Request) -> dict[str, Any]:
        self.requests.append(request)
        params = request.params or {}
        if self.modern:
            self._check_envelope(request)
        if request.method in self.methods:
            return await self.methods[request.method](request)
        if self.modern and request.method == "server/discover":
            return self.discover_result()
        if not self.modern and request.method == "initialize":
            self.initialize_params = params
            return {
                "protocolVersion": self.protocol_version,
                "capabilities": self.capabilities,
                "serverInfo": {"name": self.name, "version": "0"},
            }
        if request.method == "tools/list":
            return {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in self.tools]}
        if request.method == "tools/call":
            return await self._call(request, params)
        raise method_not_found(request.method)

    def discover_result(self) -> dict[str, Any]:
        """What a modern fake answers ``server/discover`` (unless ``methods`` serves it)."""
        return {
            "resultType": "complete",
            "supportedVersions": [self.protocol_version],
            "capabilities": self.capabilities,
            "_meta": {SERVER_INFO_KEY: {"name": self.name, "version": "0"}},
        }

    def _check_envelope(self, request: Request) -> None:
        if request.method == "initialize":
            raise _unsupported(self.protocol_version, (request.params or {}).get("protocolVersion"))
        meta = request.meta or {}
        version = meta.get(PROTOCOL_VERSION_KEY)
        if not isinstance(version, str) or not isinstance(meta.get(CLIENT_CAPABILITIES_KEY), dict):
            raise invalid_params("params._meta must carry the protocolVersion and clientCapabilities keys")
        if version != self.protocol_version:
            raise _unsupported(self.protocol_version, version)

    async def _call(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("name") not in self.tools:
            raise invalid_params(f"Unknown tool: {params.get('name')!r}")
        call = ToolCall(
            name=params["name"],
            arguments=dict(params.get("arguments") or {}),
            progress_token=request.progress_token,
            _session=self._session,
            meta=dict(request.meta or {}),
            input_responses=params.get("inputResponses"),
            request_state=params.get("requestState"),
        )
        outcome = await self.tools[call.name](call)
        if isinstance(outcome, str):
            outcome = {"content": [{"type": "text", "text": outcome}], "isError": False}
        if self.modern and "resultType" not in outcome:
            outcome = {**outcome, "resultType": "complete"}
        return outcome

    async def _on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/initialized":
            self.initialized.set()
        else:
            self.notifications.append((method, params))


def _unsupported(supported: str, requested: object) -> RpcError:
    return RpcError(
        UNSUPPORTED_VERSION,
        "Unsupported protocol version",
        {"supported": [supported], "requested": requested if isinstance(requested, str) else str(requested)},
    )


if not TYPE_CHECKING:  # a type checker flags a moved name
    #: Names that moved to their one door (served with a DeprecationWarning until 0.4).
    __getattr__ = moved_names(
        __name__,
        dict.fromkeys(
            (
                "MemoryStream",
                "MemoryTransport",
                "create_memory_pair",
            ),
            "host_receiver.transports",
        ),
    )
