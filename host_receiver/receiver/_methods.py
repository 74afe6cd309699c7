"""``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` for one requestor.

Rules (the tasks chapter of MCP 2025-11-25):

- A requestor sees only its own tasks. Another's task, an unknown id and an
  expired one are all -32602 ("Failed to <verb> task: <reason>", the id in
  ``data`` cut to a few dozen characters), and the refusal is audited; an
  expired id is told apart from an unknown one by the deadline the id itself
  carries.
- ``tasks/get`` answers the current ``Task``; every answer that never waits
  is computed at once, without yielding to the event loop.
- ``tasks/result`` of a terminal task replays its outcome: the result with
  ``_meta["io.modelcontextprotocol/related-task"] = {taskId}``, or the very
  JSON-RPC error the request would have got. Of a live task, it waits on an
  event (no polling) until the task is terminal, then does the same. A
  cancelled task has no result: -32603 (see docs/protocol.md).
- ``tasks/list`` walks the requestor's tasks in creation order, one page at
  a time; the cursor is opaque and tamper-evident, an invalid one -32602;
  ``nextCursor`` only when more follow.
- ``tasks/cancel`` of a terminal task is -32602 naming its status; otherwise
  the task moves to ``cancelled`` before the reply, then its work is
  cancelled, and it stays ``cancelled`` whatever the work does later.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from host_receiver.errors import INTERNAL_ERROR, InvalidCursor, RpcError, invalid_params
from host_receiver.protocol.types import RELATED_TASK_META_KEY
from host_receiver.receiver import _audit
from host_receiver.receiver._runner import TaskRunner
from host_receiver.receiver.tasks.cursor import CursorCodec
from host_receiver.receiver.tasks.record import TaskRecord, deadline_of
from host_receiver.receiver.tasks.state import TaskStatus
from host_receiver.sanitize import bounded

__all__ = ["CANCELLED_ERROR", "CANCELLED_MESSAGE", "TaskMethods"]

CANCELLED_MESSAGE = "The task was cancelled by request."
#: The error ``tasks/result`` returns for a task that was cancelled: the request
#: it wraps never produced a result. See docs/protocol.md.
CANCELLED_ERROR = RpcError(INTERNAL_ERROR, "Task was cancelled before it produced a result")


class TaskMethods:
    """Answers one requestor's ``tasks/*`` requests from the store and its runner."""

    def __init__(self, runner: TaskRunner, cursors: CursorCodec, *, page_size: int) -> None:
        self._runner = runner
        self._cursors = cursors
        self._page_size = page_size

    def get(self, task_id: str) -> dict[str, Any]:
        return self._owned(task_id, "retrieve").to_wire()

    def result(self, task_id: str) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        record = self._owned(task_id, "retrieve result of")
        if record.is_terminal:
            return self._outcome(record)
        return self._result_when_done(task_id)

    def list(self, cursor: str | None) -> dict[str, Any]:
        runner = self._runner
        after = 0
        if cursor is not None:
            try:
                after = self._cursors.decode(runner.key, cursor)
            except InvalidCursor as exc:
                raise invalid_params(f"Invalid cursor: {exc}") from None
        records, more = runner.store.page(runner.key, after, self._page_size)
        page: dict[str, Any] = {"tasks": [r.to_wire() for r in records]}
        if more and records:
            page["nextCursor"] = self._cursors.encode(runner.key, records[-1].seq)
        return page

    def cancel(self, task_id: str) -> dict[str, Any]:
        record = self._owned(task_id, "cancel")
        if record.is_terminal:
            raise invalid_params(
                f"Cannot cancel task: already in terminal status '{record.status.value}'",
                {"taskId": task_id, "status": record.status.value},
            )
        cancelled = self._runner.finish(task_id, TaskStatus.CANCELLED, message=CANCELLED_MESSAGE)
        assert cancelled is not None
        self._runner.cancel_work(task_id)
        return cancelled.to_wire()

    # --- shared -----------------------------------------------------------------------

    def _owned(self, task_id: str, verb: str) -> TaskRecord:
        runner = self._runner
        record = runner.store.get(task_id)
        if record is not None and record.requestor == runner.key:
            return record
        if record is not None:
            reason = "Task belongs to another connection"
        else:
            deadline = deadline_of(task_id)
            expired = deadline is not None and deadline <= runner.clock()
            reason = "Task has expired" if expired else "Task not found"
        _audit.lookup_refused(runner.peer.name, task_id, reason)
        raise invalid_params(f"Failed to {verb} task: {reason}", {"taskId": bounded(task_id)})

    async def _result_when_done(self, task_id: str) -> dict[str, Any]:
        record = self._owned(task_id, "retrieve result of")
        while not record.is_terminal:
            await self._runner.wait_finished(task_id)
            record = self._owned(task_id, "retrieve result of")
        return self._outcome(record)

    def _outcome(self, record: TaskRecord) -> dict[str, Any]:
        """``tasks/result`` of a terminal task: its result, or its error raised."""
        task_id = record.task_id
        _audit.result_retrieved(self._runner.peer.name, task_id, record.status.value)
        if record.error is not None:
            raise RpcError.from_dict(record.error)
        if record.result is None:
            raise CANCELLED_ERROR
        meta = dict(record.result.get("_meta") or {})
        meta[RELATED_TASK_META_KEY] = {"taskId": task_id}
        return {**record.result, "_meta": meta}
