"""A scripted server (requestor) that drives a receiver scope, and scripted handlers.

Every result, error and notification the receiver produces here is validated
against the official schema, so each test also checks the wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from host_receiver.errors import RpcError
from host_receiver.protocol.types import (
    CreateMessageResult,
    ElicitResult,
    TextContent,
)
from host_receiver.receiver import Receiver, Requestor
from host_receiver.receiver.work import WorkContext
from host_receiver.testing import RecordingPeer
from tests.schema import validate_error, validate_notification, validate_result

TASK_METHODS = ("sampling/createMessage", "elicitation/create")


def sampling_params(text: str = "hello", **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": 50,
    }
    params.update(extra)
    return params


def form_params(**extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "mode": "form",
        "message": "Who are you?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "default": "Ada"}},
            "required": ["name"],
        },
    }
    params.update(extra)
    return params


@dataclass
class Script:
    """A handler whose outcome the test controls: it waits for ``release``, then answers."""

    result: Any = None
    error: RpcError | None = None
    block: bool = True
    swallow_cancel: bool = False
    calls: list[tuple[Any, WorkContext]] = field(default_factory=list)
    started: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)
    cancelled: int = 0
    finished: int = 0

    async def __call__(self, params: Any, context: WorkContext) -> Any:
        self.calls.append((params, context))
        self.started.set()
        if self.block:
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                if not self.swallow_cancel:
                    raise
        self.finished += 1
        if self.error is not None:
            raise self.error
        return self.result


def sampling_script(**kwargs: Any) -> Script:
    result = CreateMessageResult(role="assistant", content=TextContent(text="hi there"), model="test-model")
    return Script(result=kwargs.pop("result", result), **kwargs)


def elicitation_script(**kwargs: Any) -> Script:
    result = ElicitResult(action="accept", content={"name": "Ada"})
    return Script(result=kwargs.pop("result", result), **kwargs)


@dataclass
class FakeServer:
    """Plays the MCP server: sends requests to a requestor scope, records notifications."""

    requestor: Requestor
    notifications: list[tuple[str, dict[str, Any] | None]]

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        result = await self.requestor.handle_request(method, params)
        task = method in TASK_METHODS and "task" in result
        validate_result(method, result, task=task)
        return result

    async def error(self, method: str, params: dict[str, Any] | None = None) -> RpcError:
        try:
            result = await self.requestor.handle_request(method, params)
        except RpcError as exc:
            validate_error(exc.to_dict())
            return exc
        raise AssertionError(f"{method} answered {result!r} instead of an error")

    async def create_task(self, method: str, params: dict[str, Any], ttl: int | None = None) -> str:
        task_meta = {} if ttl is None else {"ttl": ttl}
        result = await self.request(method, {**params, "task": task_meta})
        return str(result["task"]["taskId"])

    def progress(self) -> list[dict[str, Any]]:
        """The params of every progress notification so far (each must have them)."""
        found = []
        for method, params in self.notifications:
            if method == "notifications/progress":
                assert params is not None, "a progress notification without params"
                found.append(params)
        return found

    def statuses(self, task_id: str) -> list[str]:
        return [
            p["status"]
            for m, p in self.notifications
            if m == "notifications/tasks/status" and p is not None and p["taskId"] == task_id
        ]


class CheckedPeer(RecordingPeer):
    """A peer that validates every notification against the schema before recording it."""

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        validate_notification(method, params)
        super().notify_soon(method, params)


@asynccontextmanager
async def connect(
    receiver: Receiver, name: str = "server", protocol_version: str = "2025-11-25"
) -> AsyncIterator[FakeServer]:
    peer = CheckedPeer(name=name, protocol_version=protocol_version)
    async with receiver.attach(peer) as requestor:
        yield FakeServer(requestor, peer.notifications)


async def settle() -> None:
    """Let every task that can run do so."""
    for _ in range(10):
        await anyio.lowlevel.checkpoint()
