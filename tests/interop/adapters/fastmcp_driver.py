"""Drive ``fastmcp.Client`` + the fastmcp adapter against the FastMCP 4.1.4 peer (fastmcp_server.py).

    .peers/adapter-fastmcp/bin/python tests/interop/adapters/fastmcp_driver.py \
        (--server PYTHON SCRIPT | --url URL) [--py2 PYTHON SCRIPT]

One receiver (``_common.host``) serves every client, with ``fastmcp_tasks``
imported (the tasks extension's client half). In both of fastmcp's modes: on a
2025-11-25 connection (``mode="legacy"``) the server pushes ``ctx.elicit`` and
``ctx.session.create_message`` (one of them refused); on 2026-07-28 a
foreground ``input_required`` form, and forms a task asks for (accepted and
declined), answered with ``tasks/update``. With ``--py2``, an ``mcp.Client``
(the mcp2 adapter, same receiver) talks to the mcp 2.3.0 peer at the same time
as a ``fastmcp.Client``: sessions of both kinds at once. Prints one JSON object:
``scenarios`` (each the server's report, or what the client raised) and ``host``.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

import anyio
import fastmcp
import fastmcp_tasks  # noqa: F401  (registers the tasks extension on every fastmcp.Client)
import mcp
import mcp_types as types
from fastmcp.client.transports import StdioTransport
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Host, main, parser, report_of, run

from host_receiver.adapters import fastmcp as fastmcp_adapter
from host_receiver.adapters import mcp2 as mcp2_adapter

RUN = uuid.uuid4().hex[:8]  # tags are unique per run: an HTTP peer outlives the driver
ENV = {"PEER_WAIT_S": "20", "FASTMCP_LOG_LEVEL": "WARNING", "PEER_POLL_MS": "50"}


def target(args: argparse.Namespace) -> Any:
    if args.url:
        return args.url
    python, script = args.server
    return StdioTransport(python, [script], env=ENV)


async def call(client: fastmcp.Client[Any], tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    text = next((getattr(c, "text", "") for c in result.content), "")
    return report_of(text) if not result.is_error else {"is_error": True, "text": text}


def tag(name: str) -> str:
    return f"{name}-{RUN}"


async def scenarios(args: argparse.Namespace, h: Host) -> dict[str, Any]:
    options = fastmcp_adapter.client_options(h.receiver, server="fast")
    async with fastmcp.Client(target(args), mode="legacy", **options) as legacy:
        out = await run(
            {
                "legacy_elicit": lambda: call(legacy, "legacy_elicit", tag=tag("legacy-elicit")),
                "legacy_sample": lambda: call(legacy, "legacy_sample", tag=tag("legacy-sample")),
                "legacy_refuse": lambda: call(
                    legacy, "legacy_sample", prompt="refuse this", tag=tag("refuse")
                ),
            }
        )
        out["legacy_protocol"] = legacy.session.protocol_version
    async with fastmcp.Client(target(args), **options) as modern:
        out |= await run(
            {
                "mrtr_form": lambda: call(modern, "mrtr_form", tag=tag("mrtr")),
                "task_form": lambda: call(modern, "task_form", tag=tag("task-form")),
                "task_decline": lambda: call(
                    modern, "task_form", message="please decline", tag=tag("decline")
                ),
            }
        )
        out["modern_protocol"] = modern.session.protocol_version
        if args.py2:
            out["kinds"] = await kinds(args, h, modern)
    return out


async def kinds(args: argparse.Namespace, h: Host, fast: fastmcp.Client[Any]) -> dict[str, Any]:
    """A fastmcp.Client and an mcp.Client on one receiver, their calls at the same time."""
    python, script = args.py2
    other_options = mcp2_adapter.client_options(h.receiver, server="py2")
    reports: dict[str, Any] = {}
    async with mcp.Client(StdioServerParameters(command=python, args=[script]), **other_options) as other:

        async def fast_call() -> None:
            reports["fast"] = await call(fast, "task_form", tag=tag("kinds"))

        async def other_call() -> None:
            result = await other.call_tool("elicit_then_sample", {"tag": tag("kinds")})
            text = next((c.text for c in result.content if isinstance(c, types.TextContent)), "")
            reports["py2"] = report_of(text)

        async with anyio.create_task_group() as group:
            group.start_soon(fast_call)
            group.start_soon(other_call)
    return reports


if __name__ == "__main__":
    cli = parser(__doc__, "the peer's Streamable HTTP endpoint (stateful)")
    cli.add_argument("--py2", nargs=2, metavar=("PYTHON", "SCRIPT"), help="the mcp 2.3.0 peer (stdio)")
    main(cli.parse_args(), scenarios)
