"""The servers file (``mcpServers`` format) through the real CLI: ``--server NAME``, ``--servers FILE``
or the config directory, ``host-receiver servers``, and a server's ``env`` for that server only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli_command import cli_env, run_cli
from tests.interop import PY2_SERVER, everything_command, http_server, peer_python

#: Every test runs the CLI as a subprocess, most against real servers.
pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**cli_env(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def servers_file(path: Path, servers: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_a_servers_env_goes_to_that_server_only(env: dict[str, str], tmp_path: Path) -> None:
    node, *args = everything_command()
    path = servers_file(
        tmp_path / "servers.json",
        {
            "everything": {"command": node, "args": args, "env": {"GREETING": "from the file"}},
            "plain": {"command": node, "args": args},
        },
    )
    listed = run_cli(env, "servers", "--servers", str(path))
    assert listed.returncode == 0, listed.stderr
    assert f"everything  {node} {' '.join(args)}  (env: GREETING)\n" in listed.stdout
    assert "from the file" not in listed.stdout  # values may be secrets
    given = run_cli(env, "call", "get-env", "--server", "everything", "--servers", str(path))
    assert given.returncode == 0, given.stderr
    assert "from the file" in given.stdout
    other = run_cli(env, "call", "get-env", "--server", "plain", "--servers", str(path))
    assert other.returncode == 0 and "GREETING" not in other.stdout


def test_the_file_in_the_config_directory_and_an_http_server(env: dict[str, str], tmp_path: Path) -> None:
    with http_server([str(peer_python("py2")), str(PY2_SERVER)]) as url:
        servers_file(
            tmp_path / "config" / "host-receiver" / "servers.json",
            {"web": {"type": "http", "url": url, "headers": {"X-Team": "blue"}}},
        )
        assert run_cli(env, "servers").stdout == f"web  {url}  (headers: X-Team)\n"
        called = run_cli(env, "call", "whoami", "--server", "web")
        assert called.returncode == 0, called.stderr
        report = json.loads(json.loads(called.stdout)["content"][0]["text"])
        assert {k.lower(): v for k, v in report["headers"].items()}["x-team"] == "blue"


def test_naming_a_server_wrongly_says_what_there_is(env: dict[str, str], tmp_path: Path) -> None:
    path = servers_file(tmp_path / "servers.json", {"one": {"command": sys.executable}})
    missing = run_cli(env, "tools", "--server", "two", "--servers", str(path))
    assert missing.returncode == 2
    assert f"host-receiver tools: no server 'two' in {path} (it has: one)" in missing.stderr
    both = run_cli(env, "tools", "--server", "one", "--servers", str(path), "--", sys.executable)
    assert both.returncode == 2 and "(one of them)" in both.stderr
    no_file = run_cli(env, "servers")
    assert no_file.returncode == 2 and "no servers file at" in no_file.stderr
