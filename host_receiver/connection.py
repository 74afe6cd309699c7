"""The MCP client side of one connection: the handshake, then traffic both ways.

Rules:

- ``ClientConnection.connect()`` opens the transport, starts a session (the
  request handler is live from the first byte: a server may ping early),
  sends ``initialize`` with :data:`LATEST_PROTOCOL_VERSION`, the caller's
  capabilities and client info, checks the answer, tells the stream the
  negotiated version, sends ``notifications/initialized``, opens the stream's
  listener (the HTTP GET stream), and only then hands the connection out.
- Version negotiation: the server's ``protocolVersion`` must be one of
  :data:`SUPPORTED_PROTOCOL_VERSIONS`, or the connection is closed and
  :class:`UnsupportedProtocolVersion` raised. Capabilities are the caller's;
  re-checking them against an older negotiated version is the caller's job
  (:attr:`ClientConnection.protocol_version` says which one).
- Leaving the context closes the session, then the transport.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib import metadata
from typing import Any, Self

from pydantic import ValidationError

from host_receiver.protocol.types import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Implementation,
    InitializeResult,
    dump,
)
from host_receiver.session import (
    NotificationHandler,
    ProgressCallback,
    RequestHandler,
    Session,
)
from host_receiver.transports.base import MessageStream, Transport

__all__ = ["ClientConnection", "ProtocolError", "UnsupportedProtocolVersion", "default_client_info"]

logger = logging.getLogger(__name__)


class ProtocolError(Exception):
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


class ClientConnection:
    """An initialised MCP connection to one server; see :meth:`connect`."""

    def __init__(self, session: Session, stream: MessageStream, init: InitializeResult) -> None:
        self._session = session
        self._stream = stream
        self._init = init

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        transport: Transport,
        *,
        capabilities: dict[str, Any],
        client_info: Implementation | None = None,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        name: str | None = None,
        init_timeout: float | None = 60.0,
        on_initialized: Callable[[InitializeResult], None] | None = None,
    ) -> AsyncIterator[Self]:
        """Connect, run the MCP handshake, and yield the connection.

        ``name`` labels the server in logs (default: its ``serverInfo.name``).
        ``on_initialized`` sees the ``initialize`` result before
        ``notifications/initialized`` goes out, so that request handlers can
        follow the negotiated version from the server's first request on.
        Raises :class:`UnsupportedProtocolVersion` or :class:`ProtocolError`
        for a bad handshake, ``RpcError`` if the server refuses ``initialize``,
        ``TimeoutError`` after ``init_timeout`` seconds.
        """
        info = client_info if client_info is not None else default_client_info()
        async with (
            transport.connect() as stream,
            Session(
                stream,
                request_handler=request_handler,
                notification_handler=notification_handler,
                name=name or "server",
            ) as session,
        ):
            init = await _initialize(session, capabilities, info, init_timeout)
            if on_initialized is not None:
                # Before notifications/initialized: the server may send requests right after it.
                on_initialized(init)
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
            yield cls(session, stream, init)

    # --- what the handshake established ------------------------------------

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version."""
        return self._init.protocol_version

    @property
    def server_info(self) -> Implementation:
        """The server's ``serverInfo``."""
        return self._init.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's ``capabilities``."""
        return self._init.capabilities

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if any."""
        return self._init.instructions

    @property
    def session(self) -> Session:
        """The JSON-RPC session underneath."""
        return self._session

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
