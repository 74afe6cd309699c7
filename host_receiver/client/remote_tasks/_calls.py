"""The connection's part that follows the server's tasks: :class:`RemoteTaskCalls`.

Holds the 2025-11-25 task augmentation of ``tools/call`` (when asked, or when
the tool's ``execution.taskSupport`` is ``"required"``; never without the
server's ``tasks.requests.tools.call`` or for a tool that forbids it), the
one way both eras' tasks are followed (:meth:`RemoteTaskCalls._follow`: kept
in the task store while they run, when the options name one), the tasks
extension's ``subscriptions/listen`` (:meth:`RemoteTaskCalls._listen`, for a
server that advertises the extension), and ``resume_task`` and
``cancel_task``. It is a mixin of ``ClientConnection``: what it uses of the
connection is declared for the type checker only, so this package imports
nothing of the connection above it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from host_receiver.client.remote_tasks._legacy import follow_legacy_task
from host_receiver.client.remote_tasks._modern import follow_task
from host_receiver.client.remote_tasks._polls import TaskObserver, birth, current_task
from host_receiver.client.remote_tasks.store import StoredTask
from host_receiver.errors import INVALID_PARAMS, ProtocolError, RemoteTaskLost, RpcError
from host_receiver.protocol.modern import TASKS_EXTENSION, remote_task
from host_receiver.protocol.results import CallToolResult, parse_result
from host_receiver.protocol.types import RequestId
from host_receiver.protocol.versions import Era
from host_receiver.sanitize import safe_id, safe_text
from host_receiver.session import ProgressCallback

if TYPE_CHECKING:
    from host_receiver import telemetry
    from host_receiver.client.options import ConnectionOptions
    from host_receiver.client.remote_tasks._news import TaskNews
    from host_receiver.protocol.results import ListedTool
    from host_receiver.session import Session

__all__ = ["RemoteTaskCalls"]


class RemoteTaskCalls:
    """Following the server's tasks, for a ``ClientConnection`` (rules in the module docstring)."""

    if TYPE_CHECKING:  # what the connection's other parts provide
        _options: ConnectionOptions
        _address: dict[str, Any] | None
        _session: Session
        _task_news: TaskNews
        _telemetry: telemetry.Telemetry

        @property
        def name(self) -> str: ...
        @property
        def era(self) -> Era: ...
        @property
        def protocol_version(self) -> str: ...
        @property
        def server_capabilities(self) -> dict[str, Any]: ...
        def _facts(self) -> dict[str, Any]: ...
        async def request(
            self,
            method: str,
            params: dict[str, Any] | None = None,
            *,
            timeout: float | None = None,
            on_progress: ProgressCallback | None = None,
        ) -> dict[str, Any]: ...
        async def _sent(
            self,
            method: str,
            params: dict[str, Any] | None,
            timeout: float | None,
            on_progress: ProgressCallback | None,
            sent_as: Callable[[RequestId], None] | None = None,
            peer_ends: bool = False,
        ) -> dict[str, Any]: ...
        async def _fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]: ...
        async def tool_definition(self, name: str, *, timeout: float | None = None) -> ListedTool | None: ...

    async def _task_member(
        self, name: str, task: bool | None, ttl_ms: int | None, timeout: float | None
    ) -> dict[str, Any] | None:
        """The ``task`` of a 2025-11-25 ``tools/call`` of ``name``, or None to call it plainly."""
        if task is False:
            return None
        offered = self.server_capabilities.get("tasks")
        requests = offered.get("requests") if isinstance(offered, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        if not (isinstance(tools, dict) and isinstance(tools.get("call"), dict)):
            if task:
                raise ProtocolError(
                    f"{self.name} does not run tool calls as tasks "
                    "(its capabilities have no tasks.requests.tools.call)"
                )
            return None
        tool = await self.tool_definition(name, timeout=timeout)
        execution = (tool.model_extra or {}).get("execution") if tool is not None else None
        support = execution.get("taskSupport") if isinstance(execution, dict) else None
        if task is None and support != "required":
            return None
        if task and tool is not None and support not in ("optional", "required"):
            shown = "absent" if support is None else repr(safe_text(str(support), 40))
            raise ProtocolError(
                f"tool {safe_text(name, 80)!r} of {self.name} does not run as a task "
                f"(its execution.taskSupport is {shown})"
            )
        return {} if ttl_ms is None else {"ttl": ttl_ms}

    async def _legacy_task_call(
        self,
        params: dict[str, Any],
        timeout: float | None,
        on_progress: ProgressCallback | None,
        on_task: TaskObserver | None,
    ) -> dict[str, Any]:
        """A task-augmented 2025-11-25 ``tools/call``, followed to its result."""
        result = await self._session.request("tools/call", params, timeout=timeout, on_progress=on_progress)
        created = result.get("task")
        if "content" in result or not isinstance(created, dict):
            return result  # the server ran it as a plain call
        return await self._follow(created, params, timeout, on_task)

    async def _follow(
        self,
        created: dict[str, Any],
        params: dict[str, Any],
        timeout: float | None,
        on_task: TaskObserver | None,
        born: float | None = None,
    ) -> dict[str, Any]:
        """Follow the server's task ``created`` describes (a ``tools/call`` of ``params``) to its end,
        kept in the task store while it runs when the options name one. ``born``: when the task was
        created (wall clock; None: now), whence its ttl counts."""
        legacy = self.era is Era.LEGACY

        async def send_task_request(method: str, task_params: dict[str, Any]) -> dict[str, Any]:
            if legacy:
                waits = None if method == "tasks/result" else timeout
                return await self._session.request(method, task_params, timeout=waits)
            return await self.request(method, task_params, timeout=timeout)

        store = self._options.task_store
        kept: StoredTask | None = None

        async def follow() -> dict[str, Any]:
            news = self._task_news
            if legacy:
                return await follow_legacy_task(created, send_task_request, news, observer=on_task, born=born)
            listen = self._listen if self._sends_task_news else None
            inputs = await store.inputs(kept) if store is not None and kept is not None else None
            return await follow_task(
                created,
                send_task_request,
                self._fulfil,
                news,
                observer=on_task,
                listen=listen,
                born=born,
                inputs=inputs,
            )

        if store is None or self._address is None:
            return await follow()
        task = remote_task(created, legacy=legacy)
        kept = StoredTask.new(
            self._address,
            self.protocol_version,
            task.task_id,
            params["name"],
            params.get("arguments"),
            task.ttl_ms,
            created=born,
        )
        return await store.keeping(kept, follow)

    @property
    def _sends_task_news(self) -> bool:
        """Whether the server advertises the tasks extension, whose ``notifications/tasks`` a
        ``subscriptions/listen`` asks for (extension-tasks-overview.mdx)."""
        extensions = self.server_capabilities.get("extensions")
        return isinstance(extensions, dict) and TASKS_EXTENSION in extensions

    async def _listen(self, task_id: str, sent_as: Callable[[RequestId], None]) -> None:
        """Hold a ``subscriptions/listen`` for the status notifications of ``task_id`` until it ends
        (the server ends it with its result or ``notifications/cancelled``, its stream drops, or the
        caller cancels: the stream is closed)."""
        params = {"notifications": {"taskIds": [task_id]}}
        with self._telemetry.client_call("subscriptions/listen", params, self._facts()) as call:
            result = await self._sent(
                "subscriptions/listen", call.params, None, None, sent_as, peer_ends=True
            )
            call.result(result)

    async def resume_task(
        self,
        task_id: str,
        tool: str,
        *,
        arguments: dict[str, Any] | None = None,
        timeout: float | None = None,
        on_task: TaskObserver | None = None,
    ) -> CallToolResult:
        """Follow the server's task ``task_id``, created for a ``tools/call`` of ``tool`` (maybe by a
        process that has since ended), to its end: its final :class:`CallToolResult`.

        It starts from the task's ``tasks/get`` answer and goes on as
        :meth:`call_tool` does (kept in the task store meanwhile, when the
        options name one). The ttl backstop counts from the task's creation:
        its record's in the task store, else the server's ``createdAt``.
        A task the server does not know is a :class:`RemoteTaskLost`.
        """
        legacy = self.era is Era.LEGACY

        async def get(method: str, task_params: dict[str, Any]) -> dict[str, Any]:
            return await self.request(method, task_params, timeout=timeout)

        store = self._options.task_store
        kept = None
        if store is not None and self._address is not None:
            kept = await store.find(self._address, task_id)
        try:
            created = await current_task(get, task_id, legacy=legacy)
        except RemoteTaskLost:
            if kept is not None and store is not None:
                await store.remove(kept.id)
            raise
        params: dict[str, Any] = (
            {"name": tool} if arguments is None else {"name": tool, "arguments": arguments}
        )
        born = kept.created if kept is not None else birth(created)
        result = await self._follow(created, params, timeout, on_task, born)
        return parse_result(CallToolResult, "tools/call", result, server=self.name)

    async def cancel_task(self, task_id: str, *, timeout: float | None = None) -> None:
        """Send ``tasks/cancel`` for the server's task ``task_id`` (cancellation is cooperative: the
        answer is an ack). A task the server does not know, or will not cancel (it has ended), is a
        :class:`RemoteTaskLost`."""
        try:
            await self.request("tasks/cancel", {"taskId": task_id}, timeout=timeout)
        except RpcError as exc:
            if exc.code != INVALID_PARAMS:
                raise
            raise RemoteTaskLost(
                f"the server does not cancel task {safe_id(task_id)}: {safe_text(exc.message, 300)}"
            ) from None
