"""``providers add|list|remove`` as a user runs them: real subprocesses, a file-backed keyring."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from providers import OpenAIProvider
from providers.cli import add_providers_command, add_run_arguments, registry_from_args
from tests.providers.keyring_backends import FILE_ENV

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-or-v1-0123456789abcdef"


class Cli:
    """Runs ``python -m providers`` with its own config file and keyring file."""

    def __init__(self, tmp: Path) -> None:
        self.config = tmp / "config.toml"
        self.keys = tmp / "keys.json"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PYTHON_KEYRING_BACKEND": "tests.providers.keyring_backends.FileKeyring",
            FILE_ENV: str(self.keys),
            "HOST_RECEIVER_CONFIG": str(self.config),
        }
        self.env.pop("OPENAI_API_KEY", None)

    def __call__(self, *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "providers", *argv],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=ROOT,
            timeout=60,
            check=False,
        )

    def stored(self) -> dict[str, str]:
        return json.loads(self.keys.read_text()) if self.keys.exists() else {}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.mark.slow
def test_add_list_remove(cli: Cli) -> None:
    spec = "anthropic/claude-3.5-sonnet,cost=0.3,intelligence=0.9,images=yes,context=200000"
    added = cli(
        "add", "openrouter", "--base-url", "https://openrouter.ai/api/v1", "--model", spec,
        "--api-key-stdin", stdin=SECRET + "\n",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(
        "added provider 'openrouter' (openai, https://openrouter.ai/api/v1); key stored in the OS keyring"
    )
    assert cli.stored() == {"host-receiver/openrouter": SECRET}
    text = cli.config.read_text()
    assert SECRET not in text
    assert 'base_url = "https://openrouter.ai/api/v1"' in text

    local = cli("add", "ollama", "--base-url", "http://localhost:11434/v1", "--model", "llama3.2", "--no-key")
    assert local.returncode == 0, local.stderr
    assert "no key needed" in local.stdout
    demo = cli("add", "demo", "--type", "echo", "--delay", "0.5")
    assert demo.returncode == 0, demo.stderr

    listing = cli("list")
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.splitlines() == [
        f"# config: {cli.config}",
        "openrouter: openai, https://openrouter.ai/api/v1, key: keyring",
        "  - anthropic/claude-3.5-sonnet (cost 0.3, speed 0.5, intelligence 0.9; accepts tools, images; "
        "context 200000)",
        "ollama: openai, http://localhost:11434/v1, key: not needed",
        "  - llama3.2 (cost 0.5, speed 0.5, intelligence 0.5; accepts tools, images; context 128000)",
        "demo: echo, offline, key: not needed",
    ]
    assert SECRET not in listing.stdout + listing.stderr

    removed = cli("remove", "openrouter")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.strip() == "removed provider 'openrouter'; deleted its stored key"
    assert cli.stored() == {}
    assert "openrouter" not in cli.config.read_text()


@pytest.mark.slow
def test_key_from_an_environment_variable_and_updating_settings(cli: Cli) -> None:
    cli.env["MY_OPENAI_KEY"] = SECRET
    first = cli("add", "openai", "--model", "gpt-4o-mini", "--api-key-env", "MY_OPENAI_KEY")
    assert first.returncode == 0, first.stderr
    assert cli.stored() == {"host-receiver/openai": SECRET}
    update = cli("add", "openai", "--timeout", "30", "--keep-key")
    assert update.returncode == 0, update.stderr
    assert "updated provider 'openai'" in update.stdout and "kept the stored key" in update.stdout
    text = cli.config.read_text()
    assert "timeout = 30.0" in text and 'id = "gpt-4o-mini"' in text
    assert cli.stored() == {"host-receiver/openai": SECRET}


@pytest.mark.slow
def test_runtime_environment_key_is_not_stored(cli: Cli) -> None:
    result = cli("add", "vllm", "--base-url", "http://gpu:8000/v1", "--model", "m", "--runtime-key-env", "VK")
    assert result.returncode == 0, result.stderr
    assert "key read from $VK at run time" in result.stdout
    assert cli.stored() == {}
    assert 'api_key_env = "VK"' in cli.config.read_text()
    assert "key: missing" in cli("list").stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "stdin", "message"),
    [
        (["add", "x", "--api-key-stdin"], "k\n", "needs at least one --model"),
        (["add", "x", "--model", "m,cost=7", "--no-key"], "", "cost must be between 0 and 1"),
        (["add", "x", "--model", "m,colour=red", "--no-key"], "", "unknown key 'colour'"),
        (["add", "x", "--model", "m"], "\n", "no API key given"),
        (["add", "x", "--model", "m", "--api-key-env", "UNSET_VAR_X"], "", "$UNSET_VAR_X is not set"),
        (["remove", "ghost"], "", "no provider named 'ghost'"),
    ],
)
def test_errors_are_reported_with_exit_code_1(cli: Cli, argv: list[str], stdin: str, message: str) -> None:
    result = cli(*argv, stdin=stdin)
    assert result.returncode == 1
    assert message in result.stderr
    assert result.stderr.startswith("host-receiver: error: ")


@pytest.mark.slow
def test_without_a_command_usage_is_shown(cli: Cli) -> None:
    result = cli()
    assert result.returncode == 2
    assert "{add,list,remove}" in result.stderr


def test_the_commands_plug_into_the_host_receiver_parser(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="host-receiver")
    commands = parser.add_subparsers()
    add_providers_command(commands)
    run = commands.add_parser("run")
    add_run_arguments(run)
    run.add_argument("--config")
    args = parser.parse_args(["providers", "list", "--config", str(tmp_path / "c.toml")])
    assert args.func(args) == 0
    args = parser.parse_args(["run", "--provider", "openai", "--model", "gpt-x"])
    registry = registry_from_args(args, environ={"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://h/v1"})
    (provider,) = registry.providers
    assert isinstance(provider, OpenAIProvider) and provider.base_url == "http://h/v1"
    assert [m.id for m in registry.catalogue()] == ["gpt-x"]
