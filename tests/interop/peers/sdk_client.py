"""A real SDK client for the modern peers: call one tool and print the report the tool returned.

    .peers/py2/bin/python     tests/interop/peers/sdk_client.py mcp2    TARGET TOOL [ARGS_JSON] [--mode M]
    .peers/fastmcp/bin/python tests/interop/peers/sdk_client.py fastmcp TARGET TOOL [ARGS_JSON] [--mode M]

`mcp2` drives mcp 2.3.0's `mcp.Client`, `fastmcp` drives `fastmcp.Client` (with
fastmcp-tasks imported, which registers its client half of the tasks extension).
TARGET is `stdio:SCRIPT` (run SCRIPT with this interpreter) or an http:// URL.
`--mode` is the client's `mode` (`auto`, the default, `legacy` or a version).
The callbacks answer every form with {"name": "Ada", "age": 36}, every sampling
request with "hi from fake llm" (model "fake-model") and roots/list with one root.
Prints one JSON object: {"protocol_version", "is_error", "report"} where `report`
is the tool's first text block parsed as JSON (or the raw text). Exits 1 with the
error on stderr when the call raises.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

ANSWER = {"name": "Ada", "age": 36}
LLM_TEXT = "hi from fake llm"


def parse_report(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


async def run_mcp2(target: str, tool: str, arguments: dict[str, Any], mode: str) -> dict[str, Any]:
    import mcp_types as types
    from mcp import Client
    from mcp.client.session import ClientRequestContext
    from mcp.client.stdio import StdioServerParameters

    async def sampling(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        content = types.TextContent(type="text", text=LLM_TEXT)
        return types.CreateMessageResult(
            role="assistant", content=content, model="fake-model", stop_reason="endTurn"
        )

    async def elicitation(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content=dict(ANSWER))

    async def roots(ctx: ClientRequestContext) -> Any:
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/smoke", name="smoke")])

    server: Any = target
    if target.startswith("stdio:"):
        server = StdioServerParameters(command=sys.executable, args=[target.removeprefix("stdio:")])
    async with Client(
        server,
        mode=mode,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        list_roots_callback=roots,
        sampling_capabilities=types.SamplingCapability(tools=types.SamplingToolsCapability()),
    ) as client:
        result = await client.call_tool(tool, arguments)
        text = next((block.text for block in result.content if isinstance(block, types.TextContent)), "")
        return {
            "protocol_version": client.protocol_version,
            "is_error": result.is_error,
            "report": parse_report(text),
        }


async def run_fastmcp(target: str, tool: str, arguments: dict[str, Any], mode: str) -> dict[str, Any]:
    import fastmcp_tasks  # noqa: F401  (registers the tasks extension on every fastmcp.Client)
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def sampling(messages: Any, params: Any, ctx: Any) -> str:
        return LLM_TEXT

    async def elicitation(message: str, response_type: Any, params: Any, ctx: Any) -> dict[str, Any]:
        return dict(ANSWER)

    transport: Any = target
    if target.startswith("stdio:"):
        transport = StdioTransport(sys.executable, [target.removeprefix("stdio:")])
    async with Client(
        transport, mode=mode, sampling_handler=sampling, elicitation_handler=elicitation
    ) as client:
        result = await client.call_tool(tool, arguments, raise_on_error=False)
        text = next((getattr(block, "text", "") for block in result.content), "")
        version = client.session.protocol_version
        return {"protocol_version": version, "is_error": result.is_error, "report": parse_report(text)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sdk", choices=("mcp2", "fastmcp"))
    parser.add_argument("target", help="stdio:SCRIPT or an http:// URL")
    parser.add_argument("tool")
    parser.add_argument("arguments", nargs="?", default="{}", help="tool arguments as JSON")
    parser.add_argument("--mode", default="auto")
    args = parser.parse_args()
    run = run_mcp2 if args.sdk == "mcp2" else run_fastmcp
    try:
        out = asyncio.run(run(args.target, args.tool, json.loads(args.arguments), args.mode))
    except BaseException as exc:  # an ExceptionGroup from a task group included
        while isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
