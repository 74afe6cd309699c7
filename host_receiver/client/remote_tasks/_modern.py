"""Following a 2026-07-28 server's task (the tasks extension) to its end: :func:`follow_task`.

Rules of the tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28;
the extension's specification and extension-tasks-overview.mdx):

- A ``tools/call`` may be answered with ``resultType: "task"`` only when the
  request declared the extension; the answer is a flat task. Any other
  request answered so is an invalid response.
- The task is polled with ``tasks/get`` at its ``pollIntervalMs``
  (:mod:`._polls`) until it is terminal: ``completed`` gives the call's
  result (a tool error is such a result, ``isError: true``), ``failed``
  raises its JSON-RPC error, ``cancelled`` raises :class:`RemoteTaskCancelled`.
- An ``input_required`` task lists ``inputRequests``: the ones not answered
  yet (keys are unique over a task's life) are fulfilled through the same
  pipeline as any input request, all at once, and sent with one
  ``tasks/update``; polling goes on at once. A failed entry ends the call
  (the task is cancelled, as the caller no longer waits for it).
- Cancelling, a lost task and the ttl backstop: :mod:`._polls`.
- Status notifications (``notifications/tasks``, extension specification,
  "Task Status Notifications"): when the server advertises the extension in
  its ``server/discover`` capabilities, the follower opens
  ``subscriptions/listen`` with ``notifications.taskIds: [the task]`` beside
  its polls. Once the acknowledgement (``_meta`` subscriptionId: the listen
  request's id) lists the task, the task is polled once (what changed before
  the subscription began) and then when the subscription ends, the ttl is
  near, or :data:`SUBSCRIBED_POLL` seconds (at least the poll interval) pass
  without news: each notification carries the whole task, as ``tasks/get``
  would, and the slow poll is the backstop for a stream that goes quiet
  without ending. An acknowledgement that leaves the task out closes the stream; an
  error answer (-32601, -32021, ...) or a stream that ends before any
  acknowledgement means polling only. A stream that ends after it was
  honoured (a graceful ``SubscriptionsListenResult``, or a dropped stream)
  is followed by a poll at once, polling at the interval, and a new
  subscription one poll interval later. A connection holds
  :data:`~._news.MAX_SUBSCRIPTIONS` open at once; a task followed beyond
  them is polled only.
- Notifications are taken only when they are news (:mod:`._news`). The
  observer is told each new state once: a poll that saw no change is not
  told either. ``inputRequests`` keys are answered once, whether a poll or a
  notification brought them.
- With :class:`TaskInputs` (a task kept in the shared store), the keys sent
  before (by this process or one that followed the task earlier) are not
  sent again, the pending ones are answered through it (the inbox's answers
  first), and the keys of each ``tasks/update`` are recorded once it is sent.

Fixed caps (docs/limits.md): ``SUBSCRIBED_POLL``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from functools import partial
from typing import Any, Protocol

import anyio

from host_receiver._concurrency import background_task_group
from host_receiver.client._input_rounds import Fulfil, fulfil_all
from host_receiver.client.remote_tasks._news import MAX_SUBSCRIPTIONS, Subscription, TaskNews, news_of
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
from host_receiver.errors import HostReceiverError, RemoteTaskCancelled, RpcError
from host_receiver.protocol.modern import RemoteTask, remote_task
from host_receiver.protocol.types import RequestId
from host_receiver.sanitize import safe_id, safe_logger

__all__ = ["Listen", "TaskInputs", "follow_task"]

logger = safe_logger("host_receiver.client.connection")

#: Seconds without news after which a task whose subscription is honoured is polled all the same
#: (or its poll interval, when longer): a stream can go quiet without ending.
SUBSCRIBED_POLL = 30.0

#: Opens ``subscriptions/listen`` for one task id, telling the given function the request's
#: JSON-RPC id before it is sent; returns (or raises) when the subscription ends.
Listen = Callable[[str, Callable[[RequestId], None]], Awaitable[None]]


class TaskInputs(Protocol):
    """How a kept task's input requests are answered and remembered
    (:class:`~host_receiver.client.remote_tasks.shared.KeptTaskInputs`)."""

    #: The keys already sent with ``tasks/update``: never sent again.
    sent: Collection[str]

    async def answer(
        self, pending: dict[str, tuple[str, dict[str, Any] | None]], fulfil: Fulfil
    ) -> dict[str, dict[str, Any]]:
        """The responses to ``pending`` (method, params by key)."""
        ...

    async def record_sent(self, keys: Collection[str]) -> None:
        """Remember that ``keys`` were sent with ``tasks/update``."""
        ...


async def follow_task(
    created: dict[str, Any],
    request: Request,
    fulfil: Fulfil,
    news: TaskNews,
    *,
    observer: TaskObserver | None = None,
    listen: Listen | None = None,
    born: float | None = None,
    inputs: TaskInputs | None = None,
) -> dict[str, Any]:
    """The final result of the task ``created`` describes (rules in the module docstring).

    ``listen`` opens the extension's subscription when the server offers it;
    ``born`` is when the task was created (wall clock; None: now); ``inputs``
    answers and remembers its input requests (a task kept in the shared store).
    """
    task = remote_task(created)
    task_id = task.task_id
    deadline = deadline_of(task, born)

    def patience() -> float:
        """How long to wait for news before polling: the poll interval, slower while subscribed."""
        interval = poll_interval(task)
        wait = max(interval, SUBSCRIBED_POLL) if news.listening(task_id) else interval
        return wait if deadline is None else min(wait, max(deadline - anyio.current_time(), 0.0))

    async def states() -> dict[str, Any]:
        nonlocal task
        answered: set[str] = set(inputs.sent) if inputs is not None else set()
        fresh = True  # ``task`` is a state the observer has not been told
        while True:
            if fresh and observer is not None:
                await observer(task)
            if task.status == "completed":
                assert task.result is not None
                return task.result
            if task.status == "failed":
                assert task.error is not None
                raise RpcError.from_dict(task.error)
            if task.status == "cancelled":
                raise RemoteTaskCancelled(f"the server cancelled task {safe_id(task_id)}")
            pending = {k: v for k, v in task.input_requests.items() if k not in answered}
            if pending:
                if inputs is None:
                    responses = await fulfil_all(pending, fulfil)
                else:
                    responses = await inputs.answer(pending, fulfil)
                answered.update(pending)
                await request("tasks/update", {"taskId": task_id, "inputResponses": responses})
                if inputs is not None:
                    await inputs.record_sent(list(pending))
                told: RemoteTask | None = await poll(request, task_id)
            else:
                check_ttl(task, deadline)
                raw = await news.wait(task_id, patience())
                told = await poll(request, task_id) if raw is None else news_of(raw, task)
            fresh = told is not None and told != task
            task = told or task

    try:
        with news.following(task_id):
            async with background_task_group() as helpers:
                if listen is not None and not task.is_terminal:
                    helpers.start_soon(_keep_listening, listen, news, task_id, lambda: poll_interval(task))
                return await states()
    except BaseException as exc:
        if not task.is_terminal and not isinstance(exc, Denied):
            await cancel(request, task_id)
        raise


async def _keep_listening(listen: Listen, news: TaskNews, task_id: str, pause: Callable[[], float]) -> None:
    """Keep a ``subscriptions/listen`` for ``task_id`` open while the task is followed (rules in the
    module docstring): opened again after it ends, given up when the server does not honour it."""
    while True:
        if not await _listen_once(listen, news, task_id):
            logger.debug("no status notifications for task %s: polling it", safe_id(task_id))
            return
        await anyio.sleep(pause())


async def _listen_once(listen: Listen, news: TaskNews, task_id: str) -> bool:
    """One ``subscriptions/listen`` for ``task_id``, to its end: whether the server honoured it
    (one whose acknowledgement leaves the task out is closed at once)."""
    subscription = Subscription(task_id)

    async def close_if_declined(scope: anyio.CancelScope) -> None:
        await subscription.acknowledged.wait()
        if not subscription.honored:
            scope.cancel()

    with news.room() as room, anyio.CancelScope() as scope:
        if not room:
            logger.debug("%s subscriptions are open: task %s is polled", MAX_SUBSCRIPTIONS, safe_id(task_id))
            return False
        async with anyio.create_task_group() as group:
            group.start_soon(close_if_declined, scope)
            try:
                await listen(task_id, partial(news.subscribe, subscription))
            except (HostReceiverError, OSError) as exc:
                logger.debug("the subscription to task %s ended: %s", safe_id(task_id), exc)
            finally:
                news.unsubscribe(subscription)
            group.cancel_scope.cancel()
    return subscription.honored
