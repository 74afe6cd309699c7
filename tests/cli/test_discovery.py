"""``tools``, ``resources``, ``prompts``, ``read``, ``prompt``, ``call``, ``--version`` and ``run``'s
one line, run as a user runs them (subprocesses) against real servers: the reference
server-everything (TypeScript SDK), the mcp 1.30 and 2.3.0 peers, the demo server.

Contract (host_receiver/cli/_discover.py): listings for a person or, with ``--json``,
every page as JSON; ``key=value`` values are read as the tool's ``inputSchema`` types
them (JSON when it does not), a value that does not fit names its property and type;
``call`` prints the ``CallToolResult`` JSON when stdout is not a terminal; every
command serves the server's sampling, elicitation and roots requests with ``run``'s
options; exit codes as ``run --call``.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pexpect
import pytest

from host_receiver.errors import USER_REJECTED
from tests.cli_command import CLI, LIMIT_S, cli_env, run_cli
from tests.interop import PY2_SERVER, RAW_SERVER, everything_command, http_server, peer_command, peer_python

#: Every test runs the CLI as a subprocess, most against real servers.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path)


@pytest.fixture
def everything() -> list[str]:
    return ["--", *everything_command()]


def ok(env: dict[str, str] | None, *args: str) -> str:
    """``host-receiver *args`` must exit 0; its stdout."""
    proc = run_cli(env, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def report_of(stdout: str) -> dict[str, Any]:
    """The JSON report a peer tool put in its text content (stdout: the CallToolResult JSON)."""
    report: dict[str, Any] = json.loads(json.loads(stdout)["content"][0]["text"])
    return report


def test_version_is_the_packages() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert ok(None, "--version") == f"host-receiver {version}\n"


# --- listings ---------------------------------------------------------------------------------


def test_tools_shows_names_titles_parameters_and_task_support(
    env: dict[str, str], everything: list[str]
) -> None:
    out = ok(env, "tools", *everything)
    assert "echo — Echo Tool\n    Echoes back the input string\n    parameters: message*: string\n" in out
    assert "get-sum — Get Sum Tool" in out and "a*: number, b*: number" in out
    assert "messageType*: one of error|success|debug, includeImage: boolean" in out
    assert "    tasks: forbidden" in out


def test_tools_json_is_every_tool_of_every_page(env: dict[str, str], everything: list[str]) -> None:
    listed = json.loads(ok(env, "tools", "--json", *everything))
    names = [tool["name"] for tool in listed["tools"]]
    assert {"echo", "get-sum", "trigger-sampling-request"} <= set(names)
    assert len(names) == len(set(names)) and len(names) == ok(env, "tools", *everything).count(" — ")
    assert listed["tools"][names.index("echo")]["inputSchema"]["required"] == ["message"]


def test_resources_and_prompts_are_listed_and_read(env: dict[str, str], everything: list[str]) -> None:
    uri = "demo://resource/static/document/features.md"
    assert f"{uri} — features.md (text/markdown)" in ok(env, "resources", *everything)
    listed = json.loads(ok(env, "resources", "--json", *everything))
    assert uri in [r["uri"] for r in listed["resources"]]
    assert listed["resourceTemplates"], "server-everything offers templates"
    assert ok(env, "read", uri, *everything).startswith("# Everything Server - Features\n")
    assert json.loads(ok(env, "read", "--json", uri, *everything))["contents"][0]["uri"] == uri
    prompts = ok(env, "prompts", *everything)
    assert "args-prompt — Arguments Prompt\n" in prompts and "    arguments: city*, state\n" in prompts
    assert ok(env, "prompt", "args-prompt", "city=Paris", *everything) == "user: What's weather in Paris?\n"
    got = json.loads(ok(env, "prompt", "--json", "args-prompt", "city=Paris", "state=TX", *everything))
    assert got["messages"][0]["content"]["text"] == "What's weather in Paris, TX?"


def test_the_mcp_1_30_peer_is_listed_too(env: dict[str, str]) -> None:
    tools = json.loads(ok(env, "tools", "--json", "--", *peer_command("python").argv))["tools"]
    assert "sample_plain" in [tool["name"] for tool in tools]


# --- calls ------------------------------------------------------------------------------------


def test_call_with_key_values_prints_the_result_json_off_a_terminal(
    env: dict[str, str], everything: list[str]
) -> None:
    assert json.loads(ok(env, "call", "echo", "message=hi", *everything)) == {
        "content": [{"type": "text", "text": "Echo: hi"}]
    }
    summed = json.loads(ok(env, "call", "get-sum", "a=2", "b=3.5", *everything))  # numbers, not strings
    assert "5.5" in summed["content"][0]["text"]
    given = json.loads(ok(env, "call", "echo", "--args", '{"message": "from json"}', *everything))
    assert given["content"][0]["text"] == "Echo: from json"
    quoted = json.loads(ok(env, "call", "echo", 'message="42"', *everything))  # text: quotes and all
    assert quoted["content"][0]["text"] == 'Echo: "42"'


def test_key_values_are_read_as_the_tools_schema_types_them(
    env: dict[str, str], everything: list[str]
) -> None:
    """echo's message is a string: 42 stays text; get-sum's a and b are numbers: parsed."""
    assert json.loads(ok(env, "call", "echo", "message=42", *everything))["content"][0]["text"] == "Echo: 42"
    assert (
        json.loads(ok(env, "call", "echo", "message=true", *everything))["content"][0]["text"] == "Echo: true"
    )
    summed = json.loads(ok(env, "call", "get-sum", "a=2", "b=40", *everything))
    assert "42" in summed["content"][0]["text"]
    wrong = run_cli(env, "call", "get-sum", "a=two", "b=3", *everything)
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert "host-receiver call: a='two': the tool's 'a' takes number (a number, like 2.5)" in wrong.stderr


def test_calling_a_tool_the_server_lacks_names_the_tools_it_has(
    env: dict[str, str], everything: list[str]
) -> None:
    proc = run_cli(env, "call", "nonexistent", *everything)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["isError"] is True
    assert "has no tool 'nonexistent'; its tools: echo, get-annotated-message" in proc.stderr
    proc = run_cli(env, "run", "--call", "nonexistent", *everything)
    assert proc.returncode == 1 and "its tools: echo," in proc.stderr


def test_a_link_a_call_needs_declined_off_a_terminal_names_the_link_and_the_server_by_its_title(
    env: dict[str, str], everything: list[str]
) -> None:
    """server-everything's -32042: nobody can consent off a terminal, so the call ends naming the
    link; stderr calls the server as its cards do (its title), not by its command's file name."""
    words = ["call", "trigger-url-elicitation", "url=https://example.com/auth", "errorPath=true"]
    proc = run_cli(env, *words, *everything)
    assert proc.returncode == 2 and proc.stdout == ""
    assert (
        "link declined: no terminal to ask on; use --elicit web|defaults|decline (a link from " in proc.stderr
    )
    assert (
        "Everything Reference Server needs the link https://modelcontextprotocol.io completed before "
        "tools/call: the link was declined"
    ) in proc.stderr
    assert "(a link from Everything Reference Server)" in proc.stderr
    assert "index.js" not in proc.stderr
    named = run_cli(env, *words, "--name", "everything", *everything)  # a name given is kept
    assert "(a link from everything)" in named.stderr and "everything needs the link" in named.stderr


def test_bad_key_values_are_a_usage_error(env: dict[str, str], everything: list[str]) -> None:
    proc = run_cli(env, "call", "echo", "message", *everything)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "host-receiver call: 'message' is not key=value" in proc.stderr


def test_every_command_serves_sampling_elicitation_and_roots_with_runs_options(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The mcp 2.3.0 peer (2026-07-28, input rounds) asks during a call, a prompt and a read."""
    server = ["--", str(peer_python("py2")), str(PY2_SERVER)]
    refused = run_cli(env, "call", "sample", "prompt=hi", *server)  # deny, off a terminal
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"JSON-RPC error {USER_REJECTED}" in refused.stderr
    approved = report_of(ok(env, "call", "--approve", "auto", "sample", "prompt=hi", *server))
    assert approved["era"] == "modern" and approved["sampling"]["content"]["text"] == "echo: hi"
    roots = report_of(ok(env, "call", "--root", str(tmp_path), "list_roots", *server))
    assert roots["roots"]["roots"][0]["uri"] == tmp_path.resolve().as_uri()
    prompt = json.loads(ok(env, "prompt", "--json", "--elicit", "decline", "ask_prompt", *server))
    assert json.loads(prompt["messages"][0]["content"]["text"])["elicitation"]["action"] == "decline"
    read = json.loads(ok(env, "read", "--json", "--elicit", "decline", "ask://weather", *server))
    assert json.loads(read["contents"][0]["text"])["uri_topic"] == "weather"


def test_discovery_over_streamable_http(env: dict[str, str]) -> None:
    with http_server([str(peer_python("py2")), str(PY2_SERVER)]) as url:
        tools = json.loads(ok(env, "tools", "--json", "--url", url))["tools"]
        assert "whoami" in [tool["name"] for tool in tools]
        assert report_of(ok(env, "call", "whoami", "tag=http", "--url", url))["transport"] != "stdio"


def test_the_demo_servers_tools(env: dict[str, str]) -> None:
    out = ok(env, "tools", "--", *peer_command("python").argv[:1], str(ROOT / "examples" / "demo_server.py"))
    assert "announce_release" in out and "version: string" in out


def test_call_on_a_terminal_shows_the_result_readably(env: dict[str, str]) -> None:
    words = ["call", "--approve", "deny", "--elicit", "decline", "get-structured-content", "location=Chicago"]
    child = pexpect.spawn(
        CLI[0], [*CLI[1:], *words, "--", *everything_command()], env=env, encoding="utf-8", timeout=LIMIT_S
    )
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before.replace("\r", "")
    assert child.exitstatus == 0, screen
    assert '{\n  "temperature": ' in screen and '"content"' not in screen


# --- progress (notifications/progress) -------------------------------------------------------

STDIO_SERVER = ROOT / "tests" / "servers" / "stdio_mcp_server.py"


def test_call_shows_the_servers_progress_on_stderr_off_a_terminal(
    env: dict[str, str], everything: list[str]
) -> None:
    proc = run_cli(env, "call", "trigger-long-running-operation", "duration=0.6", "steps=3", *everything)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"][0]["text"].startswith("Long running operation completed.")
    shown = [line for line in proc.stderr.splitlines() if line.startswith("progress ")]
    assert shown == ["progress 1/3", "progress 2/3", "progress 3/3"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_read_and_prompt_show_the_servers_progress_on_stderr_escaped(env: dict[str, str], era: str) -> None:
    server = ["--", sys.executable, str(STDIO_SERVER), *(["--modern"] if era == "modern" else [])]
    for words, result in ((["read", "r://x"], "r://x\n"), (["prompt", "p"], "user: p\n")):
        proc = run_cli(env, *words, *server)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == result
        shown = [line for line in proc.stderr.splitlines() if line.startswith("progress ")]
        assert shown == ["progress 1/2: warming \\x1b[31mup", "progress 2/2: done"]


@pytest.mark.parametrize(
    "hooks", [[], ["--approve", "auto", "--elicit", "defaults"]], ids=["live-line", "own-line"]
)
def test_call_on_a_terminal_shows_a_bar_erased_before_the_result(
    env: dict[str, str], hooks: list[str]
) -> None:
    """With the terminal host (prompts on: its live activity line) or without it (a line of its own)."""
    words = ["call", *hooks, "trigger-long-running-operation", "duration=0.6", "steps=3"]
    child = pexpect.spawn(
        CLI[0], [*CLI[1:], *words, "--", *everything_command()], env=env, encoding="utf-8", timeout=LIMIT_S
    )
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert child.exitstatus == 0, screen
    bar, result = (
        screen.rindex("[████████████████████] 3/3"),
        screen.index("Long running operation completed."),
    )
    assert "trigger-long-running-operation [███████░░░░░░░░░░░░░] 1/3" in screen
    assert bar < screen.index("\r\x1b[K", bar) < result  # erased, then the result on a clean line
    assert "progress 1/3" not in screen


# --- run without --call -----------------------------------------------------------------------


def test_serving_says_once_whom_it_serves(env: dict[str, str], tmp_path: Path) -> None:
    proc = run_cli(
        env, "run", "--approve", "auto", "--elicit", "defaults", "--", sys.executable, str(RAW_SERVER),
        "--mode", "sample-then-exit", "--record", str(tmp_path / "answers.json"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "serving its requests" in line]
    assert len(lines) == 1 and lines[0].endswith(", serving its requests, Ctrl-C to stop")
    assert lines[0].startswith("host-receiver: connected to raw-sample-then-exit (legacy, 2025-11-25)")
