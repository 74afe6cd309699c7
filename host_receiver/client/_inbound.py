"""What the server sends the host, routed: its requests and notifications to the receiver, with their spans.

Holds what a connection needs of a receiver (:class:`ServesServers`, its
scope :class:`ServerHandler`), plain callbacks as one (:class:`Callbacks`:
unhandled requests are -32601, and input requests cannot be answered), and
:class:`InboundRouting`, the connection's part that the session calls with
every request and notification the server sends: each request a SERVER span
(recorded once its answer is sent when answered at once), status
notifications and subscription acknowledgements about the tasks followed
to the connection's :class:`~.remote_tasks._news.TaskNews`,
``notifications/tools/list_changed`` forgetting the tools listed, the rest
to the receiver's scope. A modern server's input requests are fulfilled
through the same scope (:meth:`InboundRouting._fulfil`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from host_receiver.client._core import ConnectionCore
from host_receiver.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, RpcError, method_not_found
from host_receiver.peer import Peer
from host_receiver.sanitize import safe_logger
from host_receiver.session import IncomingRequest, NotificationHandler, RequestHandler

__all__ = ["Callbacks", "InboundRouting", "ServerHandler", "ServesServers"]

logger = safe_logger("host_receiver.client.connection")

#: A server's status notifications about its tasks: 2025-11-25's, and the tasks extension's.
_TASK_NEWS = frozenset({"notifications/tasks/status", "notifications/tasks"})


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


class InboundRouting(ConnectionCore):
    """The connection's part that serves the server: the session's handlers, and the receiver's scope."""

    def _on_request(self, request: IncomingRequest) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        if not self._telemetry.recording:
            return self._serving.answer(request)
        call = self._telemetry.server_call(request.method, request.params, request.id, self._facts)
        try:
            with call.active():
                answer = self._serving.answer(request)
        except BaseException as exc:
            call.end(exc)
            raise
        if isinstance(answer, dict):
            call.stop()
            self._answered = call  # its span is recorded once the answer is sent (_replied)
            return answer
        return call.answered(answer)

    def _noticed(self, method: str, params: dict[str, Any] | None, sent: bool) -> dict[str, Any] | None:
        """A notification's span (:meth:`telemetry.Telemetry.notified`)."""
        return self._telemetry.notified(method, params, sent, self._facts)

    def _replied(self) -> None:
        """The answer given at once is sent: record its request's SERVER span now."""
        call, self._answered = self._answered, None
        if call is not None:
            call.end()

    async def _on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method in _TASK_NEWS and self._task_news.deliver(params):
            return  # about a task this connection follows
        if method == "notifications/subscriptions/acknowledged" and self._task_news.acknowledge(params):
            return  # a subscription to a task's notifications
        if method == "notifications/tools/list_changed":
            self._tools = None
        await self._serving.handle_notification(method, params)

    async def _fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Answer one input request through the receiver; RpcError when it cannot be."""
        call = self._telemetry.server_call(method, params, None, self._facts)
        try:
            return await call.answered(self._serving.fulfil(method, params))
        except RpcError:
            raise
        except Exception:
            logger.exception("answering %s for %s failed", method, self.name)
            raise RpcError(INTERNAL_ERROR, f"Internal error while serving {method}") from None

    @property
    def requestor(self) -> ServerHandler:
        """The receiver's scope for this server (for plain callbacks, the :class:`Callbacks`)."""
        return self._serving

    @property
    def _serving(self) -> ServerHandler:
        if self._handler is None:  # the session starts only once the scope is attached
            raise RuntimeError("the connection is not attached to its receiver")
        return self._handler

    async def wind_down(self, reason: str) -> None:
        """Before closing: the server's live tasks are cancelled (each ``tasks/result`` gets that
        outcome) and every request still in flight is answered (:meth:`Session.finish`)."""
        self._serving.cancel_tasks(f"The task was cancelled: {reason}.")
        await self._session.finish(reason)
