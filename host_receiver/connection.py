"""The MCP client side of one connection: the handshake, then traffic both ways.

Rules:

- ``ClientConnection.connect()`` opens the transport, starts a session (the
  request handler is live from the first byte: a server may ping early),
  sends ``initialize`` with :data:`LATEST_PROTOCOL_VERSION`, the capabilities
  and client info, checks the answer, tells the stream the negotiated
  version, sends ``notifications/initialized``, opens the stream's listener
  (the HTTP GET stream), and only then hands the connection out.
- With a ``receiver`` (anything that offers ``capabilities(version)`` and
  ``attach(peer)``, such as :class:`~host_receiver.receiver.Receiver`), the
  connection advertises the receiver's capabilities, attaches itself as the
  receiver's :class:`~host_receiver.peer.Peer` for its whole life, and routes
  the server's requests and notifications to the requestor it gets back.
  Without one, ``request_handler``/``notification_handler`` serve them (or
  nothing does: -32601).
- Version negotiation: the server's ``protocolVersion`` must be one of
  :data:`SUPPORTED_PROTOCOL_VERSIONS`, or the connection is closed and
  :class:`UnsupportedProtocolVersion` raised. Capabilities are the caller's;
  re-checking them against an older negotiated version is the caller's job
  (:attr:`ClientConnection.protocol_version` says which one).
- Leaving the context closes the session, then the transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from importlib import metadata
from typing import Any, Protocol, Self

from pydantic import ValidationError

from host_receiver.errors import HostReceiverError
from host_receiver.peer import Peer
from host_receiver.protocol.errors import method_not_found
from host_receiver.protocol.types import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Implementation,
    InitializeResult,
    dump,
)
from host_receiver.session import (
    IncomingRequest,
    NotificationHandler,
    ProgressCallback,
    RequestHandler,
    Session,
)
from host_receiver.transports.base import MessageStream, Transport
from providers import safe_logger

__all__ = [
    "ClientConnection",
    "ProtocolError",
    "ServerHandler",
    "ServesServers",
    "UnsupportedProtocolVersion",
    "default_client_info",
]

logger = safe_logger(__name__)


class ProtocolError(HostReceiverError):
    """The server answered something MCP does not allow."""


class UnsupportedProtocolVersion(ProtocolError):
    """The server chose a protocol version this client cannot speak."""


def default_client_info() -> Implementation:
    """``clientInfo`` naming this package and its installed version."""
    try:
        version = metadata.version("host-receiver")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare tree
        version = "0"
    return Implementation(name="host-receiver", version=version)


class ServerHandler(Protocol):
    """What serves one server's requests and notifications (a receiver's ``Requestor``)."""

    def dispatch(self, method: str, params: dict[str, Any] | None) -> Any:
        """The answer now (a dict), or an awaitable of it; raise RpcError for an error."""
        ...

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None: ...

    def cancel_tasks(self, message: str) -> int:
        """Cancel every live task of the server, answering its waiters (the connection is closing)."""
        ...


class ServesServers(Protocol):
    """What a connection needs of a receiver: its capabilities, and a scope per server."""

    def capabilities(self, protocol_version: str) -> dict[str, Any]: ...

    def attach(self, peer: Peer) -> AbstractAsyncContextManager[ServerHandler]: ...


class ClientConnection:
    """An MCP connection to one server (see :meth:`connect`), and that server's :class:`Peer`."""

    def __init__(
        self,
        stream: MessageStream,
        *,
        name: str,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
    ) -> None:
        self._stream = stream
        self._request_handler = request_handler
        self._notification_handler = notification_handler
        self._handler: ServerHandler | None = None  # the receiver's scope, once attached
        self._init: InitializeResult | None = None
        self._session = Session(
            stream,
            request_handler=self._on_request,
            notification_handler=self._on_notification,
            name=name,
        )

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        transport: Transport,
        *,
        receiver: ServesServers | None = None,
        capabilities: dict[str, Any] | None = None,
        client_info: Implementation | None = None,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        name: str | None = None,
        init_timeout: float | None = 60.0,
    ) -> AsyncIterator[Self]:
        """Connect, run the MCP handshake, and yield the connection.

        ``receiver`` serves the server's requests (rules above); otherwise
        ``capabilities`` are advertised and the handlers serve them. ``name``
        labels the server in logs (default: its ``serverInfo.name``). Raises
        :class:`UnsupportedProtocolVersion` or :class:`ProtocolError` for a bad
        handshake, ``RpcError`` if the server refuses ``initialize``,
        ``TimeoutError`` after ``init_timeout`` seconds.
        """
        if receiver is not None and (
            capabilities is not None or request_handler is not None or notification_handler is not None
        ):
            raise ValueError("with a receiver, capabilities and handlers come from the receiver")
        info = client_info if client_info is not None else default_client_info()
        async with transport.connect() as stream, AsyncExitStack() as scope:
            connection = cls(
                stream,
                name=name or "server",
                request_handler=request_handler,
                notification_handler=notification_handler,
            )
            if receiver is not None:
                connection._handler = await scope.enter_async_context(receiver.attach(connection))
                capabilities = receiver.capabilities(LATEST_PROTOCOL_VERSION)
            session = await scope.enter_async_context(connection._session)
            init = await _initialize(session, capabilities or {}, info, init_timeout)
            # Known before notifications/initialized: the server may send requests right after it.
            connection._init = init
            if name is None:
                session.name = init.server_info.name
            stream.set_protocol_version(init.protocol_version)
            await session.notify("notifications/initialized")
            await stream.open_listener()
            logger.info(
                "connected to %s %s (protocol %s)",
                init.server_info.name,
                init.server_info.version,
                init.protocol_version,
            )
            yield connection

    # --- routing what the server sends ------------------------------------------

    def _on_request(self, request: IncomingRequest) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        if self._handler is not None:
            answer: dict[str, Any] | Awaitable[dict[str, Any]] = self._handler.dispatch(
                request.method, request.params
            )
            return answer
        if self._request_handler is not None:
            return self._request_handler(request)
        raise method_not_found(request.method)

    async def _on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if self._handler is not None:
            await self._handler.handle_notification(method, params)
        elif self._notification_handler is not None:
            await self._notification_handler(method, params)
        else:
            logger.debug("ignored notification %s", method)

    # --- what the handshake established ------------------------------------

    @property
    def name(self) -> str:
        """The server's name in logs, prompts and the audit log."""
        return self._session.name

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version (the one offered, until the handshake answers)."""
        return self._init.protocol_version if self._init is not None else LATEST_PROTOCOL_VERSION

    @property
    def server_info(self) -> Implementation:
        """The server's ``serverInfo``."""
        return self._handshake.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's ``capabilities``."""
        return self._handshake.capabilities

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if any."""
        return self._handshake.instructions

    @property
    def requestor(self) -> ServerHandler | None:
        """The receiver's scope for this server, when the connection has a receiver."""
        return self._handler

    @property
    def closed_reason(self) -> str | None:
        """Why the connection ended, in words (None while it is open)."""
        return self._session.closed_reason

    @property
    def _handshake(self) -> InitializeResult:
        if self._init is None:
            raise RuntimeError("the handshake has not finished")
        return self._init

    @property
    def session(self) -> Session:
        """The JSON-RPC session underneath."""
        return self._session

    async def wind_down(self, reason: str) -> None:
        """Before closing: the server's live tasks are cancelled (each ``tasks/result`` gets that
        outcome) and every request still in flight is answered (:meth:`Session.finish`)."""
        if self._handler is not None:
            self._handler.cancel_tasks(f"The task was cancelled: {reason}.")
        await self._session.finish(reason)

    # --- traffic -------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Send any request; see :meth:`Session.request`."""
        return await self._session.request(method, params, timeout=timeout, on_progress=on_progress)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send any notification."""
        await self._session.notify(method, params)

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification without waiting; never raises (see :meth:`Session.notify_soon`)."""
        self._session.notify_soon(method, params)

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers."""
        await self._session.ping(timeout=timeout)

    async def list_tools(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every tool the server offers, following ``nextCursor`` to the last page.

        ``timeout`` applies to each page.
        """
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await self.request(
                "tools/list", {"cursor": cursor} if cursor is not None else None, timeout=timeout
            )
            items = page.get("tools")
            if not isinstance(items, list):
                raise ProtocolError("tools/list result has no tools array")
            tools.extend(items)
            cursor = page.get("nextCursor")
            if cursor is None:
                return tools
            if not isinstance(cursor, str) or cursor in seen:
                raise ProtocolError(f"tools/list returned a bad or repeated cursor: {cursor!r}")
            seen.add(cursor)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Call a tool and return the raw ``CallToolResult``.

        A tool that failed is a result with ``isError: true``, not an exception.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request("tools/call", params, timeout=timeout, on_progress=on_progress)

    async def wait_closed(self) -> None:
        """Return once the connection has ended (for instance, the server exited)."""
        await self._session.wait_closed()


async def _initialize(
    session: Session,
    capabilities: dict[str, Any],
    client_info: Implementation,
    init_timeout: float | None,
) -> InitializeResult:
    params = {
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": capabilities,
        "clientInfo": dump(client_info),
    }
    result = await session.request("initialize", params, timeout=init_timeout)
    try:
        init = InitializeResult.model_validate(result)
    except ValidationError as exc:
        raise ProtocolError(f"{session.name} sent an invalid initialize result: {exc}") from None
    if init.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
        raise UnsupportedProtocolVersion(
            f"{init.server_info.name} wants MCP protocol version {init.protocol_version!r}; "
            f"this client supports {', '.join(SUPPORTED_PROTOCOL_VERSIONS)}"
        )
    return init
