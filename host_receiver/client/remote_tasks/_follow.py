"""A server's task, client side: follow it to its end, in either era.

(About 600 lines, one idea: a server's task seen from the client, polled and
told, to its end; the rules of both eras' tasks share the polling, the news
and the backstop, so they stay together.)

Rules of the tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28;
the extension's specification and extension-tasks-overview.mdx):

- A ``tools/call`` may be answered with ``resultType: "task"`` only when the
  request declared the extension; the answer is a flat task. Any other
  request answered so is an invalid response.
- The task is polled with ``tasks/get`` at its ``pollIntervalMs`` (the last
  one the server gave; 1 s when it gives none) until it is terminal:
  ``completed`` gives the call's result (a tool error is such a result,
  ``isError: true``), ``failed`` raises its JSON-RPC error, ``cancelled``
  raises :class:`RemoteTaskCancelled`.
- An ``input_required`` task lists ``inputRequests``: the ones not answered
  yet (keys are unique over a task's life) are fulfilled through the same
  pipeline as any input request, all at once, and sent with one
  ``tasks/update``; polling goes on at once. A failed entry ends the call
  (the task is cancelled, as the caller no longer waits for it).
- Cancelling the call sends ``tasks/cancel`` (shielded, bounded) before the
  cancellation goes on: cancellation is cooperative, the answer is an ack.
- A ``tasks/get`` for our task that the server refuses (-32602), or that
  describes another task, ends the call with :class:`RemoteTaskLost`; a
  task the server denied is not cancelled (it knows no such task).
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
  :data:`MAX_SUBSCRIPTIONS` open at once; a task followed beyond them is
  polled only.
- A notification is taken only when it is news (the same for 2025-11-25
  ``notifications/tasks/status``): a state equal to the one already seen (a
  notification repeated, or one that came after a poll saw that state), one
  older than it (``lastUpdatedAt``), or anything after a terminal state is
  dropped; a terminal state is always taken, so no terminal status is lost.
  The observer is told each new state once: a poll that saw no change is not
  told either. ``inputRequests`` keys are answered once, whether a poll or a
  notification brought them.
- A notification about a task before it is followed (it may come before the
  ``tools/call`` answer that creates the task is read) is kept, the newest
  per task for :data:`EARLY_NEWS` tasks, and taken when following begins.
- The ``ttlMs`` is a backstop: a task not terminal ``ttlMs`` after it was
  created is given up. Created is now for a new task; a resumed one counts
  from its kept record's creation, else the server's ``createdAt``
  (``ClientConnection.resume_task``): resuming never restarts the ttl.
- A :class:`TaskHandle` is the same call seen from a host that shows its
  progress (``ClientConnection.watch_tool``): the latest state, its changes
  as they come, ``cancel()``, and the final result.
- Task ids are kept in memory, and in the connection's task store when it has
  one (:mod:`host_receiver.remote_task_store`): a restarted host resumes a
  kept task with ``ClientConnection.resume_task``, which starts from its
  ``tasks/get`` answer and follows it as above.

Rules of a 2025-11-25 task-augmented ``tools/call`` (the tasks chapter;
:func:`follow_legacy_task`):

- The ``CreateTaskResult``'s ``task`` is polled with ``tasks/get`` at its
  ``pollInterval`` (1 s when it gives none); a ``notifications/tasks/status``
  about it (:class:`TaskNews`) counts as that interval's poll.
- Once the task is ``input_required`` or terminal, ``tasks/result`` is sent
  (once): it blocks until the task ends while the server sends the requests
  the task needs (answered by the receiver like any others), and its answer is
  the call's result or JSON-RPC error. Polling goes on meanwhile, for the
  observer and the backstop. A ``cancelled`` task raises
  :class:`RemoteTaskCancelled`. When ``tasks/result`` answers before a poll
  saw the task end, one more ``tasks/get`` shows the observer its final state.
- Cancelling, a lost task, notifications taken only when news, and the
  ``ttl`` backstop as above (``ttl: null``: no backstop).

Fixed caps (docs/limits.md): ``DEFAULT_POLL``, ``MIN_POLL``, ``CANCEL_GRACE``, ``EARLY_NEWS``,
``MAX_SUBSCRIPTIONS``, ``SUBSCRIBED_POLL``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import anyio
import anyio.abc

from host_receiver._concurrency import background_task_group
from host_receiver.client._input_rounds import Fulfil, fulfil_all
from host_receiver.errors import (
    INVALID_PARAMS,
    BadResult,
    HostReceiverError,
    RemoteTaskCancelled,
    RemoteTaskLost,
    RpcError,
)
from host_receiver.protocol.modern import SUBSCRIPTION_ID_KEY, RemoteTask, remote_task
from host_receiver.protocol.results import CallToolResult
from host_receiver.protocol.types import RequestId
from host_receiver.sanitize import safe_id, safe_logger, safe_text

__all__ = [
    "Listen",
    "TaskHandle",
    "TaskNews",
    "TaskObserver",
    "birth",
    "current_task",
    "follow_legacy_task",
    "follow_task",
]

logger = safe_logger("host_receiver.client.connection")

#: Polling interval when the server suggests none (seconds).
DEFAULT_POLL = 1.0
#: Shortest wait between polls, whatever the server suggests (seconds).
MIN_POLL = 0.01
#: How long ``tasks/cancel`` may take when the caller cancels (seconds).
CANCEL_GRACE = 5.0
#: Tasks not followed yet whose newest status notification is kept until they are.
EARLY_NEWS = 64
#: ``subscriptions/listen`` requests a connection holds open at once (on HTTP each holds a
#: connection of the pool); the tasks followed beyond them are polled.
MAX_SUBSCRIPTIONS = 16
#: Seconds without news after which a task whose subscription is honoured is polled all the same
#: (or its poll interval, when longer): a stream can go quiet without ending.
SUBSCRIBED_POLL = 30.0

#: Sends one request (method, params) to the server and returns its result.
Request = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
#: Told every state of the task, in order, for a host that shows its progress.
TaskObserver = Callable[[RemoteTask], Awaitable[None]]
#: Opens ``subscriptions/listen`` for one task id, telling the given function the request's
#: JSON-RPC id before it is sent; returns (or raises) when the subscription ends.
Listen = Callable[[str, Callable[[RequestId], None]], Awaitable[None]]


class _Denied(RemoteTaskLost):
    """The server denied our task id: there is nothing to cancel."""


async def follow_task(
    created: dict[str, Any],
    request: Request,
    fulfil: Fulfil,
    news: TaskNews,
    *,
    observer: TaskObserver | None = None,
    listen: Listen | None = None,
    born: float | None = None,
) -> dict[str, Any]:
    """The final result of the task ``created`` describes (rules in the module docstring).

    ``listen`` opens the extension's subscription when the server offers it;
    ``born`` is when the task was created (wall clock; None: now).
    """
    task = remote_task(created)
    task_id = task.task_id
    deadline = _deadline(task, born)

    def patience() -> float:
        """How long to wait for news before polling: the poll interval, slower while subscribed."""
        interval = _poll_interval(task)
        wait = max(interval, SUBSCRIBED_POLL) if news.listening(task_id) else interval
        return wait if deadline is None else min(wait, max(deadline - anyio.current_time(), 0.0))

    async def states() -> dict[str, Any]:
        nonlocal task
        answered: set[str] = set()
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
                responses = await fulfil_all(pending, fulfil)
                answered.update(pending)
                await request("tasks/update", {"taskId": task_id, "inputResponses": responses})
                told: RemoteTask | None = await _poll(request, task_id)
            else:
                _check_ttl(task, deadline)
                raw = await news.wait(task_id, patience())
                told = await _poll(request, task_id) if raw is None else _news_of(raw, task)
            fresh = told is not None and told != task
            task = told or task

    try:
        with news.following(task_id):
            async with background_task_group() as helpers:
                if listen is not None and not task.is_terminal:
                    helpers.start_soon(_keep_listening, listen, news, task_id, lambda: _poll_interval(task))
                return await states()
    except BaseException as exc:
        if not task.is_terminal and not isinstance(exc, _Denied):
            await _cancel(request, task_id)
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
    subscription = _Subscription(task_id)

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


async def _poll(request: Request, task_id: str, *, legacy: bool = False) -> RemoteTask:
    return remote_task(await current_task(request, task_id, legacy=legacy), legacy=legacy)


async def current_task(request: Request, task_id: str, *, legacy: bool = False) -> dict[str, Any]:
    """The ``tasks/get`` answer about ``task_id`` (:class:`RemoteTaskLost` when the server denies
    knowing it, or answers about another task)."""
    try:
        raw = await request("tasks/get", {"taskId": task_id})
    except RpcError as exc:
        if exc.code == INVALID_PARAMS:
            raise _Denied(
                f"the server no longer knows task {safe_id(task_id)}: {safe_text(exc.message, 300)}"
            ) from None
        raise
    told = remote_task(raw, legacy=legacy).task_id
    if told != task_id:
        raise RemoteTaskLost(f"tasks/get for task {safe_id(task_id)} answered about task {safe_id(told)}")
    return raw


@dataclass(eq=False)
class _Subscription:
    """One ``subscriptions/listen`` for one task: acknowledged or not yet, honoured or not."""

    task_id: str
    acknowledged: anyio.Event = field(default_factory=anyio.Event)
    honored: bool = False


class TaskNews:
    """What a server says unasked about its tasks: status notifications (2025-11-25
    ``notifications/tasks/status``, the extension's ``notifications/tasks``) and the acknowledgements
    of the extension's subscriptions, for the tasks a connection follows."""

    def __init__(self) -> None:
        self._arrived: dict[str, anyio.Event] = {}  # by task id, while it is followed
        self._latest: dict[str, dict[str, Any]] = {}
        self._early: OrderedDict[str, dict[str, Any]] = OrderedDict()  # tasks not followed yet
        self._subscriptions: dict[RequestId, _Subscription] = {}  # by the listen request's id
        self._listening: set[str] = set()  # tasks whose notifications the server agreed to send
        self._open = 0  # subscriptions/listen requests held open (MAX_SUBSCRIPTIONS at most)

    def deliver(self, params: dict[str, Any] | None) -> bool:
        """Take a notification's params; False when they are about no task being followed (the
        newest about each of :data:`EARLY_NEWS` such tasks is kept until it is)."""
        task_id = params.get("taskId") if params is not None else None
        if params is None or not isinstance(task_id, str):
            return False
        arrived = self._arrived.get(task_id)
        if arrived is None:
            self._early[task_id] = params
            self._early.move_to_end(task_id)
            while len(self._early) > EARLY_NEWS:
                self._early.popitem(last=False)
            return False
        self._latest[task_id] = params
        arrived.set()
        return True

    def acknowledge(self, params: dict[str, Any] | None) -> bool:
        """Take a ``notifications/subscriptions/acknowledged``; False when it is about no subscription
        of this connection's, or one already acknowledged."""
        meta = params.get("_meta") if params is not None else None
        key = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
        if params is None or isinstance(key, bool) or not isinstance(key, str | int):
            return False
        subscription = self._subscriptions.get(key)
        if subscription is None or subscription.acknowledged.is_set():
            return False
        agreed = params.get("notifications")
        task_ids = agreed.get("taskIds") if isinstance(agreed, dict) else None
        subscription.honored = isinstance(task_ids, list) and subscription.task_id in task_ids
        subscription.acknowledged.set()
        if subscription.honored:
            self._listening.add(subscription.task_id)
            self._wake(subscription.task_id)  # poll once: what changed before the subscription began
        return True

    @contextmanager
    def room(self) -> Iterator[bool]:
        """Whether one more subscription may be held open (the block holds it while it runs)."""
        if self._open >= MAX_SUBSCRIPTIONS:
            yield False
            return
        self._open += 1
        try:
            yield True
        finally:
            self._open -= 1

    def subscribe(self, subscription: _Subscription, request_id: RequestId) -> None:
        """``subscription`` is the ``subscriptions/listen`` request ``request_id``."""
        self._subscriptions[request_id] = subscription

    def unsubscribe(self, subscription: _Subscription) -> None:
        """``subscription`` has ended: its task is polled again (at once, to miss nothing)."""
        for key in [k for k, v in self._subscriptions.items() if v is subscription]:
            del self._subscriptions[key]
        if subscription.honored:
            self._listening.discard(subscription.task_id)
            self._wake(subscription.task_id)

    def listening(self, task_id: str) -> bool:
        """Whether the server agreed to send status notifications about ``task_id`` (and still may)."""
        return task_id in self._listening

    def _wake(self, task_id: str) -> None:
        arrived = self._arrived.get(task_id)
        if arrived is not None:
            arrived.set()

    @contextmanager
    def following(self, task_id: str) -> Iterator[None]:
        """Keep the notifications about ``task_id`` while the block runs (one that came before is
        the first)."""
        self._arrived[task_id] = arrived = anyio.Event()
        early = self._early.pop(task_id, None)
        if early is not None:
            self._latest[task_id] = early
            arrived.set()
        try:
            yield
        finally:
            self._arrived.pop(task_id, None)
            self._latest.pop(task_id, None)

    async def wait(self, task_id: str, seconds: float) -> dict[str, Any] | None:
        """The newest notification about ``task_id`` that arrives within ``seconds``; None after
        ``seconds``, or when its subscription began or ended (time to poll)."""
        arrived = self._arrived[task_id]
        with anyio.move_on_after(seconds):
            await arrived.wait()
        if arrived.is_set():
            self._arrived[task_id] = anyio.Event()
        return self._latest.pop(task_id, None)


def _news_of(raw: dict[str, Any], seen: RemoteTask, *, legacy: bool = False) -> RemoteTask | None:
    """The state a status notification tells, when it is news after ``seen``: None when it is
    malformed, about another task, the state already seen, older than it (``lastUpdatedAt``), or
    comes after a terminal state (which never changes). A terminal state is never taken for old."""
    try:
        told = remote_task(raw, legacy=legacy)
    except BadResult as exc:
        logger.debug("ignored a malformed task status notification: %s", exc)
        return None
    if told.task_id != seen.task_id or seen.is_terminal or told == seen:
        return None
    if not told.is_terminal and _before(told.last_updated_at, seen.last_updated_at):
        return None
    return told


def _before(stamp: str | None, other: str | None) -> bool:
    """Whether ISO 8601 time ``stamp`` is strictly before ``other`` (False when either is unreadable)."""
    try:
        return stamp is not None and other is not None and _instant(stamp) < _instant(other)
    except (ValueError, TypeError):
        return False


def _instant(stamp: str) -> float:
    moment = datetime.fromisoformat(stamp)
    return moment.timestamp()


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
    deadline = _deadline(task, born)
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
            _check_ttl(task, deadline)
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
        if not (task.is_terminal or answered or isinstance(exc, _Denied)):
            await _cancel(request, task_id)
        raise


async def _final_state(request: Request, task: RemoteTask) -> RemoteTask:
    """The state of a task whose ``tasks/result`` came: one ``tasks/get``; ``task`` if that fails."""
    try:
        return await _poll(request, task.task_id, legacy=True)
    except (RpcError, BadResult, RemoteTaskLost) as exc:
        logger.debug("the final state of task %s is unknown: %s", safe_id(task.task_id), exc)
        return task


async def _next_state(request: Request, news: TaskNews, task: RemoteTask) -> RemoteTask | None:
    """The task's next state: a status notification within the poll interval, else ``tasks/get``;
    None for a notification that is no news (:func:`_news_of`)."""
    raw = await news.wait(task.task_id, _poll_interval(task))
    if raw is not None:
        return _news_of(raw, task, legacy=True)
    return await _poll(request, task.task_id, legacy=True)


def _deadline(task: RemoteTask, born: float | None) -> float | None:
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
        return _instant(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None


def _check_ttl(task: RemoteTask, deadline: float | None) -> None:
    """Raise :class:`RemoteTaskLost` once the ttl backstop has passed."""
    if deadline is not None and anyio.current_time() >= deadline:
        raise RemoteTaskLost(
            f"task {safe_id(task.task_id)} did not finish within its ttl of {task.ttl_ms} ms"
        )


def _poll_interval(task: RemoteTask) -> float:
    if task.poll_interval_ms is None:
        return DEFAULT_POLL
    return max(task.poll_interval_ms / 1000, MIN_POLL)


async def _cancel(request: Request, task_id: str) -> None:
    with anyio.move_on_after(CANCEL_GRACE, shield=True):
        try:
            await request("tasks/cancel", {"taskId": task_id})
        except (HostReceiverError, OSError) as exc:
            logger.debug("tasks/cancel of %s failed: %s", task_id, exc)


class TaskHandle:
    """A ``tools/call`` in flight and the server's task for it, for a host that shows its progress.

    Made by ``ClientConnection.watch_tool``, which runs the call as
    ``call_tool`` does (input rounds answered, the task followed to its end).
    A server that answers at once makes no task: ``task`` stays None,
    :meth:`updates` yields nothing, and :meth:`result` is the answer.
    """

    def __init__(self) -> None:
        self._task: RemoteTask | None = None
        self._changed = anyio.Event()
        self._done = anyio.Event()
        self._result: CallToolResult | None = None
        self._error: BaseException | None = None
        self._scope = anyio.CancelScope()

    @property
    def task(self) -> RemoteTask | None:
        """The server's task as last seen (None until the server answers with one, or never)."""
        return self._task

    @property
    def task_id(self) -> str | None:
        return self._task.task_id if self._task is not None else None

    @property
    def status(self) -> str | None:
        """The task's status (``working``, ``input_required`` or a terminal one); None without a task."""
        return self._task.status if self._task is not None else None

    @property
    def status_message(self) -> str | None:
        """The server's words about the task's state, if it gave any (server text: show it escaped)."""
        return self._task.status_message if self._task is not None else None

    @property
    def done(self) -> bool:
        """Whether the call has ended (with a result or an error)."""
        return self._done.is_set()

    async def updates(self) -> AsyncGenerator[RemoteTask, None]:
        """Each new state of the task, in order, until the call ends.

        A state equal to the last one yielded (a poll that saw no change) is
        not repeated; a reader slower than the polls gets the newest state.
        """
        shown: RemoteTask | None = None
        while True:
            task, changed = self._task, self._changed
            if task is not None and task != shown:
                shown = task
                yield task
            elif self._done.is_set():
                return
            else:
                await changed.wait()

    def cancel(self) -> None:
        """Cancel the call: the server's task gets ``tasks/cancel``; :meth:`result` then raises
        :class:`RemoteTaskCancelled`. Does nothing once the call has ended."""
        self._scope.cancel()

    async def result(self) -> CallToolResult:
        """Wait for the end of the call: its final :class:`CallToolResult`, or the error that ended it."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    async def _observe(self, task: RemoteTask) -> None:
        """A :data:`TaskObserver`: take the task's newest state."""
        self._task = task
        self._wake()

    async def _run(self, call: Callable[[TaskObserver], Awaitable[CallToolResult]]) -> None:
        """Run ``call`` (given :meth:`_observe`) to its end, keeping its result or error."""
        try:
            with self._scope:
                self._result = await call(self._observe)
            if self._scope.cancelled_caught:
                self._error = RemoteTaskCancelled("the call was cancelled by this host")
        except Exception as exc:
            self._error = exc
        finally:
            self._done.set()
            self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
