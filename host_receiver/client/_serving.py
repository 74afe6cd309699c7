"""What a connection needs of a receiver, and plain callbacks as one.

:class:`ServesServers` (a receiver: its capabilities, and a scope per
server), :class:`ServerHandler` (that scope, a receiver's ``Requestor``) and
:class:`Callbacks` (fixed capabilities, a request and a notification
handler: unhandled requests are -32601, input requests cannot be answered).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from host_receiver.errors import METHOD_NOT_FOUND, RpcError, method_not_found
from host_receiver.peer import Peer
from host_receiver.sanitize import safe_logger
from host_receiver.session import IncomingRequest, NotificationHandler, RequestHandler

__all__ = ["Callbacks", "ServerHandler", "ServesServers"]

logger = safe_logger("host_receiver.client.connection")


class ServerHandler(Protocol):
    """What serves one server's requests and notifications (a receiver's ``Requestor``)."""

    def answer(self, request: IncomingRequest) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """The answer now (a dict), or an awaitable of it; raise RpcError for an error."""
        ...

    async def fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Answer one input request of a modern server, never as a task."""
        ...

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None: ...

    def cancel_tasks(self, message: str) -> int:
        """Cancel every live task of the server, answering its waiters (the connection is closing)."""
        ...


class ServesServers(Protocol):
    """What a connection needs of a receiver: its capabilities, and a scope per server."""

    def capabilities(self, protocol_version: str) -> dict[str, Any]: ...

    def attach(self, peer: Peer) -> AbstractAsyncContextManager[ServerHandler]: ...


@dataclass(frozen=True)
class Callbacks:
    """Plain callbacks as a receiver: fixed ``capabilities``, a request and a notification handler.

    A request with no handler is -32601; a notification with none is
    ignored; a modern server's input request is -32601 (there is no
    receiver to answer it through).
    """

    declared: dict[str, Any] = field(default_factory=dict)
    request_handler: RequestHandler | None = None
    notification_handler: NotificationHandler | None = None

    def capabilities(self, protocol_version: str) -> dict[str, Any]:
        """The same capabilities in every version."""
        return dict(self.declared)

    @asynccontextmanager
    async def attach(self, peer: Peer) -> AsyncIterator[ServerHandler]:
        """The callbacks themselves serve every server."""
        yield self

    def answer(self, request: IncomingRequest) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """The request handler's answer."""
        if self.request_handler is None:
            raise method_not_found(request.method)
        return self.request_handler(request)

    async def fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Never: plain callbacks answer no input request."""
        raise RpcError(METHOD_NOT_FOUND, f"this connection has no receiver to answer {method}")

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        """The notification handler's business, or ignored."""
        if self.notification_handler is not None:
            await self.notification_handler(method, params)
        else:
            logger.debug("ignored notification %s", method)

    def cancel_tasks(self, message: str) -> int:
        """Callbacks keep no tasks."""
        return 0
