"""Offload slow summaries to the host as tasks. Run: host-receiver run --call summarise_many --args '{"texts": ["a b c", "d e f"]}' -- .peers/py/bin/python examples/slow_summary_server.py"""  # noqa: E501

# An MCP server (official Python SDK, mcp 1.x) whose tools ask the connected
# host's LLM for summaries with task-augmented sampling: the host answers at
# once with a task, and the SDK helper polls it until the summary is ready, so a
# long generation never holds a request open. `summarise_many` runs several
# summaries at the same time.

from __future__ import annotations

import sys

try:
    import anyio
    import mcp.types as types
    from mcp.server.fastmcp import Context, FastMCP
except ImportError:
    sys.exit(
        "this example needs the MCP Python SDK 1.x: run `bash .ci/setup`, or `pip install 'mcp>=1.23,<2'`"
    )

mcp = FastMCP("slow-summaries", log_level="WARNING")


async def summarise_one(ctx: Context, text: str, words: int) -> str:
    result = await ctx.session.experimental.create_message_as_task(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
        system_prompt=f"Summarise the user's text in at most {words} words.",
        max_tokens=words * 2,
        ttl=10 * 60_000,  # keep the task (and its result) for ten minutes
    )
    content = result.content
    return content.text if isinstance(content, types.TextContent) else f"[{content.type}]"


@mcp.tool()
async def summarise(ctx: Context, text: str, words: int = 50) -> str:
    """Summarise one text with the host's LLM."""
    return await summarise_one(ctx, text, words)


@mcp.tool()
async def summarise_many(ctx: Context, texts: list[str], words: int = 30) -> list[str]:
    """Summarise several texts at once; each is its own task on the host."""
    summaries = [""] * len(texts)

    async def run(index: int) -> None:
        summaries[index] = await summarise_one(ctx, texts[index], words)

    async with anyio.create_task_group() as group:
        for index in range(len(texts)):
            group.start_soon(run, index)
    return summaries


if __name__ == "__main__":
    mcp.run()
