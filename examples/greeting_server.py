"""A 2026-07-28 server for the mcp2 and fastmcp adapter examples. Run it with a Python that has mcp 2.x."""

# Its one tool, `greet`, asks the host two things in a row, as multi-round-trip
# input (2026-07-28) or as pushed requests (to a client that connected with
# initialize): a form (whom to greet), then an LLM call that writes the greeting.

from __future__ import annotations

import sys
from typing import Annotated

try:
    import mcp_types as types
    from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
    from pydantic import BaseModel, Field
except ImportError:
    sys.exit("greeting_server.py needs the MCP Python SDK 2.x: `pip install 'mcp>=2.3,<3'`")

mcp = MCPServer("greeter", log_level="WARNING")


class Person(BaseModel):
    name: str = Field(default="world", description="Whom to greet")


def ask_name() -> Elicit[Person]:
    return Elicit("Who should be greeted?", Person)


def write_greeting(person: Annotated[ElicitationResult[Person], Resolve(ask_name)]) -> Sample:
    name = person.data.name if isinstance(person, AcceptedElicitation) else "stranger"
    prompt = types.TextContent(type="text", text=f"Greet {name} in one line.")
    return Sample([types.SamplingMessage(role="user", content=prompt)], max_tokens=60)


@mcp.tool(structured_output=False)
async def greet(greeting: Annotated[types.CreateMessageResult, Resolve(write_greeting)]) -> str:
    """Ask whom to greet, then have the host's LLM write the greeting."""
    content = greeting.content
    return content.text if isinstance(content, types.TextContent) else str(content)


if __name__ == "__main__":
    mcp.run()
