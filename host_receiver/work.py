"""What the sampling and elicitation work sees: its context and its handler types.

A handler is a plain async callable. It gets the validated request params and
a :class:`WorkContext`, and returns the protocol result, or raises
:class:`~host_receiver.protocol.errors.RpcError` to answer with an error (for
example ``user_rejected()`` when the user refuses a sampling request). The
same handler serves task-augmented and plain requests: the context tells which
(``task_id``) and carries progress and status updates to the requestor.
Cancellation (``tasks/cancel``, ``notifications/cancelled``, expiry, the
server going away) reaches the handler as ordinary anyio cancellation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from host_receiver.protocol.types import (
    RELATED_TASK_META_KEY,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ProgressToken,
)

#: Sends a notification to the requestor, waiting while the connection is busy.
Notify = Callable[[str, dict[str, Any] | None], Awaitable[None]]
#: Sends a notification without waiting (queued when the connection is busy); never raises.
NotifySoon = Callable[[str, dict[str, Any] | None], None]


class StatusSink(Protocol):
    """Where a work context sends a new ``statusMessage`` of its task."""

    async def __call__(self, task_id: str, message: str) -> None: ...


class WorkContext:
    """The requestor, the task (if any) and the progress channel of one request."""

    __slots__ = ("_notify", "_status", "progress_token", "requestor", "requestor_name", "task_id")

    def __init__(
        self,
        *,
        requestor: str,
        requestor_name: str,
        task_id: str | None,
        progress_token: ProgressToken | None,
        notify: Notify,
        status: StatusSink | None = None,
    ) -> None:
        self.requestor = requestor
        self.requestor_name = requestor_name
        self.task_id = task_id
        self.progress_token = progress_token
        self._notify = notify
        self._status = status

    @property
    def related_task_meta(self) -> dict[str, Any] | None:
        """The ``_meta`` that ties a message to this request's task, or None."""
        if self.task_id is None:
            return None
        return {RELATED_TASK_META_KEY: {"taskId": self.task_id}}

    async def set_status_message(self, message: str) -> None:
        """Show ``message`` as the task's ``statusMessage`` (no-op for plain requests)."""
        if self._status is not None and self.task_id is not None:
            await self._status(self.task_id, message)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the requestor asked for progress."""
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        meta = self.related_task_meta
        if meta is not None:
            params["_meta"] = meta
        await self._notify("notifications/progress", params)


SamplingHandler = Callable[[CreateMessageRequestParams, WorkContext], Awaitable[CreateMessageResult]]
ElicitationHandler = Callable[[ElicitRequestParams, WorkContext], Awaitable[ElicitResult]]
