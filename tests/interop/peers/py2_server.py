"""Interop peer: an MCP server on the official Python SDK 2.x (mcp==2.3.0, `MCPServer`).

It serves protocol 2026-07-28 (per-request `_meta`, multi-round-trip input:
`input_required` results answered by a retry carrying `inputResponses` and
`requestState`) and, for a client that opens with `initialize`, 2025-11-25, where
the same tools push `elicitation/create`, `sampling/createMessage` and
`roots/list` mid-call instead. Every tool returns one TextContent whose text is a
JSON report of what this server received from the client, so tests can assert on
it (docs/peers-modern.md lists the keys).

Run it with the peer's own interpreter, never the project's venv:

    .peers/py2/bin/python tests/interop/peers/py2_server.py                            # stdio
    .peers/py2/bin/python tests/interop/peers/py2_server.py --port 0                   # stateful HTTP
    .peers/py2/bin/python tests/interop/peers/py2_server.py --port 0 --http stateless  # stateless HTTP

With --port, it serves http://127.0.0.1:<port>/mcp and prints `LISTENING <url>` on
stdout once the socket accepts (port 0 picks a free port). The era of an HTTP
request is chosen by the SDK from its MCP-Protocol-Version header alone: a modern
version goes to the single-exchange 2026-07-28 entry in both modes, anything else
(or no header) to the legacy Streamable HTTP transport, stateful or stateless.
Logs go to stderr only.

Most tools ask through the SDK's own resolvers (`Resolve(...)` returning `Elicit`,
`Sample` or `ListRoots`), which pick the era's mechanism themselves; `elicit_url`,
`rounds`, `state_only`, the prompt `ask_prompt` and the resource template
`ask://{topic}` drive `InputRequiredResult` by hand (the tool-body "guard" flow).
Every tool takes an optional `tag`: the rounds of one logical call (same tool,
same arguments) are collected under it, across requests and over stateless HTTP.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Mapping
from typing import Annotated, Any

import anyio
import mcp_types as types
from _loopback import run_peer, serve_on_loopback
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.elicitation import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
)
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

SDK = "python-mcp2"
SDK_VERSION = "2.3.0"
MAX_TOKENS = 100
log = logging.getLogger("py2_peer")

#: How this process serves HTTP ("stdio" without --port); reported by every tool.
TRANSPORT = "stdio"

#: Every inbound request this process saw, per logical call (see `call_key`), in order.
ROUNDS: dict[str, list[dict[str, Any]]] = defaultdict(list)
#: Things that happened outside a reply (a cancelled slow call), by tag.
EVENTS: dict[str, list[dict[str, Any]]] = defaultdict(list)

mcp = MCPServer("py2-peer", version=SDK_VERSION, log_level="WARNING")


# --------------------------------------------------------------------------- recording


def call_key(method: str, params: Mapping[str, Any] | None) -> str:
    """One logical call: the method, its target and its arguments (what requestState binds)."""
    p = params or {}
    target = p.get("uri") if method == "resources/read" else p.get("name")
    return json.dumps([method, target, p.get("arguments") or {}], sort_keys=True)


def http_headers(ctx: ServerRequestContext[Any, Any]) -> dict[str, str] | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    return dict(headers) if headers is not None else None


async def record(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: note what each tools/call, prompts/get and resources/read round carried.

    It runs inside the SDK's request-state boundary, so `requestState` here is
    already verified and unsealed; only its presence is recorded.
    """
    if ctx.method in ("tools/call", "prompts/get", "resources/read") and ctx.request_id is not None:
        params = dict(ctx.params or {})
        ROUNDS[call_key(ctx.method, params)].append(
            {
                "request_id": ctx.request_id,
                "protocol_version": ctx.protocol_version,
                "meta": params.get("_meta"),
                "input_responses": params.get("inputResponses"),
                "request_state": params.get("requestState") is not None,
                "headers": http_headers(ctx),
            }
        )
    return await call_next(ctx)


mcp.middleware.append(record)
#: Every tool returns its report as plain text content (no outputSchema, no structuredContent).
tool = mcp.tool(structured_output=False)


# --------------------------------------------------------------------------- reports


def dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, Mapping):
        return {str(k): dump(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    return value


def is_modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def client_info(ctx: Context) -> Any:
    """clientInfo: from this request's `_meta` (modern) or from `initialize` (legacy)."""
    if is_modern(ctx):
        meta = (ctx.request_context.params or {}).get("_meta") or {}
        return meta.get("io.modelcontextprotocol/clientInfo")
    params = ctx.session.client_params
    return dump(params.client_info) if params is not None else None


def report(ctx: Context, tool: str, **extra: Any) -> str:
    rc = ctx.request_context
    params = dict(rc.params or {})
    method = rc.method
    body: dict[str, Any] = {
        "tool": tool,
        "sdk": SDK,
        "sdk_version": SDK_VERSION,
        "transport": TRANSPORT,
        "protocol_version": ctx.protocol_version,
        "era": "modern" if is_modern(ctx) else "legacy",
        "client_capabilities": dump(ctx.client_capabilities),
        "client_info": client_info(ctx),
        "meta": params.get("_meta"),
        "headers": http_headers(rc),
        "input_responses": dump(ctx.input_responses),
        "rounds": ROUNDS.get(call_key(method, params), []),
        **{key: dump(value) for key, value in extra.items()},
    }
    return json.dumps(body, sort_keys=True)


def outcome(result: ElicitationResult[Any]) -> dict[str, Any]:
    if isinstance(result, AcceptedElicitation):
        return {"action": "accept", "content": dump(result.data)}
    if isinstance(result, DeclinedElicitation):
        return {"action": "decline"}
    assert isinstance(result, CancelledElicitation)
    return {"action": "cancel"}


def user_text(text: str) -> list[types.SamplingMessage]:
    return [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))]


def require(ctx: Context, declared: bool, needed: types.ClientCapabilities, what: str) -> None:
    """Refuse like the SDK's resolvers do: -32021 with `requiredCapabilities`."""
    if not declared:
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"Client did not declare the {what} capability",
            data={"requiredCapabilities": dump(needed)},
        )


# --------------------------------------------------------------------------- resolvers


class PersonForm(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=42, description="Your age", ge=0, le=150)
    subscribe: bool = Field(default=False, description="Send me news")


class ConfirmForm(BaseModel):
    confirm: bool = Field(description="Go ahead?")


def ask_person(message: str) -> Elicit[PersonForm]:
    return Elicit(message, PersonForm)


def ask_confirm() -> Elicit[ConfirmForm]:
    return Elicit("Confirm to continue", ConfirmForm)


def ask_llm(prompt: str) -> Sample:
    return Sample(user_text(prompt), max_tokens=MAX_TOKENS, system_prompt="You are terse.")


WEATHER_TOOL = types.Tool(
    name="get_weather",
    description="Current weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def ask_llm_with_tools(prompt: str) -> Sample:
    return Sample(
        user_text(prompt),
        max_tokens=MAX_TOKENS,
        tools=[WEATHER_TOOL],
        tool_choice=types.ToolChoice(mode="auto"),
    )


def ask_roots() -> ListRoots:
    return ListRoots()


def llm_after_form(
    person: Annotated[ElicitationResult[PersonForm], Resolve(ask_person)],
) -> Sample:
    """Second round of `elicit_then_sample`: runs only once the form was answered."""
    name = person.data.name if isinstance(person, AcceptedElicitation) else "nobody"
    return Sample(user_text(f"Write one line greeting {name}."), max_tokens=MAX_TOKENS)


# --------------------------------------------------------------------------- tools


@tool
async def whoami(ctx: Context, tag: str = "") -> str:
    """Ask nothing: report what this request carried."""
    return report(ctx, "whoami")


@tool
async def elicit_form(
    ctx: Context,
    answer: Annotated[ElicitationResult[PersonForm], Resolve(ask_person)],
    message: str = "Who are you?",
    tag: str = "",
) -> str:
    """Form elicitation (name, age, subscribe); reports the action and content received."""
    return report(ctx, "elicit_form", elicitation=outcome(answer))


@tool
async def elicit_url(
    ctx: Context,
    url: str = "https://example.com/connect",
    message: str = "Connect your account",
    tag: str = "",
) -> str | types.InputRequiredResult:
    """URL-mode elicitation, driven by hand (the SDK's resolvers only render forms)."""
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    require(
        ctx,
        elicitation is not None and elicitation.url is not None,
        types.ClientCapabilities(
            elicitation=types.ElicitationCapability(url=types.UrlElicitationCapability())
        ),
        "url elicitation",
    )
    elicitation_id = f"elicit-{tag or 'url'}"
    if not is_modern(ctx):
        result = await ctx.elicit_url(message, url, elicitation_id)
        return report(ctx, "elicit_url", elicitation={"action": result.action}, pushed=True)
    answers = ctx.input_responses or {}
    if "consent" not in answers:
        params = types.ElicitRequestURLParams(message=message, url=url, elicitation_id=elicitation_id)
        return types.InputRequiredResult(
            input_requests={"consent": types.ElicitRequest(params=params)}, request_state="url:1"
        )
    return report(ctx, "elicit_url", elicitation=dump(answers["consent"]), request_state=ctx.request_state)


@tool
async def sample(
    ctx: Context, reply: Annotated[types.CreateMessageResult, Resolve(ask_llm)], prompt: str, tag: str = ""
) -> str:
    """Plain sampling; reports the CreateMessageResult received."""
    return report(ctx, "sample", sampling=reply)


@tool
async def sample_tools(
    ctx: Context,
    reply: Annotated[types.CreateMessageResultWithTools, Resolve(ask_llm_with_tools)],
    prompt: str = "What is the weather in Paris?",
    tag: str = "",
) -> str:
    """Sampling with `tools` + `toolChoice` (needs `sampling.tools`); reports the result received."""
    return report(ctx, "sample_tools", sampling=reply)


@tool
async def elicit_and_sample(
    ctx: Context,
    answer: Annotated[ElicitationResult[PersonForm], Resolve(ask_person)],
    reply: Annotated[types.CreateMessageResult, Resolve(ask_llm)],
    message: str = "Who are you?",
    prompt: str = "Say hi.",
    tag: str = "",
) -> str:
    """A form and an LLM call asked in the same round (two inputRequests entries)."""
    return report(ctx, "elicit_and_sample", elicitation=outcome(answer), sampling=reply)


@tool
async def elicit_then_sample(
    ctx: Context,
    answer: Annotated[ElicitationResult[PersonForm], Resolve(ask_person)],
    reply: Annotated[types.CreateMessageResult, Resolve(llm_after_form)],
    message: str = "Who are you?",
    tag: str = "",
) -> str:
    """Two rounds in a row: a form, then an LLM call built from its answer."""
    return report(ctx, "elicit_then_sample", elicitation=outcome(answer), sampling=reply)


@tool
async def confirm_then_form(
    ctx: Context,
    ok: Annotated[ConfirmForm, Resolve(ask_confirm)],
    answer: Annotated[ElicitationResult[PersonForm], Resolve(ask_person)],
    message: str = "Who are you?",
    tag: str = "",
) -> str:
    """Unwrapped consumer: a declined or cancelled `confirm` ends the call as an isError result."""
    return report(ctx, "confirm_then_form", confirm=ok, elicitation=outcome(answer))


@tool
async def list_roots(
    ctx: Context, roots: Annotated[types.ListRootsResult, Resolve(ask_roots)], tag: str = ""
) -> str:
    """roots/list; reports the roots received."""
    return report(ctx, "list_roots", roots=roots)


@tool
async def rounds(ctx: Context, n: int = 3, tag: str = "") -> str | types.InputRequiredResult:
    """Ask one form per round, `n` rounds in a row (by hand); `n` above the client's cap never ends."""
    require(
        ctx,
        ctx.client_capabilities is not None and ctx.client_capabilities.elicitation is not None,
        types.ClientCapabilities(
            elicitation=types.ElicitationCapability(form=types.FormElicitationCapability())
        ),
        "form elicitation",
    )
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    if not is_modern(ctx):
        pushed = []
        for i in range(1, n + 1):
            result = await ctx.session.elicit_form(f"Round {i}", schema, related_request_id=ctx.request_id)
            pushed.append(dump(result))
        return report(ctx, "rounds", answered=n, pushed=pushed)
    done = int(ctx.request_state or "0")
    if ctx.input_responses and f"round{done + 1}" in ctx.input_responses:
        done += 1
    if done >= n:
        return report(ctx, "rounds", answered=done, request_state=ctx.request_state)
    params = types.ElicitRequestFormParams(message=f"Round {done + 1}", requested_schema=schema)
    return types.InputRequiredResult(
        input_requests={f"round{done + 1}": types.ElicitRequest(params=params)}, request_state=str(done)
    )


@tool
async def state_only(ctx: Context, n: int = 2, tag: str = "") -> str | types.InputRequiredResult:
    """Return `n` InputRequiredResults that carry only a requestState (no inputRequests)."""
    if not is_modern(ctx):
        return report(ctx, "state_only", legs=0)
    legs = int(ctx.request_state or "0")
    if legs >= n:
        return report(ctx, "state_only", legs=legs)
    return types.InputRequiredResult(request_state=str(legs + 1))


@tool
async def slow(ctx: Context, seconds: float = 5.0, tag: str = "") -> str:
    """Sleep, reporting progress every 0.5 s; a cancellation is noted under `events(tag)`."""
    start = time.monotonic()
    try:
        steps = max(1, int(seconds / 0.5))
        for step in range(steps):
            await anyio.sleep(seconds / steps)
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
    except anyio.get_cancelled_exc_class():
        EVENTS[tag].append({"event": "cancelled", "after_s": round(time.monotonic() - start, 3)})
        raise
    EVENTS[tag].append({"event": "finished", "after_s": round(time.monotonic() - start, 3)})
    return report(ctx, "slow", slept_s=seconds)


@tool
async def fail(ctx: Context, message: str = "this tool always fails", tag: str = "") -> str:
    """Fail as a tool: an isError CallToolResult carrying `message`."""
    raise ToolError(message)


@tool
async def protocol_error(
    ctx: Context, code: int = -32603, message: str = "protocol error", tag: str = ""
) -> str:
    """Fail as a protocol error: a JSON-RPC error with `code` and `message`."""
    raise MCPError(code=code, message=message, data={"tag": tag})


@tool
async def events(tag: str = "") -> str:
    """What happened outside a reply under `tag` (e.g. a cancelled `slow`)."""
    return json.dumps({"tool": "events", "tag": tag, "events": EVENTS.get(tag, [])}, sort_keys=True)


# --------------------------------------------------------------------------- prompt and resource


TOPIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"topic": {"type": "string"}},
    "required": ["topic"],
}


async def ask_topic(ctx: Context, key: str) -> dict[str, Any] | types.InputRequiredResult:
    """The answered form, or the InputRequiredResult that asks for it (modern), or push it (legacy)."""
    if not is_modern(ctx):
        pushed = await ctx.session.elicit_form(
            "Which topic?", TOPIC_SCHEMA, related_request_id=ctx.request_id
        )
        return dump(pushed)
    answers = ctx.input_responses or {}
    if key in answers:
        return dump(answers[key])
    params = types.ElicitRequestFormParams(message="Which topic?", requested_schema=TOPIC_SCHEMA)
    request = types.ElicitRequest(params=params)
    return types.InputRequiredResult(input_requests={key: request}, request_state=key)


@mcp.prompt()
async def ask_prompt(ctx: Context, tag: str = "") -> str | types.InputRequiredResult:
    """prompts/get that asks a form first; the prompt text is the JSON report."""
    answer = await ask_topic(ctx, "topic")
    if isinstance(answer, types.InputRequiredResult):
        return answer
    return report(ctx, "ask_prompt", elicitation=answer)


@mcp.resource("ask://{topic}")
async def ask_resource(topic: str, ctx: Context) -> str | types.InputRequiredResult:
    """resources/read that asks a form first; the text is the JSON report."""
    answer = await ask_topic(ctx, "topic")
    if isinstance(answer, types.InputRequiredResult):
        return answer
    return report(ctx, "ask_resource", uri_topic=topic, elicitation=answer)


# --------------------------------------------------------------------------- main


async def serve_http(port: int, stateless: bool) -> None:
    """Serve Streamable HTTP on 127.0.0.1:port."""
    await serve_on_loopback(mcp.streamable_http_app(stateless_http=stateless), port)


def main() -> None:
    def serving(transport: str) -> None:
        global TRANSPORT
        TRANSPORT = transport

    run_peer(__doc__ or "", mcp.run_stdio_async, serve_http, serving)


if __name__ == "__main__":
    main()
