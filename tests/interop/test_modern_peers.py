"""Smoke tests of the 2026-07-28 peers: each starts and answers a real SDK client.

They prove the environments `.ci/install-peers` builds (`.peers/py2`, `.peers/fastmcp`)
and the peer servers work, by running each SDK's own client (tests/interop/peers/
sdk_client.py, in the peer's venv) against them and asserting what the server's
report says it received. The wire facts they stand on are in docs/peers-modern.md.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.interop import FASTMCP_SERVER, PY2_SERVER, SDK_CLIENT, http_server, peer_python

CLIENT_TIMEOUT_S = 30


def run_client(
    python: Path, sdk: str, target: str, tool: str, arguments: dict[str, Any], mode: str = "auto"
) -> Any:
    """Run sdk_client.py in the peer's venv; return its {protocol_version, is_error, report}."""
    done = subprocess.run(
        [str(python), str(SDK_CLIENT), sdk, target, tool, json.dumps(arguments), "--mode", mode],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"{sdk} client failed: {done.stderr[-2000:]}"
    return json.loads(done.stdout)


@contextmanager
def http_peer(python: Path, script: Path, *args: str) -> Iterator[str]:
    """Start a peer on Streamable HTTP (port 0); yield its URL once it prints LISTENING."""
    with http_server([str(python), str(script), "--port", "0", *args]) as url:
        yield url


def test_mcp2_client_takes_two_rounds_with_py2_server_over_stdio() -> None:
    out = run_client(
        peer_python("py2"), "mcp2", f"stdio:{PY2_SERVER}", "elicit_then_sample", {"tag": "smoke"}
    )
    report = out["report"]
    assert out["protocol_version"] == "2026-07-28"
    assert report["era"] == "modern"
    assert report["elicitation"] == {
        "action": "accept",
        "content": {"name": "Ada", "age": 36, "subscribe": False},
    }
    assert report["sampling"]["model"] == "fake-model"
    # The first call, the retry with the form's answer, the retry with the LLM's: each carried only its round.
    assert [sorted(r["input_responses"] or {}) for r in report["rounds"]] == [
        [],
        ["__main__:ask_person"],
        ["__main__:llm_after_form"],
    ]
    assert [r["request_state"] for r in report["rounds"]] == [False, True, True]


def test_mcp2_client_legacy_mode_gets_pushed_requests_over_stdio() -> None:
    out = run_client(peer_python("py2"), "mcp2", f"stdio:{PY2_SERVER}", "elicit_form", {}, mode="legacy")
    assert out["protocol_version"] == "2025-11-25"
    assert out["report"]["era"] == "legacy"
    assert out["report"]["elicitation"]["content"]["name"] == "Ada"


def test_mcp2_client_sends_the_modern_headers_to_py2_server_over_stateless_http() -> None:
    python = peer_python("py2")
    with http_peer(python, PY2_SERVER, "--http", "stateless") as url:
        out = run_client(python, "mcp2", url, "elicit_form", {"tag": "http"})
    report = out["report"]
    assert report["transport"] == "http-stateless"
    assert report["era"] == "modern"
    assert report["elicitation"]["content"]["name"] == "Ada"
    headers = report["headers"]
    assert (headers["mcp-protocol-version"], headers["mcp-method"], headers["mcp-name"]) == (
        "2026-07-28",
        "tools/call",
        "elicit_form",
    )


def test_fastmcp_client_answers_a_task_form_with_tasks_update_over_stdio() -> None:
    out = run_client(
        peer_python("fastmcp"), "fastmcp", f"stdio:{FASTMCP_SERVER}", "task_form", {"tag": "smoke"}
    )
    report = out["report"]
    assert out["protocol_version"] == "2026-07-28"
    assert report["background_task"] is True
    assert report["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    methods = [r["method"] for r in report["requests"]]
    assert methods[0] == "tools/call"
    assert "tasks/update" in methods
    extensions = report["requests"][0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"][
        "extensions"
    ]
    assert extensions == {"io.modelcontextprotocol/tasks": {}}


def test_fastmcp_client_gets_a_task_result_over_stateless_http() -> None:
    python = peer_python("fastmcp")
    with http_peer(python, FASTMCP_SERVER, "--http", "stateless") as url:
        out = run_client(python, "fastmcp", url, "task_optional", {"tag": "http"})
    assert out["report"]["background_task"] is True
    assert out["report"]["transport"] == "http-stateless"
    assert out["report"]["task_id"]
