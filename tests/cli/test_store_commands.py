"""``host-receiver store migrate``, ``people``, ``audit`` and ``inbox list``, run as a user runs them
(subprocesses) on a SQLite file and on a real PostgreSQL; a password never shows."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from host_receiver.store import SCHEMA_VERSION, open_store
from tests.cli_command import cli_env, run_cli
from tests.postgres_cluster import PostgresCluster

pytestmark = pytest.mark.slow  # each command is a fresh interpreter (over a second on a busy machine)

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "\x1b[31mred\x1b[0m \u202eevil\u202c ' ; DROP TABLE people; --"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**cli_env(tmp_path), "PYTHONPATH": str(ROOT)}  # this checkout's code, not the installed one


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    return str(request.getfixturevalue("postgres_url"))


def test_people_add_prints_the_token_alone_once_and_the_store_keeps_only_its_hash(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "fleet.db"
    added = run_cli(env, "people", "add", "ann", "--team", "ops", "--team", "security", "--store", str(path))
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert added.stdout == f"{token}\n" and len(token) >= 43
    assert "shown once" in added.stderr and token not in added.stderr
    with sqlite3.connect(path) as db:
        kept = db.execute("SELECT name, token_hash, teams FROM people").fetchall()
    assert kept == [("ann", hashlib.sha256(token.encode()).hexdigest(), '["ops","security"]')]
    env["HOST_RECEIVER_STORE"] = f"sqlite:///{path}"  # the environment names the store from here on
    listed = run_cli(env, "people", "list")
    assert listed.returncode == 0 and listed.stdout == "ann\tops,security\t-\n" and token not in listed.stderr
    again = run_cli(env, "people", "add", "ann")
    assert again.returncode == 2 and again.stdout == "" and "ann is already in the store" in again.stderr
    bad = run_cli(env, "people", "add", HOSTILE)
    assert bad.returncode == 2 and "\x1b" not in bad.stderr and "use 1 to 64 letters" in bad.stderr
    assert run_cli(env, "people", "remove", "ann").returncode == 0
    gone = run_cli(env, "people", "remove", "ann")
    assert gone.returncode == 2 and "nobody named ann" in gone.stderr


def test_a_persons_channels_are_kept_added_and_cleared_and_never_shown(env: dict[str, str], url: str) -> None:
    mail = "mailtos://alerts:mail-secret-1@example.com?to=ann@example.com"
    hook = "webhook+https://hooks.example.com/ann?key=hook-secret-2"
    push = "ntfys://ntfy.sh/topic-secret-3"
    added = run_cli(
        env, "people", "add", "ann", "--team", "ops", "--notify", mail, "--notify", hook, "--store", url
    )
    assert added.returncode == 0, added.stderr
    assert "2 channel(s)" in added.stderr
    assert run_cli(env, "people", "add", "bob", "--store", url).returncode == 0
    more = run_cli(env, "people", "notify", "bob", push, "--store", url)
    assert more.returncode == 0 and "bob now has 1 channel(s)" in more.stderr
    listed = run_cli(env, "people", "list", "--store", url)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == (
        "ann\tops\tmailtos://… (channel 1), webhook+https://… (channel 2)\nbob\t-\tntfys://… (channel 1)\n"
    )
    outputs = added.stdout + added.stderr + more.stdout + more.stderr + listed.stdout + listed.stderr
    for secret in ("mail-secret-1", "hook-secret-2", "topic-secret-3", "example.com", "ntfy.sh"):
        assert secret not in outputs

    async def kept() -> dict[str, list[str]]:
        async with open_store(url) as store:
            found: dict[str, list[str]] = {}
            for channel in await store.channels():
                found.setdefault(channel.person, []).append(channel.url)
            return found

    assert anyio.run(kept) == {"ann": [mail, hook], "bob": [push]}
    cleared = run_cli(env, "people", "notify", "ann", "--clear", "--store", url)
    assert cleared.returncode == 0 and "removed 2 channel(s) of ann" in cleared.stderr
    replaced = run_cli(env, "people", "notify", "bob", mail, "--clear", "--store", url)
    assert replaced.returncode == 0 and "bob now has 1 channel(s)" in replaced.stderr
    assert anyio.run(kept) == {"bob": [mail]}
    misplaced = run_cli(env, "people", "notify", "bob", "--clear", push, "--store", url)
    assert misplaced.returncode == 2 and "unrecognized arguments: ntfys://…" in misplaced.stderr
    assert "topic-secret-3" not in misplaced.stderr
    nobody = run_cli(env, "people", "notify", "carol", push, "--store", url)
    assert nobody.returncode == 2 and "nobody named carol" in nobody.stderr
    neither = run_cli(env, "people", "notify", "bob", "--store", url)
    assert neither.returncode == 2 and "give a channel URL to add, or --clear" in neither.stderr
    wrong = run_cli(env, "people", "notify", "bob", "not-a-url-secret-4", "--store", url)
    assert wrong.returncode == 2 and "channel 1 is not a URL" in wrong.stderr
    assert "secret-4" not in wrong.stderr
    assert run_cli(env, "people", "remove", "bob", "--store", url).returncode == 0
    assert anyio.run(kept) == {}


def test_store_migrate_brings_a_fresh_store_up_and_never_prints_the_password(
    env: dict[str, str], url: str
) -> None:
    first = run_cli(env, "store", "migrate", "--store", url)
    assert first.returncode == 0, first.stderr
    assert f"schema version {SCHEMA_VERSION} (migrated from version 0)" in first.stderr
    second = run_cli(env, "store", "migrate", "--store", url)
    assert second.returncode == 0 and "(already up to date)" in second.stderr
    if url.startswith("postgresql://"):
        password = url.split("@")[0].rsplit(":", 1)[1]
        assert password not in first.stdout + first.stderr + second.stdout + second.stderr
        assert "postgres:***@127.0.0.1" in first.stderr


def test_a_store_newer_than_the_code_is_refused_by_every_command_saying_so(
    env: dict[str, str], url: str
) -> None:
    async def bump() -> None:
        async with open_store(url) as store:
            await store._engine.run(lambda tx: tx.execute("UPDATE store_schema SET version = ?", (99,)))

    anyio.run(bump)
    for command in (["store", "migrate"], ["people", "list"], ["audit", "verify"]):
        refused = run_cli(env, *command, "--store", url)
        assert refused.returncode == 2
        assert (
            f"the store's schema is version 99, newer than this host-receiver knows ({SCHEMA_VERSION})"
            in (refused.stderr)
        )


def test_an_unreachable_postgresql_store_is_a_clear_error_without_the_password(
    env: dict[str, str], postgres_cluster: PostgresCluster
) -> None:
    url = f"postgresql://postgres:not-this-one@127.0.0.1:{postgres_cluster.port}/postgres"
    wrong = run_cli(env, "inbox", "list", "--store", url)
    assert wrong.returncode == 2 and "not-this-one" not in wrong.stdout + wrong.stderr
    assert "host-receiver inbox list: the store postgresql://postgres:***@127.0.0.1" in wrong.stderr
    assert "password authentication failed" in wrong.stderr
    env["PGPASSWORD"] = postgres_cluster.password  # libpq's own ways of giving it work too
    viaenv = run_cli(env, "inbox", "list", "--store", postgres_cluster.url(password=False))
    assert viaenv.returncode == 0, viaenv.stderr


def test_audit_verify_passes_an_intact_chain_and_names_the_first_changed_row(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "fleet.db"

    async def fill() -> None:
        async with open_store(f"sqlite:///{path}") as store:
            item = await store.add_item(
                host="worker-1",
                server_name=HOSTILE,
                server_title=None,
                server_identity="stdio:notes",
                kind="form",
                payload={"message": HOSTILE},
                session="s1",
                routed_to=["ops"],
            )
            await store.answer(item.id, {"action": "accept"}, by="ann", address="10.0.0.7")
            await store.append_audit("note", server=HOSTILE, detail={"text": HOSTILE})
            await store.add_item(
                host="worker-2",
                server_name="notes",
                server_title=HOSTILE,
                server_identity="stdio:notes",
                kind="url",
                payload={"url": "https://example.com/"},
                session="s2",
            )

    anyio.run(fill)
    intact = run_cli(env, "audit", "verify", "--store", str(path))
    assert intact.returncode == 0 and "audit log intact: 2 row(s)" in intact.stderr
    listed = run_cli(env, "audit", "list", "--store", str(path))
    assert listed.returncode == 0 and "\x1b" not in listed.stdout and "\\x1b[31mred" in listed.stdout
    assert listed.stdout.splitlines()[0].split("\t")[2:5] == ["answered", "ann", "10.0.0.7"]
    rows = json.loads(run_cli(env, "audit", "list", "--json", "--store", str(path)).stdout)
    assert [r["seq"] for r in rows] == [1, 2] and rows[1]["server"] == HOSTILE
    pending = run_cli(env, "inbox", "list", "--store", str(path))
    assert pending.returncode == 0 and len(pending.stdout.splitlines()) == 1 and "\x1b" not in pending.stdout
    items = json.loads(run_cli(env, "inbox", "list", "--json", "--store", str(path)).stdout)
    assert [(i["host"], i["server"]["title"], i["kind"]) for i in items] == [("worker-2", HOSTILE, "url")]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE audit_log SET address = '10.6.6.6' WHERE seq = 1")
    tampered = run_cli(env, "audit", "verify", "--store", str(path))
    assert tampered.returncode == 2
    assert "the chain is broken at row 1: row 1 was changed" in tampered.stderr
    with sqlite3.connect(path) as db:
        db.execute("UPDATE audit_log SET address = '10.0.0.7' WHERE seq = 1")
        db.execute("DELETE FROM audit_log WHERE seq = 1")
    removed = run_cli(env, "audit", "verify", "--store", str(path))
    assert removed.returncode == 2 and "broken at row 1: row 1 is missing" in removed.stderr


def test_the_store_commands_refuse_memory_and_a_store_of_no_known_form(env: dict[str, str]) -> None:
    memory = run_cli(env, "people", "list", "--store", "memory")
    assert memory.returncode == 2 and "'memory' would be gone when the command ends" in memory.stderr
    nothing = run_cli(env, "audit", "verify")
    assert nothing.returncode == 2 and "give --store URL or $HOST_RECEIVER_STORE" in nothing.stderr
    odd = run_cli(env, "inbox", "list", "--store", "mysql://root:hunter2@db/x")
    assert (
        odd.returncode == 2
        and "hunter2" not in odd.stderr
        and "mysql://root:***@db/x: not a store" in odd.stderr
    )
    served = run_cli(env, "tools", "--store", "postgres.txt", "--", "true")
    assert (
        served.returncode == 2
        and "argument --store: postgres.txt: not a store (give 'memory'" in served.stderr
    )


@pytest.mark.parametrize(
    "command",
    [
        ["calls"],
        ["calls", "resume", "0123456789ab"],
        ["people", "list"],
        ["inbox", "list"],
        ["inbox", "serve"],
        ["tools", "--elicit", "web", "--", "true"],  # a host whose inbox is on the store
    ],
)
def test_a_sqlite_store_others_may_write_is_refused_by_every_command_with_the_chmod_to_run(
    env: dict[str, str], tmp_path: Path, command: list[str]
) -> None:
    path = tmp_path / "fleet.db"
    assert run_cli(env, "store", "migrate", "--store", str(path)).returncode == 0
    path.chmod(0o666)
    end = command.index("--") if "--" in command else len(command)

    refused = run_cli(env, *command[:end], "--store", str(path), *command[end:])

    assert refused.returncode == 2 and refused.stdout == ""
    assert f"refusing to use the store {path}" in refused.stderr and "-rw-rw-rw-" in refused.stderr
    assert f"fix it with: chmod 600 {path}" in refused.stderr and "Traceback" not in refused.stderr
