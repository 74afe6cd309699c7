"""Google ADK's ``McpToolset`` with host-receiver (docs/frameworks.md), on mcp 2.x or mcp 1.x.

    .peers/framework-adk/bin/python tests/adapters/frameworks/adk_driver.py \
        --v1 PYTHON py_server.py --v2 PYTHON fastmcp_server.py
    .peers/framework-adk-mcp1/bin/python tests/adapters/frameworks/adk_driver.py ...

The recipe: ``McpToolset(connection_params=..., **callback_options(receiver,
server=...))``, from the adapter of the installed mcp (mcp2 or mcp1): only the
sampling and elicitation callbacks, which is all ``McpToolset`` takes. The
offline model is a scripted ``BaseLlm`` (ADK ships none): its first answer calls
the tool, its second is the tool's text; ADK's ``InMemoryRunner`` runs the agent.
ADK connects with ``initialize`` (2025-11-25), so the FastMCP 4 peer pushes its
form and sampling. Also records what the issue measured: the mcp1 adapter's
``session_options`` given to ``McpToolset`` (mcp 1.x), and a 2026-07-28 input
round under ADK's modern mode (mcp 2.x), which ADK does not answer.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams
from google.adk.tools.mcp_tool.mcp_toolset import McpToolset
from google.genai import types
from mcp import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _recipes import RUN, Call, Host, error_of, main, parser

MCP1 = importlib.metadata.version("mcp").startswith("1.")
if MCP1:
    from host_receiver.adapters.mcp1 import callback_options, session_options
else:
    from host_receiver.adapters.mcp2 import callback_options


class ScriptedLlm(BaseLlm):
    """Calls ``tool`` with ``arguments`` once, then answers with the text the tool returned."""

    tool: str
    arguments: dict[str, Any]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts or []
        answered = [p.function_response for p in last if p.function_response is not None]
        if answered:
            text = json.dumps(answered[0].response)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part.from_text(text=text)]))
        else:
            call = types.Part.from_function_call(name=self.tool, args=self.arguments)
            yield LlmResponse(content=types.Content(role="model", parts=[call]))


def params(argv: list[str]) -> StdioConnectionParams:
    server = StdioServerParameters(command=argv[0], args=argv[1:], env={"PEER_WAIT_S": "20"})
    return StdioConnectionParams(server_params=server, timeout=30)


def text_of(response: Any) -> str:
    """The text of an MCP tool's result as ADK hands it to the model (a dict of the CallToolResult)."""
    if "result" in response and isinstance(response["result"], dict):
        response = response["result"]
    if "error" in response:
        raise RuntimeError(str(response["error"]))
    return "".join(c.get("text", "") for c in response.get("content", []))


async def run_agent(toolset: McpToolset, tool: str, arguments: dict[str, Any]) -> str:
    agent = LlmAgent(
        name="agent", model=ScriptedLlm(model="scripted", tool=tool, arguments=arguments), tools=[toolset]
    )
    runner = InMemoryRunner(agent=agent, app_name="recipes")
    session = await runner.session_service.create_session(app_name="recipes", user_id="u")
    message = types.Content(role="user", parts=[types.Part.from_text(text="go")])
    responses = []
    async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        responses += [r.response for r in event.get_function_responses()]
    return text_of(responses[-1])


@asynccontextmanager
async def connect(argv: list[str], h: Host) -> AsyncIterator[Call]:
    # The recipe: McpToolset takes the sampling and elicitation callbacks.
    toolset = McpToolset(connection_params=params(argv), **callback_options(h.receiver, server="notes"))
    try:

        async def call(tool: str, arguments: dict[str, Any]) -> str:
            return await run_agent(toolset, tool, arguments)

        yield call
    finally:
        await toolset.close()


async def measured(h: Host) -> dict[str, Any]:
    """What the issue measured: the full mcp1 options (mcp 1.x); an input round in modern mode (mcp 2.x)."""
    out: dict[str, Any] = {}
    if MCP1:
        try:
            McpToolset(connection_params=params(["python"]), **session_options(h.receiver, server="notes"))
            out["session_options"] = {"raised": None}
        except TypeError as exc:
            out["session_options"] = {"raised": error_of(exc)}
        return out
    os.environ["ADK_ENABLE_MCP_MODERN_PROTOCOL"] = "1"
    argv = sys.argv[sys.argv.index("--v2") + 1 :][:2]
    toolset = McpToolset(connection_params=params(argv), **callback_options(h.receiver, server="notes"))
    try:
        out["modern_rounds"] = await run_agent(toolset, "mrtr_form_then_llm", {"tag": f"adk-modern-{RUN}"})
    except Exception as exc:
        out["modern_rounds"] = {"raised": error_of(exc)}
    finally:
        await toolset.close()
        del os.environ["ADK_ENABLE_MCP_MODERN_PROTOCOL"]
    return out


if __name__ == "__main__":
    main(parser(__doc__).parse_args(), connect, modern=False, extra=measured)
