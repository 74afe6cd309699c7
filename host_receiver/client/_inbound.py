"""What the server sends the host, routed: its requests and notifications to the receiver, with their spans.

Holds :class:`InboundRouting`, the connection's part that the session calls with
every request and notification the server sends: each request a SERVER span
(recorded once its answer is sent when answered at once), status
notifications and subscription acknowledgements about the tasks followed
to the connection's :class:`~.remote_tasks._news.TaskNews`,
``notifications/tools/list_changed`` forgetting the tools listed, the rest
to the receiver's scope. A modern server's input requests are fulfilled
through the same scope (:meth:`InboundRouting._fulfil`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from host_receiver.client._core import ConnectionCore
from host_receiver.client._serving import ServerHandler
from host_receiver.errors import INTERNAL_ERROR, RpcError
from host_receiver.sanitize import safe_logger
from host_receiver.session import IncomingRequest

__all__ = ["InboundRouting"]

logger = safe_logger("host_receiver.client.connection")

#: A server's status notifications about its tasks: 2025-11-25's, and the tasks extension's.
_TASK_NEWS = frozenset({"notifications/tasks/status", "notifications/tasks"})


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
