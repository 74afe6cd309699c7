"""host-receiver in mcp 1.x's ClientSession. Run: .peers/adapter-mcp1/bin/python examples/adapter_mcp1.py"""

# A host that already talks to its servers through mcp's ClientSession keeps
# doing so; host-receiver adds the three lines marked below (two imports, and
# the receiver: the configured providers, or the offline echo provider, behind
# your approval and form UIs, for which AutoApprove and FillDefaults stand in
# here) and the session's options. The server is examples/demo_server.py: its
# tool sends task-augmented sampling and forms, answered here by host-receiver.

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from host_receiver import AutoApprove, FillDefaults, open_receiver  # host-receiver
from host_receiver.adapters.mcp1 import session_options  # host-receiver

SERVER = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("demo_server.py"))])


async def main() -> None:
    async with (
        open_receiver(AutoApprove(), FillDefaults()) as receiver,  # host-receiver
        stdio_client(SERVER) as (read, write),
        ClientSession(read, write, **session_options(receiver, server="release-helper")) as session,
    ):
        await session.initialize()
        result = await session.call_tool("announce_release", {"version": "2.0.0"})
        print(result.content[0].text)


anyio.run(main)
