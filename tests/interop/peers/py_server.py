"""Interop peer: an MCP server on the official Python SDK (mcp==1.30.0).

It plays the *requestor* of MCP 2025-11-25 tasks: its tools send task-augmented
`sampling/createMessage` and `elicitation/create` to the connected client (our
host), then drive `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`.
Every tool returns one TextContent whose text is a JSON object describing what
this server observed, so host-side tests can assert on it (docs/peers.md lists
the keys).

Run it with the peers' own interpreter, never the project's venv:

    .peers/py/bin/python tests/interop/peers/py_server.py            # stdio
    .peers/py/bin/python tests/interop/peers/py_server.py --port 0   # Streamable HTTP

With --port, it serves http://127.0.0.1:<port>/mcp and prints
`LISTENING <url>` on stdout (port 0 picks a free port). On stdio, stdout is the
protocol channel, so everything else goes to stderr.

Each wait on the client is bounded by --wait seconds (env PEER_WAIT_S, default
60); a wait that runs out is reported with `"timeout": true`, never a hang.

Shared tool arguments:
- `ttl_ms`: the ttl asked for in `task` (default 60000, the SDK helpers'
  default); -1 sends `task: {}` without a ttl.
- `stream`: over HTTP, which SSE stream carries our requests. "get" (default,
  what the SDK's `*_as_task` helpers do) sends them unrelated to the tool call,
  so they go on the standalone GET stream; "post" relates them to the
  tools/call request, so they go on that POST's response stream.
- `helper`: true calls the SDK's own `create_message_as_task`/`elicit_as_task`
  instead of the step-by-step flow; only the final result is visible then.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import anyio
import httpx
import mcp.types as types
from _loopback import serve_on_loopback
from mcp.server.fastmcp import Context, FastMCP
from mcp.shared.exceptions import McpError
from mcp.shared.experimental.tasks.capabilities import (
    has_task_augmented_elicitation,
    has_task_augmented_sampling,
)
from mcp.shared.experimental.tasks.helpers import RELATED_TASK_METADATA_KEY, is_terminal
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel, ValidationError

SDK = "python"
SDK_VERSION = "1.30.0"
DEFAULT_TTL_MS = 60_000
DEFAULT_POLL_MS = 500  # what the SDK's poll_until_terminal uses without pollInterval
MAX_TOKENS = 200
DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}

log = logging.getLogger("py_peer")
WAIT_S = float(os.environ.get("PEER_WAIT_S", "60"))

# Every task id this process was given by a client, in creation order, for the
# isolation tests (task_ids / probe_task).
CREATED: list[dict[str, str]] = []

mcp = FastMCP("py-peer", host="127.0.0.1", log_level="WARNING")

# Every notifications/tasks/status a client sent this process, in arrival order
# (the `notifications` tool reports them; the SDK itself ignores them).
STATUS_NOTIFICATIONS: list[dict[str, Any]] = []


async def on_task_status(notification: types.TaskStatusNotification) -> None:
    STATUS_NOTIFICATIONS.append(
        notification.params.model_dump(mode="json", by_alias=True, exclude_unset=True)
    )


mcp._mcp_server.notification_handlers[types.TaskStatusNotification] = on_task_status


def dump(model: BaseModel) -> dict[str, Any]:
    """JSON form of a received model; keys the client sent explicitly (even null) are kept."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def report_text(report: dict[str, Any]) -> str:
    return json.dumps(report, sort_keys=True)


class Requestor:
    """Sends requests to the client on behalf of one tool call and turns every
    outcome (result, JSON-RPC error, timeout, unparsable answer) into data."""

    def __init__(self, ctx: Context, stream: str) -> None:
        if stream not in ("get", "post"):
            raise ValueError("stream must be 'get' or 'post'")
        self.session = ctx.session
        related = ctx.request_context.request_id if stream == "post" else None
        self.metadata = ServerMessageMetadata(related_request_id=related) if related else None

    async def call(
        self, request: Any, result_type: type[Any], wait_s: float | None = None
    ) -> tuple[Any, dict[str, Any] | None]:
        """Return (result, None) or (None, error) where error is a JSON-able dict."""
        try:
            result = await self.session.send_request(
                types.ServerRequest(request),
                result_type,
                request_read_timeout_seconds=timedelta(seconds=wait_s or WAIT_S),
                metadata=self.metadata,
            )
        except McpError as exc:
            return None, error_dict(exc)
        except ValidationError as exc:
            # The client answered, but not with what the SDK expects.
            return None, {"invalid_response": str(exc)}
        return result, None

    def client_caps(self) -> types.ClientCapabilities | None:
        params = self.session.client_params
        return params.capabilities if params else None


def error_dict(exc: McpError) -> dict[str, Any]:
    err: dict[str, Any] = {"code": exc.error.code, "message": exc.error.message}
    if exc.error.data is not None:
        err["data"] = exc.error.data
    # The SDK reports its own read timeout as an McpError with code 408
    # (an HTTP status reused as a JSON-RPC code, see docs/peers.md).
    if exc.error.code == httpx.codes.REQUEST_TIMEOUT:
        err["timeout"] = True
    return err


def task_metadata(ttl_ms: int | None) -> types.TaskMetadata:
    if ttl_ms is None:
        ttl_ms = DEFAULT_TTL_MS
    return types.TaskMetadata() if ttl_ms < 0 else types.TaskMetadata(ttl=ttl_ms)


def user_message(prompt: str) -> types.SamplingMessage:
    return types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))


def sampling_request(prompt: str, task: types.TaskMetadata | None) -> types.CreateMessageRequest:
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=[user_message(prompt)],
            maxTokens=MAX_TOKENS,
            task=task,
        )
    )


def elicit_request(
    message: str, schema: dict[str, Any] | None, task: types.TaskMetadata | None
) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=message, requestedSchema=schema or DEFAULT_SCHEMA, task=task
        )
    )


def related_task_ok(result: BaseModel, task_id: str) -> bool:
    """Does a tasks/result answer carry _meta["io.modelcontextprotocol/related-task"]?"""
    meta = dump(result).get("_meta") or {}
    return (meta.get(RELATED_TASK_METADATA_KEY) or {}).get("taskId") == task_id


async def create_task(req: Requestor, request: Any, report: dict[str, Any], tool: str) -> str | None:
    """Send a task-augmented request; record the CreateTaskResult or the error."""
    created, err = await req.call(request, types.CreateTaskResult)
    if err is not None:
        report["error"] = {**err, "stage": "create"}
        return None
    report["task"] = dump(created.task)
    if created.meta:
        report["create_meta"] = created.meta
    CREATED.append({"taskId": created.task.taskId, "tool": tool})
    return str(created.task.taskId)


async def poll(req: Requestor, task_id: str, report: dict[str, Any]) -> bool:
    """Poll tasks/get like the SDK's poll_until_terminal (honours pollInterval,
    500 ms without one) until terminal; return False on error or timeout."""
    statuses: list[str] = []
    deadline = time.monotonic() + WAIT_S
    report["polls"] = 0
    while True:
        got, err = await req.call(
            types.GetTaskRequest(params=types.GetTaskRequestParams(taskId=task_id)),
            types.GetTaskResult,
        )
        if err is not None:
            report["error"] = {**err, "stage": "poll"}
            report["statuses"] = statuses
            return False
        report["polls"] += 1
        report["last_task"] = dump(got)
        if not statuses or statuses[-1] != got.status:
            statuses.append(got.status)
        if is_terminal(got.status):
            report["statuses"] = statuses
            return True
        interval_ms = got.pollInterval if got.pollInterval is not None else DEFAULT_POLL_MS
        if time.monotonic() + interval_ms / 1000 > deadline:
            report["error"] = {"timeout": True, "stage": "poll", "message": "task never ended"}
            report["statuses"] = statuses
            return False
        await anyio.sleep(interval_ms / 1000)


async def fetch_result(
    req: Requestor, task_id: str, result_type: type[Any], report: dict[str, Any], key: str
) -> None:
    """tasks/result, recorded under report[key] (or report[key + "_error"])."""
    got, err = await req.call(
        types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(taskId=task_id)),
        result_type,
    )
    if err is not None:
        report[key + "_error"] = err
        return
    report[key] = dump(got)
    report[key + "_related_task_meta"] = related_task_ok(got, task_id)


def base_report(tool: str, req: Requestor, stream: str) -> dict[str, Any]:
    caps = req.client_caps()
    return {
        "tool": tool,
        "sdk": SDK,
        "sdk_version": SDK_VERSION,
        "stream": stream,
        "client_declared": {
            "sampling_task": bool(caps and has_task_augmented_sampling(caps)),
            "elicitation_task": bool(caps and has_task_augmented_elicitation(caps)),
            "tasks_list": bool(caps and caps.tasks and caps.tasks.list is not None),
            "tasks_cancel": bool(caps and caps.tasks and caps.tasks.cancel is not None),
        },
        "client_capabilities": dump(caps) if caps is not None else None,
    }


async def run_helper(coro_factory: Any, report: dict[str, Any]) -> None:
    """Run one SDK `*_as_task` helper under the wait limit and record its outcome."""
    try:
        with anyio.fail_after(WAIT_S):
            result = await coro_factory()
    except TimeoutError:
        report["error"] = {"timeout": True, "stage": "helper"}
    except McpError as exc:
        report["error"] = {**error_dict(exc), "stage": "helper"}
    except ValidationError as exc:
        report["error"] = {"invalid_response": str(exc), "stage": "helper"}
    else:
        report["result"] = dump(result)


# --------------------------------------------------------------------------- tools


async def task_round_trip(
    tool: str,
    ctx: Context,
    stream: str,
    ttl_ms: int | None,
    request: Any,
    result_type: type[Any],
    helper: Any = None,
) -> str:
    """One task-augmented request, the report its tool returns: by the SDK's ``*_as_task``
    helper (``helper(ttl)``, when given), or by hand: create, poll ``tasks/get``, then
    ``tasks/result`` after a terminal status (always, as the SDK helper does)."""
    req = Requestor(ctx, stream)
    report = base_report(tool, req, stream)
    started = time.monotonic()
    if helper is not None:
        ttl = ttl_ms if ttl_ms is not None and ttl_ms >= 0 else DEFAULT_TTL_MS
        await run_helper(lambda: helper(ttl), report)
    else:
        task_id = await create_task(req, request, report, tool)
        if task_id and await poll(req, task_id, report):
            await fetch_result(req, task_id, result_type, report, "result")
    report["elapsed_ms"] = round((time.monotonic() - started) * 1000)
    return report_text(report)


@mcp.tool(structured_output=False)
async def sample_task(
    prompt: str,
    ctx: Context,
    ttl_ms: int | None = None,
    stream: str = "get",
    helper: bool = False,
) -> str:
    """Task-augmented sampling/createMessage: create, poll tasks/get, then tasks/result."""

    def as_task(ttl: int) -> Any:
        experimental = ctx.session.experimental
        return experimental.create_message_as_task([user_message(prompt)], max_tokens=MAX_TOKENS, ttl=ttl)

    request = sampling_request(prompt, task_metadata(ttl_ms))
    return await task_round_trip(
        "sample_task", ctx, stream, ttl_ms, request, types.CreateMessageResult, as_task if helper else None
    )


@mcp.tool(structured_output=False)
async def elicit_task(
    message: str,
    ctx: Context,
    schema: dict[str, Any] | None = None,
    ttl_ms: int | None = None,
    stream: str = "get",
    helper: bool = False,
) -> str:
    """Task-augmented elicitation/create (form mode): create, poll, tasks/result."""

    def as_task(ttl: int) -> Any:
        return ctx.session.experimental.elicit_as_task(message, schema or DEFAULT_SCHEMA, ttl=ttl)

    request = elicit_request(message, schema, task_metadata(ttl_ms))
    return await task_round_trip(
        "elicit_task", ctx, stream, ttl_ms, request, types.ElicitResult, as_task if helper else None
    )


@mcp.tool(structured_output=False)
async def sample_plain(prompt: str, ctx: Context, stream: str = "get") -> str:
    """A plain (non-task) sampling/createMessage."""
    req = Requestor(ctx, stream)
    report = base_report("sample_plain", req, stream)
    got, err = await req.call(sampling_request(prompt, None), types.CreateMessageResult)
    if err is not None:
        report["error"] = {**err, "stage": "request"}
    else:
        report["result"] = dump(got)
    return report_text(report)


@mcp.tool(structured_output=False)
async def elicit_plain(
    message: str, ctx: Context, schema: dict[str, Any] | None = None, stream: str = "get"
) -> str:
    """A plain (non-task) elicitation/create in form mode."""
    req = Requestor(ctx, stream)
    report = base_report("elicit_plain", req, stream)
    got, err = await req.call(elicit_request(message, schema, None), types.ElicitResult)
    if err is not None:
        report["error"] = {**err, "stage": "request"}
    else:
        report["result"] = dump(got)
    return report_text(report)


@mcp.tool(structured_output=False)
async def start_sample_task(prompt: str, ctx: Context, ttl_ms: int | None = None, stream: str = "get") -> str:
    """Create a task-augmented sampling request and return at once, leaving the
    task running in the client (cancel it later with cancel_task(task_id=...))."""
    req = Requestor(ctx, stream)
    report = base_report("start_sample_task", req, stream)
    await create_task(req, sampling_request(prompt, task_metadata(ttl_ms)), report, "start_sample_task")
    return report_text(report)


@mcp.tool(structured_output=False)
async def cancel_task(
    ctx: Context,
    prompt: str = "",
    task_id: str | None = None,
    ttl_ms: int | None = None,
    delay_ms: int = 0,
    stream: str = "get",
) -> str:
    """Task-augmented sampling (or, with `task_id`, a task created earlier on this
    session), then tasks/cancel (after delay_ms), tasks/get, tasks/result and a
    second tasks/cancel (which must fail with -32602)."""
    req = Requestor(ctx, stream)
    report = base_report("cancel_task", req, stream)
    if task_id is None:
        task_id = await create_task(
            req, sampling_request(prompt, task_metadata(ttl_ms)), report, "cancel_task"
        )
        if task_id is None:
            return report_text(report)
    report["task_id"] = task_id
    await anyio.sleep(delay_ms / 1000)
    cancel_req = types.CancelTaskRequest(params=types.CancelTaskRequestParams(taskId=task_id))
    got, err = await req.call(cancel_req, types.CancelTaskResult)
    report["cancel"] = dump(got) if got is not None else None
    if err is not None:
        report["cancel_error"] = err
    got, err = await req.call(
        types.GetTaskRequest(params=types.GetTaskRequestParams(taskId=task_id)),
        types.GetTaskResult,
    )
    report["get"] = dump(got) if got is not None else None
    if err is not None:
        report["get_error"] = err
    # What a cancelled task's tasks/result holds is up to the client: accept anything.
    await fetch_result(req, task_id, types.GetTaskPayloadResult, report, "result")
    got, err = await req.call(cancel_req, types.CancelTaskResult)
    report["cancel_again"] = dump(got) if got is not None else None
    if err is not None:
        report["cancel_again_error"] = err
    return report_text(report)


@mcp.tool(structured_output=False)
async def list_tasks(
    count: int,
    ctx: Context,
    page_size: int | None = None,
    ttl_ms: int | None = None,
    stream: str = "get",
) -> str:
    """Create `count` sampling tasks, then follow tasks/list's nextCursor to the
    end. tasks/list has no page-size parameter: `page_size`, when given, is the
    size the test expects, checked into `page_size_ok`. Ends with an invalid cursor."""
    req = Requestor(ctx, stream)
    report = base_report("list_tasks", req, stream)
    created: list[str] = []
    for i in range(count):
        task_id = await create_task(
            req, sampling_request(f"list_tasks #{i}", task_metadata(ttl_ms)), report, "list_tasks"
        )
        if task_id is None:
            report["created"] = created
            return report_text(report)
        created.append(task_id)
    report.pop("task", None)
    report["created"] = created
    pages: list[list[str]] = []
    cursors: list[str | None] = []
    cursor: str | None = None
    for _ in range(count + 1000):  # bound the walk even if the cursor never ends
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        got, err = await req.call(types.ListTasksRequest(params=params), types.ListTasksResult)
        if err is not None:
            report["error"] = {**err, "stage": "list", "page": len(pages)}
            break
        pages.append([t.taskId for t in got.tasks])
        cursor = got.nextCursor
        cursors.append(cursor)
        if cursor is None:
            break
    listed = {tid for page in pages for tid in page}
    report["pages"] = pages
    report["next_cursors"] = cursors
    report["missing"] = [tid for tid in created if tid not in listed]
    seen = Counter(tid for page in pages for tid in page)
    report["duplicates"] = sorted(tid for tid, n in seen.items() if n > 1)
    if page_size is not None:
        report["page_size_ok"] = all(len(p) == page_size for p in pages[:-1]) and (
            not pages or len(pages[-1]) <= page_size
        )
    bad = types.PaginatedRequestParams(cursor=f"not-a-cursor-{uuid.uuid4().hex}")
    got, err = await req.call(types.ListTasksRequest(params=bad), types.ListTasksResult)
    report["invalid_cursor"] = err if err is not None else {"result": dump(got)}
    return report_text(report)


@mcp.tool(structured_output=False)
async def get_unknown_task(ctx: Context, stream: str = "get") -> str:
    """tasks/get with a made-up id."""
    req = Requestor(ctx, stream)
    report = base_report("get_unknown_task", req, stream)
    task_id = f"unknown-{uuid.uuid4().hex}"
    report["task_id"] = task_id
    got, err = await req.call(
        types.GetTaskRequest(params=types.GetTaskRequestParams(taskId=task_id)),
        types.GetTaskResult,
    )
    if err is not None:
        report["error"] = err
    else:
        report["result"] = dump(got)
    return report_text(report)


@mcp.tool(structured_output=False)
async def fail_tool(message: str = "fail_tool failed on purpose") -> str:
    """Always fails: the client gets a CallToolResult with isError true."""
    raise RuntimeError(message)


@mcp.tool(structured_output=False)
async def task_ids() -> str:
    """The ids of every task a client created for this server process so far."""
    ids = [c["taskId"] for c in CREATED]
    return report_text({"tool": "task_ids", "sdk": SDK, "task_ids": ids, "by_tool": CREATED})


@mcp.tool(structured_output=False)
async def notifications() -> str:
    """Every notifications/tasks/status a client sent this process so far (params as received)."""
    return report_text({"tool": "notifications", "sdk": SDK, "tasks_status": STATUS_NOTIFICATIONS})


@mcp.tool(structured_output=False)
async def probe_task(task_id: str, ctx: Context, methods: str = "get", stream: str = "get") -> str:
    """Ask about someone else's task: comma-separated `methods` among get, result,
    cancel, list. A client that binds tasks to their requestor answers -32602 to
    get/result/cancel and does not list the id. result waits at most 5 s."""
    req = Requestor(ctx, stream)
    report = base_report("probe_task", req, stream)
    report["task_id"] = task_id
    for method in [m.strip() for m in methods.split(",") if m.strip()]:
        outcome: dict[str, Any]
        if method == "get":
            got, err = await req.call(
                types.GetTaskRequest(params=types.GetTaskRequestParams(taskId=task_id)),
                types.GetTaskResult,
            )
        elif method == "result":
            got, err = await req.call(
                types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(taskId=task_id)),
                types.GetTaskPayloadResult,
                wait_s=min(WAIT_S, 5.0),
            )
        elif method == "cancel":
            got, err = await req.call(
                types.CancelTaskRequest(params=types.CancelTaskRequestParams(taskId=task_id)),
                types.CancelTaskResult,
            )
        elif method == "list":
            got, err = await list_contains(req, task_id)
        else:
            got, err = None, {"message": f"unknown method {method!r}"}
        if isinstance(got, BaseModel):
            got = dump(got)
        outcome = {"error": err} if err is not None else {"result": got}
        report[method] = outcome
    return report_text(report)


async def list_contains(req: Requestor, task_id: str) -> tuple[Any, dict[str, Any] | None]:
    """Walk tasks/list; return ({"listed": bool, "count": n}, None) or (None, error)."""
    cursor: str | None = None
    count = 0
    for _ in range(1000):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        got, err = await req.call(types.ListTasksRequest(params=params), types.ListTasksResult)
        if err is not None:
            return None, err
        count += len(got.tasks)
        if any(t.taskId == task_id for t in got.tasks):
            return {"listed": True, "count": count}, None
        cursor = got.nextCursor
        if cursor is None:
            break
    return {"listed": False, "count": count}, None


# --------------------------------------------------------------------------- main


async def serve_http(port: int) -> None:
    """Serve Streamable HTTP on 127.0.0.1:port."""
    await serve_on_loopback(mcp.streamable_http_app(), port, mcp.settings.streamable_http_path)


def main() -> None:
    global WAIT_S
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None, help="Streamable HTTP port (0 = free)")
    parser.add_argument("--wait", type=float, default=WAIT_S, help="seconds to wait on the client")
    args = parser.parse_args()
    WAIT_S = args.wait
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.port is None:
        anyio.run(mcp.run_stdio_async)
    else:
        anyio.run(serve_http, args.port)


if __name__ == "__main__":
    main()
