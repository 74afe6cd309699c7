"""The MCP server of the multi-round-trip benchmark, on the official Python SDK 2.x (mcp==2.3.0).

    .peers/py2/bin/python benchmarks/peers/mrtr_server.py             # stdio
    .peers/py2/bin/python benchmarks/peers/mrtr_server.py --port 0    # stateless Streamable HTTP

Two tools that need exactly one round of input each (2026-07-28: an
``input_required`` result, then the retry carrying ``inputResponses``), asked
through the SDK's own resolvers, as the interop peer does
(tests/interop/peers/py2_server.py):

- ``form``: one form elicitation, ``{name: string = "Ada", age: integer = 36}``
  (every field has a default, so a host that fills in defaults can answer it);
  returns ``"<name> <age>"``.
- ``sample``: one ``sampling/createMessage`` (one user message, ``maxTokens``
  16); returns the text of the answer.

and ``stats``, which asks nothing and returns how much work this process has
done so far, as JSON:

- ``cpu_s``: the process's CPU time, user + system, every thread
  (``time.process_time()``, CLOCK_PROCESS_CPUTIME_ID): everything the server
  computed, transport, JSON, validation, ``requestState`` sealing and handlers.
- ``wait_s``: how long its threads were ready to run but waited for a CPU
  (Linux schedstat): on a shared machine, time lost to other processes.
- ``handled`` and ``handler_s``: how many ``form``/``sample`` requests went
  through the SDK's request handling, and the wall time they spent in it,
  measured with ``perf_counter`` by the outermost middleware (parameter
  validation, ``requestState`` unsealing and sealing, the resolvers, the tool
  body and serialisation; not the transport).

A client reads ``stats`` before and after a phase: the difference is the
server's own work for that phase. With --port it serves
``http://127.0.0.1:<port>/mcp`` statelessly and prints ``LISTENING <url>``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "interop" / "peers")]
from _loopback import serve_on_loopback  # noqa: E402  (the interop peers' loopback server)

from benchmarks.mrtr_load import RunQueueWait  # noqa: E402

TIMED_TOOLS = frozenset({"form", "sample"})
WAITS = RunQueueWait()

mcp = MCPServer("mrtr-bench", version="1", log_level="WARNING")
tool = mcp.tool(structured_output=False)


class Work:
    """The timed requests so far and the wall time they spent in request handling."""

    handled = 0
    handler_s = 0.0


async def timed(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Outermost middleware: time each ``form``/``sample`` request through the SDK's handling."""
    if ctx.method != "tools/call" or (ctx.params or {}).get("name") not in TIMED_TOOLS:
        return await call_next(ctx)
    started = time.perf_counter()
    try:
        return await call_next(ctx)
    finally:
        Work.handler_s += time.perf_counter() - started
        Work.handled += 1


mcp.middleware.insert(0, timed)


class Person(BaseModel):
    name: str = "Ada"
    age: int = 36


def ask_person() -> Elicit[Person]:
    return Elicit("Who are you?", Person)


def ask_llm() -> Sample:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Say hi."))
    return Sample([message], max_tokens=16)


@tool
async def form(answer: Annotated[ElicitationResult[Person], Resolve(ask_person)]) -> str:
    """One form elicitation; returns the name and age received."""
    if not isinstance(answer, AcceptedElicitation):
        return "declined"
    return f"{answer.data.name} {answer.data.age}"


@tool
async def sample(reply: Annotated[types.CreateMessageResult, Resolve(ask_llm)]) -> str:
    """One sampling request; returns the text of the answer."""
    content = reply.content
    return content.text if isinstance(content, types.TextContent) else type(content).__name__


@tool
async def stats() -> str:
    """This process's CPU time and the timed requests' handling so far."""
    work = {"cpu_s": time.process_time(), "wait_s": WAITS.seconds()}
    return json.dumps({**work, "handled": Work.handled, "handler_s": Work.handler_s})


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=None, help="stateless Streamable HTTP port (0 = free)")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.port is None:
        anyio.run(mcp.run_stdio_async)
    else:
        anyio.run(serve_on_loopback, mcp.streamable_http_app(stateless_http=True), args.port)


if __name__ == "__main__":
    main()
