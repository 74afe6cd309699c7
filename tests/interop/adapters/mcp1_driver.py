"""Drive mcp 1.x's ``ClientSession`` + the mcp1 adapter against the mcp 1.30 peer (py_server.py).

    .peers/adapter-mcp1/bin/python tests/interop/adapters/mcp1_driver.py --server PYTHON SCRIPT
    .peers/adapter-mcp1/bin/python tests/interop/adapters/mcp1_driver.py --url URL

One receiver (``_common.host``) serves two sessions at once: ``notes`` runs the
task scenarios (task-augmented sampling and elicitation, plain requests, a
refusal, a decline, an invalid form, a cancellation, listing, an unknown id),
``notes-b`` probes ``notes``'s tasks (isolation) and fills its quota (limits).
Then a session on a narrower receiver (sampling only, no ``tasks/list``)
shows that what the session declares follows the receiver.
Over stdio each session has its own server process; over HTTP both are sessions
of one server. Prints one JSON object: ``scenarios`` (each the server's report,
or what the client raised), ``host`` (views, cancellations, audit lines).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from host_receiver import Receiver

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CONFIG, Host, main, parser, report_of, run

from host_receiver.adapters.mcp1 import session_options

#: What mcp 1.30's ClientSession offers in initialize.
VERSION = "2025-11-25"
INVALID_FORM = {"type": "object", "properties": {"address": {"type": "object"}}}
#: The receiver's quota of live tasks per server in this driver (ReceiverConfig.max_active_tasks).
QUOTA = 4


@asynccontextmanager
async def connect(args: argparse.Namespace, options: dict[str, Any]) -> AsyncIterator[ClientSession]:
    """A ClientSession on the peer, built with the adapter's options, initialized."""
    async with AsyncExitStack() as stack:
        if args.url:
            read, write, _ = await stack.enter_async_context(streamablehttp_client(args.url))
        else:
            python, script = args.server
            params = StdioServerParameters(command=python, args=[script], env={"PEER_WAIT_S": "20"})
            read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write, **options))
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    text = next((c.text for c in result.content if isinstance(c, types.TextContent)), "")
    return report_of(text) if not result.isError else {"is_error": True, "text": text}


async def scenarios(args: argparse.Namespace, h: Host) -> dict[str, Any]:
    async with (
        connect(args, session_options(h.receiver, server="notes")) as a,
        connect(args, session_options(h.receiver, server="notes-b")) as b,
    ):

        async def cancel() -> Any:
            started = await call(a, "start_sample_task", prompt="hold me")
            task_id = started["task"]["taskId"]
            await h.script.wait_held(task_id)
            return {"started": started, "report": await call(a, "cancel_task", task_id=task_id)}

        async def concurrent() -> Any:
            reports: dict[str, Any] = {}

            async def one(name: str, session: ClientSession) -> None:
                reports[name] = await call(session, "sample_task", prompt=f"at once from {name}")

            async with anyio.create_task_group() as group:
                group.start_soon(one, "notes", a)
                group.start_soon(one, "notes-b", b)
            return reports

        out = await run(
            {
                "sample_task": lambda: call(a, "sample_task", prompt="hello adapters", ttl_ms=-1),
                "elicit_task": lambda: call(a, "elicit_task", message="Who are you?", ttl_ms=10**9),
                "sample_plain": lambda: call(a, "sample_plain", prompt="hello plain"),
                "elicit_plain": lambda: call(a, "elicit_plain", message="Who are you, plainly?"),
                "refuse_task": lambda: call(a, "sample_task", prompt="refuse this task"),
                "refuse_plain": lambda: call(a, "sample_plain", prompt="refuse this"),
                "decline_task": lambda: call(a, "elicit_task", message="please decline"),
                "invalid_form": lambda: call(a, "elicit_plain", message="bad form", schema=INVALID_FORM),
                "cancel": cancel,
                "list": lambda: call(a, "list_tasks", count=3, page_size=2),
                "unknown": lambda: call(a, "get_unknown_task"),
                "concurrent": concurrent,
            }
        )
        own = out["sample_task"]["task"]["taskId"]
        out["limits"] = [await call(b, "start_sample_task", prompt=f"hold {i}") for i in range(QUOTA + 1)]
        out |= await run(
            {
                "probe": lambda: call(b, "probe_task", task_id=own, methods="get,result,cancel,list"),
                "notifications": lambda: call(a, "notifications"),
            }
        )
    # A receiver that samples (tasks too) but does not elicit, and offers no tasks/list.
    narrow = Receiver(sampling=h.receiver.offer.sampling, config=replace(CONFIG, tasks_list=False))
    async with connect(args, session_options(narrow, server="narrow")) as n:
        out |= await run(
            {
                "narrow_sample": lambda: call(n, "sample_task", prompt="narrow"),
                "narrow_elicit": lambda: call(n, "elicit_plain", message="not served here"),
            }
        )
    out["receiver_capabilities"] = {
        "notes": h.receiver.capabilities(VERSION),
        "narrow": narrow.capabilities(VERSION),
    }
    # Every session has ended: their tasks went with them.
    out["tasks_stored_after"] = len(h.receiver.store)  # type: ignore[arg-type]
    return out


if __name__ == "__main__":
    cli = parser(__doc__, "the peer's Streamable HTTP endpoint")
    main(cli.parse_args(), scenarios, config=replace(CONFIG, max_active_tasks=QUOTA))
