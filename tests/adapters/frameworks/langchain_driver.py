"""LangChain's ``langchain.mcp.MCPAdapter`` with host-receiver (docs/frameworks.md), in ``create_agent``.

    .peers/framework-langchain/bin/python tests/adapters/frameworks/langchain_driver.py \
        --v1 PYTHON py_server.py --v2 PYTHON fastmcp_server.py

The recipe: ``MCPAdapter`` over a ``fastmcp.Client`` built with the fastmcp
adapter's ``client_options`` (a client that carries its own elicitation handler
is honoured, not armed with LangGraph's interrupts). The offline model is
langchain-core's ``FakeMessagesListChatModel``: its first answer calls the tool,
its second is the tool's text.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import fastmcp
from fastmcp.client.transports import StdioTransport
from langchain.agents import create_agent
from langchain_core._api import LangChainBetaWarning
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage

warnings.filterwarnings("ignore", category=LangChainBetaWarning)
from langchain.mcp import MCPAdapter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _recipes import Call, Host, main, parser  # noqa: E402

from host_receiver.adapters.fastmcp import client_options  # noqa: E402


class ToolCallingFake(FakeMessagesListChatModel):
    """The fake chat model, accepting the tools ``create_agent`` binds."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def text_of(message: ToolMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(b["text"] for b in message.content if isinstance(b, dict) and b.get("type") == "text")


@asynccontextmanager
async def connect(argv: list[str], h: Host) -> AsyncIterator[Call]:
    target = StdioTransport(command=argv[0], args=argv[1:], env={"PEER_WAIT_S": "20"})
    # The recipe: the fastmcp adapter's client under MCPAdapter.
    async with MCPAdapter(fastmcp.Client(target, **client_options(h.receiver, server="notes"))) as adapter:
        tools = await adapter.list_tools()

        async def call(name: str, arguments: dict[str, Any]) -> str:
            tool_call = {"name": name, "args": arguments, "id": "call-1", "type": "tool_call"}
            model = ToolCallingFake(
                responses=[AIMessage(content="", tool_calls=[tool_call]), AIMessage(content="done")]
            )
            agent = create_agent(model, tools)
            state = await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]})
            answers = [m for m in state["messages"] if isinstance(m, ToolMessage)]
            return text_of(answers[-1])

        yield call


if __name__ == "__main__":
    main(parser(__doc__).parse_args(), connect, modern=True)
