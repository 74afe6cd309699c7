"""host-receiver's embedded Host API as the client of the multi-round-trip benchmark.

``mrtr_host.py [--protocol P] [--size full|smoke] --out PATH (--url URL | -- COMMAND [ARG...])``
builds ``Host(Receiver(...))`` with the offline echo provider behind
``SamplingService(..., AutoApprove())`` and ``ElicitationService(FillDefaults())``
(the form's defaults are the answer), connects to the server over stdio
(COMMAND) or Streamable HTTP (URL), and runs :func:`benchmarks.mrtr_load.measure`.
Writes ``{"results": {...}}`` (or ``{"failure": ...}``) as JSON to PATH.
``connect_ms`` is the time :meth:`Host.connect` took (for stdio it includes
starting the server process).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.mrtr_load import FORM_TEXT, client_main, measure
from host_receiver.client.host import Host, ServerConnection
from host_receiver.client.options import ConnectionOptions
from host_receiver.handlers import ElicitationService, SamplingService
from host_receiver.people.approval import AutoApprove, FillDefaults
from host_receiver.receiver import Receiver
from providers import build_registry

#: What the echo provider answers to the server's one-message sampling request.
ECHO_TEXT = "echo: Say hi."


async def connect(host: Host, args: argparse.Namespace, command: Sequence[str]) -> ServerConnection:
    if args.url:
        return await host.connect_url("mrtr", args.url)
    return await host.connect_stdio("mrtr", command[0], command[1:])


async def run(args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    registry = build_registry(provider="echo")
    receiver = Receiver(
        sampling=SamplingService(registry, AutoApprove()),
        elicitation=ElicitationService(FillDefaults()),
    )
    async with registry, Host(receiver, ConnectionOptions(protocol=args.protocol)) as host:
        started = time.perf_counter()
        server = await connect(host, args, command)
        connect_ms = (time.perf_counter() - started) * 1e3

        async def call(tool: str) -> str:
            return (await server.call_tool(tool, {})).text

        measured = await measure(call, {"form": FORM_TEXT, "sample": ECHO_TEXT}, args.size)
        version = server.protocol_version
        await server.close()
    return {"connect_ms": connect_ms, "protocol_version": version, **measured}


def main() -> None:
    option = ("--protocol", "2026-07-28", "the Host's protocol choice")
    client_main((__doc__ or "").splitlines()[0], run, option)


if __name__ == "__main__":
    main()
