"""Microsoft agent-framework's ``MCPStdioTool(mcp_client=...)`` with host-receiver (docs/frameworks.md).

    .peers/framework-agent-framework/bin/python tests/adapters/frameworks/agent_framework_driver.py \
        --v1 PYTHON py_server.py --v2 PYTHON fastmcp_server.py

The recipe: an ``mcp.Client`` (mcp 2.x) built with the mcp2 adapter's
``client_options``, entered by the caller, handed to ``MCPStdioTool`` as
``mcp_client``. The offline model is a scripted chat client (agent-framework
ships none): its first answer calls the tool, its second is the tool's result;
agent-framework's own function invocation runs the tool in between.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp
from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    MCPStdioTool,
    Message,
)
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _recipes import Call, Host, main, parser

from host_receiver.adapters.mcp2 import client_options


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Calls ``tool`` with ``arguments`` once, then answers with the text of its result."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        super().__init__()
        self.tool, self.arguments = tool, arguments

    async def _respond(self, messages: Sequence[Message]) -> ChatResponse:
        for content in messages[-1].contents:
            if content.type == "function_result":
                text = content.result if isinstance(content.result, str) else str(content.result)
                return ChatResponse(messages=[Message("assistant", [Content.from_text(text)])])
        call = Content.from_function_call("call-1", self.tool, arguments=self.arguments)
        return ChatResponse(messages=[Message("assistant", [call])])

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Any:
        return self._respond(messages)


@asynccontextmanager
async def connect(argv: list[str], h: Host) -> AsyncIterator[Call]:
    server = StdioServerParameters(command=argv[0], args=argv[1:], env={"PEER_WAIT_S": "20"})
    # The recipe: an entered mcp.Client with the mcp2 adapter's options.
    async with (
        mcp.Client(server, **client_options(h.receiver, server="notes")) as client,
        MCPStdioTool(name="notes", mcp_client=client) as tool,
    ):

        async def call(name: str, arguments: dict[str, Any]) -> str:
            agent = Agent(client=ScriptedClient(name, arguments), tools=tool)
            return str((await agent.run("go")).text)

        yield call


if __name__ == "__main__":
    main(parser(__doc__).parse_args(), connect, modern=True)
