"""The receiver: routes server-initiated requests, and runs them as tasks.

Theory of operation. A :class:`Receiver` holds what is configured (handlers,
limits, the task store); a server connection attaches to it as a
:class:`Requestor` scope. Everything a requestor starts lives in that scope's
task group, and leaving the scope cancels it and deletes its tasks.

Requests that never wait (``tasks/get``, ``tasks/list``, ``tasks/cancel``,
task creation, ``tasks/result`` of a finished task) are answered synchronously
by :meth:`Requestor.dispatch`; only work and waits are awaitables. The session
writes those answers without starting a task, which is most of their speed.

For ``sampling/createMessage`` and ``elicitation/create``:
1. params are validated (-32602 naming the field) and the protocol's pre-checks
   run (sampling tool rules, declared elicitation modes);
2. with a ``task`` member, when that request type has a declared task
   capability and the connection speaks 2025-11-25, a task record is stored,
   the work is started in the scope's task group, and ``CreateTaskResult`` is
   returned at once; otherwise the work runs inside the request and its result
   (or error) is the response.
Task outcomes are stored as data. ``tasks/result`` waits on an event (no
polling) until the task is terminal, then replays the outcome: the result with
the related-task ``_meta``, or the same JSON-RPC error. ``tasks/cancel`` moves
the task to ``cancelled`` before it replies, then cancels the work; a record in
a terminal status never changes again (the lifecycle table forbids it).
Each scope expires its tasks ttl after creation from a heap of deadlines,
sleeping until the earliest one (no scans).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

import anyio
import anyio.abc
from pydantic import BaseModel, ValidationError

from host_receiver.elicitation import check_request as check_elicitation
from host_receiver.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    RpcError,
    invalid_params,
    method_not_found,
)
from host_receiver.protocol.types import (
    LATEST_PROTOCOL_VERSION,
    RELATED_TASK_META_KEY,
    CreateMessageRequestParams,
    ElicitationCompleteParams,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ListTasksParams,
    RequestParams,
    TaskIdParams,
    dump,
)
from host_receiver.sampling import SamplingLimits, failure_message
from host_receiver.sampling import check_request as check_sampling
from host_receiver.tasks.cursor import CursorCodec, InvalidCursor
from host_receiver.tasks.record import TaskRecord, deadline_of, new_task_id
from host_receiver.tasks.state import TaskStatus
from host_receiver.tasks.store import MemoryTaskStore, TaskStore
from host_receiver.work import ElicitationHandler, Notify, NotifySoon, SamplingHandler, WorkContext

_M = TypeVar("_M", bound=BaseModel)
#: A request's answer now, or an awaitable of it for requests that must wait.
Answer: TypeAlias = dict[str, Any] | Awaitable[dict[str, Any]]

logger = logging.getLogger("host_receiver.receiver")
audit = logging.getLogger("host_receiver.audit")

SAMPLING = "sampling/createMessage"
ELICITATION = "elicitation/create"
ElicitationMode = Literal["form", "url"]

CANCELLED_MESSAGE = "The task was cancelled by request."
#: The error ``tasks/result`` returns for a task that was cancelled: the request
#: it wraps never produced a result. See docs/protocol.md.
CANCELLED_ERROR = RpcError(INTERNAL_ERROR, "Task was cancelled before it produced a result")


@dataclass(frozen=True, slots=True)
class ReceiverConfig:
    """Limits and defaults of the task receiver (all durations in milliseconds)."""

    #: ttl given to a task whose request did not ask for one (None: unlimited).
    default_ttl_ms: int | None = 3_600_000
    #: Longest ttl granted; longer requests are shortened to it (None: no cap).
    max_ttl_ms: int | None = 86_400_000
    #: Suggested polling interval reported in every task (None: not reported).
    poll_interval_ms: int | None = 1_000
    #: Tasks of one requestor that may be working or input_required at once.
    max_active_tasks: int = 256
    #: Tasks of one requestor kept at once, finished ones included.
    max_stored_tasks: int = 10_000
    #: Tasks in one ``tasks/list`` page.
    page_size: int = 100
    #: Request types that accept task augmentation (a subset of what is handled).
    task_methods: frozenset[str] = frozenset({SAMPLING, ELICITATION})
    #: Whether ``tasks/list`` and ``tasks/cancel`` are offered.
    tasks_list: bool = True
    tasks_cancel: bool = True


@dataclass(frozen=True, slots=True)
class _Start:
    """A created task whose work is still to be started."""

    task_id: str
    method: str
    params: RequestParams


class Receiver:
    """Serves sampling and elicitation requests, as tasks when asked, for any number of servers."""

    def __init__(
        self,
        *,
        sampling: SamplingHandler | None = None,
        elicitation: ElicitationHandler | None = None,
        sampling_tools: bool = True,
        elicitation_modes: tuple[ElicitationMode, ...] = ("form", "url"),
        config: ReceiverConfig | None = None,
        sampling_limits: SamplingLimits | None = None,
        store: TaskStore | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sampling = sampling
        self.elicitation = elicitation
        self.sampling_tools = sampling_tools and sampling is not None
        self.elicitation_modes = elicitation_modes if elicitation is not None else ()
        self.config = config or ReceiverConfig()
        self.sampling_limits = sampling_limits or SamplingLimits()
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.clock = clock
        self._cursors = CursorCodec()
        self._seq = itertools.count(1)

    # --- capabilities ----------------------------------------------------

    def handles(self, method: str) -> bool:
        """Whether a handler serves ``method``."""
        return (method == SAMPLING and self.sampling is not None) or (
            method == ELICITATION and self.elicitation is not None
        )

    def task_capable(self, method: str, protocol_version: str = LATEST_PROTOCOL_VERSION) -> bool:
        """Whether ``method`` is served as a task when the requestor asks for one."""
        return (
            protocol_version >= "2025-11-25" and method in self.config.task_methods and self.handles(method)
        )

    def capabilities(self, protocol_version: str = LATEST_PROTOCOL_VERSION) -> dict[str, Any]:
        """The client capabilities this receiver really serves, for ``protocol_version``."""
        caps: dict[str, Any] = {}
        modern = protocol_version >= "2025-11-25"
        if self.sampling is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools and modern else {}
        if self.elicitation is not None and protocol_version >= "2025-06-18":
            if modern:
                caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
            elif "form" in self.elicitation_modes:
                caps["elicitation"] = {}
        requests: dict[str, Any] = {}
        if self.task_capable(SAMPLING, protocol_version):
            requests["sampling"] = {"createMessage": {}}
        if self.task_capable(ELICITATION, protocol_version):
            requests["elicitation"] = {"create": {}}
        if requests:
            tasks: dict[str, Any] = {}
            if self.config.tasks_list:
                tasks["list"] = {}
            if self.config.tasks_cancel:
                tasks["cancel"] = {}
            tasks["requests"] = requests
            caps["tasks"] = tasks
        return caps

    # --- requestor scopes --------------------------------------------------

    @asynccontextmanager
    async def attach(
        self,
        notify: Notify,
        *,
        name: str = "server",
        protocol_version: str = LATEST_PROTOCOL_VERSION,
        key: str | None = None,
    ) -> AsyncIterator[Requestor]:
        """Serve one server connection; leaving the block ends all of its work and tasks.

        ``notify`` sends a notification to that server. ``key`` identifies the
        requestor in the store (a fresh random key by default). Task status
        notifications go through :attr:`Requestor.notify_soon`, which a host
        may point at a sender that never waits (``Session.notify_soon``).
        """
        requestor = Requestor(self, notify, name=name, key=key or secrets.token_hex(16))
        requestor.protocol_version = protocol_version
        async with anyio.create_task_group() as group:
            requestor._group = group
            group.start_soon(requestor._expire_forever)
            group.start_soon(requestor._start_forever)
            try:
                yield requestor
            finally:
                group.cancel_scope.cancel()
        requestor._forget_all()


class Requestor:
    """One server connection's view of the receiver: its requests, its tasks."""

    def __init__(self, receiver: Receiver, notify: Notify, *, name: str, key: str) -> None:
        self.receiver = receiver
        self.name = name
        self.key = key
        self.protocol_version = LATEST_PROTOCOL_VERSION
        self._notify = notify
        #: Sends a notification without waiting: replaced by the host once the
        #: connection is up; until then each one is sent from its own task.
        self.notify_soon: NotifySoon = self._notify_in_background
        self._group: anyio.abc.TaskGroup | None = None
        self._running: dict[str, anyio.CancelScope] = {}  # the work's scope, by task id
        self._starts: deque[_Start] = deque()
        self._starts_waiting = anyio.Event()
        self._waiters: dict[str, anyio.Event] = {}
        self._deadlines: list[tuple[float, str]] = []
        self._deadline_changed = anyio.Event()
        self._elicitation_listeners: dict[str, list[Callable[[], None]]] = {}

    # --- entry points ----------------------------------------------------------

    async def handle_request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Answer one request from the server; raise RpcError for an error response."""
        answer = self.dispatch(method, params)
        return answer if isinstance(answer, dict) else await answer

    def dispatch(self, method: str, params: dict[str, Any] | None) -> Answer:
        """The answer to one request, now, or an awaitable for requests that must wait.

        Raises RpcError for an error response. Only plain (not task-augmented)
        sampling and elicitation and ``tasks/result`` of an unfinished task
        return an awaitable.
        """
        receiver = self.receiver
        if method == "tasks/get":
            return self._owned(_task_id(params), "retrieve").to_wire()
        if method == SAMPLING and receiver.sampling is not None:
            sampling = _parse(CreateMessageRequestParams, params)
            check_sampling(
                sampling,
                tools_declared=receiver.sampling_tools and self.protocol_version >= "2025-11-25",
                limits=receiver.sampling_limits,
            )
            return self._serve(method, sampling)
        if method == ELICITATION and receiver.elicitation is not None:
            elicit = _parse_elicitation(params)
            check_elicitation(elicit, modes=self._elicitation_modes())
            return self._serve(method, elicit)
        if method == "tasks/result":
            return self._result(_task_id(params))
        if method == "tasks/list" and receiver.config.tasks_list and self._offers_tasks():
            return self._list(_parse(ListTasksParams, params).cursor)
        if method == "tasks/cancel" and receiver.config.tasks_cancel and self._offers_tasks():
            return self._cancel(_task_id(params))
        raise method_not_found(method)

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        """Take a notification from the server (unknown ones are ignored, as JSON-RPC says)."""
        if method == "notifications/elicitation/complete":
            try:
                done = _parse(ElicitationCompleteParams, params)
            except RpcError as exc:
                logger.warning("ignored malformed elicitation/complete from %s: %s", self.name, exc.message)
                return
            for listener in self._elicitation_listeners.pop(done.elicitation_id, []):
                listener()

    def on_elicitation_complete(
        self, elicitation_id: str, listener: Callable[[], None]
    ) -> Callable[[], None]:
        """Call ``listener`` when the server says URL elicitation ``elicitation_id`` is done.

        Returns a function that removes the listener. Unknown and repeated ids are ignored.
        """
        listeners = self._elicitation_listeners.setdefault(elicitation_id, [])
        listeners.append(listener)

        def remove() -> None:
            if listener in listeners:
                listeners.remove(listener)
            if not listeners and self._elicitation_listeners.get(elicitation_id) is listeners:
                del self._elicitation_listeners[elicitation_id]

        return remove

    # --- plain and task-augmented requests --------------------------------------

    def _elicitation_modes(self) -> tuple[str, ...]:
        if self.protocol_version >= "2025-11-25":
            return self.receiver.elicitation_modes
        return ("form",) if "form" in self.receiver.elicitation_modes else ()

    def _offers_tasks(self) -> bool:
        return any(self.receiver.task_capable(m, self.protocol_version) for m in (SAMPLING, ELICITATION))

    def _serve(self, method: str, params: RequestParams) -> Answer:
        if params.task is not None and self.receiver.task_capable(method, self.protocol_version):
            return self._create_task(method, params)
        return self._work(method, params, self._context(None, params))

    def _context(self, task_id: str | None, params: RequestParams) -> WorkContext:
        """What the work of one request sees; status messages only for a task."""
        return WorkContext(
            requestor=self.key,
            requestor_name=self.name,
            task_id=task_id,
            progress_token=params.progress_token,
            notify=self._notify,
            status=self._set_status_message if task_id is not None else None,
        )

    async def _work(self, method: str, params: RequestParams, context: WorkContext) -> dict[str, Any]:
        receiver = self.receiver
        if method == SAMPLING:
            assert receiver.sampling is not None and isinstance(params, CreateMessageRequestParams)
            return dump(await receiver.sampling(params, context))
        assert receiver.elicitation is not None
        assert isinstance(params, ElicitRequestFormParams | ElicitRequestURLParams)
        return dump(await receiver.elicitation(params, context))

    def _create_task(self, method: str, params: RequestParams) -> dict[str, Any]:
        receiver, config = self.receiver, self.receiver.config
        assert params.task is not None
        stored, active = receiver.store.counts(self.key)
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
        now = receiver.clock()
        deadline = None if ttl is None else now + ttl / 1000
        record = TaskRecord(
            task_id=new_task_id(deadline),
            requestor=self.key,
            seq=next(receiver._seq),
            method=method,
            created_at=now,
            last_updated_at=now,
            ttl_ms=ttl,
            poll_interval_ms=config.poll_interval_ms,
        )
        receiver.store.insert(record)
        audit.info(
            "task created requestor=%s task=%s method=%s ttl=%s", self.name, record.task_id, method, ttl
        )
        if deadline is not None:
            self._schedule_expiry(deadline, record.task_id)
        self._starts.append(_Start(record.task_id, method, params))
        self._starts_waiting.set()
        return {"task": record.to_wire()}

    async def _start_forever(self) -> None:
        """Start the work of created tasks, once their CreateTaskResult is on its way.

        Starting a task's work takes longer than everything else in creating it,
        so it happens here, after the answer was sent (a status notification
        can then never overtake its CreateTaskResult either).
        """
        while True:
            await self._starts_waiting.wait()
            self._starts_waiting = anyio.Event()
            while self._starts:
                self._start(self._starts.popleft())

    def _start(self, start: _Start) -> None:
        record = self.receiver.store.get(start.task_id)
        if record is None or record.is_terminal:  # cancelled or expired before it started
            return
        scope = self._running[start.task_id] = anyio.CancelScope()
        assert self._group is not None
        self._group.start_soon(self._run_task, start, scope, self._context(start.task_id, start.params))

    def _granted_ttl(self, requested: int | None) -> int | None:
        config = self.receiver.config
        if requested is None:
            return config.default_ttl_ms
        if requested < 0:
            raise invalid_params("task.ttl must not be negative")
        if config.max_ttl_ms is not None and requested > config.max_ttl_ms:
            return config.max_ttl_ms
        return requested

    async def _run_task(self, start: _Start, scope: anyio.CancelScope, context: WorkContext) -> None:
        task_id, method, params = start.task_id, start.method, start.params
        result: dict[str, Any] | None = None
        error: RpcError | None = None
        try:
            with scope:
                try:
                    result = await self._work(method, params, context)
                except RpcError as exc:
                    error = exc
                except Exception:
                    logger.exception("%s task %s of %s crashed", method, task_id, self.name)
                    error = RpcError(INTERNAL_ERROR, f"Internal error while serving {method}")
            if scope.cancel_called:
                return
            if error is not None:
                message = failure_message(error) if method == SAMPLING else f"Failed: {error.message}"
                self._finish(task_id, TaskStatus.FAILED, message=message, error=error)
            else:
                self._finish(task_id, TaskStatus.COMPLETED, result=result)
        finally:
            self._running.pop(task_id, None)

    # --- task state changes --------------------------------------------------------

    def _finish(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        message: str | None = None,
        result: dict[str, Any] | None = None,
        error: RpcError | None = None,
    ) -> TaskRecord | None:
        """Move a live task to a terminal status; None if it is gone or already terminal."""
        store = self.receiver.store
        record = store.get(task_id)
        if record is None or record.is_terminal:
            return None
        record = record.moved_to(status, self.receiver.clock(), message=message, result=result, error=error)
        store.replace(record)
        audit.info("task %s requestor=%s task=%s", status.value, self.name, task_id)
        waiter = self._waiters.pop(task_id, None)
        if waiter is not None:
            waiter.set()
        self.notify_soon("notifications/tasks/status", record.to_wire())
        return record

    async def _set_status_message(self, task_id: str, message: str) -> None:
        store = self.receiver.store
        record = store.get(task_id)
        if record is None or record.is_terminal or record.status_message == message:
            return
        store.replace(record.with_message(message, self.receiver.clock()))

    def _notify_in_background(self, method: str, params: dict[str, Any] | None) -> None:
        """Send a notification from a task of this scope (until the host offers better)."""
        try:
            assert self._group is not None
            self._group.start_soon(self._notify_quietly, method, params)
        except RuntimeError:  # the scope has ended: so has the connection
            logger.debug("%s not sent to %s: the connection has ended", method, self.name)

    async def _notify_quietly(self, method: str, params: dict[str, Any] | None) -> None:
        try:
            await self._notify(method, params)
        except Exception as exc:  # the connection may be closing; the task state stands
            logger.debug("could not send %s to %s: %r", method, self.name, exc)

    # --- tasks/* -----------------------------------------------------------------------

    def _owned(self, task_id: str, verb: str) -> TaskRecord:
        record = self.receiver.store.get(task_id)
        if record is not None and record.requestor == self.key:
            return record
        if record is not None:
            reason = "Task belongs to another connection"
        else:
            deadline = deadline_of(task_id)
            expired = deadline is not None and deadline <= self.receiver.clock()
            reason = "Task has expired" if expired else "Task not found"
        audit.info("task lookup refused requestor=%s task=%s reason=%s", self.name, task_id, reason)
        raise invalid_params(f"Failed to {verb} task: {reason}", {"taskId": task_id})

    def _result(self, task_id: str) -> Answer:
        record = self._owned(task_id, "retrieve result of")
        if record.is_terminal:
            return self._outcome(record)
        return self._result_when_done(task_id)

    async def _result_when_done(self, task_id: str) -> dict[str, Any]:
        record = self._owned(task_id, "retrieve result of")
        while not record.is_terminal:
            waiter = self._waiters.get(task_id)
            if waiter is None:
                waiter = self._waiters[task_id] = anyio.Event()
            await waiter.wait()
            record = self._owned(task_id, "retrieve result of")
        return self._outcome(record)

    def _outcome(self, record: TaskRecord) -> dict[str, Any]:
        """``tasks/result`` of a terminal task: its result, or its error raised."""
        task_id = record.task_id
        audit.info(
            "task result retrieved requestor=%s task=%s status=%s", self.name, task_id, record.status.value
        )
        if record.error is not None:
            raise RpcError.from_dict(record.error)
        if record.result is None:
            raise CANCELLED_ERROR
        meta = dict(record.result.get("_meta") or {})
        meta[RELATED_TASK_META_KEY] = {"taskId": task_id}
        return {**record.result, "_meta": meta}

    def _list(self, cursor: str | None) -> dict[str, Any]:
        after = 0
        if cursor is not None:
            try:
                after = self.receiver._cursors.decode(self.key, cursor)
            except InvalidCursor as exc:
                raise invalid_params(f"Invalid cursor: {exc}") from None
        records, more = self.receiver.store.page(self.key, after, self.receiver.config.page_size)
        page: dict[str, Any] = {"tasks": [r.to_wire() for r in records]}
        if more and records:
            page["nextCursor"] = self.receiver._cursors.encode(self.key, records[-1].seq)
        return page

    def _cancel(self, task_id: str) -> dict[str, Any]:
        record = self._owned(task_id, "cancel")
        if record.is_terminal:
            raise invalid_params(
                f"Cannot cancel task: already in terminal status '{record.status.value}'",
                {"taskId": task_id, "status": record.status.value},
            )
        cancelled = self._finish(task_id, TaskStatus.CANCELLED, message=CANCELLED_MESSAGE)
        assert cancelled is not None
        scope = self._running.get(task_id)
        if scope is not None:
            scope.cancel()
        return cancelled.to_wire()

    # --- expiry ---------------------------------------------------------------------

    def _schedule_expiry(self, deadline: float, task_id: str) -> None:
        earliest = self._deadlines[0][0] if self._deadlines else math.inf
        heapq.heappush(self._deadlines, (deadline, task_id))
        if deadline < earliest:
            self._deadline_changed.set()

    def expire_due(self) -> None:
        """Delete every task whose ttl has run out by the receiver's clock (runs on its own
        schedule; call it after moving a test clock)."""
        now = self.receiver.clock()
        while self._deadlines and self._deadlines[0][0] <= now:
            _, task_id = heapq.heappop(self._deadlines)
            self._expire(task_id)

    async def _expire_forever(self) -> None:
        while True:
            self.expire_due()
            self._deadline_changed = anyio.Event()
            delay = self._deadlines[0][0] - self.receiver.clock() if self._deadlines else math.inf
            with anyio.move_on_after(delay):
                await self._deadline_changed.wait()

    def _expire(self, task_id: str) -> None:
        scope = self._running.pop(task_id, None)
        if scope is not None:
            scope.cancel()
        record = self.receiver.store.delete(task_id)
        waiter = self._waiters.pop(task_id, None)
        if waiter is not None:
            waiter.set()
        if record is not None:
            audit.info("task expired requestor=%s task=%s status=%s", self.name, task_id, record.status.value)

    def _forget_all(self) -> None:
        for task_id in self.receiver.store.ids_of(self.key):
            self.receiver.store.delete(task_id)
        for waiter in self._waiters.values():
            waiter.set()
        self._waiters.clear()


def _parse(model: type[_M], params: dict[str, Any] | None) -> _M:
    # The model's own validator: model_validate adds a microsecond of argument
    # handling to every request and does nothing else for plain dicts.
    try:
        parsed: _M = model.__pydantic_validator__.validate_python(params if params is not None else {})
    except ValidationError as exc:
        raise invalid_params(_describe(exc)) from None
    return parsed


def _task_id(params: dict[str, Any] | None) -> str:
    """``taskId`` of ``tasks/get``, ``tasks/result`` and ``tasks/cancel`` params (TaskIdParams).

    The usual params, a string ``taskId`` and at most an object ``_meta``, are
    read directly (validating them would cost as much as the rest of the
    answer); anything else goes through the model, which says precisely what
    is wrong.
    """
    if params is not None:
        task_id = params.get("taskId")
        meta = params.get("_meta")
        if type(task_id) is str and (meta is None or type(meta) is dict):
            return task_id
    return _parse(TaskIdParams, params).task_id


def _parse_elicitation(params: dict[str, Any] | None) -> ElicitRequestParams:
    mode = (params or {}).get("mode", "form")
    if mode == "url":
        return _parse(ElicitRequestURLParams, params)
    if mode == "form":
        return _parse(ElicitRequestFormParams, params)
    raise invalid_params(f"Unsupported elicitation mode: {mode!r}")


def _describe(exc: ValidationError) -> str:
    """A -32602 message naming each bad field by its wire path."""
    problems = []
    for error in exc.errors()[:5]:
        path = ".".join(str(part) for part in error["loc"]) or "params"
        problems.append(f"{path}: {error['msg']}")
    more = exc.error_count() - len(problems)
    suffix = f" (and {more} more)" if more > 0 else ""
    return "Invalid params: " + "; ".join(problems) + suffix
