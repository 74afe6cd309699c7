"""Following a 2025-11-25 server's task (host_receiver/client/remote_tasks/_legacy.py), scripted server."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from host_receiver.client.remote_tasks._legacy import follow_legacy_task
from host_receiver.client.remote_tasks._news import TaskNews
from host_receiver.protocol.modern import RemoteTask

pytestmark = pytest.mark.anyio


def task(status: str) -> dict[str, Any]:
    return {
        "taskId": "t-1",
        "status": status,
        "createdAt": "2026-12-04T00:00:00Z",
        "lastUpdatedAt": "2026-12-04T00:00:00Z",
        "ttl": 60_000,
        "pollInterval": 60_000,  # no poll comes before tasks/result answers
    }


async def test_a_task_whose_result_comes_before_a_poll_saw_it_end_is_seen_completed() -> None:
    """tasks/result answers only once the task has ended; its final state is looked up once."""
    sent: list[str] = []
    states = iter([task("completed")])

    async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        sent.append(method)
        if method == "tasks/result":
            return {"content": [{"type": "text", "text": "done"}]}
        return next(states)

    seen: list[RemoteTask] = []

    async def observer(state: RemoteTask) -> None:
        seen.append(state)

    with anyio.fail_after(5):
        result = await follow_legacy_task(task("input_required"), request, TaskNews(), observer=observer)
    assert result["content"][0]["text"] == "done"
    assert [state.status for state in seen] == ["input_required", "completed"]
    assert sent == ["tasks/result", "tasks/get"]


async def test_a_status_notification_is_taken_only_when_it_is_news() -> None:
    """An older state, a repeat, or anything after a terminal state tells nothing; a terminal state
    is taken even when its ``lastUpdatedAt`` looks older (no terminal status is lost)."""

    def state(status: str, stamp: str, message: str | None = None) -> dict[str, Any]:
        told = {**task(status), "lastUpdatedAt": f"2026-12-04T00:00:{stamp}Z"}
        return told if message is None else {**told, "statusMessage": message}

    async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert method == "tasks/result", "no poll comes within the poll interval"
        return {"content": [{"type": "text", "text": "done"}]}

    seen: list[tuple[str, str | None]] = []

    async def observer(state: RemoteTask) -> None:
        seen.append((state.status, state.status_message))

    news = TaskNews()
    results: list[dict[str, Any]] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:

            async def follow() -> None:
                results.append(
                    await follow_legacy_task(state("working", "05"), request, news, observer=observer)
                )

            group.start_soon(follow)
            for told in (
                state("working", "01", "older"),
                state("working", "06", "building"),
                state("working", "06", "building"),  # the same notification again
                state("completed", "02"),  # terminal: taken although stamped before the last state
                state("working", "09", "after the end"),
            ):
                await anyio.wait_all_tasks_blocked()
                news.deliver(told)
    assert seen == [("working", None), ("working", "building"), ("completed", None)]
    assert results[0]["content"][0]["text"] == "done"
