"""``--approve web`` and ``--elicit web`` through the real command, against the demo server (mcp 1.x).

The command runs as a user runs it (a subprocess, no terminal); the test is the person,
answering through the JSON API with the token of the ``inbox:`` line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from tests.cli.test_terminal import PEER_PYTHON, ROOT
from tests.cli_command import LIMIT_S, run_cli, start_cli
from tests.notify.conftest import SECRET, HttpReceiver

pytestmark = pytest.mark.slow

INBOX_LINE = re.compile(r"^inbox: (http://127\.0\.0\.1:\d+)/#token=([A-Za-z0-9_-]{22,})$")
#: What the person answers to each kind of item.
ANSWERS: dict[str, dict[str, Any]] = {
    "sampling": {"action": "approve"},
    "result": {"action": "send"},
    "url": {"action": "accept"},
}


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
        # A browser the host might start only notes the URL: the inbox must start none.
        "BROWSER": f"{PEER_PYTHON} -c {json.dumps(record)} %s",
    }


@contextmanager
def command(env: dict[str, str], *args: str) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """The command running; its inbox's address and token, read from its first line on stderr."""
    process = start_cli(env, *args)
    try:
        assert process.stderr is not None
        line = process.stderr.readline().rstrip("\n")
        found = INBOX_LINE.match(line)
        assert found is not None, line
        yield process, found[1], found[2]
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def answer_everything(process: subprocess.Popen[str], base: str, token: str, after: float = 0.0) -> list[str]:
    """Answer each item ``after`` seconds after it came (forms with their defaults) until the
    command ends; the kinds seen."""
    seen: list[str] = []
    came: dict[str, float] = {}
    deadline = time.monotonic() + LIMIT_S
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        while process.poll() is None and time.monotonic() < deadline:
            try:
                pending = api.get("/api/items").json()["pending"]
            except httpx.TransportError:  # the command ended meanwhile
                break
            for item in pending:
                if time.monotonic() - came.setdefault(item["id"], time.monotonic()) < after:
                    continue
                answer = ANSWERS.get(item["kind"]) or {
                    "action": "accept",
                    "content": {
                        f["name"]: f["value"] for f in item["request"]["fields"] if f["value"] is not None
                    },
                }
                assert api.post(f"/api/items/{item['id']}/answer", json=answer).status_code == 200
                seen.append(item["kind"])
            time.sleep(0.1)
    return seen


def test_the_demo_is_answered_from_the_inbox(env: dict[str, str], tmp_path: Path) -> None:
    with command(env, "demo", "--approve", "web", "--elicit", "web", "--llm-delay", "0.2") as (
        process,
        base,
        token,
    ):
        # A person takes a while: long enough for the server to poll each task while it waits.
        assert answer_everything(process, base, token, after=1.5) == ["sampling", "result", "form", "url"]
        out, err = process.communicate(timeout=LIMIT_S)
    assert process.returncode == 0, err
    assert "answers  sampling: web · elicitation: web" in out
    assert "request approved (web); generating with echo-offline" in out
    assert "link to blog.example.com opened (web)" in out
    assert out.count('tasks/get    → working: "waiting for an answer in the web inbox"') >= 3, out
    assert "outcome: Published" in out
    assert not (tmp_path / "opened.txt").exists()  # the person opened the link, not the host
    assert token not in out


def test_run_serves_a_server_through_the_inbox(env: dict[str, str]) -> None:
    server = str(ROOT / "examples" / "demo_server.py")
    call = ["--call", "announce_release", "--args", '{"version": "3.0.0"}']
    with command(
        env, "run", "--approve", "web", "--elicit", "web", *call, "--", str(PEER_PYTHON), server
    ) as (
        process,
        base,
        token,
    ):
        assert answer_everything(process, base, token) == ["sampling", "result", "form", "url"]
        out, err = process.communicate(timeout=LIMIT_S)
    assert process.returncode == 0, err
    assert "Published" in json.loads(out)["content"][0]["text"]


@pytest.mark.parametrize("given", ["1", "1s"])
def test_nobody_answering_in_time_expires_with_the_reason_the_server_sees(
    env: dict[str, str], given: str
) -> None:
    args = ["demo", "--approve", "web", "--elicit", "defaults", "--inbox-timeout", given, "--llm-delay", "0"]
    with command(env, *args) as (process, _, _):
        out, err = process.communicate(timeout=LIMIT_S)
    assert process.returncode == 0, err
    assert "request refused (web): no answer within 1s: expired, nobody refused" in out
    assert "error -1: no answer within 1s: expired, nobody refused" in out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--inbox-cert", "cert.pem"], "--inbox-cert and --inbox-key go together"),
        (["--inbox-timeout", "soon"], "'soon' is not a duration: write a number of seconds or"),
        (["--inbox-timeout", "0s"], "'0s' is not a positive duration"),
        (["--inbox-listen", "localhost"], "--inbox-listen: 'localhost' is not HOST:PORT"),
        (
            ["--notify", "webhook+https://hooks.example.test/t0k3n"],
            "--notify: webhook+https://… (channel 1): a webhook needs its signing secret in "
            "$HOST_RECEIVER_WEBHOOK_SECRET",
        ),
        (
            ["--notify", "json://127.0.0.1:9/x", "--escalate-after", "10m", "--escalate-to", "ops-team"],
            "--escalate-to takes a channel URL (webhook+https://..., mailto://...); a person's or a "
            "team's name is for 'inbox serve --escalate-to' on a shared store",
        ),
        (["--escalate-after", "10m"], "--escalate-after and --escalate-to go together"),
        (
            ["--notify", "json://127.0.0.1:9/x", "--store", "sqlite:////nowhere/fleet.db"],
            "--notify and --escalate-to are not for a host on a shared --store: its items are told by "
            "'host-receiver inbox serve --notify URL'",
        ),
        (["--remind-every", "5m"], "--escalate-after, --notify-content and --notify-links need --notify URL"),
        (["--notify-links", "signed"], "--notify-content and --notify-links need --notify URL"),
        (["--notify", "json://127.0.0.1:9/x", "--notify-every", "often"], "'often' is not a duration"),
    ],
)
def test_wrong_inbox_options_are_usage_errors(env: dict[str, str], options: list[str], message: str) -> None:
    done = run_cli(env, "demo", "--approve", "web", *options)
    assert done.returncode == 2 and message in done.stderr


def test_notify_sends_signed_webhooks_linking_to_each_item_never_logging_the_url(
    env: dict[str, str],
) -> None:
    receiver = HttpReceiver()
    url = f"webhook+{receiver.url}?t0k3n=1"
    try:
        env = {**env, "HOST_RECEIVER_WEBHOOK_SECRET": SECRET}
        args = ["demo", "--approve", "web", "--elicit", "defaults", "--llm-delay", "0", "--notify", url]
        with command(env, *args) as (process, base, token):
            assert answer_everything(process, base, token, after=0.5) == ["sampling", "result"]
            out, err = process.communicate(timeout=LIMIT_S)
    finally:
        receiver.stop()
    assert process.returncode == 0, err
    events = [Webhook(SECRET).verify(r.body, r.headers) for r in receiver.received]
    assert [e["type"] for e in events].count("item.waiting") == 2
    assert all(e["data"]["link"] == f"{base}/items/{e['data']['id']}" for e in events)
    assert "t0k3n" not in err + out


def test_notify_without_the_web_inbox_is_a_usage_error(env: dict[str, str]) -> None:
    done = run_cli(env, "demo", "--approve", "auto", "--notify", "json://127.0.0.1:9/t0k3n")
    assert done.returncode == 2
    assert (
        "--notify and --escalate-to are for the web inbox: add --approve web or --elicit web" in done.stderr
    )
    assert "t0k3n" not in done.stderr


def test_an_address_in_use_is_a_clear_error(env: dict[str, str]) -> None:
    with command(env, "demo", "--approve", "web", "--llm-delay", "0") as (process, base, _):
        port = base.rsplit(":", 1)[1]
        done = run_cli(env, "demo", "--approve", "web", "--inbox-listen", f"127.0.0.1:{port}")
        process.kill()
    assert done.returncode == 2
    assert f"the web inbox cannot listen on 127.0.0.1:{port}" in done.stderr
