"""The task store's rules (host_receiver/client/remote_tasks/store.py): what is kept, and when forgotten."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver.client.remote_tasks.store import RemoteTaskStore, StoredTask, server_address
from host_receiver.errors import ConnectionClosed, RemoteTaskCancelled, RemoteTaskLost, RpcError, UnsafeFile
from host_receiver.people.policies import http_identity
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport

pytestmark = pytest.mark.anyio

ADDRESS = {"url": "https://mcp.example/mcp"}


def kept(task_id: str = "t-1", ttl_ms: int | None = 60_000) -> StoredTask:
    return StoredTask.new(ADDRESS, "2026-07-28", task_id, "deploy", {"env": "prod"}, ttl_ms)


async def test_a_task_is_kept_while_it_is_followed_and_forgotten_with_its_result(tmp_path: Path) -> None:
    store = RemoteTaskStore(tmp_path / "tasks.sqlite")
    task = kept()

    async def follow() -> str:
        assert await store.tasks() == [task]
        return "the result"

    assert await store.keeping(task, follow) == "the result"
    assert await store.tasks() == []


@pytest.mark.parametrize(
    "ending", [RpcError(-32603, "failed"), RemoteTaskCancelled("cancelled"), RemoteTaskLost("unknown")]
)
async def test_a_task_that_ended_otherwise_is_forgotten(tmp_path: Path, ending: Exception) -> None:
    store = RemoteTaskStore(tmp_path / "tasks.sqlite")

    async def follow() -> str:
        raise ending

    with pytest.raises(type(ending)):
        await store.keeping(kept(), follow)
    assert await store.tasks() == []


async def test_a_task_whose_connection_failed_or_whose_caller_cancelled_is_handled_apart(
    tmp_path: Path,
) -> None:
    store = RemoteTaskStore(tmp_path / "tasks.sqlite")

    async def lose_the_connection() -> str:
        raise ConnectionClosed("the server went away")

    with pytest.raises(ConnectionClosed):
        await store.keeping(kept("a"), lose_the_connection)
    assert [t.task_id for t in await store.tasks()] == ["a"]  # the server may still hold it

    with anyio.move_on_after(0):  # the caller cancels: the task got tasks/cancel, it is forgotten
        await store.keeping(kept("b"), anyio.sleep_forever)
    assert [t.task_id for t in await store.tasks()] == ["a"]


async def test_ids_are_short_stable_and_per_server(tmp_path: Path) -> None:
    store = RemoteTaskStore(tmp_path / "tasks.sqlite")
    first, again = kept("t-1"), kept("t-1")
    other = StoredTask.new({"url": "https://other.example/mcp"}, "2026-07-28", "t-1", "deploy", None, None)
    assert first.id == again.id != other.id and len(first.id) == 10
    await store.add(first)
    await store.add(again)  # a resumed task keeps its first record
    assert await store.get(first.id) == first == await store.find(ADDRESS, "t-1")
    assert await store.find({"url": "https://other.example/mcp"}, "t-1") is None
    await store.remove(first.id)
    assert await store.get(first.id) is None
    assert first.identity == http_identity(ADDRESS["url"])


def test_expiry_follows_the_ttl_from_creation() -> None:
    task = kept(ttl_ms=1000)
    assert not task.expired(task.created + 0.5)
    assert task.expired(task.created + 1)
    assert not kept(ttl_ms=None).expired(task.created + 10**9)


def test_the_address_keeps_no_secret() -> None:
    stdio = StdioTransport("node", ["server.js"], env={"API_KEY": "s3cret"}, cwd="/srv")
    assert server_address(stdio) == {"command": ["node", "server.js"], "cwd": "/srv", "env": ["API_KEY"]}
    http = HttpTransport("https://user:pass@mcp.example/mcp", headers={"Authorization": "Bearer s3cret"})
    assert server_address(http) == {"url": "https://mcp.example/mcp"}


async def test_a_store_that_is_not_the_users_is_refused_with_the_chown_to_run(
    tmp_path: Path, monkeypatch: Any
) -> None:
    store = RemoteTaskStore(tmp_path / "tasks.sqlite")
    await store.add(kept())
    owner = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)  # as if another user had made it
    with pytest.raises(UnsafeFile) as refused:
        await store.tasks()
    assert str(refused.value).endswith(
        f"fix it with: sudo chown {owner + 1} {store.path} && chmod 600 {store.path}"
    )
    assert f"owner uid {owner}" in str(refused.value)
