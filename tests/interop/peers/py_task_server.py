"""Interop peer: an mcp==1.30.0 server whose tools run as tasks (2025-11-25, the SDK's experimental API).

It plays the *receiver* of task-augmented ``tools/call``: the low-level
``Server`` with ``experimental.enable_tasks()``, each task's work run through
``ctx.experimental.run_task`` (``ServerTaskContext``: status updates with
``notifications/tasks/status``, elicitation and sampling queued and delivered
through the client's ``tasks/result``).

Tools:
- ``research`` (``taskSupport: "required"``): asks the client a form
  (``topic``), samples a summary of it, and returns one text naming both.
- ``wait`` (``taskSupport: "optional"``): works until it is cancelled (or
  ``seconds`` pass); as a plain call it answers at once.
- ``statuses`` (plain): JSON of every task this process ran, ``{taskId: status}``.
- ``ask`` (plain): asks the client a form and samples, as ``research`` does,
  through plain server requests on the session (no task).

Run it with the peer's own interpreter:

    .peers/py/bin/python tests/interop/peers/py_task_server.py                # stdio
    .peers/py/bin/python tests/interop/peers/py_task_server.py --port 0       # Streamable HTTP, /mcp
    .peers/py/bin/python tests/interop/peers/py_task_server.py --port 0 --sse # HTTP+SSE, /sse

With ``--port`` it prints ``LISTENING <url>`` once it accepts connections.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
from _loopback import serve_on_loopback
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

server: Server[Any, Any] = Server("py-task-peer")
support = server.experimental.enable_tasks()
TASKS: list[str] = []

TOOLS = [
    types.Tool(
        name="research",
        description="Research a topic the user names, as a task.",
        inputSchema={"type": "object", "properties": {}},
        execution=types.ToolExecution(taskSupport=types.TASK_REQUIRED),
    ),
    types.Tool(
        name="wait",
        description="Work until cancelled (or seconds pass).",
        inputSchema={"type": "object", "properties": {"seconds": {"type": "number"}}},
        execution=types.ToolExecution(taskSupport=types.TASK_OPTIONAL),
    ),
    types.Tool(name="statuses", description="Every task's status.", inputSchema={"type": "object"}),
    types.Tool(name="ask", description="Ask a form, then sample.", inputSchema={"type": "object"}),
]


TOPIC: types.ElicitRequestedSchema = {"type": "object", "properties": {"topic": {"type": "string"}}}


def ask(words: str) -> types.SamplingMessage:
    return types.SamplingMessage(role="user", content=types.TextContent(type="text", text=words))


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return TOOLS


@server.call_tool()
async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult | types.CreateTaskResult:
    if name == "statuses":
        statuses = {}
        for task_id in TASKS:
            task = await support.store.get_task(task_id)
            statuses[task_id] = task.status if task is not None else "gone"
        return text(json.dumps(statuses))
    ctx = server.request_context
    if name == "ask":
        asked = await ctx.session.elicit_form("What should I ask?", TOPIC)
        topic = (asked.content or {}).get("topic", "nothing") if asked.action == "accept" else asked.action
        sampled = await ctx.session.create_message([ask(f"summarise {topic}")], max_tokens=50)
        summary = sampled.content.text if isinstance(sampled.content, types.TextContent) else "?"
        return text(f"topic: {topic}; summary: {summary}")
    if name == "wait" and not ctx.experimental.is_task:
        return text("done at once")

    async def research(task: ServerTaskContext) -> types.CallToolResult:
        await task.update_status("asking what to research")
        asked = await task.elicit(message="What should I research?", requestedSchema=TOPIC)
        topic = (asked.content or {}).get("topic", "nothing") if asked.action == "accept" else asked.action
        await task.update_status(f"summarising {topic}")
        sampled = await task.create_message(
            [ask(f"summarise {topic}")],
            max_tokens=50,
        )
        summary = sampled.content.text if isinstance(sampled.content, types.TextContent) else "?"
        return text(f"topic: {topic}; summary: {summary}")

    async def wait(task: ServerTaskContext) -> types.CallToolResult:
        await task.update_status("waiting")
        await anyio.sleep(float(arguments.get("seconds", 60)))
        return text("waited")

    created = await ctx.experimental.run_task(research if name == "research" else wait)
    TASKS.append(created.task.taskId)
    return created


async def serve_stdio() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def streamable_app() -> Starlette:
    manager = StreamableHTTPSessionManager(server)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Mount("/mcp", app=manager.handle_request)], lifespan=lifespan)


def sse_app() -> Starlette:
    sse = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    routes = [
        Route("/sse", endpoint=handle_sse, methods=["GET"]),
        Mount("/messages/", app=sse.handle_post_message),
    ]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None, help="HTTP port (0 = free)")
    parser.add_argument("--sse", action="store_true", help="serve the HTTP+SSE transport at /sse")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.port is None:
        anyio.run(serve_stdio)
    elif args.sse:
        anyio.run(serve_on_loopback, sse_app(), args.port, "/sse")
    else:
        anyio.run(serve_on_loopback, streamable_app(), args.port, "/mcp")


if __name__ == "__main__":
    main()
