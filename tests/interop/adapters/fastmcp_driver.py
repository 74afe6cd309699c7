"""Drive ``fastmcp.Client`` + the fastmcp adapter against the FastMCP 4.1.4 peer (fastmcp_server.py).

    .peers/adapter-fastmcp/bin/python tests/interop/adapters/fastmcp_driver.py \
        (--server PYTHON SCRIPT | --url URL) [--py2 PYTHON SCRIPT]

Runs in any fastmcp adapter venv (.ci/install-adapters): the pinned one, with
``fastmcp_tasks`` imported (the tasks extension's client half), or the newest
or lowest fastmcp 4.x without it, where the task scenarios are left out. One
receiver (``_common.host``) serves every client, in both of fastmcp's modes.
On a 2025-11-25 connection (``mode="legacy"``) the server pushes ``ctx.elicit``
and ``ctx.session.create_message`` (one of them refused), a form the receiver
refuses -32602, and a form held until the caller cancels its ``call_tool``. On
2026-07-28, foreground ``input_required`` rounds: a form, an LLM call, a form
then an LLM call; with the tasks extension also forms a task asks for
(accepted and declined), answered with ``tasks/update``. With ``--py2``, an
``mcp.Client`` (the mcp2 adapter, same receiver) talks to the mcp 2.3.0 peer at
the same time as a ``fastmcp.Client``: sessions of both kinds at once, with the
views each produced. Prints one JSON object: ``scenarios`` (each the server's
report, or what the client raised) and ``host``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

import anyio
import fastmcp
import mcp
import mcp_types as types
from fastmcp.client.transports import StdioTransport
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Host, main, parser, report_of, run

from host_receiver import Receiver
from host_receiver.adapters import fastmcp as fastmcp_adapter
from host_receiver.adapters import mcp2 as mcp2_adapter

try:
    import fastmcp_tasks  # noqa: F401  (registers the tasks extension on every fastmcp.Client)
except ImportError:  # the newest fastmcp the extra allows comes without it
    TASKS = False
else:
    TASKS = True

RUN = uuid.uuid4().hex[:8]  # tags are unique per run: an HTTP peer outlives the driver
ENV = {"PEER_WAIT_S": "20", "FASTMCP_LOG_LEVEL": "WARNING", "PEER_POLL_MS": "50"}
#: The version whose capabilities fastmcp's mcp 2.x session declares (the newest both know).
MODERN = "2026-07-28"
#: A form the receiver refuses with -32602 (an object inside an object).
INVALID_FORM = {"type": "object", "properties": {"address": {"type": "object"}}}


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

        async def cancel() -> Any:
            """call_tool cancelled while the server's ctx.elicit waits on a held form."""
            async with anyio.create_task_group() as group:
                group.start_soon(
                    lambda: call(legacy, "legacy_elicit", message="hold legacy", tag=tag("cancel"))
                )
                await h.script.wait_held()
                group.cancel_scope.cancel()
            with anyio.fail_after(20):  # the form's work is cancelled while the session is open
                await h.script.wait_cancelled("hold legacy")
            return await call(legacy, "events", tag=tag("cancel"))

        out = await run(
            {
                "legacy_elicit": lambda: call(legacy, "legacy_elicit", tag=tag("legacy-elicit")),
                "legacy_sample": lambda: call(legacy, "legacy_sample", tag=tag("legacy-sample")),
                "legacy_refuse": lambda: call(
                    legacy, "legacy_sample", prompt="refuse this", tag=tag("refuse")
                ),
                "legacy_invalid_form": lambda: call(
                    legacy, "legacy_elicit", schema=json.dumps(INVALID_FORM), tag=tag("invalid")
                ),
                "legacy_cancel": cancel,
            }
        )
        out["legacy_protocol"] = legacy.session.protocol_version
    async with fastmcp.Client(target(args), **options) as modern:
        modern_calls = {
            "mrtr_form": lambda: call(modern, "mrtr_form", tag=tag("mrtr")),
            "mrtr_llm": lambda: call(modern, "mrtr_llm", prompt="hello modern llm", tag=tag("mrtr-llm")),
            "mrtr_form_then_llm": lambda: call(modern, "mrtr_form_then_llm", tag=tag("mrtr-two")),
        }
        if TASKS:
            modern_calls |= {
                "task_form": lambda: call(modern, "task_form", tag=tag("task-form")),
                "task_decline": lambda: call(
                    modern, "task_form", message="please decline", tag=tag("decline")
                ),
            }
        out |= await run(modern_calls)
        out["modern_protocol"] = modern.session.protocol_version
        if args.py2:
            out |= await run({"kinds": lambda: kinds(args, h, modern)})
    # A receiver that samples without tools and serves no forms.
    narrow = Receiver(sampling=h.receiver.offer.sampling, sampling_tools=False)
    async with fastmcp.Client(target(args), **fastmcp_adapter.client_options(narrow, server="narrow")) as n:
        out |= await run(
            {
                "narrow_llm": lambda: call(n, "mrtr_llm", prompt="narrow", tag=tag("narrow")),
                "narrow_form": lambda: call(
                    n, "mrtr_form", message="not served here", tag=tag("narrow-form")
                ),
            }
        )
    out["narrow_capabilities"] = narrow.capabilities(MODERN)
    out["fastmcp_version"] = fastmcp.__version__
    out["tasks_extension"] = TASKS
    return out


async def kinds(args: argparse.Namespace, h: Host, fast: fastmcp.Client[Any]) -> dict[str, Any]:
    """A fastmcp.Client and an mcp.Client on one receiver, their calls at the same time."""
    python, script = args.py2
    other_options = mcp2_adapter.client_options(h.receiver, server="py2")
    reports: dict[str, Any] = {}
    seen_before = len(h.script.views)
    async with mcp.Client(StdioServerParameters(command=python, args=[script]), **other_options) as other:

        async def fast_call() -> None:
            # A task's form with the tasks extension, a foreground input round without it.
            tool = "task_form" if TASKS else "mrtr_form"
            reports["fast"] = await call(fast, tool, message="at once fast", tag=tag("kinds"))

        async def other_call() -> None:
            arguments = {"message": "at once py2", "tag": tag("kinds")}
            result = await other.call_tool("elicit_then_sample", arguments)
            text = next((c.text for c in result.content if isinstance(c, types.TextContent)), "")
            reports["py2"] = report_of(text)

        async with anyio.create_task_group() as group:
            group.start_soon(fast_call)
            group.start_soon(other_call)
    reports["views"] = h.script.views[seen_before:]
    return reports


if __name__ == "__main__":
    cli = parser(__doc__, "the peer's Streamable HTTP endpoint (stateful)")
    cli.add_argument("--py2", nargs=2, metavar=("PYTHON", "SCRIPT"), help="the mcp 2.3.0 peer (stdio)")
    main(cli.parse_args(), scenarios)
