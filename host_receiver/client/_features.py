"""Tools, prompts and resources: the calls a host makes of a server, each to its final, typed result.

:class:`ServerFeatures` lists the tools (every page; on HTTP, tools whose
header annotations break the binding's rules are left out), keeps the last
full list until ``notifications/tools/list_changed``, and calls a tool, gets
a prompt or reads a resource, answering a modern server's input rounds
(:mod:`._input_rounds`) and following its task
(:mod:`.remote_tasks._calls`), to a typed model
(:mod:`host_receiver.protocol.results`; one that breaks the schema is a
:class:`BadResult` naming the field). On HTTP, a -32020 answer to
``tools/call`` makes it list the tools again and send the call once more;
a call of a tool left out is refused (:class:`InvalidToolHeaders`). A -32042
answer (``URLElicitationRequiredError``) offers its links to the person and,
once they are done, sends the request once more (:mod:`._links`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from host_receiver.client._inbound import InboundRouting
from host_receiver.client._input_rounds import fulfil_all, with_input_rounds
from host_receiver.client._kept_calls import KeptCall, inbox_answers
from host_receiver.client._links import complete_links, required_links
from host_receiver.client._sending import ROUND_METHODS, EraSending
from host_receiver.client.remote_tasks._calls import RemoteTaskCalls
from host_receiver.client.remote_tasks._handle import TaskHandle
from host_receiver.client.remote_tasks._polls import TaskObserver
from host_receiver.client.remote_tasks.store import server_identity
from host_receiver.errors import (
    URL_ELICITATION_REQUIRED,
    BadResult,
    InputRequestFailed,
    InputRoundsExceeded,
    ProtocolError,
    RpcError,
    UnknownCall,
    UrlElicitationRequired,
)
from host_receiver.protocol.modern import HEADER_MISMATCH, RemoteTask, result_type
from host_receiver.protocol.results import (
    CallToolResult,
    GetPromptResult,
    ListedTool,
    ReadResourceResult,
    parse_result,
    parse_tools,
)
from host_receiver.protocol.versions import Era
from host_receiver.sanitize import safe_id, safe_logger
from host_receiver.session import ProgressCallback

__all__ = ["ServerFeatures"]

logger = safe_logger("host_receiver.client.connection")


class ServerFeatures(RemoteTaskCalls, EraSending, InboundRouting):
    """The connection's part that calls tools, gets prompts and reads resources."""

    async def list_tools(self, *, timeout: float | None = None) -> list[ListedTool]:
        """Every tool the server offers, following ``nextCursor`` to the last page.

        ``timeout`` applies to each page. On HTTP, tools whose header
        annotations break the binding's rules are left out, with a warning.
        A tool that breaks the schema is a :class:`BadResult` naming its field.
        """
        tools: list[ListedTool] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await self.request(
                "tools/list", {"cursor": cursor} if cursor is not None else None, timeout=timeout
            )
            items = page.get("tools")
            if not isinstance(items, list):
                raise ProtocolError("tools/list result has no tools array")
            page_tools = [t for t in items if isinstance(t, dict)]
            accepted = (
                page_tools if self._mirror is None else self._mirror.accept_tools(page_tools, self.name)
            )
            tools.extend(parse_tools(accepted, server=self.name))
            cursor = page.get("nextCursor")
            if cursor is None:
                self._tools = {tool.name: tool for tool in tools}
                return tools
            if not isinstance(cursor, str) or cursor in seen:
                raise ProtocolError(f"tools/list returned a bad or repeated cursor: {safe_id(cursor)}")
            seen.add(cursor)

    async def tool_definition(self, name: str, *, timeout: float | None = None) -> ListedTool | None:
        """The tool ``name`` as the server lists it (None if it lists no such tool).

        The tools are listed (every page) when no full list is known yet, or
        the server said it changed (``notifications/tools/list_changed``);
        otherwise the last list answers. A server without the ``tools``
        capability lists none.
        """
        if self._tools is None:
            if "tools" not in self.server_capabilities:
                return None
            await self.list_tools(timeout=timeout)
        return self._tools.get(name) if self._tools is not None else None

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_task: TaskObserver | None = None,
        task: bool | None = None,
        task_ttl_ms: int | None = None,
    ) -> CallToolResult:
        """Call a tool and return its final :class:`CallToolResult`.

        A tool that failed is a result with ``is_error=True``, not an
        exception. On a modern connection the server's input rounds are
        answered and its task (tasks extension) followed to its end;
        ``on_task`` is told each new state of that task once. ``timeout`` applies to
        each request sent (but ``tasks/result``, which waits for the task's
        end). A result that breaks the schema is a :class:`BadResult` naming
        the field.

        ``on_progress(progress, total, message)`` is told each
        ``notifications/progress`` the server sends for the call, in order,
        before this returns: the request carries a ``_meta.progressToken``
        (in either era; each request of the call, an input round's retry
        too, has its own). Without it no token is sent.

        ``task`` is for 2025-11-25 servers (a 2026-07-28 server decides
        itself): True sends the call task-augmented (with ``task_ttl_ms`` as
        the ttl asked for, if given), False never, None (the default) when the
        tool's ``execution.taskSupport`` is ``"required"`` (the tools are
        listed first if the definition is not known). The task is followed to
        its end as above. Asking for a task a server or tool does not offer is
        a :class:`ProtocolError` saying which.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if self.era is Era.LEGACY:
            augment = await self._task_member(name, task, task_ttl_ms, timeout)
            if augment is not None:
                params["task"] = augment
                result = await self._legacy_task_call(params, timeout, on_progress, on_task)
                return parse_result(CallToolResult, "tools/call", result, server=self.name)
        elif self._mirror is not None:  # its x-mcp-header annotations are mirrored: know them first
            await self.tool_definition(name, timeout=timeout)
            self._mirror.check_callable(name, self.name)
        try:
            result = await self._with_links("tools/call", params, timeout, on_progress, on_task)
        except RpcError as exc:
            if exc.code != HEADER_MISMATCH or self.era is Era.LEGACY:
                raise
            logger.info("%s refused the headers of tools/call %s; listing the tools again", self.name, name)
            await self.list_tools(timeout=timeout)
            if self._mirror is not None:
                self._mirror.check_callable(name, self.name)
            result = await self._with_links("tools/call", params, timeout, on_progress, on_task)
        return parse_result(CallToolResult, "tools/call", result, server=self.name)

    @asynccontextmanager
    async def watch_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        task: bool | None = None,
        task_ttl_ms: int | None = None,
    ) -> AsyncIterator[TaskHandle]:
        """Call a tool as :meth:`call_tool` does, and yield a :class:`TaskHandle` to watch it.

            async with server.watch_tool("deploy", {"env": "prod"}) as call:
                async for task in call.updates():
                    show(task.status, task.status_message)
                result = await call.result()

        The call runs while the block does; leaving the block before it ends
        cancels it (the server's task gets ``tasks/cancel``).
        """

        def call(observer: TaskObserver) -> Awaitable[CallToolResult]:
            return self.call_tool(
                name,
                arguments,
                timeout=timeout,
                on_progress=on_progress,
                on_task=observer,
                task=task,
                task_ttl_ms=task_ttl_ms,
            )

        handle = TaskHandle()
        async with anyio.create_task_group() as group:
            group.start_soon(handle._run, call)
            try:
                yield handle
            finally:
                handle.cancel()

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> GetPromptResult:
        """Get a prompt (answering a modern server's input rounds); returns :class:`GetPromptResult`.

        ``on_progress`` as for :meth:`call_tool`.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        result = await self._with_links("prompts/get", params, timeout, on_progress, None)
        return parse_result(GetPromptResult, "prompts/get", result, server=self.name)

    async def read_resource(
        self, uri: str, *, timeout: float | None = None, on_progress: ProgressCallback | None = None
    ) -> ReadResourceResult:
        """Read a resource (answering a modern server's input rounds); returns :class:`ReadResourceResult`.

        ``on_progress`` as for :meth:`call_tool`.
        """
        result = await self._with_links("resources/read", {"uri": uri}, timeout, on_progress, None)
        return parse_result(ReadResourceResult, "resources/read", result, server=self.name)

    async def _with_links(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        on_progress: ProgressCallback | None,
        on_task: TaskObserver | None,
    ) -> dict[str, Any]:
        """:meth:`_with_rounds`, and once more after the links a -32042 answer needs (:mod:`._links`)."""
        try:
            return await self._with_rounds(method, params, timeout, on_progress, on_task)
        except RpcError as exc:
            if exc.code != URL_ELICITATION_REQUIRED or isinstance(exc, UrlElicitationRequired):
                raise
            links = required_links(exc, self.name, method)
        logger.info("%s needs %d link(s) completed before %s", self.name, len(links), method)
        serving = self._serving
        await complete_links(
            links,
            server=self.name,
            method=method,
            fulfil=self._fulfil,
            ask_done=getattr(serving, "link_done", None),
            listen=getattr(serving, "on_elicitation_complete", None),
            wait=self._options.url_elicitation_wait,
        )
        try:
            return await self._with_rounds(method, params, timeout, on_progress, on_task)
        except RpcError as exc:
            if exc.code != URL_ELICITATION_REQUIRED or isinstance(exc, UrlElicitationRequired):
                raise
            urls = [link.url for link in links]
            raise UrlElicitationRequired(
                self.name, method, "it asked for them again after they were completed", urls, exc.data
            ) from None

    async def _with_rounds(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        on_progress: ProgressCallback | None,
        on_task: TaskObserver | None,
        resumed: KeptCall | None = None,
        first: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        if self.era is Era.LEGACY:
            return await self.request(method, params, timeout=timeout, on_progress=on_progress)

        async def send(attempt: dict[str, Any]) -> dict[str, Any]:
            return await self.request(method, attempt, timeout=timeout, on_progress=on_progress)

        assert method in ROUND_METHODS
        keeping, address = self._options.call_store, self._address
        kept = resumed
        if kept is None and keeping is not None and address is not None:
            kept = KeptCall.new(
                keeping, identity=server_identity(address), address=address, method=method, params=params
            )
        with self._telemetry.logical_call(method, params, self._facts()) as call:
            result = await self._kept_rounds(method, params, send, kept, first)
            if result_type(result) != "task":
                return result
            if method != "tools/call" or not self._options.tasks_extension:
                raise BadResult(
                    f"{self.name} answered {method} with a task, which this request did not allow"
                )

            async def observe(task: RemoteTask) -> None:
                call.status(task.status, task.status_message)
                if on_task is not None:
                    await on_task(task)

            return await self._follow(result, params, timeout, observe)

    async def _kept_rounds(
        self,
        method: str,
        params: dict[str, Any],
        send: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
        kept: KeptCall | None,
        first: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The rounds, each kept in the store when ``kept`` says so, and how the call ended recorded."""
        max_rounds = self._options.max_input_rounds
        if kept is None:
            return await with_input_rounds(method, params, send, self._fulfil, max_rounds=max_rounds)
        try:
            async with kept.renewing():
                result = await with_input_rounds(
                    method,
                    params,
                    send,
                    self._fulfil,
                    max_rounds=max_rounds,
                    keeper=kept,
                    first=first,
                    rounds_used=kept.record.rounds_used if first is not None else 0,
                )
        except (InputRequestFailed, InputRoundsExceeded) as exc:
            await kept.end("failed")
            raise exc from None
        except RpcError:
            await kept.end("failed")
            raise
        except BaseException:  # stopped, or the connection lost: it stays to be continued
            await kept.end(None)
            raise
        await kept.end("finished")
        return result

    async def resume_call(self, kept: KeptCall, *, timeout: float | None = None) -> dict[str, Any]:
        """Continue the kept call ``kept`` (its lease taken): answer its input requests with the
        answers of their inbox items, or through this connection's hooks, then retry with them and
        ``requestState``, answering any further rounds; the raw final result."""
        record = kept.record
        if record.status != "waiting":
            raise UnknownCall(f"call {safe_id(record.id)} has {record.status}: there is nothing to continue")
        if record.method not in ROUND_METHODS:
            raise UnknownCall(f"call {safe_id(record.id)} is of {safe_id(record.method)}: not continued")
        params: dict[str, Any] = (
            {"uri": record.target} if record.method == "resources/read" else {"name": record.target}
        )
        if record.arguments is not None:
            params["arguments"] = record.arguments
        try:
            await kept.claim()
            async with kept.renewing():
                first = await self._stored_answers(kept, params)
        except BaseException:
            await kept.end(None)
            raise
        return await self._with_rounds(record.method, params, timeout, None, None, kept, first)

    async def _stored_answers(self, kept: KeptCall, params: dict[str, Any]) -> dict[str, Any]:
        """The resumed call's first attempt: its kept round answered from the inbox or the hooks."""
        record = kept.record
        try:
            answers, again = await inbox_answers(kept.keeping.store, record.id, record.input_requests)
            if again:
                answers |= await fulfil_all(again, self._fulfil, call_id=record.id)
        except (InputRequestFailed, RpcError):
            await kept.end("failed")
            raise
        first = dict(params)
        if answers:
            first["inputResponses"] = answers
        if record.request_state is not None:
            first["requestState"] = record.request_state
        return first
