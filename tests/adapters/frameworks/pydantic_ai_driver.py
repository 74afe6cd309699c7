"""pydantic-ai's ``MCPToolset`` with host-receiver (docs/frameworks.md), on its offline ``FunctionModel``.

    .peers/framework-pydantic-ai/bin/python tests/adapters/frameworks/pydantic_ai_driver.py \
        --v1 PYTHON py_server.py --v2 PYTHON fastmcp_server.py

The recipe: ``MCPToolset(**toolset_options(target, receiver, server=...))``. Also
records what the issue measured: the fastmcp adapter's ``client_options`` passed
to ``MCPToolset`` itself (a ``TypeError``).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _recipes import Call, Host, error_of, main, parser

from host_receiver.adapters.fastmcp import client_options, toolset_options


def model(tool: str, arguments: dict[str, Any]) -> FunctionModel:
    """An offline model that calls ``tool`` once, then answers with what it returned."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart):
                return ModelResponse(parts=[TextPart(part.model_response_str())])
        return ModelResponse(parts=[ToolCallPart(tool, arguments)])

    return FunctionModel(respond)


@asynccontextmanager
async def connect(argv: list[str], h: Host) -> AsyncIterator[Call]:
    target = StdioTransport(command=argv[0], args=argv[1:], env={"PEER_WAIT_S": "20"})
    # The recipe: the glue is this one line.
    toolset = MCPToolset(**toolset_options(target, h.receiver, server="notes"), tool_error_behavior="error")

    async def call(tool: str, arguments: dict[str, Any]) -> str:
        agent = Agent(model(tool, arguments), toolsets=[toolset])
        return str((await agent.run("go")).output)

    async with toolset:
        yield call


async def direct_options(h: Host) -> dict[str, Any]:
    """What the issue measured: ``client_options`` given to ``MCPToolset`` itself."""
    try:
        MCPToolset("server.py", **client_options(h.receiver, server="notes"))
    except TypeError as exc:
        return {"direct_options": {"raised": error_of(exc)}}
    return {"direct_options": {"raised": None}}


if __name__ == "__main__":
    main(parser(__doc__).parse_args(), connect, modern=True, extra=direct_options)
