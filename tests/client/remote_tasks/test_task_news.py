"""A server's task followed through its status notifications (client/remote_tasks/_modern.py, _news.py).

The tasks extension's ``subscriptions/listen`` with ``notifications/tasks``
against tests/servers/task_news_server.py over stdio and Streamable HTTP on
loopback (no real peer sends them: mcp 2.3.0 serves ``subscriptions/listen``
without the tasks extension, fastmcp-tasks polls only); a notification that
comes before its task is followed, and the ttl of a resumed task, in memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver import Host, Receiver
from host_receiver.client.host import ServerConnection
from host_receiver.client.options import ConnectionOptions
from host_receiver.client.remote_tasks import _modern
from host_receiver.client.remote_tasks._modern import follow_task
from host_receiver.client.remote_tasks._news import MAX_SUBSCRIPTIONS, TaskNews
from host_receiver.client.remote_tasks.store import RemoteTaskStore, StoredTask, server_address
from host_receiver.errors import RemoteTaskLost
from host_receiver.protocol.jsonrpc import Request
from host_receiver.protocol.modern import RemoteTask
from host_receiver.protocol.types import RequestId
from host_receiver.testing import FakeServer, ToolCall
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport
from tests.cli.test_terminal import HOST
from tests.interop import http_server
from tests.schema import validate_message

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parents[2] / "servers" / "task_news_server.py"


@contextmanager
def news_server(kind: str, mode: str, record: Path) -> Iterator[Transport]:
    """task_news_server.py in ``mode``, reached over ``kind`` (stdio or http)."""
    argv = [sys.executable, str(SERVER), "--record", str(record), "--mode", mode]
    if kind == "stdio":
        yield StdioTransport(argv[0], argv[1:], name="task-news")
        return
    with http_server(argv) as url:
        yield HttpTransport(url)


def sent(record: Path) -> list[dict[str, Any]]:
    """Every message the client sent, each checked against the 2026-07-28 schema."""
    messages = [json.loads(line) for line in record.read_text().splitlines()]
    for message in messages:
        validate_message(message, era="modern")
    return messages


def requests_of(messages: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in messages if m.get("method") == method and "id" in m]


@asynccontextmanager
async def connected(
    transport: Transport, options: ConnectionOptions | None = None
) -> AsyncIterator[ServerConnection]:
    async with Host(Receiver(), options) as host:
        yield await host.connect("task-news", transport)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_a_notified_task_ends_without_waiting_a_poll_interval_each_state_told_once(
    kind: str, tmp_path: Path
) -> None:
    record = tmp_path / "sent.jsonl"
    seen: list[tuple[str, str | None]] = []

    async def observe(task: RemoteTask) -> None:
        seen.append((task.status, task.status_message))

    with news_server(kind, "notify", record) as transport:
        async with connected(transport) as server:
            with anyio.fail_after(30):  # the task's poll interval is a minute
                result = await server.call_tool("deploy", on_task=observe)

    assert result.text == "deployed"
    # The server sent every state twice: each is told once.
    assert seen == [("working", None), ("working", "building"), ("completed", "done")]
    messages = sent(record)
    assert requests_of(messages, "subscriptions/listen")[0]["notifications"] == {"taskIds": ["T1"]}
    assert len(requests_of(messages, "tasks/get")) == 1  # when the subscription began; then only news


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_when_the_stream_drops_the_task_is_polled_and_listened_to_again(
    kind: str, tmp_path: Path
) -> None:
    record = tmp_path / "sent.jsonl"
    with news_server(kind, "drop", record) as transport:
        async with connected(transport) as server, server.watch_tool("deploy") as call:
            with anyio.fail_after(30):
                states = [(task.status, task.status_message) async for task in call.updates()]
                result = await call.result()

    assert result.text == "deployed"
    assert states == [("working", None), ("completed", None)]
    messages = sent(record)
    assert len(requests_of(messages, "subscriptions/listen")) >= 2  # reopened after each drop
    assert len(requests_of(messages, "tasks/get")) >= 2  # the completion came by polling


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_a_subscription_that_goes_quiet_is_backed_by_a_slow_poll(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_modern, "SUBSCRIBED_POLL", 0.5)  # 30 s in real use
    record = tmp_path / "sent.jsonl"
    with news_server(kind, "quiet", record) as transport:
        async with connected(transport) as server:
            with anyio.fail_after(30):  # without the backstop the call waits for the ttl (10 min)
                result = await server.call_tool("deploy")
            messages = sent(record)
    assert result.text == "deployed"
    assert len(requests_of(messages, "subscriptions/listen")) == 1  # honoured and never dropped
    assert len(requests_of(messages, "tasks/get")) >= 2  # the subscription's first poll, then the backstop


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_a_subscription_acknowledged_without_the_task_is_closed_and_the_task_polled(
    kind: str, tmp_path: Path
) -> None:
    record = tmp_path / "sent.jsonl"
    with news_server(kind, "decline", record) as transport:
        async with connected(transport) as server:
            with anyio.fail_after(30):
                result = await server.call_tool("deploy")
            messages = sent(record)
    assert result.text == "deployed"
    assert len(requests_of(messages, "subscriptions/listen")) == 1  # declined: never asked again
    assert len(requests_of(messages, "tasks/get")) >= 2
    if kind == "stdio":  # closed as soon as it was declined (HTTP: its stream was closed)
        (cancel,) = [m["params"] for m in messages if m.get("method") == "notifications/cancelled"]
        assert cancel["requestId"] == next(
            m["id"] for m in messages if m.get("method") == "subscriptions/listen"
        )


@pytest.mark.slow
def test_the_cli_shows_each_notified_state_on_one_line(tmp_path: Path) -> None:
    record = tmp_path / "sent.jsonl"
    with http_server([sys.executable, str(SERVER), "--record", str(record)]) as url:
        done = subprocess.run(
            [str(HOST), "call", "deploy", "--url", url],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if " task T1 " in line]
    assert lines == [
        "host-receiver: task T1 working",
        "host-receiver: task T1 working: building",
        "host-receiver: task T1 completed: done",
    ]
    assert "deployed" in done.stdout
    sent(record)


@pytest.mark.slow
async def test_a_resumed_task_keeps_counting_its_ttl_from_its_kept_creation(tmp_path: Path) -> None:
    """The record says the task was made two minutes ago with a ttl of one: resuming gives it up at
    once, although the server says it is new (its clock, or a task it made again)."""
    record = tmp_path / "sent.jsonl"
    store = RemoteTaskStore(tmp_path / "tasks.sqlite")
    with news_server("stdio", "drop", record) as transport:
        address = server_address(transport)
        assert address is not None
        kept = StoredTask.new(address, "2026-07-28", "T9", "deploy", None, 60_000, created=time.time() - 120)
        await store.add(kept)
        async with connected(transport, ConnectionOptions(task_store=store)) as server:
            with anyio.fail_after(10), pytest.raises(RemoteTaskLost, match="within its ttl of 60000 ms"):
                await server.resume_task("T9", "deploy")
    assert await store.tasks() == []  # given up: forgotten
    assert len(requests_of(sent(record), "tasks/get")) == 1


def modern_task(status: str, **more: Any) -> dict[str, Any]:
    stamp = "2026-12-04T10:00:00Z"
    return {"taskId": "t-1", "status": status, "createdAt": stamp, "lastUpdatedAt": stamp, **more}


async def test_without_a_record_a_resumed_task_counts_its_ttl_from_the_servers_created_at() -> None:
    async def get(request: Request) -> dict[str, Any]:  # made long ago, with a ttl of a minute
        return {"resultType": "complete", **modern_task("working", ttlMs=60_000, pollIntervalMs=60_000)}

    async def ack(request: Request) -> dict[str, Any]:
        return {"resultType": "complete"}

    fake = FakeServer(protocol_version="2026-07-28", methods={"tasks/get": get, "tasks/cancel": ack})
    async with fake, connected(fake.transport) as server:
        with anyio.fail_after(10), pytest.raises(RemoteTaskLost, match="within its ttl"):
            await server.resume_task("t-1", "deploy")
    assert len(fake.requests_of("tasks/get")) == 1


async def test_a_status_notification_sent_before_the_task_is_followed_is_not_lost() -> None:
    """A 2025-11-25 server says the task completed before it answers the tools/call that made it:
    the host takes that state at once instead of polling a minute later."""
    stamp = "2026-12-04T10:00:00Z"
    working = {"taskId": "L1", "status": "working", "createdAt": stamp, "lastUpdatedAt": stamp,
               "ttl": 600_000, "pollInterval": 60_000}  # fmt: skip
    completed = {**working, "status": "completed", "lastUpdatedAt": "2026-12-04T10:00:01Z"}

    async def call(tool: ToolCall) -> dict[str, Any]:
        await tool.notify("notifications/tasks/status", completed)
        return {"task": working}

    async def outcome(request: Request) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "done early"}]}

    async def tools(request: Request) -> dict[str, Any]:
        schema = {"type": "object"}
        return {"tools": [{"name": "long", "inputSchema": schema, "execution": {"taskSupport": "required"}}]}

    capabilities: dict[str, Any] = {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}}
    fake = FakeServer(
        capabilities=capabilities,
        tools={"long": call},
        methods={"tasks/result": outcome, "tools/list": tools},
    )
    seen: list[str] = []

    async def observe(task: RemoteTask) -> None:
        seen.append(task.status)

    async with fake, connected(fake.transport) as server:
        with anyio.fail_after(10):  # a poll would come after a minute
            result = await server.call_tool("long", on_task=observe)
    assert result.text == "done early"
    assert seen == ["working", "completed"]
    assert fake.requests_of("tasks/get") == []


async def test_a_connection_holds_at_most_max_subscriptions_open_and_polls_the_other_tasks() -> None:
    """On HTTP each subscription holds a connection of the pool: past the cap, tasks are polled."""
    news = TaskNews()
    opened: list[str] = []
    polled = {f"t-{n}": anyio.Event() for n in range(MAX_SUBSCRIPTIONS + 1)}
    release = anyio.Event()

    async def listen(task_id: str, sent_as: Callable[[RequestId], None]) -> None:
        sent_as(len(opened))
        opened.append(task_id)
        await anyio.sleep_forever()  # never acknowledged: the task is polled meanwhile

    async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert method == "tasks/get"
        polled[params["taskId"]].set()
        if not release.is_set():
            return {**modern_task("working", pollIntervalMs=10), "taskId": params["taskId"]}
        done = {"content": [{"type": "text", "text": params["taskId"]}]}
        return {**modern_task("completed", result=done), "taskId": params["taskId"]}

    async def unused(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        raise AssertionError("no input is asked")

    results: list[str] = []

    async def follow(task_id: str) -> None:
        created = {**modern_task("working", pollIntervalMs=10), "taskId": task_id}
        result = await follow_task(created, request, unused, news, listen=listen)
        results.append(result["content"][0]["text"])

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for task_id in polled:
                group.start_soon(follow, task_id)
            for event in polled.values():
                await event.wait()
            assert len(opened) == MAX_SUBSCRIPTIONS  # the last task was polled without one
            release.set()
    assert sorted(results) == sorted(polled)
