"""What the framework drivers share: the command line, the servers and the scenarios.

Each driver (``<framework>_driver.py``) runs in that framework's environment
(``.peers/framework-*``, made by ``.ci/install-adapters``), builds the
framework's own MCP tooling with the glue docs/frameworks.md shows, and hands
:func:`main` a ``connect(server)`` that yields ``call(tool, arguments)``: one
agent run on the framework's offline test model that calls ``tool`` and
answers with what the tool returned. The scenarios call the mcp 1.30 peer
(tests/interop/peers/py_server.py: it pushes sampling and a form, 2025-11-25)
and the FastMCP 4 peer (fastmcp_server.py, mcp 2.3.0: 2026-07-28 input rounds,
a form then sampling; or, on a 2025-11-25 connection, the same pushed), and
print one JSON object: ``scenarios`` (the servers' reports, or what was raised),
``host`` (what the receiver's people and audit log saw) and the receiver's
capabilities.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "interop" / "adapters"))
from _common import Host, error_of, host, report_of

__all__ = ["RUN", "Call", "Connect", "Host", "error_of", "main", "parser"]

RUN = uuid.uuid4().hex[:8]
#: ``call(tool, arguments)``: one agent run that calls ``tool`` and answers with its text.
Call = Callable[[str, dict[str, Any]], Awaitable[str]]
#: ``connect(argv, host)``: the framework's tooling for the server started by ``argv``.
Connect = Callable[[list[str], Host], AbstractAsyncContextManager[Call]]


def parser(doc: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument(
        "--v1", nargs=2, metavar=("PYTHON", "SCRIPT"), required=True, help="the mcp 1.30 peer"
    )
    parser.add_argument(
        "--v2", nargs=2, metavar=("PYTHON", "SCRIPT"), required=True, help="the FastMCP 4 peer"
    )
    return parser


async def _scenarios(args: argparse.Namespace, h: Host, connect: Connect, modern: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def step(name: str, call: Call, tool: str, arguments: dict[str, Any]) -> None:
        try:
            out[name] = report_of(await call(tool, arguments))
        except Exception as exc:
            out[name] = {"raised": error_of(exc)}

    for server, argv in (("v1", args.v1), ("v2", args.v2)):
        try:
            async with connect(list(argv), h) as call:
                if server == "v1":
                    await step("v1_sample", call, "sample_plain", {"prompt": "hello from the agent"})
                    await step("v1_form", call, "elicit_plain", {"message": "Who is asking?"})
                elif modern:
                    await step("v2_rounds", call, "mrtr_form_then_llm", {"tag": f"rounds-{RUN}"})
                else:
                    await step("v2_form", call, "legacy_elicit", {"tag": f"form-{RUN}"})
                    await step("v2_sample", call, "legacy_sample", {"prompt": "hi", "tag": f"llm-{RUN}"})
        except Exception as exc:
            out[f"{server}_connect"] = {"raised": error_of(exc)}
    return out


def main(
    args: argparse.Namespace,
    connect: Connect,
    *,
    modern: bool,
    extra: Callable[[Host], Awaitable[dict[str, Any]]] | None = None,
) -> None:
    """Run the scenarios (a minute at most; ``modern``: the client speaks 2026-07-28) and print JSON."""

    async def drive() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with host(roots=None) as h:
                out = await _scenarios(args, h, connect, modern)
                if extra is not None:
                    out.update(await extra(h))
                caps = h.receiver.capabilities("2025-11-25")
        return {"scenarios": out, "host": h.seen(), "receiver_capabilities": caps}

    json.dump(anyio.run(drive), sys.stdout, sort_keys=True, default=str)
    sys.stdout.write("\n")
