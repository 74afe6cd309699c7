"""Issue 36's fleet, end to end on a real PostgreSQL, as a platform runs it: two ``inbox serve``
processes, two people in two teams, and host CLIs: one against the mcp 1.30 task peer (pushed form
and sampling, bound to its session) and two against the mcp 2.3.0 rounds server (continuable
calls), one routed to each team; a fourth host's server asks while the database is down.

Answers go through the JSON API of either inbox process and through the page in chromium; hosts
and a ``calls resume`` are killed with SIGKILL mid-wait; PostgreSQL is stopped and started again
under them all; the audit chain is verified, then tampered with by raw SQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from host_receiver.store import InboxItem, SqlStore
from tests.cli.test_terminal import PEER_PYTHON, ROOT
from tests.cli_command import LIMIT_S, cli_env, run_cli, start_cli
from tests.fleet.processes import WAIT_S, calls, in_store, inbox_serve, until_lease_ends
from tests.interop import PY2_SERVER, http_server, peer_python
from tests.postgres_cluster import PostgresCluster

playwright = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.slow  # real PostgreSQL, peers, chromium and fresh interpreters

TASK_SERVER = ROOT / "tests" / "interop" / "peers" / "py_task_server.py"
SESSION_ENDED = "the server's session ended"
UNREACHABLE = "the approval store is unreachable"
LEASE = 1.0  # seconds: a killed process's claims run out after three periods
#: The first ``calls resume``'s lease period: long enough that a second one, a fresh interpreter on a
#: loaded machine, starts while the lease of the first (killed) one still lives.
RESUMER_LEASE = 5.0
#: How long the page may take to show what the inbox did (ms): a safety net, not a measure.
WAIT_MS = 15_000


@contextmanager
def command(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """``host-receiver *args`` running for the block (it and what it started killed after it if it
    has not ended: a stdio server outlives a host killed with SIGKILL)."""
    process = start_cli(env, *args)
    started: list[int] = []
    try:
        yield process
    finally:
        if process.poll() is None:
            started = children(process.pid)
            process.kill()
        process.communicate(timeout=LIMIT_S)
        for pid in started:
            kill(pid)


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (its stdio server), still running."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(line) for line in found.stdout.split()]


def kill(pid: int) -> None:
    """SIGKILL ``pid``, if it still runs."""
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def kill_host(process: subprocess.Popen[str]) -> None:
    """SIGKILL a host mid-wait, then the stdio server it leaves behind."""
    started = children(process.pid)
    kill(process.pid)
    process.wait(timeout=WAIT_S)
    for pid in started:
        kill(pid)


def pending(url: str, kind: str, host: str, process: subprocess.Popen[str]) -> InboxItem:
    """The first pending item of ``kind`` that ``host`` put in the store."""
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        found = [i for i in in_store(url, lambda s: s.pending_items()) if (i.kind, i.host) == (kind, host)]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"{host} never put a {kind} item in the store")


def both_answer(
    inboxes: tuple[httpx.Client, httpx.Client], item_id: str, answer: dict[str, object]
) -> list[int]:
    """The same answer sent at once through both inbox processes; their statuses, sorted."""
    statuses: list[int] = []
    start = threading.Barrier(2)

    def send(client: httpx.Client) -> None:
        start.wait()
        statuses.append(client.post(f"/api/items/{item_id}/answer", json=answer).status_code)

    threads = [threading.Thread(target=send, args=(client,)) for client in inboxes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    return sorted(statuses)


def pending_ids(inbox: httpx.Client) -> set[str]:
    return {item["id"] for item in inbox.get("/api/items").json()["pending"]}


def until_it_says(process: subprocess.Popen[str], text: str) -> str:
    """The lines ``process`` writes on stderr, read until one holds ``text``."""
    assert process.stderr is not None
    seen: list[str] = []
    while text not in (line := process.stderr.readline()):
        assert line, "".join(seen) + f"\nended without saying {text!r}"
        seen.append(line)
    return line


def held_back(server: list[str], gate: Path) -> list[str]:
    """The stdio command line of ``server``, started only once :func:`let_go` opens ``gate``."""
    os.mkfifo(gate)
    return ["sh", "-c", 'read go < "$0" && exec "$@"', str(gate), *server]


def let_go(gate: Path, process: subprocess.Popen[str]) -> None:
    """Start the server that ``process`` (a host) is waiting for, behind ``gate``."""
    assert process.poll() is None, process.communicate()
    writer = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)  # no reader (it ended): an error, not a hang
    try:
        os.write(writer, b"go\n")
    finally:
        os.close(writer)


@contextmanager
def postgres_down(cluster: PostgresCluster) -> Iterator[None]:
    """The whole cluster stopped (``pg_ctl stop -m fast``) for the block, then started again."""
    cluster.stop()
    try:
        yield
    finally:
        cluster.start()


def report(done: subprocess.CompletedProcess[str] | tuple[str, str]) -> dict[str, object]:
    """The JSON report the rounds tool returned, from the ``--json`` result a command printed."""
    out = done[0] if isinstance(done, tuple) else done.stdout
    return dict(json.loads(json.loads(out)["content"][0]["text"]))


def test_a_fleet_on_postgresql_routes_takes_one_answer_outlives_kills_and_a_restart_and_audits(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    if not PEER_PYTHON.exists():
        pytest.skip("the Python peer is not installed (run .ci/install-peers)")
    url = postgres_cluster.url(postgres_cluster.new_database())
    env = {**cli_env(tmp_path), "PYTHONPATH": str(ROOT)}
    py2 = str(peer_python("py2"))
    gate = tmp_path / "late-server"

    async def people(store: SqlStore) -> dict[str, str]:
        _, ann = await store.add_person("ann", ["ops"])
        _, bob = await store.add_person("bob", ["sales"])
        return {"ann": ann, "bob": bob}

    tokens = in_store(url, people)
    ops = ["--store", url, "--lease", str(LEASE), "--for", "ops"]
    sales = ["--store", url, "--lease", str(LEASE), "--for", "sales"]
    with (
        http_server([py2, str(PY2_SERVER)]) as server_url,
        inbox_serve(url) as (_, first),
        inbox_serve(url) as (_, second),
        httpx.Client(base_url=first, headers={"Authorization": f"Bearer {tokens['ann']}"}) as ann_a,
        httpx.Client(base_url=second, headers={"Authorization": f"Bearer {tokens['ann']}"}) as ann_b,
        httpx.Client(base_url=first, headers={"Authorization": f"Bearer {tokens['bob']}"}) as bob_a,
        httpx.Client(base_url=second, headers={"Authorization": f"Bearer {tokens['bob']}"}) as bob_b,
        command(
            env, "call", "rounds", "n=1", "--json", *ops, "--host-name", "rounds-host", "--elicit", "web",
            "--url", server_url,
        ) as rounds_host,
        command(
            env, "run", *ops, "--host-name", "task-host", "--approve", "web", "--elicit", "web",
            "--call", "research", "--", str(PEER_PYTHON), str(TASK_SERVER),
        ) as task_host,
        command(
            env, "call", "rounds", "n=1", "tag=sales", "--json", *sales, "--host-name", "sales-host",
            "--elicit", "web", "--url", server_url,
        ) as sales_host,
        command(  # its server starts, and asks, only once PostgreSQL is down
            env, "call", "rounds", "n=1", "tag=late", "--json", *ops, "--host-name", "late-host",
            "--elicit", "web", "--protocol", "2026-07-28", "--connect-timeout", str(LIMIT_S * 5),
            "--", *held_back([py2, str(PY2_SERVER)], gate),
        ) as late_host,
    ):  # fmt: skip
        rounds_item = pending(url, "form", "rounds-host", rounds_host)
        form = pending(url, "form", "task-host", task_host)
        sales_item = pending(url, "form", "sales-host", sales_host)

        # routing across three hosts: each person sees their team's items through either process;
        # for the other team's person an item does not exist
        for ann in (ann_a, ann_b):
            assert pending_ids(ann) == {rounds_item.id, form.id}
        for bob in (bob_a, bob_b):
            assert pending_ids(bob) == {sales_item.id}
        assert bob_b.get(f"/api/items/{form.id}").status_code == 404
        assert bob_b.post(f"/api/items/{form.id}/answer", json={"action": "decline"}).status_code == 404
        assert ann_a.get(f"/api/items/{sales_item.id}").status_code == 404
        assert ann_a.post(f"/api/items/{sales_item.id}/answer", json={"action": "decline"}).status_code == 404

        # first answer wins across the two inbox processes; the pushed form reaches the task peer
        topic: dict[str, object] = {"action": "accept", "content": {"topic": "otters"}}
        assert both_answer((ann_a, ann_b), form.id, topic) == [200, 409]

        # the session-bound sampling request: withdrawn once its killed host's claim ran out
        sampling = pending(url, "sampling", "task-host", task_host)
        kill_host(task_host)
        deadline = time.monotonic() + LIMIT_S
        while (gone := in_store(url, lambda s: s.item(sampling.id))) and gone.status == "pending":
            assert time.monotonic() < deadline and rounds_host.poll() is None  # the live host sweeps
            time.sleep(0.1)
        assert gone is not None and (gone.status, gone.reason) == ("withdrawn", SESSION_ENDED)

        # the continuable call, its host killed mid-wait: a first `calls resume` asks again and is
        # killed in turn; while its lease lives a second one is refused, then takes the call over
        # once three periods passed and finishes it with the person's answer
        [call] = [c for c in calls(url) if c.id == rounds_item.call_id]
        kill_host(rounds_host)
        until_lease_ends(url, call.id)
        resume = ["calls", "resume", call.id, "--store", url, "--json"]
        first_resume = [*resume, "--lease", str(RESUMER_LEASE), "--elicit", "web", "--for", "ops"]
        with command(env, *first_resume, "--host-name", "resumer") as resumer:
            asked_again = pending(url, "form", "resumer", resumer)
            assert asked_again.id != rounds_item.id and asked_again.call_id == call.id
            [held] = [c for c in calls(url) if c.id == call.id]
            assert held.lease_expires is not None and held.lease_expires > time.time()
            kill_host(resumer)
        refused = run_cli(env, *resume, "--elicit", "decline")
        assert refused.returncode == 2 and refused.stdout == ""
        assert f"call {call.id} is being continued by another process" in refused.stderr, refused.stderr
        until_lease_ends(url, call.id)
        answered = ann_b.post(
            f"/api/items/{asked_again.id}/answer", json={"action": "accept", "content": {"n": 4}}
        )
        assert answered.status_code == 200, answered.text
        done = run_cli(env, *resume, "--elicit", "decline")
        assert done.returncode == 0, done.stderr
        assert report(done)["input_responses"] == {"round1": {"action": "accept", "content": {"n": 4}}}

        # the page: bob signs in with his link and sees his team's one card, naming host and server
        with (
            playwright.sync_playwright() as driver,
            driver.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"]) as browser,
        ):
            page = browser.new_page()
            page.goto(f"{first}/?token={tokens['bob']}")
            card = page.locator(
                "article", has=page.get_by_role("heading", name="py2-peer on sales-host · Form")
            )
            card.wait_for(timeout=WAIT_MS)
            assert page.url == f"{first}/"  # the token is taken out of the address bar
            assert page.locator("article").count() == 1  # ops' items do not exist for him

            # PostgreSQL stopped while sales-host waits for bob: a new request is refused, saying why,
            # by a host that goes on serving (its server, held back until now, asks only now); then the
            # database is back, bob answers on the page and the waiting host gets the answer
            with postgres_down(postgres_cluster):
                let_go(gate, late_host)
                until_it_says(late_host, f"form declined from py2-peer: {UNREACHABLE}")
            late = late_host.communicate(timeout=LIMIT_S)
            assert late_host.returncode == 0, late[1]
            assert report(late)["input_responses"] == {"round1": {"action": "decline"}}
            card.locator("input").first.fill("7")
            card.get_by_role("button", name="Send").click()
            card.wait_for(state="detached", timeout=WAIT_MS)
        out, err = sales_host.communicate(timeout=LIMIT_S)
        assert sales_host.returncode == 0, err
        assert report((out, err))["input_responses"] == {"round1": {"action": "accept", "content": {"n": 7}}}

    # the audit log: who answered what, on which host, in an unbroken chain; then a changed row
    rows = json.loads(run_cli(env, "audit", "list", "--store", url, "--json").stdout)
    assert [(row["person"], row["host"]) for row in rows] == [
        ("ann", "task-host"), ("ann", "resumer"), ("bob", "sales-host"),
    ]  # fmt: skip
    intact = run_cli(env, "audit", "verify", "--store", url)
    assert intact.returncode == 0, intact.stderr

    async def tamper(store: SqlStore) -> int:
        rows = await store._engine.run(lambda tx: tx.rows("SELECT seq FROM audit_log ORDER BY seq"))
        seq = int(rows[0][0])
        await store._engine.run(
            lambda tx: tx.execute("UPDATE audit_log SET person = ? WHERE seq = ?", ("mallory", seq))
        )
        return seq

    seq = in_store(url, tamper)
    broken = run_cli(env, "audit", "verify", "--store", url)
    assert broken.returncode != 0 and f"the chain is broken at row {seq}" in broken.stderr
