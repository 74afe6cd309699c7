"""What the sampling and elicitation work sees: its context, and the handler contract.

A handler serves a request in two steps:

1. ``accept(params, server)``, synchronous and quick, runs before any task
   exists: it checks the validated params against the host's own rules (the
   sampling service chooses the model and applies the limits here) and
   raises :class:`~host_receiver.protocol.errors.RpcError` (-32602) to refuse
   the request outright, or returns the work;
2. the work, ``await work(context)``, returns the protocol result, or raises
   ``RpcError`` to answer with an error (for example ``user_rejected()`` when
   the user refuses a sampling request).

The same handler serves task-augmented and plain requests: the
:class:`WorkContext` tells which (``task_id``) and carries progress and
status updates to the requestor. Cancellation (``tasks/cancel``,
``notifications/cancelled``, expiry, the server going away) reaches the work
as ordinary anyio cancellation. A plain async function ``(params, context)``
is a handler too: :func:`as_sampling_handler` and
:func:`as_elicitation_handler` give it an ``accept`` that checks nothing.

Fixed caps (docs/limits.md): ``PROGRESS_INTERVAL``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import anyio

from host_receiver.protocol.types import (
    RELATED_TASK_META_KEY,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ProgressToken,
)

#: Shortest time between two progress notifications to the requestor (seconds): about 10 a second.
PROGRESS_INTERVAL = 0.1

_P = TypeVar("_P")
_R = TypeVar("_R")

#: Sends a notification to the requestor, waiting while the connection is busy.
Notify = Callable[[str, dict[str, Any] | None], Awaitable[None]]
#: Sends a notification without waiting (queued when the connection is busy); never raises.
NotifySoon = Callable[[str, dict[str, Any] | None], None]


class StatusSink(Protocol):
    """Where a work context sends a new ``statusMessage`` of its task."""

    async def __call__(self, task_id: str, message: str) -> None: ...


class WorkContext:
    """The requestor, the task (if any) and the progress channel of one request."""

    __slots__ = (
        "_last_progress",
        "_last_sent_at",
        "_notify",
        "_outcome",
        "_status",
        "progress_token",
        "requestor",
        "requestor_name",
        "task_id",
    )

    def __init__(
        self,
        *,
        requestor: str,
        requestor_name: str,
        task_id: str | None,
        progress_token: ProgressToken | None,
        notify: Notify,
        status: StatusSink | None = None,
        outcome: StatusSink | None = None,
    ) -> None:
        self.requestor = requestor
        self.requestor_name = requestor_name
        self.task_id = task_id
        self.progress_token = progress_token
        self._notify = notify
        self._status = status
        self._outcome = outcome
        self._last_progress: float | None = None
        self._last_sent_at = -math.inf

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

    async def set_outcome_message(self, message: str) -> None:
        """Say why the work ends as it does (a timeout, say): the task's ``statusMessage`` from now
        on, kept once the task completes (the spec's summary of a completed task); without an
        ``outcome`` sink, :meth:`set_status_message`; a no-op for plain requests."""
        if self._outcome is not None and self.task_id is not None:
            await self._outcome(self.task_id, message)
        else:
            await self.set_status_message(message)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the requestor asked for progress.

        At most one every :data:`PROGRESS_INTERVAL` seconds (the one that
        reaches ``total`` always goes), and only rising values: the spec
        wants progress to increase. Awaited before the work returns, so every
        update reaches the requestor before the result.
        """
        if self.progress_token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            return
        now = anyio.current_time()
        final = total is not None and progress >= total
        if now - self._last_sent_at < PROGRESS_INTERVAL and not final:
            return
        self._last_progress, self._last_sent_at = progress, now
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        meta = self.related_task_meta
        if meta is not None:
            params["_meta"] = meta
        await self._notify("notifications/progress", params)


#: The accepted work of a sampling request.
SamplingWork = Callable[[WorkContext], Awaitable[CreateMessageResult]]
#: The accepted work of an elicitation request.
ElicitationWork = Callable[[WorkContext], Awaitable[ElicitResult]]
#: A sampling handler written as one async function (no check before a task exists).
SamplingFunction = Callable[[CreateMessageRequestParams, WorkContext], Awaitable[CreateMessageResult]]
#: An elicitation handler written as one async function.
ElicitationFunction = Callable[[ElicitRequestParams, WorkContext], Awaitable[ElicitResult]]


class SamplingHandler(Protocol):
    """Serves ``sampling/createMessage``: checks it before a task exists, then does the work."""

    def accept(self, params: CreateMessageRequestParams, server: str) -> SamplingWork:
        """The work for ``params`` from ``server``; raise RpcError to refuse at once."""
        ...


class ElicitationHandler(Protocol):
    """Serves ``elicitation/create``: checks it before a task exists, then asks the user."""

    def accept(self, params: ElicitRequestParams, server: str) -> ElicitationWork:
        """The work for ``params`` from ``server``; raise RpcError to refuse at once."""
        ...


class _FunctionHandler(Generic[_P, _R]):
    """A handler written as one async function: ``accept`` checks nothing."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[[_P, WorkContext], Awaitable[_R]]) -> None:
        self.function = function

    def accept(self, params: _P, server: str) -> Callable[[WorkContext], Awaitable[_R]]:
        return functools.partial(self.function, params)


def as_sampling_handler(handler: SamplingHandler | SamplingFunction) -> SamplingHandler:
    """``handler`` itself, or a function wrapped as a handler whose ``accept`` checks nothing."""
    if hasattr(handler, "accept"):
        return handler
    return _FunctionHandler(handler)


def as_elicitation_handler(handler: ElicitationHandler | ElicitationFunction) -> ElicitationHandler:
    """``handler`` itself, or a function wrapped as a handler whose ``accept`` checks nothing."""
    if hasattr(handler, "accept"):
        return handler
    return _FunctionHandler(handler)
