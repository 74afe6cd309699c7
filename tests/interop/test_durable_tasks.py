"""Durable remote tasks: a server's task kept in a task store survives the host (``--task-store``).

Against real peers: fastmcp_server.py (fastmcp 4.1.4 + fastmcp-tasks, the
2026-07-28 tasks extension, stateless Streamable HTTP: its tasks outlive a
connection), py_task_server.py (mcp 1.30, 2025-11-25 tools called as
tasks: its task ids are bound to the session that made them) and
server-everything's ``simulate-research-query`` (stdio: its tasks end with
its process). The host is a
real ``host-receiver`` process, killed with SIGKILL mid-task.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from host_receiver import Host, Receiver
from host_receiver.client.options import ConnectionOptions
from host_receiver.client.remote_tasks.store import RemoteTaskStore, StoredTask
from host_receiver.people.policies import stdio_identity
from host_receiver.transports.stdio import StdioTransport
from tests.cli.test_terminal import HOST
from tests.interop import FASTMCP_SERVER, everything_command, http_server, peer_python
from tests.interop.test_tool_tasks import task_peer_argv

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fastmcp_url() -> Iterator[str]:
    with http_server([str(peer_python("fastmcp")), str(FASTMCP_SERVER), "--http", "stateless"]) as url:
        yield url


def store_option(store: Path | str) -> list[str]:
    """``--task-store PATH``, or ``--store URL`` for a shared store (given as its URL)."""
    return ["--store", store] if isinstance(store, str) else ["--task-store", str(store)]


def host(*args: str, store: Path | str) -> subprocess.CompletedProcess[str]:
    cut = args.index("--") if "--" in args else len(args)  # the options go before the server command
    return subprocess.run(
        [str(HOST), *args[:cut], *store_option(store), *args[cut:]],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def killed_mid_task(argv: list[str], store: Path | str) -> str:
    """Run ``host-receiver`` with ``argv``, SIGKILL it once its task is working; its stderr until then."""
    process = subprocess.Popen(
        [str(HOST), argv[0], *store_option(store), *argv[1:]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert process.stderr is not None
    seen: list[str] = []
    try:
        for line in process.stderr:
            seen.append(line)
            if " working" in line:
                break
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL, "".join(seen)
    return "".join(seen)


def listed_ids(store: Path | str) -> list[str]:
    listing = host("tasks", store=store)
    assert listing.returncode == 0, listing.stderr
    return [line.split()[0] for line in listing.stdout.splitlines()]


@pytest.mark.parametrize("kept_in", ["task-store", "sqlite", "postgresql"])
def test_a_host_killed_mid_task_leaves_it_listed_and_resume_prints_its_result(
    fastmcp_url: str, tmp_path: Path, kept_in: str, request: pytest.FixtureRequest
) -> None:
    store: Path | str = tmp_path / "tasks.sqlite"  # today's --task-store file, or a shared --store:
    if kept_in == "sqlite":
        store = f"sqlite:///{tmp_path / 'fleet.db'}"
    elif kept_in == "postgresql":
        store = str(request.getfixturevalue("postgres_url"))
    argv = ["call", "--json", "task_slow", "seconds=3", "tag=durable", "--url", fastmcp_url]
    if isinstance(store, str):  # a shared store: the killed host's lease on its task runs out first
        argv[1:1] = ["--lease", "0.5"]
    killed_mid_task(argv, store)
    if isinstance(store, str):
        time.sleep(3 * 0.5 + 0.2)
    listing = host("tasks", store=store)
    (line,) = listing.stdout.splitlines()
    assert " task_slow " in line and fastmcp_url in line and "ttl 900s" in line
    task_id = line.split()[0]

    resumed = host("tasks", "resume", task_id, "--json", "--url", fastmcp_url, store=store)

    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(json.loads(resumed.stdout)["content"][0]["text"])
    assert (report["tag"], report["slept_s"]) == ("durable", 3.0)  # the first process's task, finished
    assert " completed" in resumed.stderr
    assert listed_ids(store) == []  # terminal and delivered: forgotten


def test_tasks_cancel_cancels_a_kept_task_and_forgets_it(fastmcp_url: str, tmp_path: Path) -> None:
    store = tmp_path / "tasks.sqlite"
    killed_mid_task(["call", "task_slow", "seconds=30", "tag=durable-cancel", "--url", fastmcp_url], store)
    (task_id,) = listed_ids(store)

    cancelled = host("tasks", "cancel", task_id, "--url", fastmcp_url, store=store)

    assert cancelled.returncode == 0, cancelled.stderr
    assert f"cancelled task {task_id} (task_slow)" in cancelled.stderr
    assert listed_ids(store) == []
    again = host("tasks", "resume", task_id, "--url", fastmcp_url, store=store)
    assert again.returncode == 2
    assert f"no kept task {task_id}" in again.stderr


def test_a_task_the_server_no_longer_knows_is_removed_with_one_line(tmp_path: Path) -> None:
    store = tmp_path / "tasks.sqlite"
    # mcp 1.30 binds a task id to the session that made it: a new connection is told it is unknown.
    peer = [*task_peer_argv(), "--port", "0"]
    with http_server(peer) as url:
        killed_mid_task(["call", "--task", "wait", "seconds=30", "--url", url + "/"], store)
        (task_id,) = listed_ids(store)

        resumed = host("tasks", "resume", task_id, "--url", url + "/", store=store)

    assert resumed.returncode == 2
    (line,) = [line for line in resumed.stderr.splitlines() if task_id in line]
    assert "no longer knows task" in line and line.endswith(f"removed task {task_id}")
    assert listed_ids(store) == []


def test_a_stdio_servers_task_is_resumed_by_starting_the_command_given_again(tmp_path: Path) -> None:
    store = tmp_path / "tasks.sqlite"
    command = everything_command()
    argv = ["call", "--elicit", "defaults", "simulate-research-query", "topic=tides", "--", *command]
    killed_mid_task(argv, store)  # server-everything (stdio) ends with its host
    listing = host("tasks", store=store)
    (line,) = listing.stdout.splitlines()
    assert line.endswith(stdio_identity(command, hashed=False))  # its executable, arguments and directory
    task_id = line.split()[0]

    resumed = host("tasks", "resume", task_id, "--elicit", "defaults", "--", *command, store=store)

    # A new server-everything process was started from the command given: its tasks live in memory.
    assert resumed.returncode == 2
    assert "no longer knows task" in resumed.stderr and "Task not found" in resumed.stderr
    assert resumed.stderr.rstrip().endswith(f"removed task {task_id}")
    assert listed_ids(store) == []


def test_an_expired_task_is_removed_without_connecting(tmp_path: Path) -> None:
    store = tmp_path / "tasks.sqlite"
    address = {"url": "http://127.0.0.1:9/mcp"}  # nothing listens: connecting would fail
    kept = StoredTask.new(address, "2026-07-28", "t-1", "deploy", {"env": "prod"}, ttl_ms=1000)
    anyio.run(RemoteTaskStore(store).add, replace(kept, created=time.time() - 5))

    resumed = host("tasks", "resume", kept.id, "--url", address["url"], store=store)

    assert resumed.returncode == 2
    assert f"task {kept.id} (deploy) is past its ttl: removed" in resumed.stderr
    assert listed_ids(store) == []


@pytest.mark.anyio
async def test_a_followed_task_is_kept_while_it_runs_without_secrets_and_forgotten_at_its_end(
    tmp_path: Path,
) -> None:
    store = RemoteTaskStore(tmp_path / "tasks.sqlite")
    python, script = task_peer_argv()
    transport = StdioTransport(python, [script], env={"PEER_TOKEN": "s3cret-value"}, name="py-tasks")
    async with Host(Receiver(), ConnectionOptions(task_store=store)) as h:
        server = await h.connect("py-tasks", transport)
        with anyio.fail_after(30):
            async with server.watch_tool("wait", {"seconds": 1}, task=True) as call:
                async for task in call.updates():
                    if task.status == "working":
                        break
                (kept,) = await store.tasks()
                result = await call.result()
    assert (kept.task_id, kept.tool, kept.arguments, kept.version) == (
        call.task_id,
        "wait",
        {"seconds": 1},
        "2025-11-25",
    )
    assert kept.identity == stdio_identity([python, script], hashed=False)
    assert kept.address["env"] == ["PEER_TOKEN"]  # the name, to take from the environment on resume
    assert result.text == "waited"
    assert await store.tasks() == []
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600  # the tool's arguments: the owner's only
    with sqlite3.connect(store.path) as db:
        assert "s3cret-value" not in json.dumps(db.execute("SELECT * FROM remote_tasks").fetchall())
