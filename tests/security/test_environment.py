"""No secret of the host's environment reaches a stdio server unless the user names it.

The provider's key (``OPENAI_API_KEY``) is set in the environment of the host,
as it is for a user with a configured provider; the server is the raw stdio
server of tests/servers, whose ``env`` tool reports what it sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from host_receiver import Host, Receiver
from host_receiver.transports.stdio import safe_environment
from tests.cli_command import CLI, LIMIT_S, run_cli

SERVER = Path(__file__).resolve().parents[1] / "servers" / "stdio_mcp_server.py"
KEY = "sk-test-do-not-leak-0123456789"


def seen_by_cli(name: str, *options: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with the provider key in its environment; the server reports variable ``name``."""
    env = {**os.environ, "OPENAI_API_KEY": KEY, "HOST_RECEIVER_CONFIG": "/nonexistent/config.toml"}
    call = ["--call", "env", "--args", json.dumps({"name": name})]
    return subprocess.run(
        [*CLI, "run", *options, *call, "--", sys.executable, str(SERVER)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )


def text_of(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["content"][0]["text"])


@pytest.mark.slow
def test_the_cli_keeps_the_provider_key_from_the_server() -> None:
    assert text_of(seen_by_cli("OPENAI_API_KEY")) == "<unset>"
    assert text_of(seen_by_cli("PATH")) == os.environ["PATH"]


@pytest.mark.slow
def test_the_cli_passes_what_the_user_names() -> None:
    assert text_of(seen_by_cli("OPENAI_API_KEY", "--env", "OPENAI_API_KEY")) == KEY
    assert text_of(seen_by_cli("GREETING", "--env", "GREETING=hello=world")) == "hello=world"
    assert text_of(seen_by_cli("OPENAI_API_KEY", "--env", "GREETING=x")) == "<unset>"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "complaint"),
    [
        ("HOST_RECEIVER_SURELY_UNSET", "is not set"),
        ("=value", "is not NAME or NAME=VALUE"),
    ],
)
def test_a_bad_env_option_is_a_usage_error(option: str, complaint: str) -> None:
    proc = seen_by_cli("PATH", "--env", option)
    assert proc.returncode == 2
    assert complaint in proc.stderr
    assert proc.stdout == ""


@pytest.mark.slow
def test_env_goes_with_a_stdio_server_only() -> None:
    proc = run_cli(None, "run", "--env", "A=1", "--url", "http://127.0.0.1:1/mcp", "--call", "echo")
    assert proc.returncode == 2
    assert "--env goes with a stdio server" in proc.stderr


@pytest.mark.slow
def test_header_goes_with_a_url_only(tmp_path: Path) -> None:
    """A header given for a stdio server would be dropped: it is refused before the server starts."""
    marker = tmp_path / "server-started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    proc = run_cli(None, "run", "--header", "Authorization: Bearer x", "--call", "echo", "--", *server)
    assert proc.returncode == 2
    assert "--header goes with --url" in proc.stderr
    assert "Bearer x" not in proc.stderr
    assert not marker.exists()


@pytest.mark.anyio
async def test_the_api_keeps_the_provider_key_from_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    async def seen(name: str, env: dict[str, str] | None = None) -> str:
        async with Host(Receiver()) as host:
            server = await host.connect_stdio("raw", sys.executable, [str(SERVER)], env=env)
            result = await server.call_tool("env", {"name": name})
            await server.close()
        return result.text

    assert await seen("OPENAI_API_KEY") == "<unset>"
    assert await seen("OPENAI_API_KEY", {"OPENAI_API_KEY": os.environ["OPENAI_API_KEY"]}) == KEY


def test_the_minimal_environment_is_what_the_sdks_pass_plus_locale_and_temp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("TMPDIR", "/tmp")
    monkeypatch.setenv("SHELL", "() { :; }; echo pwned")  # an exported shell function: skipped
    env = safe_environment()
    assert "OPENAI_API_KEY" not in env
    assert env["LANG"] == "C.UTF-8" and env["TMPDIR"] == "/tmp"
    assert env["PATH"] == os.environ["PATH"]
    assert "SHELL" not in env
    sdks = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
    assert set(env) <= sdks | {"LANG", "LC_ALL", "LC_CTYPE", "TMPDIR"}


@pytest.mark.slow
def test_the_help_recommends_naming_a_secret_over_writing_it_on_the_command_line() -> None:
    """--env NAME copies the value; --env NAME=secret shows the secret to anyone running ps."""
    proc = subprocess.run([*CLI, "run", "--help"], capture_output=True, text=True, timeout=LIMIT_S)
    shown = " ".join(proc.stdout.split())
    assert "NAME alone copies this environment's value, the way to pass a secret" in shown
    assert "ps shows it to every user of the machine" in shown
    unset = seen_by_cli("PATH", "--env", "HOST_RECEIVER_SURELY_UNSET")
    assert "export it first (NAME=VALUE: not for secrets)" in unset.stderr
