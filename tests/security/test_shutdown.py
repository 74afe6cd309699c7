"""Stopping ``host-receiver run`` with 100 sampling tasks in flight: quick, complete, no orphans.

tests/servers/busy_server.py starts 100 sampling tasks that would take a
minute each (the offline provider, slowed down) and waits on every one with
``tasks/result``; it also starts a helper process of its own. Then the
command gets SIGTERM, or SIGINT (Ctrl-C). It must exit 0 within 5 s; every
waiter must have its answer (schema-valid: the task was cancelled) before the
server's input closes, and so must a plain request still running; and neither
the server nor its helper may outlive it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli_command import CLI
from tests.schema import validate

pytestmark = pytest.mark.slow

SERVER = Path(__file__).resolve().parents[1] / "servers" / "busy_server.py"
TASKS = 100


def events(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stopping_with_100_tasks_in_flight_answers_every_waiter_and_leaves_nothing(
    signum: signal.Signals, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[providers.slow]\ntype = "echo"\ndelay = 60.0\n')
    record = tmp_path / "record.jsonl"
    command = [*CLI, "--log-level", "INFO", "run", "--approve", "auto", "--"]
    command += [sys.executable, str(SERVER), "--tasks", str(TASKS), "--record", str(record)]
    proc = subprocess.Popen(
        command,
        env={**os.environ, "HOST_RECEIVER_CONFIG": str(config)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(e.get("ready") for e in events(record)):
            assert proc.poll() is None and time.monotonic() < deadline, "the server never got its tasks"
            time.sleep(0.05)
        time.sleep(0.2)  # the tasks' work has started: each is generating
        stopped = time.monotonic()
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    log = stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, log[-3000:]
    assert took < 5, f"took {took:.1f} s to exit"
    assert stdout == b""
    assert "Traceback" not in log
    seen = events(record)
    pids = next(e for e in seen if "pid" in e)
    answers = [e["answer"] for e in seen if "answer" in e]
    waits = [a for a in answers if str(a.get("id", "")).startswith("wait-")]
    assert len({a["id"] for a in waits}) == TASKS == len(waits), f"{len(waits)} waiters answered"
    for answer in waits:
        validate("JSONRPCMessage", answer)
        assert answer["error"]["code"] == -32603 and "cancelled" in answer["error"]["message"]
    (plain,) = [a for a in answers if a.get("id") == "plain"]  # in flight, not a task: answered too
    validate("JSONRPCMessage", plain)
    assert plain["error"] == {
        "code": -32603,
        "message": "Not answered: the client is closing the connection",
    }
    assert seen[-1] == {"eof": True}  # the server saw its input end after the answers
    assert not alive(pids["pid"]) and not alive(pids["helper"])
