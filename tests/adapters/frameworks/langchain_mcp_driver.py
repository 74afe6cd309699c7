"""langchain-mcp-adapters' ``MultiServerMCPClient`` with host-receiver (docs/frameworks.md).

    .peers/framework-langchain-mcp/bin/python tests/adapters/frameworks/langchain_mcp_driver.py \
        --v1 PYTHON py_server.py --v2 PYTHON fastmcp_server.py

The recipe: the mcp1 adapter's ``session_options`` as the connection's
``session_kwargs``. The offline model is langchain-core's
``FakeMessagesListChatModel``, whose answer is the tool call; the tool runs as
an agent's tool node runs it (``tool.ainvoke(tool_call)``). mcp 1.x speaks
2025-11-25, so the FastMCP 4 peer pushes its form and sampling.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _recipes import Call, Host, main, parser

from host_receiver.adapters.mcp1 import session_options

warnings.filterwarnings("ignore", "The experimental tasks API", DeprecationWarning)


def text_of(message: ToolMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(b["text"] for b in message.content if isinstance(b, dict) and b.get("type") == "text")


@asynccontextmanager
async def connect(argv: list[str], h: Host) -> AsyncIterator[Call]:
    # The recipe: session_kwargs from the mcp1 adapter.
    client = MultiServerMCPClient(
        {
            "notes": {
                "transport": "stdio",
                "command": argv[0],
                "args": argv[1:],
                "env": {"PEER_WAIT_S": "20"},
                "session_kwargs": session_options(h.receiver, server="notes"),
            }
        }
    )
    tools = {tool.name: tool for tool in await client.get_tools()}

    async def call(name: str, arguments: dict[str, Any]) -> str:
        call = {"name": name, "args": arguments, "id": "call-1", "type": "tool_call"}
        model = FakeMessagesListChatModel(responses=[AIMessage(content="", tool_calls=[call])])
        asked = await model.ainvoke("go")
        assert isinstance(asked, AIMessage)
        return text_of(await tools[name].ainvoke(asked.tool_calls[0]))

    yield call


if __name__ == "__main__":
    main(parser(__doc__).parse_args(), connect, modern=False)
