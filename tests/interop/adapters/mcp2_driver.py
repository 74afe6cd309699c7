"""Drive mcp 2.x's ``mcp.Client`` + the mcp2 adapter against the mcp 2.3.0 peer (py2_server.py).

    .peers/adapter-mcp2/bin/python tests/interop/adapters/mcp2_driver.py \
        (--server PYTHON SCRIPT [--legacy-peer PYTHON SCRIPT] | --url URL)

One receiver (``_common.host``, its ``maxTokens`` limit below what the peer asks)
serves every client. On 2026-07-28 (``mode="auto"``, stdio or stateless HTTP):
one input round, two in a row, two entries in one round, sampling with tools,
a decline, a refusal and a cancellation (each followed by the same call again,
whose report lists every round the server got for that call), and two clients
at once. Over stdio also: a 2025-11-25 connection (``mode="legacy"``) where the
server pushes its requests (a URL among them), and, with ``--legacy-peer``, the
mcp 1.30 peer's task-augmented request, whose ``task`` the adapter must ignore.
Prints one JSON object: ``scenarios`` (each the server's report, or what the
client raised) and ``host``.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp_types as types
from mcp.client.stdio import StdioServerParameters

from host_receiver import Receiver
from providers import SamplingLimits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Host, main, parser, report_of, run

from host_receiver.adapters.mcp2 import client_options

RUN = uuid.uuid4().hex[:8]  # tags are unique per run: an HTTP peer outlives the driver
#: The version whose capabilities mcp 2.x declares (the newest both know; docs/adapters.md).
MODERN = "2026-07-28"
#: The host's limit on maxTokens (the peer asks 100): echo answers are cut to this many words.
MAX_TOKENS = 4


def target(args: argparse.Namespace, server: list[str] | None = None) -> Any:
    if server is None and args.url:
        return args.url
    python, script = server or args.server
    return StdioServerParameters(command=python, args=[script], env={"PEER_WAIT_S": "20"})


async def call(client: mcp.Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    text = next((c.text for c in result.content if isinstance(c, types.TextContent)), "")
    return report_of(text) if not result.is_error else {"is_error": True, "text": text}


def tag(name: str) -> str:
    return f"{name}-{RUN}"


async def scenarios(args: argparse.Namespace, h: Host) -> dict[str, Any]:
    notes = client_options(h.receiver, server="notes")
    async with mcp.Client(target(args), **notes) as a:

        async def cancel() -> Any:
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: call(a, "elicit_form", message="hold once", tag=tag("cancel")))
                await h.script.wait_held()
                group.cancel_scope.cancel()
            return {"protocol_version": a.protocol_version}

        async def concurrent() -> Any:
            reports: dict[str, Any] = {}

            async def one(name: str, client: mcp.Client) -> None:
                reports[name] = await call(client, "elicit_form", message=f"at once {name}", tag=tag(name))

            b_options = client_options(h.receiver, server="notes-b")
            async with mcp.Client(target(args), **b_options) as b, anyio.create_task_group() as group:
                group.start_soon(one, "notes", a)
                group.start_soon(one, "notes-b", b)
            return reports

        out = await run(
            {
                "one_round": lambda: call(a, "elicit_form", tag=tag("one")),
                "two_rounds": lambda: call(a, "elicit_then_sample", tag=tag("two")),
                "same_round": lambda: call(a, "elicit_and_sample", tag=tag("same")),
                "tools": lambda: call(a, "sample_tools", tag=tag("tools")),
                "decline": lambda: call(a, "elicit_form", message="please decline", tag=tag("decline")),
                "refuse": lambda: call(a, "sample", prompt="refuse once", tag=tag("refuse")),
                "refuse_again": lambda: call(a, "sample", prompt="refuse once", tag=tag("refuse")),
                "cancel": cancel,
                "cancel_again": lambda: call(a, "elicit_form", message="hold once", tag=tag("cancel")),
                "concurrent": concurrent,
                "roots": lambda: call(a, "list_roots", tag=tag("roots")),
                "url": lambda: call(a, "elicit_url", tag=tag("url")),
            }
        )
    # A receiver that samples without tools and serves no forms and no roots.
    narrow = Receiver(sampling=h.receiver.offer.sampling, sampling_tools=False)
    async with mcp.Client(target(args), **client_options(narrow, server="narrow")) as n:
        out |= await run(
            {
                "narrow_sample": lambda: call(n, "sample", prompt="narrow", tag=tag("narrow")),
                "narrow_elicit": lambda: call(
                    n, "elicit_form", message="not served here", tag=tag("narrow-form")
                ),
            }
        )
    out["narrow_capabilities"] = narrow.capabilities(MODERN)
    if args.url:
        return out
    async with mcp.Client(target(args), mode="legacy", **notes) as legacy:
        out |= await run(
            {
                "legacy_one": lambda: call(legacy, "elicit_form", tag=tag("legacy-one")),
                "legacy_two": lambda: call(legacy, "elicit_then_sample", tag=tag("legacy-two")),
                "legacy_url": lambda: call(legacy, "elicit_url", tag=tag("legacy-url")),
            }
        )
    if args.legacy_peer:
        async with mcp.Client(target(args, args.legacy_peer), **notes) as old:
            out["legacy_task_ignored"] = await call(old, "sample_task", prompt="a task for mcp 2")
    return out


if __name__ == "__main__":
    cli = parser(__doc__, "the peer's Streamable HTTP endpoint (stateless)")
    cli.add_argument("--legacy-peer", nargs=2, metavar=("PYTHON", "SCRIPT"), help="the mcp 1.30 peer (stdio)")
    main(cli.parse_args(), scenarios, limits=SamplingLimits(max_tokens=MAX_TOKENS))
