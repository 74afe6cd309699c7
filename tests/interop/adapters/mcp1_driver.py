"""Drive mcp 1.x's ``ClientSession`` + the mcp1 adapter against the mcp 1.30 peer (py_server.py).

    .peers/adapter-mcp1/bin/python tests/interop/adapters/mcp1_driver.py --server PYTHON SCRIPT
    .peers/adapter-mcp1/bin/python tests/interop/adapters/mcp1_driver.py --url URL

One receiver (``_common.host``) serves two sessions at once: ``notes`` runs the
task scenarios (task-augmented sampling and elicitation, plain requests, a
refusal, a decline, an invalid form, a cancellation, listing, an unknown id),
``notes-b`` probes ``notes``'s tasks (isolation) and fills its quota (limits).
Then a session on a narrower receiver (sampling only, no ``tasks/list``)
shows that what the session declares follows the receiver. Then host-receiver's
own connection (``host_receiver.Host``) and an adapter session on one receiver at
once, each probing the other's task (isolation across kinds); and one task
scenario run through each of the two on a fresh receiver, for their audit logs.
Over stdio each session has its own server process; over HTTP both are sessions
of one server. Prints one JSON object: ``scenarios`` (each the server's report,
or what the client raised), ``host`` (views, cancellations, audit lines).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

import host_receiver
from host_receiver import ConnectionOptions, Receiver

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CONFIG, Host, host, main, parser, report_of, run

from host_receiver.adapters.mcp1 import session_options

#: What mcp 1.30's ClientSession offers in initialize.
VERSION = "2025-11-25"
INVALID_FORM = {"type": "object", "properties": {"address": {"type": "object"}}}
#: The receiver's quota of live tasks per server in this driver (ReceiverConfig.max_active_tasks).
QUOTA = 4
#: The receiver's configuration in this driver.
DRIVER_CONFIG = replace(CONFIG, max_active_tasks=QUOTA)

#: Calls a tool of the peer, one way in or the other, and returns its report.
Call = Callable[..., Awaitable[Any]]
#: Opens one way in to the peer (an adapter session, or host-receiver's own connection) on a receiver.
Way = Callable[[argparse.Namespace, Host, str], Any]


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


@asynccontextmanager
async def through_adapter(args: argparse.Namespace, h: Host, name: str) -> AsyncIterator[Call]:
    """Tool calls through a ClientSession with the adapter's options, serving ``name``."""
    async with connect(args, session_options(h.receiver, server=name)) as session:
        yield functools.partial(call, session)


@asynccontextmanager
async def through_own(args: argparse.Namespace, h: Host, name: str) -> AsyncIterator[Call]:
    """Tool calls through host-receiver's own connection (``host_receiver.Host``), serving ``name``."""
    async with host_receiver.Host(h.receiver) as own:
        options = ConnectionOptions(protocol=VERSION)
        if args.url:
            server = await own.connect_url(name, args.url, options=options)
        else:
            python, script = args.server
            server = await own.connect_stdio(
                name, python, [script], env={"PEER_WAIT_S": "20"}, options=options
            )

        async def call_own(tool: str, **arguments: Any) -> Any:
            result = await server.call_tool(tool, arguments)
            return report_of(result.text) if not result.is_error else {"is_error": True, "text": result.text}

        yield call_own


async def across_kinds(args: argparse.Namespace, h: Host) -> dict[str, Any]:
    """An adapter session and host-receiver's own connection on one receiver: each probes the other."""
    async with through_adapter(args, h, "adapter") as adapter, through_own(args, h, "own") as own:
        tasks = {
            "adapter": await adapter("sample_task", prompt="a task of the adapter session"),
            "own": await own("sample_task", prompt="a task of the own connection"),
        }
        probes = "get,result,cancel,list"
        return {
            "tasks": tasks,
            "adapter_probes_own": await adapter(
                "probe_task", task_id=tasks["own"]["task"]["taskId"], methods=probes
            ),
            "own_probes_adapter": await own(
                "probe_task", task_id=tasks["adapter"]["task"]["taskId"], methods=probes
            ),
        }


async def audit_trail(args: argparse.Namespace, way: Way) -> list[str]:
    """The audit lines of one task scenario through ``way``, on a fresh receiver of its own."""
    async with host(DRIVER_CONFIG) as fresh:
        async with way(args, fresh, "same") as call_tool:
            await call_tool("sample_task", prompt="audit: sampling")
            await call_tool("elicit_task", message="audit: a form")
            await call_tool("sample_task", prompt="audit: refuse this task")
            await call_tool("elicit_task", message="audit: please decline")
            started = await call_tool("start_sample_task", prompt="audit: hold this task")
            await fresh.script.wait_held(started["task"]["taskId"])
            await call_tool("cancel_task", task_id=started["task"]["taskId"])
            await call_tool("get_unknown_task")
        return [line for line in fresh.audit.lines if "requestor=same " in line]


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
    out |= await run(
        {
            "across_kinds": lambda: across_kinds(args, h),
            "audit_own": lambda: audit_trail(args, through_own),
            "audit_adapter": lambda: audit_trail(args, through_adapter),
        }
    )
    # Every session has ended: their tasks went with them.
    out["tasks_stored_after"] = len(h.receiver.store)  # type: ignore[arg-type]
    return out


if __name__ == "__main__":
    cli = parser(__doc__, "the peer's Streamable HTTP endpoint")
    main(cli.parse_args(), scenarios, config=DRIVER_CONFIG)
