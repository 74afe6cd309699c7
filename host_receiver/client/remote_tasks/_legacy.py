"""Following a 2025-11-25 server's task (a task-augmented ``tools/call``) to its end.

Rules (the 2025-11-25 tasks chapter):

- The ``CreateTaskResult``'s ``task`` is polled with ``tasks/get`` at its
  ``pollInterval`` (:mod:`._polls`); a ``notifications/tasks/status``
  about it (:class:`~._news.TaskNews`, taken only when it is news) counts as
  that interval's poll.
- Once the task is ``input_required`` or terminal, ``tasks/result`` is sent
  (once): it blocks until the task ends while the server sends the requests
  the task needs (answered by the receiver like any others), and its answer is
  the call's result or JSON-RPC error. Polling goes on meanwhile, for the
  observer and the backstop. A ``cancelled`` task raises
  :class:`RemoteTaskCancelled`. When ``tasks/result`` answers before a poll
  saw the task end, one more ``tasks/get`` shows the observer its final state.
- Cancelling, a lost task and the ``ttl`` backstop as :mod:`._polls` says
  (``ttl: null``: no backstop).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from host_receiver.client.remote_tasks._news import TaskNews, news_of
from host_receiver.client.remote_tasks._polls import (
    Denied,
    Request,
    TaskObserver,
    cancel,
    check_ttl,
    deadline_of,
    poll,
    poll_interval,
)
from host_receiver.errors import BadResult, RemoteTaskCancelled, RemoteTaskLost, RpcError
from host_receiver.protocol.modern import RemoteTask, remote_task
from host_receiver.sanitize import safe_id, safe_logger

__all__ = ["follow_legacy_task"]

logger = safe_logger("host_receiver.client.connection")


async def follow_legacy_task(
    created: dict[str, Any],
    request: Request,
    news: TaskNews,
    *,
    observer: TaskObserver | None = None,
    born: float | None = None,
) -> dict[str, Any]:
    """The ``tasks/result`` answer for the 2025-11-25 task ``created`` describes (the ``task`` of a
    ``CreateTaskResult``; rules in the module docstring; ``born`` as for :func:`follow_task`)."""
    task = remote_task(created, legacy=True)
    task_id = task.task_id
    deadline = deadline_of(task, born)
    ended: list[dict[str, Any] | Exception] = []  # the first outcome: tasks/result's, or the watch's error
    answered = False  # tasks/result answered: the task has ended on the server

    async def end_with(group: anyio.abc.TaskGroup, step: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        try:
            outcome: dict[str, Any] | Exception = await step()
        except Exception as exc:
            outcome = exc
        if not ended:
            ended.append(outcome)
        group.cancel_scope.cancel()

    async def fetch() -> dict[str, Any]:
        nonlocal answered
        try:
            answer = await request("tasks/result", {"taskId": task_id})
        except RpcError:  # the task's own error: it has ended
            answered = True
            raise
        answered = True
        return answer

    async def watch() -> dict[str, Any]:
        nonlocal task
        fetching, fresh = False, True
        while True:
            if fresh and observer is not None:
                await observer(task)
            if task.status == "cancelled":
                raise RemoteTaskCancelled(f"the server cancelled task {safe_id(task_id)}")
            if not fetching and (task.status == "input_required" or task.is_terminal):
                fetching = True
                group.start_soon(end_with, group, fetch)
            if task.is_terminal:
                await anyio.sleep_forever()  # tasks/result ends the call
            check_ttl(task, deadline)
            told = await _next_state(request, news, task)
            fresh = told is not None and told != task
            task = told or task

    try:
        with news.following(task_id):
            async with anyio.create_task_group() as group:
                group.start_soon(end_with, group, watch)
        (outcome,) = ended
        if answered and not task.is_terminal and observer is not None:
            task = await _final_state(request, task)  # tasks/result answered before a poll saw the end
            await observer(task)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome
    except BaseException as exc:
        if not (task.is_terminal or answered or isinstance(exc, Denied)):
            await cancel(request, task_id)
        raise


async def _final_state(request: Request, task: RemoteTask) -> RemoteTask:
    """The state of a task whose ``tasks/result`` came: one ``tasks/get``; ``task`` if that fails."""
    try:
        return await poll(request, task.task_id, legacy=True)
    except (RpcError, BadResult, RemoteTaskLost) as exc:
        logger.debug("the final state of task %s is unknown: %s", safe_id(task.task_id), exc)
        return task


async def _next_state(request: Request, news: TaskNews, task: RemoteTask) -> RemoteTask | None:
    """The task's next state: a status notification within the poll interval, else ``tasks/get``;
    None for a notification that is no news (:func:`_news_of`)."""
    raw = await news.wait(task.task_id, poll_interval(task))
    if raw is not None:
        return news_of(raw, task, legacy=True)
    return await poll(request, task.task_id, legacy=True)
