"""What following a server's task shares in both eras: one ``tasks/get``, its pace, the ttl, ``tasks/cancel``.

Rules (both eras; the rest is :mod:`._modern` and :mod:`._legacy`):

- A task is polled with ``tasks/get`` at the interval the server gave last
  (``pollIntervalMs``, 2025-11-25's ``pollInterval``; :data:`DEFAULT_POLL`
  when it gives none, :data:`MIN_POLL` at least).
- A ``tasks/get`` for our task that the server refuses (-32602), or that
  describes another task, ends the call with :class:`RemoteTaskLost`; a
  task the server denied is not cancelled (it knows no such task).
- The ttl is a backstop: a task not terminal ``ttlMs`` after it was created
  is given up. Created is now for a new task; a resumed one counts from its
  kept record's creation, else the server's ``createdAt``
  (``ClientConnection.resume_task``): resuming never restarts the ttl.
- Cancelling the call sends ``tasks/cancel`` (shielded, bounded by
  :data:`CANCEL_GRACE`) before the cancellation goes on: cancellation is
  cooperative, the answer is an ack.

Fixed caps (docs/limits.md): ``DEFAULT_POLL``, ``MIN_POLL``, ``CANCEL_GRACE``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import anyio

from host_receiver.errors import INVALID_PARAMS, HostReceiverError, RemoteTaskLost, RpcError
from host_receiver.protocol.modern import RemoteTask, remote_task
from host_receiver.sanitize import safe_id, safe_logger, safe_text

__all__ = [
    "Denied",
    "Request",
    "TaskObserver",
    "birth",
    "cancel",
    "check_ttl",
    "current_task",
    "deadline_of",
    "instant",
    "poll",
    "poll_interval",
]

logger = safe_logger("host_receiver.client.connection")

#: Polling interval when the server suggests none (seconds).
DEFAULT_POLL = 1.0
#: Shortest wait between polls, whatever the server suggests (seconds).
MIN_POLL = 0.01
#: How long ``tasks/cancel`` may take when the caller cancels (seconds).
CANCEL_GRACE = 5.0

#: Sends one request (method, params) to the server and returns its result.
Request = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
#: Told every state of the task, in order, for a host that shows its progress.
TaskObserver = Callable[[RemoteTask], Awaitable[None]]


class Denied(RemoteTaskLost):
    """The server denied our task id: there is nothing to cancel."""


async def poll(request: Request, task_id: str, *, legacy: bool = False) -> RemoteTask:
    """One ``tasks/get`` of ``task_id``: the task's state (as :func:`current_task`)."""
    return remote_task(await current_task(request, task_id, legacy=legacy), legacy=legacy)


async def current_task(request: Request, task_id: str, *, legacy: bool = False) -> dict[str, Any]:
    """The ``tasks/get`` answer about ``task_id`` (:class:`RemoteTaskLost` when the server denies
    knowing it, or answers about another task)."""
    try:
        raw = await request("tasks/get", {"taskId": task_id})
    except RpcError as exc:
        if exc.code == INVALID_PARAMS:
            raise Denied(
                f"the server no longer knows task {safe_id(task_id)}: {safe_text(exc.message, 300)}"
            ) from None
        raise
    told = remote_task(raw, legacy=legacy).task_id
    if told != task_id:
        raise RemoteTaskLost(f"tasks/get for task {safe_id(task_id)} answered about task {safe_id(told)}")
    return raw


def deadline_of(task: RemoteTask, born: float | None) -> float | None:
    """When the ttl backstop gives ``task`` up, on anyio's clock: its ttl after its creation at
    ``born`` (wall clock; None: now); None without a ttl."""
    if task.ttl_ms is None:
        return None
    age = 0.0 if born is None else max(time.time() - born, 0.0)
    return anyio.current_time() - age + task.ttl_ms / 1000


def birth(raw: dict[str, Any]) -> float | None:
    """When the server says a task was created (its ``createdAt``, wall clock), or None if unreadable."""
    stamp = raw.get("createdAt")
    try:
        return instant(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None


def instant(stamp: str) -> float:
    """ISO 8601 time ``stamp`` as seconds since the epoch (ValueError, TypeError when unreadable)."""
    moment = datetime.fromisoformat(stamp)
    return moment.timestamp()


def check_ttl(task: RemoteTask, deadline: float | None) -> None:
    """Raise :class:`RemoteTaskLost` once the ttl backstop has passed."""
    if deadline is not None and anyio.current_time() >= deadline:
        raise RemoteTaskLost(
            f"task {safe_id(task.task_id)} did not finish within its ttl of {task.ttl_ms} ms"
        )


def poll_interval(task: RemoteTask) -> float:
    """Seconds until the next ``tasks/get`` of ``task``."""
    if task.poll_interval_ms is None:
        return DEFAULT_POLL
    return max(task.poll_interval_ms / 1000, MIN_POLL)


async def cancel(request: Request, task_id: str) -> None:
    """Send ``tasks/cancel`` for ``task_id``, shielded and bounded; a failure is only logged."""
    with anyio.move_on_after(CANCEL_GRACE, shield=True):
        try:
            await request("tasks/cancel", {"taskId": task_id})
        except (HostReceiverError, OSError) as exc:
            logger.debug("tasks/cancel of %s failed: %s", task_id, exc)
