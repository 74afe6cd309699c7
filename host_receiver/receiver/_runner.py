"""The tasks of one requestor: created, started, run, finished, dropped.

Rules:

- :meth:`TaskRunner.create` checks the quotas (live tasks, stored tasks:
  -32600 naming the limit), grants a ttl (the requested one, the default when
  none was asked, shortened to the cap; negative is -32602), stores a
  ``working`` record, schedules its expiry and queues its work. It returns the
  ``CreateTaskResult`` at once: a ``tasks/get`` for the task succeeds from
  then on.
- Work starts from one starter task, after the ``CreateTaskResult`` is on its
  way: starting a task's work costs more than the rest of creating it, and a
  status notification can then never overtake its ``CreateTaskResult``. A
  task cancelled or expired before its start never runs its work.
- Each task's work runs in its own cancel scope inside the requestor's task
  group. Its outcome is stored as data: a result -> ``completed``; an
  ``RpcError`` -> ``failed``, with a diagnostic ``statusMessage`` and the
  error kept for ``tasks/result``; any other exception -> ``failed`` with
  -32603 (logged with its traceback, never told). A completed task's
  ``statusMessage`` is the one its work gave as the outcome
  (:meth:`WorkContext.set_outcome_message`, e.g. why nobody answered), else
  none: a "waiting for ..." message does not outlive the wait. Work cancelled by
  ``tasks/cancel`` leaves the record as the cancel left it.
- :meth:`TaskRunner.finish` is the only way a live task reaches a terminal
  status: it replaces the record (the lifecycle table in
  :mod:`host_receiver.receiver.tasks.state` forbids leaving a terminal status),
  wakes those waiting in ``tasks/result`` and sends
  ``notifications/tasks/status`` without waiting.
- :meth:`TaskRunner.drop` is expiry: cancel the work, delete the record,
  wake its waiters (who then find it gone).
- :meth:`TaskRunner.cancel_all` is the client closing the connection: every
  live task is ``cancelled`` (with that message), its work cancelled and its
  waiters woken, so each ``tasks/result`` gets its answer before the end.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
from pydantic import BaseModel

from host_receiver.errors import INTERNAL_ERROR, INVALID_REQUEST, RpcError, invalid_params
from host_receiver.peer import Peer
from host_receiver.protocol.sampling_rules import failure_message
from host_receiver.protocol.types import RequestParams, dump
from host_receiver.receiver import _audit
from host_receiver.receiver._config import SAMPLING, ReceiverConfig
from host_receiver.receiver._expiry import Expiry
from host_receiver.receiver.tasks.record import TaskRecord, new_task_id
from host_receiver.receiver.tasks.state import TaskStatus
from host_receiver.receiver.tasks.store import TaskStore
from host_receiver.receiver.work import WorkContext
from host_receiver.sanitize import safe_logger
from host_receiver.telemetry import TaskTrace, current

__all__ = ["TaskRunner", "Work"]

logger = safe_logger("host_receiver.receiver")

#: The accepted work of one request: run it with its context, get the result model.
Work = Callable[[WorkContext], Awaitable[BaseModel]]


@dataclass(frozen=True, slots=True)
class _Start:
    """A created task whose work is still to be started."""

    task_id: str
    method: str
    params: RequestParams
    work: Work
    trace: TaskTrace


class TaskRunner:
    """Creates and runs one requestor's tasks in its task group (rules above)."""

    def __init__(
        self,
        *,
        peer: Peer,
        key: str,
        config: ReceiverConfig,
        store: TaskStore,
        clock: Callable[[], float],
        sequence: Iterator[int],
        group: anyio.abc.TaskGroup,
    ) -> None:
        self.peer = peer
        self.key = key
        self.config = config
        self.store = store
        self.clock = clock
        self._sequence = sequence
        self._group = group
        self.expiry = Expiry(clock, self.drop)
        self._running: dict[str, anyio.CancelScope] = {}  # the work's scope, by task id
        self._starts: deque[_Start] = deque()
        self._starts_waiting = anyio.Event()
        self._waiters: dict[str, anyio.Event] = {}
        self._traces: dict[str, TaskTrace] = {}  # live tasks' traces, by task id
        self._outcomes: dict[str, str] = {}  # the statusMessage a task keeps when it completes

    async def run(self) -> None:
        """The requestor's background jobs: starting work and expiring tasks (cancel to stop)."""
        async with anyio.create_task_group() as jobs:
            jobs.start_soon(self.expiry.run)
            jobs.start_soon(self._start_forever)

    # --- creation -------------------------------------------------------------------

    def create(self, method: str, params: RequestParams, work: Work) -> dict[str, Any]:
        """Store a new task for ``work`` and return its ``CreateTaskResult``."""
        config = self.config
        assert params.task is not None
        stored, active = self.store.counts(self.key)
        if active >= config.max_active_tasks:
            raise RpcError(
                INVALID_REQUEST,
                f"Too many active tasks for this server: the limit is {config.max_active_tasks}",
                {"limit": config.max_active_tasks},
            )
        if stored >= config.max_stored_tasks:
            raise RpcError(
                INVALID_REQUEST,
                f"Too many stored tasks for this server: the limit is {config.max_stored_tasks}; "
                "finished tasks are kept until their ttl ends",
                {"limit": config.max_stored_tasks},
            )
        ttl = self._granted_ttl(params.task.ttl)
        now = self.clock()
        deadline = None if ttl is None else now + ttl / 1000
        record = TaskRecord(
            task_id=new_task_id(deadline),
            requestor=self.key,
            seq=next(self._sequence),
            method=method,
            created_at=now,
            last_updated_at=now,
            ttl_ms=ttl,
            poll_interval_ms=config.poll_interval_ms,
        )
        self.store.insert(record)
        _audit.task_created(self.peer.name, record.task_id, method, ttl)
        if deadline is not None:
            self.expiry.schedule(deadline, record.task_id)
        trace = self._traces[record.task_id] = current().task(method, record.task_id)
        self._starts.append(_Start(record.task_id, method, params, work, trace))
        self._starts_waiting.set()
        return {"task": record.to_wire()}

    def _granted_ttl(self, requested: int | None) -> int | None:
        config = self.config
        if requested is None:
            return config.default_ttl_ms
        if requested < 0:
            raise invalid_params("task.ttl must not be negative")
        if config.max_ttl_ms is not None and requested > config.max_ttl_ms:
            return config.max_ttl_ms
        return requested

    # --- running -----------------------------------------------------------------------

    async def _start_forever(self) -> None:
        while True:
            await self._starts_waiting.wait()
            self._starts_waiting = anyio.Event()
            while self._starts:
                self._start(self._starts.popleft())

    def _start(self, start: _Start) -> None:
        record = self.store.get(start.task_id)
        if record is None or record.is_terminal:  # cancelled or expired before it started
            return
        scope = self._running[start.task_id] = anyio.CancelScope()
        self._group.start_soon(self._run_task, start, scope)

    def context(self, task_id: str | None, params: RequestParams) -> WorkContext:
        """What the work of one request sees; status messages only for a task."""
        return WorkContext(
            requestor=self.key,
            requestor_name=self.peer.name,
            task_id=task_id,
            progress_token=params.progress_token,
            notify=self.peer.notify,
            status=self.set_status_message if task_id is not None else None,
            outcome=self.set_outcome_message if task_id is not None else None,
        )

    async def _run_task(self, start: _Start, scope: anyio.CancelScope) -> None:
        task_id, method = start.task_id, start.method
        result: dict[str, Any] | None = None
        error: RpcError | None = None
        try:
            with start.trace.running():  # the work's span holds its status changes
                with scope:
                    try:
                        result = dump(await start.work(self.context(task_id, start.params)))
                    except RpcError as exc:
                        error = exc
                    except Exception:
                        logger.exception("%s task %s of %s crashed", method, task_id, self.peer.name)
                        error = RpcError(INTERNAL_ERROR, f"Internal error while serving {method}")
                if scope.cancel_called:
                    return
                if error is not None:
                    message = failure_message(error) if method == SAMPLING else f"Failed: {error.message}"
                    self.finish(task_id, TaskStatus.FAILED, message=message, error=error)
                else:
                    outcome = self._outcomes.get(task_id)
                    self.finish(task_id, TaskStatus.COMPLETED, message=outcome, result=result)
        finally:
            self._running.pop(task_id, None)
            self._outcomes.pop(task_id, None)

    # --- state changes ------------------------------------------------------------------

    def finish(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        message: str | None = None,
        result: dict[str, Any] | None = None,
        error: RpcError | None = None,
    ) -> TaskRecord | None:
        """Move a live task to a terminal status; None if it is gone or already terminal."""
        record = self.store.get(task_id)
        if record is None or record.is_terminal:
            return None
        record = record.moved_to(status, self.clock(), message=message, result=result, error=error)
        self.store.replace(record)
        _audit.task_finished(self.peer.name, task_id, status.value)
        trace = self._traces.pop(task_id, None)
        if trace is not None:
            trace.status(status.value, message)
            trace.telemetry.task_finished(record.method, status.value)
        self._wake(task_id)
        self.peer.notify_soon("notifications/tasks/status", record.to_wire())
        return record

    def cancel_work(self, task_id: str) -> None:
        """Cancel the work of ``task_id`` if it runs."""
        scope = self._running.get(task_id)
        if scope is not None:
            scope.cancel()

    async def set_status_message(self, task_id: str, message: str) -> None:
        """Show ``message`` as the ``statusMessage`` of a live task (no change, no new record)."""
        record = self.store.get(task_id)
        if record is None or record.is_terminal or record.status_message == message:
            return
        self.store.replace(record.with_message(message, self.clock()))

    async def set_outcome_message(self, task_id: str, message: str) -> None:
        """Show ``message`` now, and keep it as the ``statusMessage`` of ``task_id`` once completed."""
        if task_id in self._running:
            self._outcomes[task_id] = message
        await self.set_status_message(task_id, message)

    async def wait_finished(self, task_id: str) -> None:
        """Return once ``task_id`` is terminal or gone (no polling: an event per task)."""
        waiter = self._waiters.get(task_id)
        if waiter is None:
            waiter = self._waiters[task_id] = anyio.Event()
        await waiter.wait()

    def _wake(self, task_id: str) -> None:
        waiter = self._waiters.pop(task_id, None)
        if waiter is not None:
            waiter.set()

    def drop(self, task_id: str) -> None:
        """Expire ``task_id``: cancel its work, delete it, wake its waiters."""
        scope = self._running.pop(task_id, None)
        if scope is not None:
            scope.cancel()
        record = self.store.delete(task_id)
        self._wake(task_id)
        trace = self._traces.pop(task_id, None)
        if trace is not None and record is not None:
            trace.telemetry.task_finished(record.method, "expired")
        if record is not None:
            _audit.task_expired(self.peer.name, task_id, record.status.value)

    def cancel_all(self, message: str) -> int:
        """Cancel every live task of this requestor (the connection is closing); how many."""
        cancelled = 0
        for task_id in self.store.ids_of(self.key):
            if self.finish(task_id, TaskStatus.CANCELLED, message=message) is not None:
                self.cancel_work(task_id)
                cancelled += 1
        return cancelled

    def forget_all(self) -> None:
        """Delete every task of this requestor and wake every waiter (the requestor left)."""
        for task_id in self.store.ids_of(self.key):
            self.store.delete(task_id)
        self._traces.clear()
        for waiter in self._waiters.values():
            waiter.set()
        self._waiters.clear()
