"""Comparator: the official Python SDK's ClientSession (mcp 1.30.0) as the task receiver.

``py_receiver.py [--delay S] -- COMMAND [ARG...]``, run with ``.peers/py/bin/python``;
``py_receiver.py [--delay S] --url URL [--call TOOL]`` connects over Streamable HTTP
(``streamable_http_client``, which opens the GET stream after ``initialized``) and,
with ``--call``, calls TOOL once and exits when the call returns.

Glued as the SDK's client tasks guide shows ("Client as Task Receiver"):
``ExperimentalTaskHandlers`` over the SDK's ``InMemoryTaskStore``; a
task-augmented sampling request creates a task and starts its work in the
session's task group. The work sleeps S seconds (the SDK has no model
providers) and stores a canned ``CreateMessageResult`` as ``completed``.
``tasks/result`` blocks with the store's ``wait_for_update`` until the task is
terminal. It exits when the requestor logs ``benchmark done`` or its pipe
closes.
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.experimental.task_handlers import ExperimentalTaskHandlers
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp.shared.experimental.tasks.helpers import RELATED_TASK_METADATA_KEY, cancel_task, is_terminal
from mcp.shared.experimental.tasks.in_memory_task_store import InMemoryTaskStore

warnings.simplefilter("ignore", DeprecationWarning)

POLL_INTERVAL_MS = 1000  # what host-receiver reports by default
CANNED = types.CreateMessageResult(
    role="assistant",
    content=types.TextContent(type="text", text="hello"),
    model="py-sdk-canned",
    stopReason="endTurn",
)


class TaskReceiver:
    """The handlers, around one task store."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.store = InMemoryTaskStore()
        self.done = anyio.Event()

    async def augmented_sampling(
        self, context: Any, params: types.CreateMessageRequestParams, task_metadata: types.TaskMetadata
    ) -> types.CreateTaskResult:
        task = await self.store.create_task(task_metadata)

        async def work() -> None:
            if self.delay:
                await anyio.sleep(self.delay)
            try:
                await self.store.store_result(task.taskId, CANNED)
                await self.store.update_task(task.taskId, status="completed")
            except ValueError:
                pass  # cancelled or expired meanwhile

        context.session._task_group.start_soon(work)
        task.pollInterval = POLL_INTERVAL_MS
        return types.CreateTaskResult(task=task)

    async def get_task(
        self, context: Any, params: types.GetTaskRequestParams
    ) -> types.GetTaskResult | types.ErrorData:
        task = await self.store.get_task(params.taskId)
        if task is None:
            return types.ErrorData(code=types.INVALID_PARAMS, message=f"Task not found: {params.taskId}")
        return types.GetTaskResult(**{**task.model_dump(), "pollInterval": POLL_INTERVAL_MS})

    async def get_task_result(
        self, context: Any, params: types.GetTaskPayloadRequestParams
    ) -> types.GetTaskPayloadResult | types.ErrorData:
        task = await self.store.get_task(params.taskId)
        while task is not None and not is_terminal(task.status):
            await self.store.wait_for_update(params.taskId)
            task = await self.store.get_task(params.taskId)
        if task is None:
            return types.ErrorData(code=types.INVALID_PARAMS, message=f"Task not found: {params.taskId}")
        result = await self.store.get_result(params.taskId)
        if result is None:
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"Task {task.status}, no result")
        data = result.model_dump(by_alias=True, exclude_none=True)
        data["_meta"] = {RELATED_TASK_METADATA_KEY: {"taskId": params.taskId}}
        return types.GetTaskPayloadResult.model_validate(data)

    async def list_tasks(
        self, context: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListTasksResult | types.ErrorData:
        try:
            tasks, cursor = await self.store.list_tasks(params.cursor if params else None)
        except ValueError as exc:
            return types.ErrorData(code=types.INVALID_PARAMS, message=str(exc))
        return types.ListTasksResult(tasks=tasks, nextCursor=cursor)

    async def cancel_task(
        self, context: Any, params: types.CancelTaskRequestParams
    ) -> types.CancelTaskResult | types.ErrorData:
        try:
            return await cancel_task(self.store, params.taskId)
        except McpError as exc:
            return exc.error

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        if params.data == "benchmark done":
            self.done.set()

    def handlers(self) -> ExperimentalTaskHandlers:
        return ExperimentalTaskHandlers(
            augmented_sampling=self.augmented_sampling,
            get_task=self.get_task,
            get_task_result=self.get_task_result,
            list_tasks=self.list_tasks,
            cancel_task=self.cancel_task,
        )


async def plain_sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return CANNED


@asynccontextmanager
async def connected(command: Sequence[str], url: str | None) -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams to the requestor: over stdio, or over Streamable HTTP."""
    if url is not None:
        async with streamable_http_client(url) as (read, write, _):
            yield read, write
        return
    server = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(os.environ))
    async with stdio_client(server) as (read, write):
        yield read, write


async def serve(command: Sequence[str], delay: float, url: str | None, tool: str | None) -> None:
    receiver = TaskReceiver(delay)
    async with (
        connected(command, url) as (read, write),
        ClientSession(
            read,
            write,
            sampling_callback=plain_sampling,
            logging_callback=receiver.on_log,
            experimental_task_handlers=receiver.handlers(),
        ) as session,
    ):
        await session.initialize()
        if tool is not None:
            await session.call_tool(tool)
        else:
            await receiver.done.wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds each sampling task works")
    parser.add_argument("--url", help="the requestor's Streamable HTTP endpoint (instead of a command)")
    parser.add_argument("--call", metavar="TOOL", help="with --url: call TOOL once, then exit")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if bool(command) == bool(args.url):
        parser.error("give the requestor command after --, or --url")
    anyio.run(serve, command, args.delay, args.url, args.call)


if __name__ == "__main__":
    main()
