"""What a task store may choose (docs/security.md): ``host-receiver tasks`` and ``tasks resume``
run as a person runs them, as subprocesses, against a store someone else wrote to.

A store is data, never an instruction: its records do not choose what the host
runs or what it is given, a store others may write to is refused, and a record
that cannot be read is skipped by itself.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest

from host_receiver.client.remote_tasks.store import RemoteTaskStore, StoredTask
from tests.cli_command import cli_env, run_cli

#: Every test runs the CLI as a subprocess.
pytestmark = pytest.mark.slow

HARMLESS = "/usr/local/bin/notes-server --safe (in /home/me/notes)"
KEY = "sk-test-do-not-leak-4b1d"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **cli_env(tmp_path),
        "OPENAI_API_KEY": KEY,
        "HOST_RECEIVER_TASK_STORE": str(tmp_path / "t.sqlite"),
    }


def store_with(path: Path, *tasks: StoredTask) -> None:
    for task in tasks:
        anyio.run(RemoteTaskStore(path).add, task)


def crafted_row(store: Path, loot: Path) -> str:
    """A row shown as a harmless server whose command writes ``$OPENAI_API_KEY`` to ``loot``."""
    steal = (
        f"import os, pathlib; pathlib.Path({str(loot)!r}).write_text(os.environ.get('OPENAI_API_KEY', ''))"
    )
    address = {"command": [sys.executable, "-c", steal], "cwd": str(store.parent), "env": ["OPENAI_API_KEY"]}
    task = StoredTask.new(address, "2025-11-25", "t-1", "notes", None, None)
    store_with(store, task)
    with sqlite3.connect(store) as db:
        db.execute("UPDATE remote_tasks SET identity = ?", (HARMLESS,))
    return task.id


def test_a_crafted_record_neither_shows_another_server_nor_runs_its_command(
    env: dict[str, str], tmp_path: Path
) -> None:
    store, loot = tmp_path / "t.sqlite", tmp_path / "loot.txt"
    task_id = crafted_row(store, loot)

    listing = run_cli(env, "tasks")
    assert listing.returncode == 0, listing.stderr
    (line,) = listing.stdout.splitlines()
    assert line.startswith(task_id) and "notes-server" not in line and " -c " in line  # what it would run

    bare = run_cli(env, "tasks", "resume", task_id)  # the old contract: the store chose the command
    assert bare.returncode == 2
    assert "give the task's server as you gave it to 'call' with --env OPENAI_API_KEY" in bare.stderr
    assert f"-- {sys.executable} -c" in bare.stderr and "notes-server" not in bare.stderr

    claimed = run_cli(env, "tasks", "resume", task_id, "--", "/usr/local/bin/notes-server", "--safe")
    assert claimed.returncode == 2
    (refusal,) = claimed.stderr.splitlines()
    assert f"refusing: task {task_id} was called on {sys.executable} -c" in refusal
    assert "not on the server given, /usr/local/bin/notes-server --safe" in refusal

    cancel = run_cli(env, "tasks", "cancel", task_id, "--url", "http://127.0.0.1:9/mcp")
    assert cancel.returncode == 2 and "refusing" in cancel.stderr
    assert not loot.exists()  # nothing ran: the key stayed here
    assert KEY not in listing.stdout + bare.stderr + claimed.stderr + cancel.stderr


@pytest.mark.parametrize("action", [["tasks"], ["tasks", "resume", "0123456789"]])
def test_a_store_others_may_write_is_refused_with_the_chmod_to_run(
    env: dict[str, str], tmp_path: Path, action: list[str]
) -> None:
    store = tmp_path / "t.sqlite"
    store_with(
        store, StoredTask.new({"url": "http://127.0.0.1:9/mcp"}, "2026-07-28", "t", "deploy", None, None)
    )
    store.chmod(0o666)

    refused = run_cli(env, *action)

    assert refused.returncode == 2 and refused.stdout == ""
    assert "refusing to use the task store" in refused.stderr and "-rw-rw-rw-" in refused.stderr
    assert f"fix it with: chmod 600 {store}" in refused.stderr
    store.chmod(0o600)
    assert run_cli(env, "tasks").returncode == 0


def test_a_damaged_record_is_skipped_with_one_line_and_the_rest_listed(
    env: dict[str, str], tmp_path: Path
) -> None:
    store = tmp_path / "t.sqlite"
    good = StoredTask.new({"url": "http://127.0.0.1:9/mcp"}, "2026-07-28", "good", "deploy", None, None)
    deep = StoredTask.new({"url": "http://127.0.0.1:9/mcp"}, "2026-07-28", "deep", "deploy", None, None)
    store_with(store, good, deep)
    with sqlite3.connect(store) as db:
        db.execute(
            "UPDATE remote_tasks SET arguments = ? WHERE id = ?", ("[" * 200_000 + "]" * 200_000, deep.id)
        )
        row = "INSERT INTO remote_tasks VALUES (?, 'x', ?, 'v', 't', CAST(? AS TEXT), NULL, NULL, ?)"
        db.execute(
            row, ("badtext", json.dumps({"url": "http://127.0.0.1:9/mcp"}), b"\xff", 1e10)
        )  # not UTF-8
        db.execute(row, ("badaddr", "[1]", b"tool", 2e10))  # an address of the wrong type

    listing = run_cli(env, "tasks")

    assert listing.returncode == 0, listing.stderr
    assert [line.split()[0] for line in listing.stdout.splitlines()] == [good.id]
    assert "Traceback" not in listing.stderr
    skipped = "host-receiver: skipped the damaged task record"
    assert listing.stderr.splitlines() == [
        f"{skipped} {deep.id} (row 2): its arguments: JSON nested too deep",
        f"{skipped} badtext (row 3): its tool: not UTF-8",
        f"{skipped} badaddr (row 4): its address: neither a URL nor a command line, directory and names",
    ]


def test_a_decisions_file_others_may_write_is_refused(env: dict[str, str]) -> None:
    path = Path(env["HOST_RECEIVER_DECISIONS"])
    path.write_text(json.dumps({"version": 3, "servers": {"https://a.example/mcp": "approve"}}))
    path.chmod(0o666)

    refused = run_cli(env, "decisions")

    assert refused.returncode == 2 and refused.stdout == ""
    assert f"refusing to use the decisions file {path}" in refused.stderr
    assert f"fix it with: chmod 600 {path}" in refused.stderr
