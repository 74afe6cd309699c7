"""A ``tools/call`` in flight and the server's task for it, for a host that shows its progress.

A :class:`TaskHandle` is the same call as ``ClientConnection.call_tool``
(``ClientConnection.watch_tool`` makes it): the latest state, its changes as
they come, ``cancel()``, and the final result.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable

import anyio

from host_receiver.client.remote_tasks._polls import TaskObserver
from host_receiver.errors import RemoteTaskCancelled
from host_receiver.protocol.modern import RemoteTask
from host_receiver.protocol.results import CallToolResult

__all__ = ["TaskHandle"]


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
