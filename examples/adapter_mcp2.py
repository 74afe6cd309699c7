"""host-receiver inside mcp 2.x's mcp.Client. Run: .peers/adapter-mcp2/bin/python examples/adapter_mcp2.py"""

# A host that already talks to its servers through mcp.Client keeps doing so;
# host-receiver adds the three imports marked below, the registry and receiver
# in main(), `registry` in the `async with`, and the client options. The server
# is examples/greeting_server.py: its tool asks a form, then an LLM call, in two
# input rounds, answered here by host-receiver (approval, providers, forms).

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp
from mcp.client.stdio import StdioServerParameters

# host-receiver:
from host_receiver import AutoApprove, ElicitationService, FillDefaults, Receiver, SamplingService
from host_receiver.adapters.mcp2 import client_options
from providers import build_registry

SERVER = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("greeting_server.py"))]
)


async def main() -> None:
    registry = build_registry()  # the configured providers, or the offline echo provider
    receiver = Receiver(  # your own approval and form UIs go here
        sampling=SamplingService(registry, AutoApprove()), elicitation=ElicitationService(FillDefaults())
    )
    async with registry, mcp.Client(SERVER, **client_options(receiver, server="greeter")) as client:
        result = await client.call_tool("greet", {})
        print(result.content[0].text)


anyio.run(main)
