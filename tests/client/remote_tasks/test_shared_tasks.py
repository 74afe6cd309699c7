"""Tasks-extension tasks kept in a shared store (SQLite, a real PostgreSQL), as a user runs them: a
host CLI follows a FastMCP (mcp 2.3.0 + fastmcp-tasks) task on stateless Streamable HTTP whose
``inputRequests`` wait for a person in the store's inbox; the host is killed with SIGKILL; the
person answers through ``inbox serve``'s API; ``tasks resume ID --store URL`` sends the answer with
``tasks/update`` and prints the result, one process at a time under the task's lease. And, with a
scripted server (asyncio and trio), the keys sent are recorded in the store and never sent again.

(Over stateless HTTP the server's tasks outlive a connection, as a fleet's servers' do.)"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from host_receiver.client.remote_tasks._modern import follow_task
from host_receiver.client.remote_tasks._news import TaskNews
from host_receiver.client.remote_tasks.shared import SharedRemoteTaskStore
from host_receiver.client.remote_tasks.store import StoredTask
from host_receiver.errors import ConnectionClosed
from host_receiver.store import ASKED_AGAIN, CallKeeping, InboxItem, StoredRemoteTask, open_store
from tests.cli_command import LIMIT_S, cli_env, run_cli, start_cli
from tests.fleet.processes import in_store, inbox_serve, kill
from tests.interop import FASTMCP_SERVER, http_server, peer_python

pytestmark = pytest.mark.slow  # fresh interpreters and a real peer

ROOT = Path(__file__).resolve().parents[3]
LEASE = 1.0  # seconds: a killed host's lease runs out after three periods (3 s)
#: The lease of a host whose killed lease must still hold while a fresh interpreter starts and is
#: refused (12 s: a loaded machine takes seconds to start one).
LONG_LEASE = 4.0
ANSWER = {"action": "accept", "content": {"name": "Ann"}}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**cli_env(tmp_path), "PYTHONPATH": str(ROOT)}  # this checkout's code, not the installed one


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with http_server([str(peer_python("fastmcp")), str(FASTMCP_SERVER), "--http", "stateless"]) as url:
        yield url


def _task(url: str) -> StoredRemoteTask | None:
    tasks = in_store(url, lambda store: store.remote_tasks())
    assert len(tasks) <= 1, tasks
    return tasks[0] if tasks else None


def _waiting(url: str, proc: subprocess.Popen[str], owner: str) -> tuple[StoredRemoteTask, InboxItem]:
    """The kept task, once the process named ``owner`` holds its lease and its item waits in the inbox."""
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        task = _task(url)
        items = [i for i in in_store(url, lambda store: store.pending_items()) if i.call_id]
        if task is not None and (task.lease_owner or "").startswith(f"{owner}/") and items:
            return task, items[-1]
        time.sleep(0.1)
    raise AssertionError("the task's input request never waited in the inbox")


def _until_lease_ends(url: str) -> None:
    task = _task(url)
    assert task is not None and task.lease_expires is not None
    time.sleep(max(0.0, task.lease_expires - time.time()) + 0.2)


def _answer(url: str, item_id: str) -> None:
    """Ann answers the item through ``inbox serve``'s JSON API."""
    _, token = in_store(url, lambda store: store.add_person("ann", ["ops"]))
    bearer = {"Authorization": f"Bearer {token}"}
    with inbox_serve(url) as (_, base), httpx.Client(base_url=base, headers=bearer) as ann:
        assert item_id in [i["id"] for i in ann.get("/api/items").json()["pending"]]
        answered = ann.post(f"/api/items/{item_id}/answer", json=ANSWER)
        assert answered.status_code == 200, answered.text


def _host(
    env: dict[str, str], url: str, server_url: str, tag: str, lease: float = LEASE
) -> subprocess.Popen[str]:
    """The host that follows the task (its requests tagged ``tag`` and a fresh suffix in the server's
    report: the server outlives the test)."""
    return start_cli(
        env, "call", "task_form", f"tag={tag}-{uuid.uuid4().hex[:8]}", "--json", "--store", url,
        "--lease", str(lease), "--elicit", "web", "--host-name", "worker-a", "--url", server_url,
    )  # fmt: skip


def _resume(url: str, server_url: str, task: StoredRemoteTask) -> list[str]:
    return ["tasks", "resume", task.id, "--store", url, "--json", "--url", server_url]


def _sent(stdout: str) -> dict[str, object]:
    report: dict[str, object] = json.loads(json.loads(stdout)["content"][0]["text"])
    return report


def test_a_killed_hosts_task_input_answered_in_the_inbox_is_sent_by_tasks_resume_once_its_lease_ends(
    env: dict[str, str], url: str, server_url: str
) -> None:
    host = _host(env, url, server_url, "kept-a", LONG_LEASE)
    try:
        task, item = _waiting(url, host, "worker-a")
    finally:
        kill(host)  # kill -9 while the task waits for a person's answer
    assert (item.call_id, item.kind) == (f"task:{task.id}", "form") and item.call_key  # the server's key
    assert item.lease_expires is None  # it waits for the task, not for the host: never swept

    early = run_cli(env, *_resume(url, server_url, task), "--elicit", "decline")
    assert early.returncode == 2 and early.stdout == ""
    assert f"task {task.id} is being followed by another process ({task.lease_owner}) until " in early.stderr

    _answer(url, item.id)
    _until_lease_ends(url)  # three periods after the kill: another process may take it over
    done = run_cli(env, *_resume(url, server_url, task), "--elicit", "decline")

    assert done.returncode == 0, done.stderr
    report = _sent(done.stdout)
    assert report["elicitation"] == ANSWER  # the person's answer, from the inbox
    methods = [r["method"] for r in report["requests"]]  # type: ignore[attr-defined]
    assert methods.count("tasks/update") == 1
    assert _task(url) is None  # terminal and delivered: forgotten, its lease given up
    assert in_store(url, lambda store: store.pending_items()) == []


def test_a_resumer_that_took_over_an_expired_lease_asks_again_and_refuses_a_second_resumer(
    env: dict[str, str], url: str, server_url: str
) -> None:
    host = _host(env, url, server_url, "kept-b")
    try:
        task, first = _waiting(url, host, "worker-a")
    finally:
        kill(host)
    _until_lease_ends(url)
    resumer = start_cli(
        env, *_resume(url, server_url, task), "--lease", str(2 * LEASE), "--elicit", "web",
        "--host-name", "worker-b",
    )  # fmt: skip
    try:
        deadline = time.monotonic() + LIMIT_S
        while (found := _waiting(url, resumer, "worker-b"))[1].id == first.id:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        held, again = found
        second = run_cli(env, *_resume(url, server_url, task), "--elicit", "decline")
        assert second.returncode == 2 and second.stdout == ""
        assert f"is being followed by another process ({held.lease_owner}) until " in second.stderr
        assert (again.call_id, again.call_key) == (f"task:{task.id}", first.call_key)
        replaced = in_store(url, lambda store: store.item(first.id))
        assert replaced is not None and (replaced.status, replaced.reason) == ("withdrawn", ASKED_AGAIN)

        _answer(url, again.id)
        stdout, stderr = resumer.communicate(timeout=LIMIT_S)
    finally:
        if resumer.poll() is None:
            kill(resumer)
    assert resumer.returncode == 0, stderr
    assert _sent(stdout)["elicitation"] == ANSWER
    assert _task(url) is None


FORM: dict[str, Any] = {
    "method": "elicitation/create",
    "params": {"message": "Who?", "requestedSchema": {"type": "object"}},
}


def _state(status: str, requests: dict[str, Any] | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"taskId": "t-1", "status": status, "ttlMs": 60_000, "pollIntervalMs": 10}
    if requests is not None:
        state["inputRequests"] = requests
    if status == "completed":
        state["result"] = {"content": [{"type": "text", "text": "done"}]}
    return state


@pytest.mark.anyio
async def test_an_input_key_sent_by_an_earlier_follower_is_recorded_and_never_sent_again(
    tmp_path: Path,
) -> None:
    """A follower that answered key ``a`` (from the inbox) and lost its connection before the task moved on
    leaves ``a`` recorded; the next follower, told ``a`` and ``b`` are pending by a server that has
    not taken ``a`` in yet, sends only ``b``'s inbox answer."""
    async with open_store(f"sqlite:///{tmp_path / 'fleet.db'}") as store:
        tasks = SharedRemoteTaskStore(store.url, keeping=CallKeeping(store=store, lease=1.0))
        kept = StoredTask.new({"url": "http://127.0.0.1:1/mcp"}, "2026-07-28", "t-1", "deploy", None, 60_000)
        await tasks.add(kept)
        for key in ("a", "b"):
            item = await store.add_item(
                host="worker-a", server_name="tools", server_title=None, server_identity=kept.identity,
                kind="form", payload=FORM["params"], session="gone", call=(f"task:{kept.id}", key),
            )  # fmt: skip
            await store.answer(item.id, {"action": "accept", "content": {"who": key}}, by="ann", address="-")
        updates: list[dict[str, Any]] = []

        async def never_asked(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
            raise AssertionError("the inbox had every answer")

        async def follow(states: list[dict[str, Any]]) -> dict[str, Any] | None:
            """Follow the task from ``states[0]``, the server answering polls with the rest; past
            them the connection is lost (the record stays, the lease is given up)."""
            left = iter(states[1:])

            async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
                if method == "tasks/update":
                    updates.append(params["inputResponses"])
                if method in ("tasks/update", "tasks/cancel"):
                    return {}
                state = next(left, None)
                if state is None:
                    raise ConnectionClosed("the connection was lost")
                return state

            async def run() -> dict[str, Any]:
                inputs = await tasks.inputs(kept)
                return await follow_task(states[0], request, never_asked, TaskNews(), inputs=inputs)

            with anyio.fail_after(5):
                try:
                    return await tasks.keeping(kept, run)
                except ConnectionClosed:
                    return None

        assert await follow([_state("input_required", {"a": FORM})]) is None
        [record] = await store.remote_tasks()
        assert record.sent_keys == ("a",) and record.lease_owner is None  # recorded; the lease given up
        result = await follow([_state("input_required", {"a": FORM, "b": FORM}), _state("completed")])
    assert result is not None and result["content"][0]["text"] == "done"
    assert updates == [
        {"a": {"action": "accept", "content": {"who": "a"}}},
        {"b": {"action": "accept", "content": {"who": "b"}}},
    ]
