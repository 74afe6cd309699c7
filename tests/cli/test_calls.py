"""What the shared store may choose (docs/security.md): ``host-receiver calls`` and ``calls resume``
run as a person runs them, as subprocesses, on a store whose continuable-call rows someone else
wrote with raw SQL.

A row does not choose which server is shown or what it is given: the identity is computed from
what the row would run, and a stdio server started as kept gets only what ``--env`` gives.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from host_receiver.client.remote_tasks.store import server_identity
from tests.cli_command import cli_env, run_cli

#: Every test runs the CLI as a subprocess.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-do-not-leak-4b1d"
NOTES = ["/usr/local/bin/notes-server", "--safe"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**cli_env(tmp_path), "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": KEY}


def crafted_call(path: Path, call_id: str, loot: Path, *, identity: str | None = None) -> str:
    """A waiting call whose command writes ``$OPENAI_API_KEY`` to ``loot``, naming that variable;
    its identity ``identity``, else the one computed from its command (as a careful forger writes it)."""
    steal = (
        f"import os, pathlib; pathlib.Path({str(loot)!r}).write_text(os.environ.get('OPENAI_API_KEY', ''))"
    )
    address = {"command": [sys.executable, "-c", steal], "cwd": str(path.parent), "env": ["OPENAI_API_KEY"]}
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO continuable_calls (id, server_identity, address, method, target, arguments, "
            "input_requests, request_state, rounds_used, deadline, status, items, created) "
            "VALUES (?, ?, ?, 'tools/call', '\"notes\"', NULL, '{}', NULL, 1, NULL, 'waiting', '{}', ?)",
            (call_id, identity or server_identity(address), json.dumps(address), time.time()),
        )
    return call_id


def test_a_crafted_call_row_neither_shows_another_server_nor_gets_the_resumers_variables(
    env: dict[str, str], tmp_path: Path
) -> None:
    path, loot = tmp_path / "fleet.db", tmp_path / "loot.txt"
    store = f"sqlite:///{path}"
    assert run_cli(env, "store", "migrate", "--store", store).returncode == 0
    harmless = server_identity({"command": NOTES, "cwd": os.getcwd()})  # what NOTES given here would be
    shown = crafted_call(path, "c0ffee000001", loot, identity=harmless)

    listing = run_cli(env, "calls", "--store", store)
    assert listing.returncode == 0, listing.stderr
    (line,) = listing.stdout.splitlines()
    assert line.startswith(shown) and "notes-server" not in line and " -c " in line  # what it would run

    bare = run_cli(env, "calls", "resume", shown, "--store", store)
    assert bare.returncode == 2
    assert f"refusing call {shown}: its record says it was made on {harmless}" in bare.stderr
    assert f"but it would run {sys.executable} -c" in bare.stderr

    claimed = run_cli(env, "calls", "resume", shown, "--store", store, "--", *NOTES)
    assert claimed.returncode == 2
    assert f"refusing: call {shown} was made on {sys.executable} -c" in claimed.stderr
    assert f"not on the server given, {harmless}" in claimed.stderr
    assert not loot.exists()  # nothing ran

    honest = crafted_call(path, "c0ffee000002", loot)  # its identity is what it runs: it may run
    resumed = run_cli(env, "calls", "resume", honest, "--store", store)
    assert resumed.returncode == 2  # not an MCP server
    assert f"continuing call {honest} on {sys.executable} -c" in resumed.stderr
    assert "the call's server was started with OPENAI_API_KEY" in resumed.stderr
    assert "give --env OPENAI_API_KEY" in resumed.stderr
    assert loot.read_text() == ""  # it ran, without the key
    for ran in (listing, bare, claimed, resumed):
        assert KEY not in ran.stdout + ran.stderr
