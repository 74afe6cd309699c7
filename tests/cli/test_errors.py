"""Errors that name their cause and refusals that say why, through the real CLI (subprocesses).

- A stdio server that exits: the error quotes the last lines of its stderr (at most 20, made safe).
- An HTTP error: its status and the start of its body (made safe, bounded).
- A legacy server's complaints about the era probe are DEBUG, not INFO; INFO says once it is legacy.
- Sampling refused for want of a terminal says so, on stderr and to the server; ``--elicit
  defaults`` names the required field without a default when it declines; a form declined for
  want of a terminal says so.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from host_receiver.errors import USER_REJECTED
from tests.cli_command import cli_env, run_cli
from tests.interop import PY2_SERVER, peer_command, peer_python

#: Every test runs the CLI as a subprocess, most against real servers.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path)


def test_a_server_that_exits_is_quoted_from_its_stderr(env: dict[str, str], tmp_path: Path) -> None:
    server = tmp_path / "broken_server.py"
    server.write_text(
        "import sys\n"
        "for n in range(30):\n"
        "    print(f'line {n}', file=sys.stderr)\n"
        "print('set \\x1b[31mTOKEN\\x1b[0m first: export TOKEN=...', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    proc = run_cli(env, "tools", "--", sys.executable, str(server))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "could not connect to broken_server.py" in proc.stderr
    quoted = proc.stderr.split("broken_server.py's stderr ended with:\n")[1].splitlines()
    assert len(quoted) == 20
    assert quoted[0] == "  line 11" and quoted[-1] == "  set \\x1b[31mTOKEN\\x1b[0m first: export TOKEN=..."
    assert "\x1b" not in proc.stderr


class _Unavailable(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = b"down for maintenance, back at 10:00\n" + b"x" * 100_000
        self.send_response(503)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def unavailable() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()


def test_an_http_error_shows_its_status_and_its_bodys_start(env: dict[str, str], unavailable: str) -> None:
    proc = run_cli(env, "tools", "--url", unavailable)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"HTTP 503 from {unavailable}: down for maintenance, back at 10:00" in proc.stderr
    assert len(proc.stderr) < 5_000


_NOT_FOUND_PAGE = (
    b"<!DOCTYPE html>\n<html>\n<head>\n<title>404 Not Found</title>\n<style>body { color: red }</style>\n"
    b"</head>\n<body>\n<h1>Not Found</h1>\n<p>The requested URL was not found on this server.</p>\n"
    b"</body>\n</html>\n"
)


class _NotFound(BaseHTTPRequestHandler):
    """A web server with no MCP endpoint: an HTML 404 page for POST and GET alike."""

    def _page(self) -> None:
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(_NOT_FOUND_PAGE)))
        self.end_headers()
        self.wfile.write(_NOT_FOUND_PAGE)

    do_GET = do_POST = _page

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def test_an_html_error_page_is_shown_once_as_its_title_not_as_raw_html(env: dict[str, str]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    try:
        proc = run_cli(env, "tools", "--url", url)
    finally:
        server.shutdown()
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"HTTP 404 from {url}: 404 Not Found" in proc.stderr
    assert proc.stderr.count("Not Found") == 1, proc.stderr
    assert "<" not in proc.stderr and "\\n" not in proc.stderr


def test_a_legacy_servers_complaints_about_the_probe_are_debug_and_info_says_legacy_once(
    env: dict[str, str],
) -> None:
    demo = [*peer_command("python").argv[:1], str(ROOT / "examples" / "demo_server.py")]
    info = run_cli(env, "--log-level", "INFO", "tools", "--", *demo)
    assert info.returncode == 0, info.stderr
    assert "validation error" not in info.stderr
    assert [line for line in info.stderr.splitlines() if "legacy" in line] == [
        line for line in info.stderr.splitlines() if "(protocol 2025-11-25, legacy)" in line
    ]
    assert info.stderr.count("legacy") == 1
    debug = run_cli(env, "--log-level", "DEBUG", "tools", "--", *demo)
    assert "DEBUG host_receiver.transports.stdio: [demo_server.py] Failed to validate request" in debug.stderr


def test_sampling_refused_off_a_terminal_says_why(env: dict[str, str]) -> None:
    proc = run_cli(env, "call", "sample_plain", "prompt=hi", "--", *peer_command("python").argv)
    assert proc.returncode == 0, proc.stderr
    error = json.loads(json.loads(proc.stdout)["content"][0]["text"])["error"]
    why = "sampling refused: no terminal to ask on; use --approve auto|web|deny"
    assert error == {"code": USER_REJECTED, "message": why, "stage": "request"}
    assert f"host-receiver: {why}" in proc.stderr
    chosen = run_cli(
        env, "call", "--approve", "deny", "sample_plain", "prompt=hi", "--", *peer_command("python").argv
    )
    assert "no terminal" not in chosen.stdout + chosen.stderr  # a refusal the user chose needs no hint


def test_elicit_defaults_names_the_required_field_without_a_default(env: dict[str, str]) -> None:
    server = ["--", str(peer_python("py2")), str(PY2_SERVER)]
    proc = run_cli(env, "call", "--elicit", "defaults", "elicit_form", *server)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(json.loads(proc.stdout)["content"][0]["text"])["elicitation"] == {"action": "decline"}
    assert "declined a form from py2-peer: required field 'name' has no default" in proc.stderr


def test_a_silent_server_times_out_after_connect_timeout_naming_the_step_and_the_seconds(
    env: dict[str, str],
) -> None:
    started = time.monotonic()
    proc = run_cli(env, "tools", "--connect-timeout", "1.5", "--", "sleep", "300")
    assert time.monotonic() - started < 20  # not the default minute
    assert proc.returncode == 2 and proc.stdout == ""
    assert (
        "host-receiver: could not connect to sleep: sleep did not answer initialize within 1.5 s "
        "(--connect-timeout SECONDS waits longer)"
    ) in proc.stderr
    assert "TimeoutError" not in proc.stderr
    refused = run_cli(env, "tools", "--connect-timeout", "0", "--", "sleep", "300")
    assert refused.returncode == 2 and "0 is not a positive number of seconds" in refused.stderr


def test_a_form_declined_off_a_terminal_says_why(env: dict[str, str]) -> None:
    server = ["--", str(peer_python("py2")), str(PY2_SERVER)]
    proc = run_cli(env, "call", "elicit_form", *server)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(json.loads(proc.stdout)["content"][0]["text"])["elicitation"] == {"action": "decline"}
    hint = "host-receiver: form declined: no terminal to ask on; use --elicit web|defaults|decline"
    assert f"{hint} (a form from py2-peer)" in proc.stderr
    chosen = run_cli(env, "call", "--elicit", "decline", "elicit_form", *server)
    assert chosen.returncode == 0 and "no terminal" not in chosen.stderr  # chosen: no hint needed


def test_a_url_without_its_scheme_is_named_whole_with_the_fix(env: dict[str, str]) -> None:
    proc = run_cli(env, "tools", "--url", "localhost:3917/mcp")
    assert proc.returncode == 2 and proc.stdout == ""
    assert (
        "host-receiver tools: --url 'localhost:3917/mcp' is not an http(s) URL; "
        "did you mean 'http://localhost:3917/mcp'?"
    ) in proc.stderr
    assert "/3917/mcp:" not in proc.stderr


def test_usage_names_every_way_to_give_the_server_and_what_store_takes(env: dict[str, str]) -> None:
    for command in ("tools", "call", "run"):
        helped = run_cli(env, command, "--help")
        assert helped.returncode == 0
        assert "--server NAME" in helped.stdout.split("\n\n")[0], helped.stdout  # the usage lines
        assert "{memory}" not in helped.stdout and "--store URL" in helped.stdout
        said = " ".join(helped.stdout.split())
        assert "'memory' (the default) for this run only" in said and "postgresql://..." in said
    neither = run_cli(env, "tools")
    assert "give either '-- COMMAND [ARG...]', '--url URL' or '--server NAME'" in neither.stderr
