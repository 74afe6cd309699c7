"""host-receiver through its embedding API, as a host application would use it.

``embedded.py [--provider NAME] [--model ID] [--probe-fifo PATH] -- COMMAND [ARG...]``
builds ``Host(Receiver(...))`` with ``SamplingService(build_registry(...),
AutoApprove())``, connects to the requestor over stdio and serves it until it
goes away. With ``--url URL`` instead of a command it connects over
Streamable HTTP (``Host.connect_url``), and with ``--call TOOL`` it then calls
TOOL once (``ServerConnection.call_tool``) and exits when the call returns.
The limits are raised to the load the suite generates, and the
garbage collector is tuned (``tune_gc_for_serving``), as a host that expects
thousands of tasks would do. With ``--probe-fifo`` it runs
tracemalloc and, on SIGUSR1, writes its traced memory as one JSON line to the
FIFO (after a full garbage collection).
"""

from __future__ import annotations

import argparse
import gc
import json
import signal
import sys
import tracemalloc
from collections.abc import Sequence

import anyio

from host_receiver.client.host import Host, tune_gc_for_serving
from host_receiver.handlers import ElicitationService, SamplingService
from host_receiver.people.approval import AutoApprove, FillDefaults
from host_receiver.receiver import Receiver, ReceiverConfig
from providers import build_registry

#: Sized for the suite: 1,000 concurrent tasks and 100k retained ones.
CONFIG = ReceiverConfig(max_active_tasks=5_000, max_stored_tasks=250_000)


async def answer_probes(fifo: str) -> None:
    """On every SIGUSR1, report ``tracemalloc``'s traced bytes on ``fifo``."""

    def write(data: bytes) -> None:
        with open(fifo, "wb") as out:
            out.write(data)

    with anyio.open_signal_receiver(signal.SIGUSR1) as signals:
        async for _ in signals:
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
            data = json.dumps({"traced": current, "traced_peak": peak}).encode()
            await anyio.to_thread.run_sync(write, data)


async def serve(args: argparse.Namespace, command: Sequence[str]) -> None:
    registry = build_registry(provider=args.provider, model=args.model)
    receiver = Receiver(
        sampling=SamplingService(registry, AutoApprove()),
        elicitation=ElicitationService(FillDefaults()),
        config=CONFIG,
    )
    async with registry, Host(receiver) as host, anyio.create_task_group() as group:
        if args.probe_fifo:
            group.start_soon(answer_probes, args.probe_fifo)
        if args.url:
            server = await host.connect_url("requestor", args.url)
        else:
            server = await host.connect_stdio("requestor", command[0], command[1:])
        if args.call:
            await server.call_tool(args.call)
            await server.close()
        await server.wait_closed()
        if server.error is not None:
            print(f"embedded: connection ended with {server.error!r}", file=sys.stderr)
        group.cancel_scope.cancel()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="echo")
    parser.add_argument("--model")
    parser.add_argument("--probe-fifo", help="run tracemalloc and answer SIGUSR1 on this FIFO")
    parser.add_argument("--url", help="the requestor's Streamable HTTP endpoint (instead of a command)")
    parser.add_argument("--call", metavar="TOOL", help="with --url: call TOOL once, then exit")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if bool(command) == bool(args.url):
        parser.error("give the requestor command after --, or --url")
    if args.probe_fifo:
        tracemalloc.start()
    tune_gc_for_serving()  # what a host that expects thousands of tasks does (docs/performance.md)
    anyio.run(serve, args, command)


if __name__ == "__main__":
    main()
