"""``providers add|list|remove`` as a user runs them: real subprocesses, a file-backed keyring."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from providers import OpenAIProvider
from providers.cli import add_providers_command, add_run_arguments, registry_from_args
from tests.fake_anthropic import FakeAnthropic
from tests.fake_gemini import FakeGemini
from tests.fake_openai import Completion, Drop, ErrorReply, FakeOpenAI
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
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
            self.env.pop(variable, None)

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
    assert "key: from $VK (not set here)" in cli("list").stdout
    cli.env["VK"] = SECRET
    assert "vllm: openai, http://gpu:8000/v1, key: from $VK" in cli("list").stdout.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "stdin", "message"),
    [
        (
            ["add", "x", "--runtime-key-env", "UNSET_VAR_X"],
            "",
            "needs at least one --model, or a key to list",
        ),
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
def test_without_a_command_the_providers_are_listed_as_decisions_lists(cli: Cli) -> None:
    result = cli()
    assert result.returncode == 0, result.stderr
    assert result.stdout == cli("list").stdout
    assert "no providers configured: sampling uses the offline echo provider" in result.stdout


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


# --- set-up that works on the first try ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_add_without_a_model_lists_the_models_from_the_api(cli: Cli, kind: str) -> None:
    fake_class = FakeAnthropic if kind == "anthropic" else FakeOpenAI
    with fake_class(models=("model-a", "model-b")) as fake:
        url = fake.url
        added = cli("add", kind, "--base-url", url, "--api-key-stdin", stdin=SECRET + "\n")
        (listing,) = fake.requests
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(
        f"added provider '{kind}' ({kind}, {url}); 2 models listed by the API: model-a, model-b; "
        "key stored in the OS keyring"
    )
    assert (listing.method, listing.path.split("?")[0]) == ("GET", "/v1/models")
    assert SECRET in listing.headers.get("authorization", "") + listing.headers.get("x-api-key", "")
    assert cli.stored() == {f"host-receiver/{kind}": SECRET}
    text = cli.config.read_text()
    assert f'type = "{kind}"' in text and 'id = "model-a"' in text and 'id = "model-b"' in text


@pytest.mark.slow
def test_gemini_add_list_and_test(cli: Cli) -> None:
    """``providers add gemini`` lists the models with the key given, ``list`` says where the key
    comes from, ``test`` makes one call; then the standard variable serves an entry without a URL."""
    with FakeGemini(models=("gemini-a", "gemini-b")) as fake:
        url = fake.url
        fake.default = Completion(text="OK")
        added = cli("add", "gemini", "--base-url", url, "--api-key-stdin", stdin=SECRET + "\n")
        assert added.returncode == 0, added.stderr
        tested = cli("test", "gemini", "--model", "gemini-b")
        listing_request, sampling = fake.requests
    assert added.stdout.startswith(
        f"added provider 'gemini' (gemini, {url}); 2 models listed by the API: gemini-a, gemini-b; "
        "key stored in the OS keyring"
    )
    assert listing_request.path.split("?")[0] == "/v1beta/models"
    assert listing_request.headers["x-goog-api-key"] == SECRET == sampling.headers["x-goog-api-key"]
    assert cli.stored() == {"host-receiver/gemini": SECRET}
    assert tested.returncode == 0, tested.stderr
    assert re.fullmatch(
        r"ok: provider 'gemini', model gemini-b, answered in \d+\.\d\d s: 'OK'\n", tested.stdout
    )
    assert sampling.path.startswith("/v1beta/models/gemini-b:")
    assert sampling.body["generationConfig"] == {"maxOutputTokens": 16}
    listing = cli("list")
    assert listing.stdout.splitlines()[1:] == [
        f"gemini: gemini, {url}, key: keyring",
        "  - gemini-a (cost 0.5, speed 0.5, intelligence 0.5; accepts tools, images, audio; context 128000)",
        "  - gemini-b (cost 0.5, speed 0.5, intelligence 0.5; accepts tools, images, audio; context 128000)",
    ]
    assert cli("remove", "gemini").returncode == 0
    unlisted = cli("add", "gemini", "--model", "gemini-c", "--runtime-key-env", "GEMINI_API_KEY")
    assert unlisted.returncode == 0, unlisted.stderr
    cli.env["GEMINI_API_KEY"] = SECRET
    assert cli("list").stdout.splitlines()[1] == (
        "gemini: gemini, $GOOGLE_GEMINI_BASE_URL or https://generativelanguage.googleapis.com, "
        "key: from $GEMINI_API_KEY"
    )


@pytest.mark.slow
def test_a_key_the_api_refuses_is_not_stored(cli: Cli) -> None:
    with FakeAnthropic() as fake:
        fake.models_error = ErrorReply(status=401, message="invalid x-api-key", type="authentication_error")
        added = cli("add", "anthropic", "--base-url", fake.url, "--api-key-stdin", stdin=SECRET + "\n")
    assert added.returncode == 1
    assert "listing the models failed" in added.stderr and "HTTP 401, authentication failed" in added.stderr
    assert cli.stored() == {} and not cli.config.exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "problem"),
    [
        ("keyring.backends.fail.Keyring", "no OS keyring is available"),
        ("keyring.backends.null.Keyring", "the keyring backend keyring.backends.null.Keyring keeps nothing"),
        (
            "tests.providers.keyring_backends.PlaintextKeyring",
            "the keyring backend tests.providers.keyring_backends.PlaintextKeyring stores secrets "
            "unencrypted",
        ),
    ],
    ids=["none", "null", "plain-text"],
)
def test_without_a_working_keyring_add_says_so_before_asking_and_names_the_way_out(
    cli: Cli, backend: str, problem: str
) -> None:
    cli.env["PYTHON_KEYRING_BACKEND"] = backend
    added = cli("add", "anthropic", "--model", "claude-x", stdin=SECRET + "\n")
    assert added.returncode == 1
    assert added.stderr.startswith(f"host-receiver: error: {problem}")
    assert "so the key cannot be stored" in added.stderr
    assert "`host-receiver providers add anthropic --runtime-key-env VAR`, then export VAR" in added.stderr
    assert "API key for" not in added.stderr  # said before the key is asked for
    assert cli.stored() == {} and not cli.config.exists()
    runtime = cli("add", "anthropic", "--model", "claude-x", "--runtime-key-env", "CLAUDE_KEY")
    assert runtime.returncode == 0, runtime.stderr


@pytest.mark.slow
def test_providers_test_says_the_model_and_the_latency(cli: Cli) -> None:
    with FakeAnthropic(models=("claude-test",)) as fake:
        fake.default = Completion(text="OK")
        assert cli("add", "claude", "--type", "anthropic", "--base-url", fake.url, "--model", "claude-test",
                   "--runtime-key-env", "CLAUDE_KEY").returncode == 0  # fmt: skip
        cli.env["CLAUDE_KEY"] = SECRET
        tested = cli("test", "claude")
        (sent,) = fake.chat_bodies
    assert tested.returncode == 0, tested.stderr
    assert re.fullmatch(
        r"ok: provider 'claude', model claude-test, answered in \d+\.\d\d s: 'OK'\n", tested.stdout
    )
    assert sent["model"] == "claude-test" and sent["max_tokens"] == 16
    offline = cli("test", "echo")
    assert offline.returncode == 0 and offline.stdout.startswith("ok: provider 'echo', model echo-offline")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("reply", "cause", "advice"),
    [
        (
            ErrorReply(status=401, message="invalid x-api-key", type="authentication_error"),
            "HTTP 401, authentication failed",
            "check the key stored in the OS keyring for 'claude': `host-receiver providers add claude` "
            "stores a new one",
        ),
        (
            ErrorReply(status=404, message="model: claude-nope", type="not_found_error"),
            "HTTP 404, not found",
            "check the base URL and the model id (`host-receiver providers test claude --model ID`)",
        ),
        (Drop(), "connection failed", "check the base URL, the network and any proxy in between"),
    ],
    ids=["401", "404", "reset"],
)
def test_providers_test_says_the_cause_and_what_to_do(cli: Cli, reply: Any, cause: str, advice: str) -> None:
    with FakeAnthropic() as fake:
        fake.default = reply
        cli("add", "claude", "--type", "anthropic", "--base-url", fake.url, "--model", "claude-nope",
            "--api-key-stdin", stdin=SECRET + "\n")  # fmt: skip
        tested = cli("test", "claude", "--model", "claude-nope")
    assert tested.returncode == 1
    lines = tested.stderr.splitlines()
    assert lines[0].startswith("failed: provider 'claude', model claude-nope, after ")
    assert lines[1].startswith("cause: provider 'claude' (") and cause in lines[1]
    assert lines[2] == f"what to do: {advice}"
    assert SECRET not in tested.stderr + tested.stdout


#: What Gemini answers a key it does not know (HTTP 400, the reason in the details).
BAD_GEMINI_KEY = ErrorReply(
    status=400, message="API key not valid. Please pass a valid API key.", code="API_KEY_INVALID"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "advice"),
    [
        ("variable", "check $GEMINI_KEY, where the key comes from: export a valid key there"),
        (
            "keyring",
            "check the key stored in the OS keyring for 'gemini': `host-receiver providers add gemini` "
            "stores a new one",
        ),
    ],
)
def test_providers_test_of_a_gemini_key_the_api_rejects_says_which_key_to_fix(
    cli: Cli, where: str, advice: str
) -> None:
    with FakeGemini(models=("gemini-a",)) as fake:
        fake.default = BAD_GEMINI_KEY
        if where == "variable":
            added = cli("add", "gemini", "--base-url", fake.url, "--model", "gemini-a",
                        "--runtime-key-env", "GEMINI_KEY")  # fmt: skip
            cli.env["GEMINI_KEY"] = SECRET
        else:
            added = cli("add", "gemini", "--base-url", fake.url, "--model", "gemini-a",
                        "--api-key-stdin", stdin=SECRET + "\n")  # fmt: skip
        assert added.returncode == 0, added.stderr
        tested = cli("test", "gemini")
    assert tested.returncode == 1
    lines = tested.stderr.splitlines()
    assert "HTTP 400" in lines[1] and "API_KEY_INVALID" in lines[1]
    assert lines[2] == f"what to do: {advice}"
    assert SECRET not in tested.stderr + tested.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "variables"), [("openai", "OPENAI_API_KEY"), ("gemini", "GOOGLE_API_KEY or GEMINI_API_KEY")]
)
def test_providers_test_of_a_vendor_nothing_configures_says_how_to_configure_it(
    cli: Cli, name: str, variables: str
) -> None:
    tested = cli("test", name)
    assert tested.returncode == 1
    assert tested.stderr == (
        f"host-receiver: error: provider {name!r} is not configured: set {variables} "
        f"or run `host-receiver providers add {name}`\n"
    )


@pytest.mark.slow
def test_providers_test_of_an_unknown_name_lists_only_what_providers_list_shows(cli: Cli) -> None:
    alone = cli("test", "nope")
    assert alone.returncode == 1
    assert alone.stderr.startswith(
        "host-receiver: error: unknown provider 'nope': none is configured (`host-receiver providers list`); "
    )
    assert (
        cli("add", "mine", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--no-key").returncode == 0
    )
    listed = [line.split(":")[0] for line in cli("list").stdout.splitlines()[1:] if not line.startswith(" ")]
    tested = cli("test", "nope")
    assert listed == ["mine"]
    assert tested.stderr.startswith("host-receiver: error: unknown provider 'nope' (configured: mine); ")
