"""Interop peer: a FastMCP 4.1.4 server with the tasks extension (fastmcp-tasks 4.1.4).

Tools marked `task` run as server-hosted tasks of the `io.modelcontextprotocol/tasks`
extension (SEP-2663) for a client that declares the extension in the request's
`_meta` capabilities: `tools/call` answers `resultType: "task"`, the client polls
`tasks/get`, answers input with `tasks/update` and may `tasks/cancel`. A task asks
for input by returning an `InputRequiredResult` from its body (the guard pattern);
the task then shows `input_required` with the requests in `tasks/get`, and the
body runs again, as a new leg, once every request is answered. Tasks live in
memory (Docket's `memory://` backend, no worker process).

Other tools show what FastMCP 4.x offers outside tasks: the same guard pattern in
the foreground (2026-07-28 `input_required` results), and `ctx.elicit(...)` /
`ctx.session.create_message(...)`, which push `elicitation/create` and
`sampling/createMessage` to a client that connected with `initialize` (2025-11-25).

Every tool returns one TextContent whose text is a JSON report; `events(tag)`
returns every request this process received for a tag (the tools/call and the
`tasks/*` requests of its task), so tests can assert on what the server received.
docs/peers-modern.md lists the tools and keys.

    .peers/fastmcp/bin/python tests/interop/peers/fastmcp_server.py                        # stdio
    .peers/fastmcp/bin/python tests/interop/peers/fastmcp_server.py --port 0               # stateful HTTP
    .peers/fastmcp/bin/python tests/interop/peers/fastmcp_server.py --port 0 --http stateless

With --port, it serves http://127.0.0.1:<port>/mcp and prints `LISTENING <url>` on
stdout once the socket accepts. Logs go to stderr only. The env variable
`PEER_POLL_MS` sets the `pollIntervalMs` every task advertises (default 100).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

# FastMCP reads these at import: no banner or rich console output on stdout.
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

import anyio
import mcp_types as types
from _loopback import run_peer, serve_on_loopback
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

SDK = "fastmcp"
SDK_VERSION = "4.1.4"
MAX_TOKENS = 100
log = logging.getLogger("fastmcp_peer")

TRANSPORT = "stdio"
#: The pollIntervalMs every task advertises (env PEER_POLL_MS; read at import, where tools register).
POLL = timedelta(milliseconds=int(os.environ.get("PEER_POLL_MS", "100")))

#: Every request received, by tag (the `tag` argument of tools/call; tasks/* requests
#: are filed under the tag of the call that created their task).
REQUESTS: dict[str, list[dict[str, Any]]] = defaultdict(list)
#: Task id -> tag of the tools/call that created it.
TASK_TAGS: dict[str, str] = {}
#: Things that happened inside a task body (legs run, a cancellation), by tag.
EVENTS: dict[str, list[dict[str, Any]]] = defaultdict(list)

mcp = FastMCP("fastmcp-peer", version=SDK_VERSION)
mcp.add_extension(TasksExtension())


# --------------------------------------------------------------------------- recording


def dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, Mapping):
        return {str(k): dump(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    return value


def tag_of(method: str, params: Mapping[str, Any]) -> str:
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        return str(arguments.get("tag", "")) if isinstance(arguments, Mapping) else ""
    task_id = params.get("taskId")
    return TASK_TAGS.get(task_id, f"task:{task_id}") if isinstance(task_id, str) else ""


async def record(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Outermost SDK middleware: file every request (and its outcome) under its tag."""
    if ctx.request_id is None:
        return await call_next(ctx)
    params = dict(ctx.params or {})
    headers = getattr(ctx.request, "headers", None)
    entry: dict[str, Any] = {
        "method": ctx.method,
        "request_id": ctx.request_id,
        "protocol_version": ctx.protocol_version,
        "params": dump(params),
        "headers": dict(headers) if headers is not None else None,
        "at": round(time.time(), 3),
    }
    REQUESTS[tag_of(ctx.method, params)].append(entry)
    try:
        result = await call_next(ctx)
    except MCPError as exc:
        entry["error"] = dump(exc.error)
        raise
    wire = dump(result)
    entry["result_type"] = wire.get("resultType") if isinstance(wire, dict) else None
    if ctx.method == "tools/call" and isinstance(wire, dict) and wire.get("resultType") == "task":
        TASK_TAGS[str(wire["taskId"])] = tag_of(ctx.method, params)
        entry["result"] = wire
    if ctx.method.startswith("tasks/"):
        entry["result"] = wire
    return result


mcp._mcp_server.middleware.insert(0, record)


# --------------------------------------------------------------------------- reports


def report(ctx: Context, tool: str, tag: str, **extra: Any) -> str:
    rc = ctx.request_context
    body: dict[str, Any] = {
        "tool": tool,
        "sdk": SDK,
        "sdk_version": SDK_VERSION,
        "transport": TRANSPORT,
        "tag": tag,
        "background_task": ctx.is_background_task,
        "task_id": ctx.task_id,
        "protocol_version": rc.protocol_version if rc is not None else None,
        "input_responses": dump(ctx.input_responses),
        "request_state": ctx.request_state,
        "requests": REQUESTS.get(tag, []),
        "events": EVENTS.get(tag, []),
        **{key: dump(value) for key, value in extra.items()},
    }
    return json.dumps(body, sort_keys=True)


def form_request(message: str) -> types.ElicitRequest:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Your name"},
            "age": {"type": "integer", "default": 42},
        },
        "required": ["name"],
    }
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def llm_request(prompt: str) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=MAX_TOKENS)
    )


def leg(ctx: Context, tool: str, tag: str) -> None:
    EVENTS[tag].append(
        {
            "event": "leg",
            "tool": tool,
            "input_responses": dump(ctx.input_responses),
            "request_state": ctx.request_state,
        }
    )


def tool(task: str | None = None) -> Any:
    """`mcp.tool` for this peer: text reports only (no outputSchema), optionally a task tool."""
    config = TaskConfig(mode=task, poll_interval=POLL) if task is not None else None  # type: ignore[arg-type]
    return mcp.tool(output_schema=None, task=config)


# --------------------------------------------------------------------------- task tools


def ask(
    ctx: Context, tool: str, tag: str, key: str, request: Any, answer_as: str
) -> str | types.InputRequiredResult:
    """One input_required step: ask `request` under `key`; once answered, report the answer as `answer_as`."""
    answers = ctx.input_responses or {}
    if key not in answers:
        return types.InputRequiredResult(input_requests={key: request}, request_state=key)
    return report(ctx, tool, tag, **{answer_as: answers[key]})


def form_then_llm(ctx: Context, tool: str, tag: str) -> str | types.InputRequiredResult:
    """Two input_required steps: a form, then an LLM call built from its answer; then the report."""
    answers = ctx.input_responses or {}
    state = ctx.request_state
    if state is None:
        return types.InputRequiredResult(
            input_requests={"form": form_request("Who are you?")}, request_state="1"
        )
    if state == "1":
        form = dump(answers.get("form"))
        name = ((form or {}).get("content") or {}).get("name", "nobody")
        return types.InputRequiredResult(
            input_requests={"llm": llm_request(f"Greet {name}.")}, request_state=json.dumps({"form": form})
        )
    return report(ctx, tool, tag, first=json.loads(state), sampling=answers.get("llm"))


@tool(task="required")
async def task_form(
    ctx: Context, message: str = "Who are you?", tag: str = ""
) -> str | types.InputRequiredResult:
    """A task that asks a form through input_required, then reports the answer."""
    leg(ctx, "task_form", tag)
    return ask(ctx, "task_form", tag, "form", form_request(message), "elicitation")


@tool(task="required")
async def task_llm(ctx: Context, prompt: str = "Say hi.", tag: str = "") -> str | types.InputRequiredResult:
    """A task that asks for an LLM call (sampling/createMessage) through input_required."""
    leg(ctx, "task_llm", tag)
    return ask(ctx, "task_llm", tag, "llm", llm_request(prompt), "sampling")


@tool(task="required")
async def task_form_and_llm(ctx: Context, tag: str = "") -> str | types.InputRequiredResult:
    """A task that asks a form and an LLM call in one input_required step."""
    leg(ctx, "task_form_and_llm", tag)
    answers = ctx.input_responses or {}
    if not {"form", "llm"} <= set(answers):
        requests: dict[str, Any] = {"form": form_request("Who are you?"), "llm": llm_request("Say hi.")}
        return types.InputRequiredResult(input_requests=requests, request_state="both")
    return report(ctx, "task_form_and_llm", tag, elicitation=answers["form"], sampling=answers["llm"])


@tool(task="required")
async def task_form_then_llm(ctx: Context, tag: str = "") -> str | types.InputRequiredResult:
    """A task that asks a form, then (next leg) an LLM call: two input_required steps."""
    leg(ctx, "task_form_then_llm", tag)
    return form_then_llm(ctx, "task_form_then_llm", tag)


@tool(task="required")
async def task_slow(ctx: Context, seconds: float = 30.0, tag: str = "") -> str:
    """A task that sleeps (to cancel); a cancellation is noted in `events(tag)`."""
    start = time.monotonic()
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        EVENTS[tag].append({"event": "cancelled", "after_s": round(time.monotonic() - start, 3)})
        raise
    EVENTS[tag].append({"event": "finished", "after_s": round(time.monotonic() - start, 3)})
    return report(ctx, "task_slow", tag, slept_s=seconds)


@tool(task="required")
async def task_fail(ctx: Context, tag: str = "") -> str:
    """A task whose body raises a protocol error: the task ends `failed`."""
    raise MCPError(code=-32603, message="task_fail always fails", data={"tag": tag})


@tool(task="required")
async def task_tool_error(ctx: Context, tag: str = "") -> str:
    """A task whose body raises a ToolError: the task ends `completed` with an isError result."""
    raise ToolError("task_tool_error always fails")


@tool(task="optional")
async def task_optional(ctx: Context, tag: str = "") -> str:
    """Runs as a task only for a client that opted in; reports which way it ran."""
    return report(ctx, "task_optional", tag)


# --------------------------------------------------------------------------- foreground tools


@tool()
async def whoami(ctx: Context, tag: str = "") -> str:
    """Ask nothing: report what this request carried."""
    return report(ctx, "whoami", tag)


@tool()
async def mrtr_form(
    ctx: Context, message: str = "Who are you?", tag: str = ""
) -> str | types.InputRequiredResult:
    """Foreground guard pattern: a 2026-07-28 input_required result asking a form."""
    return ask(ctx, "mrtr_form", tag, "form", form_request(message), "elicitation")


@tool()
async def mrtr_llm(ctx: Context, prompt: str = "Say hi.", tag: str = "") -> str | types.InputRequiredResult:
    """Foreground guard pattern: a 2026-07-28 input_required result asking an LLM call."""
    return ask(ctx, "mrtr_llm", tag, "llm", llm_request(prompt), "sampling")


@tool()
async def mrtr_form_then_llm(ctx: Context, tag: str = "") -> str | types.InputRequiredResult:
    """Foreground, two input rounds: a form, then an LLM call built from its answer."""
    return form_then_llm(ctx, "mrtr_form_then_llm", tag)


class Person(BaseModel):
    name: str
    age: int = 42


@tool()
async def legacy_elicit(ctx: Context, message: str = "Who are you?", schema: str = "", tag: str = "") -> str:
    """`ctx.elicit(...)`: pushes elicitation/create on a 2025-11-25 connection (a ToolError on 2026-07-28).

    With `schema` (JSON), the form is that schema, sent as is (`ctx.session.elicit`). The
    client's error is reported as `error` (code, message); a cancellation is noted in `events`.
    """
    try:
        if schema:
            raw = await ctx.session.elicit(message, json.loads(schema), related_request_id=ctx.request_id)
            answer: dict[str, Any] = dump(raw)
        else:
            result = await ctx.elicit(message, Person)
            answer = {"action": result.action}
            data = getattr(result, "data", None)
            if data is not None:
                answer["content"] = dump(data)
    except MCPError as exc:
        return report(ctx, "legacy_elicit", tag, error=exc.error)
    except anyio.get_cancelled_exc_class():
        EVENTS[tag].append({"event": "cancelled"})
        raise
    return report(ctx, "legacy_elicit", tag, elicitation=answer)


@tool()
async def legacy_sample(ctx: Context, prompt: str = "Say hi.", tag: str = "") -> str:
    """`ctx.session.create_message(...)`: pushes sampling/createMessage on a 2025-11-25 connection."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    result = await ctx.session.create_message(
        messages=[message], max_tokens=MAX_TOKENS, related_request_id=ctx.request_id
    )
    return report(ctx, "legacy_sample", tag, sampling=result)


@tool()
async def events(tag: str = "") -> str:
    """Every request received for `tag` (tools/call and its task's tasks/*), and the task's events."""
    return json.dumps(
        {"tool": "events", "tag": tag, "requests": REQUESTS.get(tag, []), "events": EVENTS.get(tag, [])},
        sort_keys=True,
    )


# --------------------------------------------------------------------------- main


async def serve_http(port: int, stateless: bool) -> None:
    """Serve Streamable HTTP on 127.0.0.1:port."""
    await serve_on_loopback(mcp.http_app(path="/mcp", stateless_http=stateless), port)


def main() -> None:
    def serving(transport: str) -> None:
        global TRANSPORT
        TRANSPORT = transport

    run_peer(__doc__ or "", lambda: mcp.run_stdio_async(show_banner=False), serve_http, serving)


if __name__ == "__main__":
    main()
