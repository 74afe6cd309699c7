"""The official Python SDK 2.x ``mcp.Client`` (mcp==2.3.0) as the client of the multi-round-trip benchmark.

    .peers/py2/bin/python benchmarks/peers/py2_mrtr_client.py [--mode M] [--size S] --out PATH \
        (--url URL | -- COMMAND [ARG...])

Plain callbacks, as the SDK's documentation shows them: the elicitation
callback accepts every form with ``{"name": "Ada", "age": 36}``, the sampling
callback returns a canned ``CreateMessageResult``. ``mode`` is pinned to
2026-07-28 by default (no ``server/discover``). Connects over stdio (COMMAND)
or Streamable HTTP (URL) and runs :func:`benchmarks.mrtr_load.measure`; writes
``{"results": {...}}`` (or ``{"failure": ...}``) as JSON to PATH.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.mrtr_load import FORM_TEXT, client_main, measure

LLM_TEXT = "hi from a canned callback"


async def sampling(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
    content = types.TextContent(type="text", text=LLM_TEXT)
    return types.CreateMessageResult(role="assistant", content=content, model="canned", stop_reason="endTurn")


async def elicitation(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
    return types.ElicitResult(action="accept", content={"name": "Ada", "age": 36})


def text_of(result: types.CallToolResult) -> str:
    return next((block.text for block in result.content if isinstance(block, types.TextContent)), "")


async def run(args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    server: Any = args.url or StdioServerParameters(command=command[0], args=list(command[1:]))
    started = time.perf_counter()
    async with Client(
        server, mode=args.mode, sampling_callback=sampling, elicitation_callback=elicitation
    ) as client:
        connect_ms = (time.perf_counter() - started) * 1e3

        async def call(tool: str) -> str:
            return text_of(await client.call_tool(tool, {}))

        measured = await measure(call, {"form": FORM_TEXT, "sample": LLM_TEXT}, args.size)
        version = client.protocol_version
    return {"connect_ms": connect_ms, "protocol_version": version, **measured}


def main() -> None:
    option = ("--mode", "2026-07-28", "the Client's mode")
    client_main((__doc__ or "").splitlines()[0], run, option)


if __name__ == "__main__":
    main()
