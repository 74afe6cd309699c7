"""What the commands print about a server: a tool's result (JSON or readably) and its task's states
(with ``--task``, the option of calling a tool), the tools a server has when it lacks one, whom
``run`` serves, a failed server's last stderr lines.

Readably (``call`` on a terminal): text as text, structured content as
indented JSON, other content named by its type. Everything a server wrote is
shown through :func:`~host_receiver.sanitize.safe_text`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from host_receiver.cli._hooks import EXIT_FAILURE, EXIT_OK, EXIT_TOOL_ERROR, describe_error, safe_json
from host_receiver.cli._progress import ProgressDisplay
from host_receiver.cli._store import STORE_ENV
from host_receiver.client.host import ServerConnection
from host_receiver.client.remote_tasks._polls import TaskObserver
from host_receiver.client.remote_tasks.shared import SharedRemoteTaskStore
from host_receiver.client.remote_tasks.store import RemoteTaskStore
from host_receiver.protocol.modern import RemoteTask
from host_receiver.protocol.results import CallToolResult
from host_receiver.sanitize import safe_text
from host_receiver.store import CallKeeping, Store, StoreUrl, parse_store_url
from host_receiver.transports.base import Transport
from host_receiver.transports.stdio import StdioTransport

__all__ = [
    "TASK_STORE_ENV",
    "add_task_option",
    "add_task_store_option",
    "call_and_print",
    "connected_line",
    "own_name",
    "print_stderr_tail",
    "readable_content",
    "readable_result",
    "remote_task_store",
    "run_and_print",
]

#: The task store of the commands that call tools, when ``--task-store`` gives none.
TASK_STORE_ENV = "HOST_RECEIVER_TASK_STORE"


def add_task_option(parser: argparse.ArgumentParser) -> None:
    """``--task``: call the tool as a task (2025-11-25 servers); ``--task-store``: keep its task."""
    parser.add_argument(
        "--task",
        action="store_true",
        help="call the tool as a task (a 2025-11-25 server that offers task-augmented tool calls; a tool "
        "whose execution.taskSupport is 'required' is called so without it): its states are shown on "
        "stderr, Ctrl-C cancels it",
    )
    add_task_store_option(parser)


def add_task_store_option(parser: argparse.ArgumentParser) -> None:
    """``--task-store PATH`` (default ``$HOST_RECEIVER_TASK_STORE``)."""
    parser.add_argument(
        "--task-store",
        metavar="PATH",
        default=argparse.SUPPRESS,  # given before or after a subcommand's action, either is kept
        help="an SQLite file keeping the server's task until it ends, so that 'host-receiver tasks resume' "
        f"can follow it after this process is gone (default: ${TASK_STORE_ENV}; else a shared --store "
        "keeps it; none: memory only)",
    )


def remote_task_store(
    args: argparse.Namespace, store: Store | None = None, keeping: CallKeeping | None = None
) -> RemoteTaskStore | None:
    """The task store ``--task-store`` or ``$HOST_RECEIVER_TASK_STORE`` names; else a shared
    ``--store`` (``store``: that store, open; ``keeping``: that store with this process's lease
    period and name, under which each task is followed); None: none."""
    path = getattr(args, "task_store", None) or os.environ.get(TASK_STORE_ENV)
    if path:
        return RemoteTaskStore(path)
    url: StoreUrl | None = getattr(args, "store", None)
    if url is None and os.environ.get(STORE_ENV):
        url = parse_store_url(os.environ[STORE_ENV])
    if url is not None and url.shared:
        return SharedRemoteTaskStore(url, store, keeping=keeping)
    return None


def own_name(server: ServerConnection) -> str:
    """The name the server gives itself (serverInfo title, else name), safe to print."""
    info = server.server_info
    return safe_text(info.title or info.name)


async def call_and_print(
    tool: str,
    arguments: dict[str, Any],
    server: ServerConnection,
    *,
    as_json: bool,
    task: bool | None = None,
    progress: ProgressDisplay | None = None,
) -> int:
    """Call ``tool``; print its result (JSON, or readably); exit 0, 1 when ``isError``, 2 on failure.

    ``task``: as :meth:`ClientConnection.call_tool` (True: ``--task``). Each
    new state of a server's task is one line on stderr; the server's progress
    is shown on stderr by ``progress`` (default: a display of its own,
    :mod:`host_receiver.cli._progress`). Ctrl-C cancels the
    call (a server's task gets ``tasks/cancel``) and exits 2. When the call
    fails or the tool reports an error and the server has no such tool,
    stderr names the tools it has.
    """

    display = progress if progress is not None else ProgressDisplay()

    async def call(observer: TaskObserver) -> CallToolResult:
        with display.watching(tool) as on_progress:
            return await server.call_tool(
                tool, arguments, task=task, on_task=observer, on_progress=on_progress
            )

    return await run_and_print(tool, server, call, as_json=as_json)


async def run_and_print(
    tool: str,
    server: ServerConnection,
    call: Callable[[TaskObserver], Awaitable[CallToolResult]],
    *,
    as_json: bool,
) -> int:
    """Run ``call`` (of ``tool``, told an observer of its task) and print as :func:`call_and_print` does."""
    outcome: list[CallToolResult | Exception] = []
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async with anyio.create_task_group() as group:

            async def stop_on_ctrl_c() -> None:
                async for _ in signals:
                    group.cancel_scope.cancel()
                    return

            group.start_soon(stop_on_ctrl_c)
            try:
                outcome.append(await call(_TaskLines()))
            except Exception as exc:
                outcome.append(exc)
            group.cancel_scope.cancel()
    if not outcome:
        print(f"host-receiver: {tool} interrupted: the call was cancelled", file=sys.stderr)
        return EXIT_FAILURE
    (result,) = outcome
    if isinstance(result, Exception):
        print(f"host-receiver: {tool} failed: {describe_error(result)}", file=sys.stderr)
        await _name_the_tools(server, tool)
        return EXIT_FAILURE
    dumped = result.model_dump()
    print(safe_json(dumped) if as_json else readable_result(dumped))
    if result.is_error is True:
        await _name_the_tools(server, tool)
        return EXIT_TOOL_ERROR
    return EXIT_OK


class _TaskLines:
    """A task observer: one stderr line per new state of the server's task (its words made safe)."""

    def __init__(self) -> None:
        self._shown: tuple[str, str | None] | None = None

    async def __call__(self, task: RemoteTask) -> None:
        state = (task.status, task.status_message)
        if state != self._shown:
            self._shown = state
            words = f": {safe_text(task.status_message, 200)}" if task.status_message else ""
            print(f"host-receiver: task {safe_text(task.task_id, 80)} {task.status}{words}", file=sys.stderr)


async def _name_the_tools(server: ServerConnection, tool: str) -> None:
    with anyio.move_on_after(10):
        try:
            names = [t.name for t in await server.list_tools()]
        except Exception:  # the failure already reported is the one that matters
            return
        if tool not in names:
            offered = ", ".join(sorted(names)) or "none"
            print(
                f"host-receiver: {server.name} has no tool {tool!r}; its tools: {safe_text(offered)}",
                file=sys.stderr,
            )


def readable_result(result: dict[str, Any]) -> str:
    """A ``CallToolResult`` for a person: text as text, structured content as indented JSON,
    other content named."""
    parts: list[str] = []
    for item in result.get("content") or []:
        parts.append(readable_content(item))
    structured = result.get("structuredContent")
    if structured is not None and not any(p.strip() == json.dumps(structured) for p in parts):
        parts.append(safe_text(json.dumps(structured, indent=2, ensure_ascii=False), None, multiline=True))
    if result.get("isError") is True:
        parts.insert(0, "the tool reported an error:")
    return "\n".join(parts) if parts else "(no content)"


def readable_content(item: Any) -> str:
    """One content block for a person: text as text, anything else by its type and size."""
    if not isinstance(item, dict):
        return "(a content block that is not an object)"
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        return safe_text(item["text"], None, multiline=True)
    if kind in ("image", "audio"):
        size = len(str(item.get("data", "")))
        return f"[{kind}, {safe_text(item.get('mimeType', '?'))}, {size} base64 characters]"
    if kind == "resource_link":
        return f"[resource link: {safe_text(item.get('uri', '?'))}]"
    if kind == "resource" and isinstance(item.get("resource"), dict):
        inner = item["resource"]
        if isinstance(inner.get("text"), str):
            return safe_text(inner["text"], None, multiline=True)
        return f"[resource {safe_text(inner.get('uri', '?'))}, {safe_text(inner.get('mimeType', 'binary'))}]"
    return f"[{safe_text(kind)} content]"


def connected_line(server: ServerConnection) -> str:
    """``connected to NAME (era, version)``: NAME as the server calls itself."""
    return f"connected to {own_name(server)} ({server.era.value}, {server.protocol_version})"


def print_stderr_tail(name: str, transport: Transport) -> None:
    """The last lines a stdio server wrote on stderr (at most 20, made safe), if it wrote any."""
    tail = list(transport.stderr_tail) if isinstance(transport, StdioTransport) else []
    if tail:
        print(f"{name}'s stderr ended with:", file=sys.stderr)
        for line in tail:
            print(f"  {line}", file=sys.stderr)
