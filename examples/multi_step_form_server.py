"""A form in three steps, each shaped by the last answer. Run: host-receiver run --call sign_up -- .peers/py/bin/python examples/multi_step_form_server.py"""  # noqa: E501

# An MCP server (official Python SDK, mcp 1.x) that collects a sign-up in three
# task-augmented elicitations: who you are, then a plan (whose choices depend
# on the kind of account), then a final confirmation showing everything. The
# person can decline or cancel at any step, and the tool says where it stopped.

from __future__ import annotations

import json
import sys
from typing import Any

try:
    import mcp.types as types
    from mcp.server.fastmcp import Context, FastMCP
except ImportError:
    sys.exit(
        "this example needs the MCP Python SDK 1.x: run `bash .ci/setup`, or `pip install 'mcp>=1.23,<2'`"
    )

mcp = FastMCP("sign-up", log_level="WARNING")
PLANS = {
    "personal": [{"const": "free", "title": "Free"}, {"const": "plus", "title": "Plus, 5 €/month"}],
    "team": [{"const": "team", "title": "Team, 8 €/seat"}, {"const": "enterprise", "title": "Enterprise"}],
}


async def ask(
    ctx: Context, message: str, properties: dict[str, Any], required: list[str]
) -> types.ElicitResult:
    schema = {"type": "object", "properties": properties, "required": required}
    return await ctx.session.experimental.elicit_as_task(message, schema, ttl=10 * 60_000)


@mcp.tool()
async def sign_up(ctx: Context) -> str:
    """Sign up in three steps; returns the account, or where the person stopped."""
    who = await ask(
        ctx,
        "Step 1 of 3: who are you?",
        {
            "name": {"type": "string", "title": "Name", "minLength": 2},
            "email": {"type": "string", "title": "Email", "format": "email"},
            "kind": {
                "type": "string",
                "title": "Account",
                "enum": ["personal", "team"],
                "default": "personal",
            },
        },
        ["name", "email", "kind"],
    )
    if who.action != "accept" or who.content is None:
        return f"Stopped at step 1 ({who.action})."
    kind = str(who.content["kind"])
    properties: dict[str, Any] = {
        "plan": {"type": "string", "title": "Plan", "oneOf": PLANS[kind], "default": PLANS[kind][0]["const"]}
    }
    if kind == "team":
        properties["seats"] = {
            "type": "integer",
            "title": "Seats",
            "minimum": 2,
            "maximum": 500,
            "default": 5,
        }
    plan = await ask(ctx, f"Step 2 of 3: choose a {kind} plan.", properties, ["plan"])
    if plan.action != "accept" or plan.content is None:
        return f"Stopped at step 2 ({plan.action})."
    account = {**who.content, **plan.content}
    confirm = await ask(
        ctx,
        f"Step 3 of 3: create this account?\n{json.dumps(account, indent=2)}",
        {"terms": {"type": "boolean", "title": "I accept the terms", "default": False}},
        ["terms"],
    )
    if confirm.action != "accept" or not (confirm.content or {}).get("terms"):
        return "Stopped at step 3: the terms were not accepted."
    return f"Account created: {json.dumps(account)}"


if __name__ == "__main__":
    mcp.run()
