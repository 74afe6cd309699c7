"""host-receiver inside fastmcp.Client. Run: .peers/adapter-fastmcp/bin/python examples/adapter_fastmcp.py"""

# A host that already talks to its servers through fastmcp.Client keeps doing
# so; host-receiver adds the three imports marked below, the registry and
# receiver in main(), `registry` in the `async with`, and the client options.
# The server is examples/greeting_server.py: its tool asks a form, then an LLM
# call, answered here by host-receiver (approval, providers, forms).

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import fastmcp
from fastmcp.client.transports import StdioTransport

# host-receiver:
from host_receiver import AutoApprove, ElicitationService, FillDefaults, Receiver, SamplingService
from host_receiver.adapters.fastmcp import client_options
from providers import build_registry

SERVER = StdioTransport(sys.executable, [str(Path(__file__).with_name("greeting_server.py"))])


async def main() -> None:
    registry = build_registry()  # the configured providers, or the offline echo provider
    receiver = Receiver(  # your own approval and form UIs go here
        sampling=SamplingService(registry, AutoApprove()), elicitation=ElicitationService(FillDefaults())
    )
    async with registry, fastmcp.Client(SERVER, **client_options(receiver, server="greeter")) as client:
        result = await client.call_tool("greet", {})
        print(result.content[0].text)


anyio.run(main)
