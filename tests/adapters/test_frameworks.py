"""The recipes of docs/frameworks.md: each agent framework, its own MCP tooling, host-receiver's glue.

Each framework runs where a host runs it: in its own environment
(``.peers/framework-*``, made by ``.ci/install-adapters``) with host-receiver and
the adapter extra its recipe uses; this process imports none of them. A driver
(tests/adapters/frameworks/) builds the framework's tooling with the recipe's
glue, runs the framework's offline test model (no hosted LLM) that calls a tool
of the mcp 1.30 peer (which pushes sampling and a form) and of the FastMCP 4 peer
(mcp 2.3.0: 2026-07-28 input rounds, a form then sampling; pushed on a 2025-11-25
connection), and prints what the servers reported receiving. The assertions are
on those reports: the echo provider's answer and the scripted person's form.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.interop import FASTMCP_SERVER, PEERS_DIR, PY_SERVER, _missing, peer_command, peer_python

pytestmark = pytest.mark.slow

DRIVERS = Path(__file__).resolve().parent / "frameworks"
DRIVER_TIMEOUT_S = 120
ECHO = "echo-offline"


def drive(framework: str, driver: str | None = None) -> dict[str, Any]:
    """Run one framework's driver (``<framework>_driver.py`` unless named) in its environment
    against both peers; return its JSON."""
    python = PEERS_DIR / f"framework-{framework}" / "bin" / "python"
    if not python.exists():
        _missing(
            f"the {framework} environment is not installed ({python} is missing)", ".ci/install-adapters"
        )
    v1 = peer_command("python").argv[0]
    v2 = peer_python("fastmcp")
    done = subprocess.run(
        [
            str(python),
            str(DRIVERS / (driver or f"{framework.replace('-', '_')}_driver.py")),
            *("--v1", v1, str(PY_SERVER)),
            *("--v2", str(v2), str(FASTMCP_SERVER)),
        ],
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"the {framework} driver failed: {done.stderr[-3000:]}"
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def assert_v1_served(out: dict[str, Any]) -> None:
    """The mcp 1.30 peer's pushed sampling and form were answered by host-receiver."""
    s = out["scenarios"]
    assert s["v1_sample"]["result"]["content"] == {"type": "text", "text": "echo: hello from the agent"}
    assert s["v1_sample"]["result"]["model"] == ECHO
    assert s["v1_form"]["result"] == {"action": "accept", "content": {"name": "Ada"}}
    seen = {(v["kind"], v["server"], v["text"]) for v in out["host"]["views"]}
    assert {("sampling", "notes", "hello from the agent"), ("form", "notes", "Who is asking?")} <= seen


def assert_rounds_served(out: dict[str, Any]) -> None:
    """The FastMCP 4 peer's 2026-07-28 input rounds (a form, then sampling built from it) were answered."""
    report = out["scenarios"]["v2_rounds"]
    assert report["protocol_version"] == "2026-07-28"
    assert report["first"]["form"] == {"action": "accept", "content": {"name": "Ada", "age": 42}}
    assert report["input_responses"]["llm"]["content"] == {"type": "text", "text": "echo: Greet Ada."}


def assert_pushed_served(out: dict[str, Any]) -> None:
    """The FastMCP 4 peer's form and sampling, pushed on a 2025-11-25 connection, were answered."""
    s = out["scenarios"]
    assert s["v2_form"]["protocol_version"] == "2025-11-25"
    assert s["v2_form"]["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 42}}
    assert s["v2_sample"]["sampling"]["content"] == {"type": "text", "text": "echo: hi"}


def test_pydantic_ai_mcptoolset_takes_toolset_options() -> None:
    out = drive("pydantic-ai")
    assert_v1_served(out)
    assert_rounds_served(out)
    # The client toolset_options builds declares the receiver's sampling tools (MCPToolset's own
    # client, given the handlers alone, declares sampling: {}).
    caps = out["receiver_capabilities"]
    assert (
        out["scenarios"]["v1_sample"]["client_capabilities"]["sampling"] == caps["sampling"] == {"tools": {}}
    )


def test_langchain_mcp_adapters_take_the_mcp1_session_options_as_session_kwargs() -> None:
    out = drive("langchain-mcp")
    assert_v1_served(out)
    assert_pushed_served(out)
    # The whole mcp1 options: the session declares the receiver's tasks too.
    assert (
        out["scenarios"]["v1_sample"]["client_capabilities"]["tasks"] == out["receiver_capabilities"]["tasks"]
    )


def test_langchain_mcp_adapter_honours_the_fastmcp_adapters_client() -> None:
    out = drive("langchain")
    assert_v1_served(out)
    assert_rounds_served(out)


def test_agent_framework_mcp_stdio_tool_over_an_entered_mcp_client() -> None:
    out = drive("agent-framework")
    assert_v1_served(out)
    assert_rounds_served(out)


def test_adk_mcptoolset_takes_the_mcp2_callback_options() -> None:
    out = drive("adk")
    assert_v1_served(out)
    assert_pushed_served(out)
    # ADK's modern mode leaves a 2026-07-28 input round to the caller and offers no way to answer
    # it (docs/frameworks.md says what ADK would need): host-receiver is never asked.
    assert "allow_input_required" in out["scenarios"]["modern_rounds"]["raised"]["message"]
    forms = [v["text"] for v in out["host"]["views"] if v["kind"] == "form"]
    assert forms.count("Who are you?") == 1  # the pushed form of v2_form only
    assert not [v for v in out["host"]["views"] if v["text"] == "Greet Ada."]


def test_adk_mcptoolset_on_mcp1_takes_the_mcp1_callback_options() -> None:
    out = drive("adk-mcp1", "adk_driver.py")
    assert_v1_served(out)
    assert_pushed_served(out)
    # The task handlers are left out, so the session declares no tasks.
    assert "tasks" not in out["scenarios"]["v1_sample"]["client_capabilities"]
    # The whole session_options are what ADK rejects (the break).
    assert "experimental_task_handlers" in out["scenarios"]["session_options"]["raised"]["message"]
