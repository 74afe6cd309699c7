"""The server of `host-receiver demo`. Run: .venv/bin/host-receiver demo (or host-receiver run --call announce_release -- .peers/py/bin/python examples/demo_server.py)"""  # noqa: E501

# A release helper on the official MCP Python SDK (mcp 1.x, which has tasks).
# Its tool `announce_release` asks the connected host, each time as a task:
# 1. sampling: write the announcement (a long LLM call the server offloads);
# 2. a form: approve publishing it, and how;
# 3. a URL: sign in to the (example) blog, only if publishing was chosen.
# Each task is followed step by step (tasks/get, then tasks/result, which waits
# until the task ends, then tasks/get again), and the tool returns a JSON report
# of what the server saw, which `host-receiver demo` prints as a transcript.
# The tool `connect_blog` runs step 3 alone.

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

try:
    import mcp.types as types
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.shared.exceptions import McpError
except ImportError:
    sys.exit(
        "demo_server.py needs the MCP Python SDK 1.x: run `bash .ci/setup`, or `pip install 'mcp>=1.23,<2'`"
    )

TTL_MS = 120_000
TERMINAL = {"completed", "failed", "cancelled"}
NOTES = """\
- Tasks: servers can ask for sampling and elicitation as tasks and poll them.
- URL elicitation: a server can send the user to a web page, with consent.
- Faster start-up; fewer dependencies.
- Fixed: forms now keep their defaults when shown again."""
PUBLISH_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [
                {"const": "publish", "title": "Publish now"},
                {"const": "draft", "title": "Save as draft"},
                {"const": "discard", "title": "Discard"},
            ],
            "default": "publish",
        },
        "channels": {
            "type": "array",
            "title": "Channels",
            "items": {
                "anyOf": [
                    {"const": "blog", "title": "Blog"},
                    {"const": "newsletter", "title": "Newsletter"},
                    {"const": "social", "title": "Social media"},
                ]
            },
            "minItems": 1,
            "default": ["blog"],
        },
        "delay_minutes": {
            "type": "integer",
            "title": "Delay (minutes)",
            "minimum": 0,
            "maximum": 1440,
            "default": 0,
        },
        "notify_team": {"type": "boolean", "title": "Notify the team", "default": True},
        "note": {"type": "string", "title": "Note for the team", "maxLength": 80},
    },
    "required": ["decision", "channels"],
}

mcp = FastMCP("release-helper", log_level="WARNING")


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def as_task(ctx: Context, params: Any, result_type: type[Any]) -> dict[str, Any]:
    """Send one request as a task and follow it; report every step and the outcome."""
    session = ctx.session
    method = (
        "sampling/createMessage"
        if isinstance(params, types.CreateMessageRequestParams)
        else "elicitation/create"
    )
    request = (
        types.CreateMessageRequest(params=params)
        if method == "sampling/createMessage"
        else types.ElicitRequest(params=params)
    )
    step: dict[str, Any] = {"method": method, "mode": getattr(params, "mode", None), "steps": []}
    try:
        created = await session.send_request(types.ServerRequest(request), types.CreateTaskResult)
    except McpError as exc:
        step["error"] = {"code": exc.error.code, "message": exc.error.message}
        return step
    task = created.task
    step.update(
        task_id=task.taskId, ttl=task.ttl, poll_interval=task.pollInterval, created_status=task.status
    )
    task_ref = types.GetTaskRequestParams(taskId=task.taskId)
    got = await session.send_request(
        types.ServerRequest(types.GetTaskRequest(params=task_ref)), types.GetTaskResult
    )
    step["steps"].append({"call": "tasks/get", "status": got.status, "statusMessage": got.statusMessage})
    # The server is free to do other work here; it then waits for the outcome in
    # one call: tasks/result blocks until the task is terminal.
    payload = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(taskId=task.taskId))
    try:
        result = await session.send_request(types.ServerRequest(payload), result_type)
        step["result"] = _dump(result)
        step["steps"].append({"call": "tasks/result", "outcome": "result"})
    except McpError as exc:
        step["error"] = {"code": exc.error.code, "message": exc.error.message}
        step["steps"].append({"call": "tasks/result", "outcome": f"error {exc.error.code}"})
    got = await session.send_request(
        types.ServerRequest(types.GetTaskRequest(params=task_ref)), types.GetTaskResult
    )
    step["steps"].append({"call": "tasks/get", "status": got.status, "statusMessage": got.statusMessage})
    return step


async def sign_in(ctx: Context) -> dict[str, Any]:
    elicitation_id = str(uuid.uuid4())
    params = types.ElicitRequestURLParams(
        message="Sign in to the example blog so that release-helper can publish for you.",
        url=f"https://blog.example.com/oauth/authorize?client_id=release-helper&state={elicitation_id}",
        elicitationId=elicitation_id,
        task=types.TaskMetadata(ttl=TTL_MS),
    )
    step = await as_task(ctx, params, types.ElicitResult)
    if step.get("result", {}).get("action") == "accept":
        # The example blog has no real sign-in page; pretend it completed.
        await ctx.session.send_elicit_complete(elicitation_id)
        step["completed_notification"] = True
    return step


@mcp.tool(structured_output=False)
async def announce_release(ctx: Context, version: str = "2.0.0") -> str:
    """Write a release announcement with the host's LLM, get it approved, and publish it."""
    report: dict[str, Any] = {"version": version, "requests": []}
    sampling = types.CreateMessageRequestParams(
        messages=[
            types.SamplingMessage(
                role="user",
                content=types.TextContent(
                    type="text", text=f"Announce release {version} in three sentences. Notes:\n{NOTES}"
                ),
            )
        ],
        systemPrompt="You write short, friendly release announcements.",
        maxTokens=120,
        modelPreferences=types.ModelPreferences(hints=[types.ModelHint(name="haiku")], speedPriority=0.8),
        task=types.TaskMetadata(ttl=TTL_MS),
    )
    step = await as_task(ctx, sampling, types.CreateMessageResult)
    report["requests"].append(step)
    if "result" not in step:
        report["outcome"] = "No announcement: the host did not produce one."
        return json.dumps(report)
    text = step["result"]["content"]["text"]
    form = types.ElicitRequestFormParams(
        message=f"Publish this announcement of {version}?\n\n{text}",
        requestedSchema=PUBLISH_FORM,
        task=types.TaskMetadata(ttl=TTL_MS),
    )
    step = await as_task(ctx, form, types.ElicitResult)
    report["requests"].append(step)
    answer = step.get("result", {})
    if answer.get("action") != "accept":
        report["outcome"] = (
            f"Nothing published: the form was answered with {answer.get('action', 'an error')}."
        )
        return json.dumps(report)
    content = answer.get("content", {})
    if content.get("decision") != "publish":
        report["outcome"] = f"Not published now: the decision was {content.get('decision')!r}."
        return json.dumps(report)
    step = await sign_in(ctx)
    report["requests"].append(step)
    channels = ", ".join(content.get("channels", []))
    if step.get("result", {}).get("action") == "accept":
        report["outcome"] = f"Published to {channels} (pretend: the example blog is not real)."
    else:
        report["outcome"] = "Saved as a draft: signing in to the blog was not accepted."
    return json.dumps(report)


@mcp.tool(structured_output=False)
async def connect_blog(ctx: Context) -> str:
    """Ask the person to sign in to the example blog (URL elicitation as a task)."""
    return json.dumps(await sign_in(ctx))


if __name__ == "__main__":
    mcp.run()
