"""Issue 36's fleet, end to end on a real PostgreSQL, as a platform runs it: two ``inbox serve``
processes, two people in two teams, a host CLI against the mcp 1.30 task peer (pushed form and
sampling, bound to its session) and one against the mcp 2.3.0 rounds server (a continuable call),
both routed to one team. Answers go through the JSON API of either inbox process; hosts are killed
with SIGKILL mid-wait; the audit chain is verified, then tampered with by raw SQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from host_receiver.store import InboxItem, SqlStore
from tests.cli.test_terminal import PEER_PYTHON, ROOT
from tests.cli_command import CLI, LIMIT_S, cli_env, run_cli
from tests.fleet.processes import WAIT_S, call_item, calls, in_store, inbox_serve, until_lease_ends
from tests.interop import PY2_SERVER, http_server, peer_python

pytestmark = pytest.mark.slow  # real PostgreSQL, peers and fresh interpreters

TASK_SERVER = ROOT / "tests" / "interop" / "peers" / "py_task_server.py"
SESSION_ENDED = "the server's session ended"
LEASE = 1.0  # seconds: a killed host's claims run out after three periods


@contextmanager
def command(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """``host-receiver *args`` running for the block (killed after it if it has not ended)."""
    process = subprocess.Popen(
        [*CLI, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=LIMIT_S)


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


def test_a_fleet_on_postgresql_routes_takes_one_answer_outlives_killed_hosts_and_audits(
    postgres_url: str, tmp_path: Path
) -> None:
    if not PEER_PYTHON.exists():
        pytest.skip("the Python peer is not installed (run .ci/install-peers)")
    url = postgres_url
    env = {**cli_env(tmp_path), "PYTHONPATH": str(ROOT)}

    async def people(store: SqlStore) -> dict[str, str]:
        _, ann = await store.add_person("ann", ["ops"])
        _, bob = await store.add_person("bob", ["sales"])
        return {"ann": ann, "bob": bob}

    tokens = in_store(url, people)
    lease = ["--store", url, "--lease", str(LEASE), "--for", "ops"]
    with (
        http_server([str(peer_python("py2")), str(PY2_SERVER)]) as server_url,
        inbox_serve(url) as (_, first),
        inbox_serve(url) as (_, second),
        httpx.Client(base_url=first, headers={"Authorization": f"Bearer {tokens['ann']}"}) as ann_a,
        httpx.Client(base_url=second, headers={"Authorization": f"Bearer {tokens['ann']}"}) as ann_b,
        httpx.Client(base_url=second, headers={"Authorization": f"Bearer {tokens['bob']}"}) as bob_b,
        command(
            env, "call", "rounds", "n=1", "--json", *lease, "--host-name", "rounds-host", "--elicit", "web",
            "--url", server_url,
        ) as rounds_host,
        command(
            env, "run", *lease, "--host-name", "task-host", "--approve", "web", "--elicit", "web",
            "--call", "research", "--", str(PEER_PYTHON), str(TASK_SERVER),
        ) as task_host,
    ):  # fmt: skip
        rounds_item = call_item(url, rounds_host)
        form = pending(url, "form", "task-host", task_host)

        # routing: ann (ops) sees both hosts' items through either process; bob (sales) sees none
        for ann in (ann_a, ann_b):
            assert {i["id"] for i in ann.get("/api/items").json()["pending"]} == {rounds_item.id, form.id}
        assert bob_b.get("/api/items").json()["pending"] == []
        assert bob_b.get(f"/api/items/{form.id}").status_code == 404
        assert bob_b.post(f"/api/items/{form.id}/answer", json={"action": "decline"}).status_code == 404

        # first answer wins across the two inbox processes; the pushed form reaches the task peer
        topic: dict[str, object] = {"action": "accept", "content": {"topic": "otters"}}
        assert both_answer((ann_a, ann_b), form.id, topic) == [200, 409]

        # the session-bound sampling request: withdrawn once its killed host's claim ran out
        sampling = pending(url, "sampling", "task-host", task_host)
        os.kill(task_host.pid, signal.SIGKILL)
        deadline = time.monotonic() + LIMIT_S
        while (gone := in_store(url, lambda s: s.item(sampling.id))) and gone.status == "pending":
            assert time.monotonic() < deadline and rounds_host.poll() is None  # the live host sweeps
            time.sleep(0.1)
        assert gone is not None and (gone.status, gone.reason) == ("withdrawn", SESSION_ENDED)

        # the continuable call: its host killed mid-wait, its item still answerable, then resumed
        [call] = calls(url)
        os.kill(rounds_host.pid, signal.SIGKILL)
        until_lease_ends(url, call.id)
        answered = ann_b.post(
            f"/api/items/{rounds_item.id}/answer", json={"action": "accept", "content": {"n": 4}}
        )
        assert answered.status_code == 200, answered.text
        done = run_cli(env, "calls", "resume", call.id, "--store", url, "--json", "--elicit", "decline")
        assert done.returncode == 0, done.stderr
        report = json.loads(json.loads(done.stdout)["content"][0]["text"])
        assert report["input_responses"] == {"round1": {"action": "accept", "content": {"n": 4}}}

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
