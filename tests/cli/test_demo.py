"""``host-receiver demo`` and the example servers, run as a user would, offline.

The demo runs once without a terminal (as CI does: auto-approval, defaults),
once in a pseudo-terminal with a person typing, and once on a Python without
the MCP SDK. The examples run through ``host-receiver run`` with ready policies.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from host_receiver.cli.demo import PYTHON_ENV, SETTINGS_FILE, configured_python, server_python
from tests.cli.test_terminal import CLEAR_LINE, HOST, PEER_PYTHON, ROOT, Terminal

EXAMPLES = ROOT / "examples"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    if not PEER_PYTHON.exists():
        pytest.skip("the Python peer is not installed (run .ci/install-peers)")
    opened = tmp_path / "opened.txt"
    record = f"import sys, pathlib; pathlib.Path({str(opened)!r}).write_text(sys.argv[1])"
    return {
        **os.environ,
        "HOST_RECEIVER_CONFIG": str(tmp_path / "config.toml"),
        "HOST_RECEIVER_DECISIONS": str(tmp_path / "decisions.json"),
        "HOST_RECEIVER_DEMO_PYTHON": str(PEER_PYTHON),
        # The "browser" only notes which URL it was asked to open.
        "BROWSER": f"{sys.executable} -c {json.dumps(record)} %s",
        "PROMPT_TOOLKIT_NO_CPR": "1",
        "TERM": "xterm",
    }


def host(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HOST), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.slow
def test_demo_without_a_terminal_completes_and_tells_the_task_flow(
    env: dict[str, str], tmp_path: Path
) -> None:
    done = host(env, "demo", "--llm-delay", "0.2")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "answers  sampling: auto · elicitation: defaults" in out
    assert re.search(r"\[host\] release-helper · task \S{8}…: sampling/createMessage as a task", out)
    assert "request approved (auto); generating with echo-offline" in out
    # The answers in plain words: choices by their titles, a boolean as yes or no.
    assert "form accepted (defaults): Decision: Publish now; Channels: Blog; Delay (minutes): 0; " in out
    assert "Notify the team: yes" in out
    assert "link to blog.example.com declined (defaults)" in out
    steps = re.findall(r"^  \d\. (\S+)(?: \((\w+)\))?$", out, re.MULTILINE)
    assert steps == [
        ("sampling/createMessage", ""),
        ("elicitation/create", "form"),
        ("elicitation/create", "url"),
    ]
    assert len(re.findall(r"created task \S+ \(working, ttl 120 s\)", out)) == 3
    assert len(re.findall(r"tasks/result → result \(it waited until the task ended\)", out)) == 3
    assert len(re.findall(r"tasks/get    → completed\n     result: ", out)) == 3
    assert 'echo-offline wrote "echo: Announce release 2.0.0' in out
    assert "outcome: Saved as a draft: signing in to the blog was not accepted." in out
    assert not (tmp_path / "opened.txt").exists()
    # It ends with where to go next: one's own server, a real model.
    ending = out[out.index("\nDone in ") :].splitlines()[3:]
    assert ending[0] == "Next steps:" and ending[1].startswith("  1. Try your own server")
    assert ending[2].strip().startswith("host-receiver tools -- COMMAND")
    assert ending[4].startswith("  2. Add a real model")
    assert ending[5].strip() == "host-receiver providers add"


@pytest.mark.slow
def test_demo_with_a_person_publishes_after_consent(env: dict[str, str], tmp_path: Path) -> None:
    t = Terminal(env, "demo", "--llm-delay", "1")
    try:
        t.answer("Approve this request?", "y")
        t.expect(r"⏳ release-helper · task \S{8}… generating with echo-offline: \d+/120 tokens")
        t.answer("Send this result to the server?", "y")
        t.answer("Answer this form?", "f")
        t.answer("Decision* (a number or a value): ", "")
        t.answer("Channels* (numbers or values, comma-separated): ", CLEAR_LINE + "1, 2")
        t.answer("Delay (minutes) (whole number, at least 0, at most 1440): ", "")
        t.answer("Notify the team (yes or no): ", "")
        t.answer("Note for the team (text, at most 80 characters): ", "ship it")
        t.answer("Send these answers?", "y")
        t.expect(r"domain\s+blog\.example\.com")
        assert not (tmp_path / "opened.txt").exists()  # nothing opened before consent
        t.answer("Open this link on blog.example.com? [o/d/c]", "o")
        t.expect("sent notifications/elicitation/complete")
        t.expect(r"outcome: Published to blog, newsletter")
        t.expect(r"Done in")
        assert t.wait_exit() == 0
    finally:
        t.child.terminate(force=True)
    assert (tmp_path / "opened.txt").read_text().startswith("https://blog.example.com/oauth/authorize?")


@pytest.mark.slow
def test_demo_says_how_to_get_the_sdk_when_it_is_missing(env: dict[str, str]) -> None:
    done = host(env, "demo", "--python", sys.executable)
    assert done.returncode == 2
    assert "cannot import the MCP Python SDK (mcp)" in done.stderr
    assert "bash .ci/setup --demo" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("server", "tool", "args", "expected"),
    [
        ("slow_summary_server.py", "summarise_many", {"texts": ["one", "two"]}, "echo: one"),
        ("approval_gate_server.py", "delete_branch", {"branch": "old"}, "Nothing deleted"),
        ("multi_step_form_server.py", "sign_up", {}, "Stopped at step 1 (decline)."),
    ],
)
def test_example_servers_run_with_ready_policies(
    env: dict[str, str], server: str, tool: str, args: dict[str, object], expected: str
) -> None:
    done = host(
        env, "run", "--approve", "auto", "--elicit", "defaults", "--call", tool, "--args", json.dumps(args),
        "--", str(PEER_PYTHON), str(EXAMPLES / server),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"][0]["text"].startswith(expected)


@pytest.mark.slow
def test_embedding_example(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "embed_host.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "summaries asks echo-offline for up to 100 tokens" in done.stdout
    assert "summary: echo: Tasks let a host answer long requests later." in done.stdout


def test_the_demo_finds_its_python_in_the_environments_settings(tmp_path: Path) -> None:
    assert configured_python(str(tmp_path)) is None  # no settings file: nothing configured
    settings = tmp_path / SETTINGS_FILE
    settings.write_text('[demo]\npython = "/opt/mcp/bin/python"\n')
    assert configured_python(str(tmp_path)) == "/opt/mcp/bin/python"
    settings.write_text("[demo\n")
    assert configured_python(str(tmp_path)) is None  # unreadable: ignored, with a message


@pytest.mark.slow
def test_the_readme_demo_needs_no_environment_variable(env: dict[str, str]) -> None:
    """``bash .ci/setup --demo && .venv/bin/host-receiver demo`` works: setup names the SDK's Python."""
    if configured_python(str(HOST.parent.parent)) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{HOST.parent.parent / SETTINGS_FILE} is missing: .ci/setup writes it")
        pytest.skip(f"{HOST.parent.parent / SETTINGS_FILE} is missing: run bash .ci/setup")
    without = {k: v for k, v in env.items() if k != "HOST_RECEIVER_DEMO_PYTHON"}
    done = host(without, "demo", "--llm-delay", "0")
    assert done.returncode == 0, done.stderr
    assert "outcome: Saved as a draft" in done.stdout


def test_the_example_servers_python_is_the_option_then_the_variable_then_the_settings_then_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo and examples/embed_host.py look for it in this order, never at a fixed path."""
    (tmp_path / SETTINGS_FILE).write_text('[demo]\npython = "/opt/mcp/bin/python"\n')
    monkeypatch.setenv(PYTHON_ENV, "/from/variable/python")
    assert server_python("/given/python", str(tmp_path)) == "/given/python"
    assert server_python(None, str(tmp_path)) == "/from/variable/python"
    monkeypatch.delenv(PYTHON_ENV)
    assert server_python(None, str(tmp_path)) == "/opt/mcp/bin/python"
    assert server_python(None, str(tmp_path / "elsewhere")) == sys.executable
