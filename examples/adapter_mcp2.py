"""host-receiver inside mcp 2.x's mcp.Client. Run: .peers/adapter-mcp2/bin/python examples/adapter_mcp2.py"""

# A host that already talks to its servers through mcp.Client keeps doing so;
# host-receiver adds the three lines marked below (two imports, and the receiver:
# the configured providers, or the offline echo provider, behind your approval
# and form UIs, for which AutoApprove and FillDefaults stand in here) and the
# client's options. The server is examples/greeting_server.py: its tool asks a
# form, then an LLM call, in two input rounds, answered here by host-receiver.

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp
from mcp.client.stdio import StdioServerParameters

from host_receiver import AutoApprove, FillDefaults, open_receiver  # host-receiver
from host_receiver.adapters.mcp2 import client_options  # host-receiver

SERVER = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("greeting_server.py"))]
)


async def main() -> None:
    async with (
        open_receiver(AutoApprove(), FillDefaults()) as receiver,  # host-receiver
        mcp.Client(SERVER, **client_options(receiver, server="greeter")) as client,
    ):
        result = await client.call_tool("greet", {})
        print(result.content[0].text)


anyio.run(main)
