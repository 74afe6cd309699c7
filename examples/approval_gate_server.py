"""A human-approval gate before a risky action. Run: host-receiver run --call delete_branch --args '{"branch": "old"}' -- .peers/py/bin/python examples/approval_gate_server.py"""  # noqa: E501

# An MCP server (official Python SDK, mcp 1.x) whose tool asks the person at
# the host to confirm, with a task-augmented form, before it does anything it
# cannot undo. Nothing happens unless the form comes back accepted with the
# confirmation ticked; declining or cancelling leaves everything as it was.

from __future__ import annotations

import sys

try:
    from mcp.server.fastmcp import Context, FastMCP
except ImportError:
    sys.exit(
        "this example needs the MCP Python SDK 1.x: run `bash .ci/setup`, or `pip install 'mcp>=1.23,<2'`"
    )

mcp = FastMCP("approval-gate", log_level="WARNING")
BRANCHES = {"main", "old", "experiment"}


@mcp.tool()
async def delete_branch(ctx: Context, branch: str) -> str:
    """Delete a branch (of a pretend repository) once a person confirms it."""
    if branch not in BRANCHES:
        return f"There is no branch {branch!r}."
    answer = await ctx.session.experimental.elicit_as_task(
        f"Delete the branch {branch!r}? This cannot be undone.",
        {
            "type": "object",
            "properties": {
                "confirm": {"type": "boolean", "title": f"Yes, delete {branch}", "default": False},
                "reason": {"type": "string", "title": "Why (for the log)", "maxLength": 120},
            },
            "required": ["confirm"],
        },
        ttl=10 * 60_000,
    )
    if answer.action != "accept" or not (answer.content or {}).get("confirm"):
        return f"Nothing deleted: the request was answered with {answer.action} and no confirmation."
    BRANCHES.discard(branch)
    reason = (answer.content or {}).get("reason") or "no reason given"
    return f"Deleted {branch!r} ({reason}). Left: {', '.join(sorted(BRANCHES))}."


if __name__ == "__main__":
    mcp.run()
