"""The ``host-receiver`` command, run as a user runs it: a subprocess against real servers.

Contract under test (host_receiver/cli.py): with ``--call`` the CallToolResult
JSON is all there is on stdout, exit 0 on success, 1 when the result has
``isError`` true, 2 when the connection or the protocol failed; without
``--call`` it serves until the server leaves or SIGINT, then exits 0; logs go
to stderr only; every option of every subcommand is explained by ``--help``.

Servers: the Python SDK peer (tests/interop/peers, skipped without ``.peers``
locally, required on CI) and the standard-library raw_server.py (always there).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from host_receiver.cli import build_parser
from host_receiver.errors import USER_REJECTED
from host_receiver.protocol.types import RELATED_TASK_META_KEY
from tests.cli_command import interrupted, run_cli
from tests.fake_anthropic import FakeAnthropic
from tests.fake_gemini import FakeGemini
from tests.fake_openai import Completion, ErrorReply, FakeOpenAI, ToolCall
from tests.interop import RAW_SERVER, HttpPeer, peer_command

FORM = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "default": "Lyon"},
        "nights": {"type": "integer", "default": 2},
    },
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of every run: no user configuration, bounded peer waits."""
    return {
        **os.environ,
        "HOST_RECEIVER_CONFIG": str(tmp_path / "absent-config.toml"),
        "PEER_WAIT_S": "20",
    }


@pytest.fixture
def py_peer() -> list[str]:
    command = peer_command("python")
    return list(command.argv)


def tool_result(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """stdout must be exactly one JSON document, the CallToolResult, and one newline."""
    assert proc.stdout.endswith("}\n") and proc.stdout.count("\n") == 1, proc.stdout
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def report_of(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON report a peer tool put in its text content."""
    report: dict[str, Any] = json.loads(result["content"][0]["text"])
    return report


# --- --help --------------------------------------------------------------------------


def _subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subcommands(sub, (*path, name))


SUBCOMMANDS = list(_subcommands(build_parser()))


@pytest.mark.parametrize(
    "path,parser", SUBCOMMANDS, ids=[" ".join(p) or "host-receiver" for p, _ in SUBCOMMANDS]
)
def test_help_explains_every_option(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
    """Every option of every subcommand has a help text that ``--help`` shows (checked in
    process, on the parser the command uses; the subprocess test below runs ``--help``)."""
    text = parser.format_help()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        assert action.help, f"{' '.join(path)} {action.option_strings[0]} has no help text"
        assert any(option in text for option in action.option_strings), action.option_strings


@pytest.mark.slow
def test_run_help_covers_the_documented_contract(env: dict[str, str]) -> None:
    proc = run_cli(env, "run", "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for option in ("--url", "--provider", "--model", "--approve", "--elicit", "--store", "--call", "--args"):
        assert option in text
    for choice in ("auto", "deny", "defaults", "decline", "memory"):
        assert choice in text
    assert "-- COMMAND" in text
    assert "--log-level" in run_cli(env, "--help").stdout


# --- --call: exit codes and stdout -------------------------------------------------------


@pytest.mark.slow
def test_call_prints_only_the_result_and_exits_0(env: dict[str, str], py_peer: list[str]) -> None:
    proc = run_cli(
        env,
        "--log-level",
        "DEBUG",
        "run",
        "--approve",
        "auto",
        "--call",
        "sample_task",
        "--args",
        '{"prompt": "hello"}',
        "--",
        *py_peer,
    )
    assert proc.returncode == 0, proc.stderr
    result = tool_result(proc)
    assert result.get("isError") is not True
    report = report_of(result)
    assert report["statuses"][-1] == "completed"
    assert report["result"]["content"] == {"type": "text", "text": "echo: hello"}
    assert report["result"]["_meta"][RELATED_TASK_META_KEY] == {"taskId": report["task"]["taskId"]}
    assert "connected to py-peer" in proc.stderr  # the logs went to stderr


@pytest.mark.slow
def test_a_tool_error_exits_1_with_the_result_on_stdout(env: dict[str, str], py_peer: list[str]) -> None:
    proc = run_cli(env, "run", "--call", "fail_tool", "--args", '{"message": "on purpose"}', "--", *py_peer)
    assert proc.returncode == 1, proc.stderr
    result = tool_result(proc)
    assert result["isError"] is True
    assert "on purpose" in result["content"][0]["text"]


@pytest.mark.slow
def test_defaults_refuse_sampling_and_decline_elicitation(env: dict[str, str], py_peer: list[str]) -> None:
    """Without a terminal and without --approve/--elicit, nothing is approved or filled in."""
    sampled = run_cli(env, "run", "--call", "sample_plain", "--args", '{"prompt": "x"}', "--", *py_peer)
    elicited = run_cli(
        env,
        "run",
        "--call",
        "elicit_plain",
        "--args",
        json.dumps({"message": "Where?", "schema": FORM}),
        "--",
        *py_peer,
    )
    assert report_of(tool_result(sampled))["error"]["code"] == USER_REJECTED
    assert report_of(tool_result(elicited))["result"] == {"action": "decline"}


@pytest.mark.slow
def test_elicit_defaults_fills_in_the_form(env: dict[str, str], py_peer: list[str]) -> None:
    args = json.dumps({"message": "Where?", "schema": FORM})
    call = ["--call", "elicit_task", "--args", args]
    proc = run_cli(env, "run", "--elicit", "defaults", *call, "--", *py_peer)
    assert proc.returncode == 0, proc.stderr
    assert report_of(tool_result(proc))["result"]["content"] == {"city": "Lyon", "nights": 2}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_provider_from_the_config_file(
    env: dict[str, str], py_peer: list[str], tmp_path: Path, kind: str
) -> None:
    config = tmp_path / "config.toml"
    fakes = {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "gemini": FakeGemini}
    with fakes[kind]() as fake:
        config.write_text(
            "[providers.fake]\n"
            f'type = "{kind}"\n'
            f'base_url = "{fake.url}"\n'
            "api_key_required = false\n"
            "max_retries = 0\n"
            "[[providers.fake.models]]\n"
            'id = "fake-model"\n'
        )
        env = {**env, "HOST_RECEIVER_CONFIG": str(config)}
        proc = run_cli(
            env,
            "run",
            "--provider",
            "fake",
            "--approve",
            "auto",
            "--call",
            "sample_plain",
            "--args",
            '{"prompt": "hi"}',
            "--",
            *py_peer,
        )
        assert proc.returncode == 0, proc.stderr
        result = report_of(tool_result(proc))["result"]
        assert result["content"]["text"] == Completion().text
        assert result["model"] == "fake-model"
        assert len(fake.chat_bodies) == 1


STDIO_SERVER = Path(__file__).resolve().parents[1] / "servers" / "stdio_mcp_server.py"
PNG = "iVBORw0KGgpmYWtl"  # base64 of a PNG signature and a few bytes


@pytest.mark.slow
def test_a_sampling_request_with_tools_an_image_and_stop_sequences_served_by_gemini(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The server's request reaches the Gemini API mapped whole, and its answer comes back as MCP."""
    config = tmp_path / "config.toml"
    params = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in the picture, and the weather there?"},
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                ],
            }
        ],
        "systemPrompt": "Answer briefly.",
        "maxTokens": 200,
        "stopSequences": ["###"],
        "tools": [
            {
                "name": "weather",
                "description": "The weather in a city",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "toolChoice": {"mode": "auto"},
    }
    with FakeGemini(models=("gemini-fake",)) as fake:
        fake.queue(
            Completion(text="A harbour.", tool_calls=(ToolCall("fc-7:a/b", "weather", '{"city": "Oslo"}'),))
        )
        config.write_text(
            "[providers.gem]\n"
            'type = "gemini"\n'
            f'base_url = "{fake.url}"\n'
            'api_key_env = "GEM_KEY"\n'
            "max_retries = 0\n"
            "[[providers.gem.models]]\n"
            'id = "gemini-fake"\n'
        )
        env = {**env, "HOST_RECEIVER_CONFIG": str(config), "GEM_KEY": "gem-secret-123456"}
        proc = run_cli(
            env,
            "run",
            "--provider",
            "gem",
            "--approve",
            "auto",
            "--call",
            "ask",
            "--args",
            json.dumps({"params": params}),
            "--",
            sys.executable,
            str(STDIO_SERVER),
        )
        assert proc.returncode == 0, proc.stderr
        (sent,) = fake.requests
    answer = json.loads(tool_result(proc)["content"][0]["text"])
    assert answer == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "A harbour."},
            {"type": "tool_use", "id": "fc-7:a/b", "name": "weather", "input": {"city": "Oslo"}},
        ],
        "model": "gemini-fake",
        "stopReason": "toolUse",
    }
    assert (
        sent.path.startswith("/v1beta/models/gemini-fake:")
        and sent.headers["x-goog-api-key"] == "gem-secret-123456"
    )
    body = sent.body
    assert body["contents"][0]["role"] == "user"
    text, image = body["contents"][0]["parts"]
    assert text == {"text": "What is in the picture, and the weather there?"}
    assert image["inlineData"]["data"] == PNG
    assert body["systemInstruction"]["parts"] == [{"text": "Answer briefly."}]
    assert body["generationConfig"]["stopSequences"] == ["###"]
    assert body["generationConfig"]["maxOutputTokens"] == 200
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "weather" and declaration["description"] == "The weather in a city"
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}


@pytest.mark.slow
def test_an_entry_without_models_is_served_with_the_ones_its_api_lists(
    env: dict[str, str], tmp_path: Path
) -> None:
    """``run`` lists the models before it connects; a listing that fails ends the run with its cause."""
    config = tmp_path / "config.toml"
    with FakeGemini(models=("gemini-listed",)) as fake:
        fake.default = Completion(text="Listed and served.")
        config.write_text(
            f'[providers.gem]\ntype = "gemini"\nbase_url = "{fake.url}"\napi_key_env = "GEM_KEY"\n'
        )
        env = {**env, "HOST_RECEIVER_CONFIG": str(config), "GEM_KEY": "gem-secret-123456"}
        argv = ["run", "--provider", "gem", "--approve", "auto", "--call", "ask", "--", sys.executable]
        served = run_cli(env, *argv, str(STDIO_SERVER))
        listing, sampling = fake.requests
        fake.models_error = ErrorReply(status=403, message="no access")
        refused = run_cli(env, *argv, str(STDIO_SERVER))
    assert served.returncode == 0, served.stderr
    assert tool_result(served)["content"][0]["text"] == "Listed and served."
    assert listing.method == "GET" and sampling.path.startswith("/v1beta/models/gemini-listed:")
    assert refused.returncode == 2 and refused.stdout == ""  # the run could not start
    assert refused.stderr.startswith(
        "host-receiver: provider 'gem' lists no models in its entry, and listing them failed: "
    )
    assert "HTTP 403, permission denied for this key: no access" in refused.stderr


@pytest.mark.slow
def test_call_over_streamable_http(env: dict[str, str]) -> None:
    peer = HttpPeer(peer_command("python"))
    try:
        args = '{"prompt": "over http", "helper": true}'
        proc = run_cli(
            env, "run", "--approve", "auto", "--url", peer.url, "--call", "sample_task", "--args", args
        )
    finally:
        peer.stop()
    assert proc.returncode == 0, proc.stderr
    assert report_of(tool_result(proc))["result"]["content"]["text"] == "echo: over http"


@contextmanager
def refusing_port() -> Iterator[int]:
    """A local port where connections are refused: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--call", "echo", "--", "/nonexistent/mcp-server"], id="no-such-command"),
        pytest.param(
            ["--call", "echo", "--", sys.executable, "-c", "raise SystemExit(3)"], id="exits-before-init"
        ),
        pytest.param(
            ["--call", "echo", "--args", "{not json", "--", sys.executable, str(RAW_SERVER)],
            id="args-not-json",
        ),
        pytest.param(
            ["--call", "echo", "--args", "[1, 2]", "--", sys.executable, str(RAW_SERVER)],
            id="args-not-object",
        ),
        pytest.param(
            ["--call", "die", "--", sys.executable, str(RAW_SERVER), "--mode", "die"],
            id="server-dies-during-call",
        ),
        pytest.param(["--call", "echo"], id="no-server"),
        pytest.param(["--url", "http://127.0.0.1:1/mcp", "--", "also-a-command"], id="url-and-command"),
    ],
)
def test_failures_exit_2_with_nothing_on_stdout(args: list[str], env: dict[str, str]) -> None:
    proc = run_cli(env, "run", *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.strip()  # and says why


@pytest.mark.slow
def test_unreachable_url_exits_2(env: dict[str, str]) -> None:
    with refusing_port() as port:
        proc = run_cli(env, "run", "--url", f"http://127.0.0.1:{port}/mcp", "--call", "echo")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "could not connect" in proc.stderr


# --- serving ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_serve_exits_0_when_the_server_leaves(env: dict[str, str], tmp_path: Path) -> None:
    """The raw server sends a sampling task and a form elicitation, records the answers, exits."""
    record = tmp_path / "answers.json"
    proc = run_cli(
        env,
        "run",
        "--approve",
        "auto",
        "--elicit",
        "defaults",
        "--",
        sys.executable,
        str(RAW_SERVER),
        "--mode",
        "sample-then-exit",
        "--record",
        str(record),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    answers = json.loads(record.read_text())
    task = answers["created"]["result"]["task"]
    assert task["status"] == "working"
    result = answers["result"]["result"]
    assert result["content"] == {"type": "text", "text": "echo: from raw_server"}
    assert result["_meta"][RELATED_TASK_META_KEY] == {"taskId": task["taskId"]}
    assert answers["elicit"]["result"] == {"action": "accept", "content": {"colour": "blue"}}


@pytest.mark.slow
def test_serve_exits_0_on_sigint(env: dict[str, str], py_peer: list[str]) -> None:
    """Ctrl-C while serving. (Not SIGTERM: the command's handler for it is installed only
    after the handshake, and nothing observable marks that moment.)"""
    code, stdout, stderr = interrupted(
        env, "connected to py-peer", "--log-level", "INFO", "run", "--", *py_peer
    )
    assert code == 0, stderr
    assert stdout == ""
    assert "Traceback" not in stderr
