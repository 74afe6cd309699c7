"""host-receiver inside fastmcp.Client. Run: .peers/adapter-fastmcp/bin/python examples/adapter_fastmcp.py"""

# A host that already talks to its servers through fastmcp.Client keeps doing
# so; host-receiver adds the three lines marked below (two imports, and the
# receiver: the configured providers, or the offline echo provider, behind your
# approval and form UIs, for which AutoApprove and FillDefaults stand in here)
# and the client's options. The server is examples/greeting_server.py: its tool
# asks a form, then an LLM call, answered here by host-receiver.

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import fastmcp
from fastmcp.client.transports import StdioTransport

from host_receiver import AutoApprove, FillDefaults, open_receiver  # host-receiver
from host_receiver.adapters.fastmcp import client_options  # host-receiver

SERVER = StdioTransport(sys.executable, [str(Path(__file__).with_name("greeting_server.py"))])


async def main() -> None:
    async with (
        open_receiver(AutoApprove(), FillDefaults()) as receiver,  # host-receiver
        fastmcp.Client(SERVER, **client_options(receiver, server="greeter")) as client,
    ):
        result = await client.call_tool("greet", {})
        print(result.content[0].text)


anyio.run(main)
