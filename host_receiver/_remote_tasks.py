"""A server's task, client side: follow it to its end, in either era.

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
- The ``ttlMs`` is a backstop: a task not terminal ``ttlMs`` after it was
  created (by our clock, from the creation answer) is given up.
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
- Cancelling, a lost task, and the ``ttl`` backstop as above (``ttl: null``:
  no backstop).

Fixed caps (docs/limits.md): ``DEFAULT_POLL``, ``MIN_POLL``, ``CANCEL_GRACE``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.abc

from host_receiver._input_rounds import Fulfil, fulfil_all
from host_receiver.errors import (
    INVALID_PARAMS,
    BadResult,
    HostReceiverError,
    RemoteTaskCancelled,
    RemoteTaskLost,
    RpcError,
)
from host_receiver.protocol.modern import RemoteTask, remote_task
from host_receiver.protocol.results import CallToolResult
from host_receiver.sanitize import safe_id, safe_logger, safe_text

__all__ = ["TaskHandle", "TaskNews", "TaskObserver", "current_task", "follow_legacy_task", "follow_task"]

logger = safe_logger("host_receiver.connection")

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


class _Denied(RemoteTaskLost):
    """The server denied our task id: there is nothing to cancel."""


async def follow_task(
    created: dict[str, Any], request: Request, fulfil: Fulfil, *, observer: TaskObserver | None = None
) -> dict[str, Any]:
    """The final result of the task ``created`` describes (rules in the module docstring)."""
    task = remote_task(created)
    answered: set[str] = set()
    deadline = _deadline(task)
    try:
        while True:
            if observer is not None:
                await observer(task)
            if task.status == "completed":
                assert task.result is not None
                return task.result
            if task.status == "failed":
                assert task.error is not None
                raise RpcError.from_dict(task.error)
            if task.status == "cancelled":
                raise RemoteTaskCancelled(f"the server cancelled task {safe_id(task.task_id)}")
            pending = {k: v for k, v in task.input_requests.items() if k not in answered}
            if pending:
                responses = await fulfil_all(pending, fulfil)
                answered.update(pending)
                await request("tasks/update", {"taskId": task.task_id, "inputResponses": responses})
            else:
                _check_ttl(task, deadline)
                await anyio.sleep(_poll_interval(task))
            task = await _poll(request, task.task_id)
    except BaseException as exc:
        if not task.is_terminal and not isinstance(exc, _Denied):
            await _cancel(request, task.task_id)
        raise


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


class TaskNews:
    """The ``notifications/tasks/status`` a 2025-11-25 server sends about the tasks a connection follows."""

    def __init__(self) -> None:
        self._arrived: dict[str, anyio.Event] = {}  # by task id, while it is followed
        self._latest: dict[str, dict[str, Any]] = {}

    def deliver(self, params: dict[str, Any] | None) -> bool:
        """Take a notification's params; False when they are about no task being followed."""
        task_id = params.get("taskId") if params is not None else None
        arrived = self._arrived.get(task_id) if isinstance(task_id, str) else None
        if params is None or arrived is None:
            return False
        self._latest[str(task_id)] = params
        arrived.set()
        return True

    @contextmanager
    def following(self, task_id: str) -> Iterator[None]:
        """Keep the notifications about ``task_id`` while the block runs."""
        self._arrived[task_id] = anyio.Event()
        try:
            yield
        finally:
            self._arrived.pop(task_id, None)
            self._latest.pop(task_id, None)

    async def wait(self, task_id: str, seconds: float) -> dict[str, Any] | None:
        """The newest notification about ``task_id`` that arrives within ``seconds``, or None."""
        arrived = self._arrived[task_id]
        with anyio.move_on_after(seconds):
            await arrived.wait()
        if arrived.is_set():
            self._arrived[task_id] = anyio.Event()
        return self._latest.pop(task_id, None)


async def follow_legacy_task(
    created: dict[str, Any], request: Request, news: TaskNews, *, observer: TaskObserver | None = None
) -> dict[str, Any]:
    """The ``tasks/result`` answer for the 2025-11-25 task ``created`` describes (the ``task`` of a
    ``CreateTaskResult``; rules in the module docstring)."""
    task = remote_task(created, legacy=True)
    task_id = task.task_id
    deadline = _deadline(task)
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
        fetching = False
        while True:
            if observer is not None:
                await observer(task)
            if task.status == "cancelled":
                raise RemoteTaskCancelled(f"the server cancelled task {safe_id(task_id)}")
            if not fetching and (task.status == "input_required" or task.is_terminal):
                fetching = True
                group.start_soon(end_with, group, fetch)
            if task.is_terminal:
                await anyio.sleep_forever()  # tasks/result ends the call
            _check_ttl(task, deadline)
            task = await _next_state(request, news, task)

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


async def _next_state(request: Request, news: TaskNews, task: RemoteTask) -> RemoteTask:
    """The task's next state: a status notification within the poll interval, else ``tasks/get``."""
    raw = await news.wait(task.task_id, _poll_interval(task))
    if raw is not None:
        try:
            told = remote_task(raw, legacy=True)
        except BadResult as exc:
            logger.debug("ignored a malformed notifications/tasks/status: %s", exc)
        else:
            return told
    return await _poll(request, task.task_id, legacy=True)


def _deadline(task: RemoteTask) -> float | None:
    """When the ttl backstop gives ``task`` up (by our clock), or None without a ttl."""
    return None if task.ttl_ms is None else anyio.current_time() + task.ttl_ms / 1000


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
