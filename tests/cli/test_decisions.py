"""Remembered consent is bound to the server's real identity; ``host-receiver decisions`` lists and
forgets it. Run as a person runs it: a pseudo-terminal for the questions, subprocesses for the rest.

The case that motivated it: two different servers that are both ``.../dist/index.js``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from host_receiver.people.policies import decision_id, stdio_identity
from tests.cli.test_terminal import PEER_PYTHON, PEER_SERVER, Terminal
from tests.cli_command import cli_env, run_cli

#: Every test runs the CLI as a subprocess, most against real servers.
pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**cli_env(tmp_path), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"}


def index_js(root: Path) -> Path:
    """The Python peer as ``root/dist/index.js`` (the name almost every npm server has)."""
    script = root / "dist" / "index.js"
    script.parent.mkdir(parents=True)
    script.symlink_to(PEER_SERVER)  # a link: the peer imports its neighbours
    return script


def sample_at_terminal(env: dict[str, str], script: Path) -> Terminal:
    command = ["run", "--approve", "ask", "--elicit", "ask", "--call", "sample_plain"]
    return Terminal(env, *command, "--args", '{"prompt": "hi"}', "--", str(PEER_PYTHON), str(script))


def report_of(t: Terminal) -> dict[str, Any]:
    """Wait for the end; the peer's report (the activity line is erased on a screen, not here)."""
    assert t.wait_exit() == 0, t.screen
    result = t.screen[t.screen.rindex('{"content"') :].splitlines()[0]
    report: dict[str, Any] = json.loads(json.loads(result)["content"][0]["text"])
    return report


def test_always_for_one_index_js_does_not_approve_another(env: dict[str, str], tmp_path: Path) -> None:
    if not PEER_PYTHON.exists():
        pytest.skip("the Python peer is not installed (run .ci/install-peers)")
    first, other = index_js(tmp_path / "a"), index_js(tmp_path / "other")
    t = sample_at_terminal(env, first)
    t.answer("Approve this request? [y/s/a/e/n/x]", "a")
    assert report_of(t)["result"]["content"]["text"] == "echo: hi"

    t = sample_at_terminal(env, other)  # same file name, another server: asked again
    t.answer("Approve this request? [y/s/a/e/n/x]", "n")
    assert report_of(t)["error"]["code"] == -1

    t = sample_at_terminal(env, first)  # the approved one: no question
    assert report_of(t)["result"]["content"]["text"] == "echo: hi"
    assert "Approve this request?" not in t.screen

    identity = stdio_identity([str(PEER_PYTHON), str(first)])
    assert str(first) in identity and f" (in {Path.cwd().resolve()}) [script sha256:" in identity
    listed = run_cli(env, "decisions")
    assert listed.returncode == 0 and listed.stdout == f"{decision_id(identity)}  approve  {identity}\n"
    forgot = run_cli(env, "decisions", "forget", decision_id(identity))
    assert forgot.returncode == 0 and "forgot 1 decision(s)" in forgot.stderr
    assert run_cli(env, "decisions").stdout == ""


def test_always_for_a_script_asks_again_once_it_is_rewritten(env: dict[str, str], tmp_path: Path) -> None:
    if not PEER_PYTHON.exists():
        pytest.skip("the Python peer is not installed (run .ci/install-peers)")
    script = tmp_path / "srv.py"
    run_peer = f"import runpy, sys; sys.path.insert(0, {str(PEER_SERVER.parent)!r}); "
    run_peer += f"runpy.run_path({str(PEER_SERVER)!r}, run_name='__main__')\n"
    script.write_text(run_peer)
    t = sample_at_terminal(env, script)
    t.answer("Approve this request? [y/s/a/e/n/x]", "a")
    assert report_of(t)["result"]["content"]["text"] == "echo: hi"

    script.write_text(run_peer + "# rewritten: another server, the same command line\n")
    t = sample_at_terminal(env, script)
    t.answer("Approve this request? [y/s/a/e/n/x]", "n")  # asked again
    assert report_of(t)["error"]["code"] == -1
    assert "changed since its saved decision" in t.screen.replace("\r\n", " ").replace("\n", " ")


def test_decisions_kept_by_server_name_are_dropped_with_one_notice(env: dict[str, str]) -> None:
    path = Path(env["HOST_RECEIVER_DECISIONS"])
    path.write_text(json.dumps({"version": 1, "servers": {"index.js": "approve"}}))
    path.chmod(0o600)
    first = run_cli(env, "decisions")
    assert first.returncode == 0 and first.stdout == ""
    assert "dropped 1 saved sampling decision(s)" in first.stderr and "asked again" in first.stderr
    second = run_cli(env, "decisions")
    assert "dropped" not in second.stderr
    assert json.loads(path.read_text()) == {"version": 3, "servers": {}}


def test_forget_all_and_unknown_ids(env: dict[str, str]) -> None:
    path = Path(env["HOST_RECEIVER_DECISIONS"])
    servers = {"https://a.example/mcp": "approve", "/usr/bin/node /x/index.js (in /x)": "refuse"}
    path.write_text(json.dumps({"version": 3, "servers": servers}))
    path.chmod(0o600)
    assert len(run_cli(env, "decisions").stdout.splitlines()) == 2
    unknown = run_cli(env, "decisions", "forget", "nope")
    assert unknown.returncode == 2 and "no saved decision nope" in unknown.stderr
    assert len(json.loads(path.read_text())["servers"]) == 2
    assert run_cli(env, "decisions", "forget").returncode == 2  # neither IDs nor --all
    assert run_cli(env, "decisions", "forget", "--all").returncode == 0
    assert json.loads(path.read_text())["servers"] == {}
