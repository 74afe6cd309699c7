"""What the adapters share (host_receiver/adapters/_bridge.py), without any client library.

A stand-in "library session" is anything with a running ``_task_group``, as mcp
1.x's and 2.x's sessions have while entered. The real libraries are tested in
tests/interop/test_adapters.py.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest

from host_receiver.adapters._bridge import SessionScopes, answer, newest_shared, served_version, without_task
from host_receiver.errors import RpcError, user_rejected
from host_receiver.protocol.types import ElicitResult
from host_receiver.protocol.versions import LEGACY_VERSIONS
from host_receiver.receiver import Receiver
from host_receiver.receiver.work import WorkContext
from tests.receiver_harness import form_params


class LibrarySession:
    """A library's session, as the bridge sees one: a task group, a version, notifications out."""

    def __init__(self, group: anyio.abc.TaskGroup, version: str = "2025-11-25") -> None:
        self._task_group = group
        self.version = version
        self.sent: list[tuple[str, dict[str, Any] | None]] = []
        self.notified = anyio.Event()


class Unentered:
    """A library session before its ``async with``: no task group yet."""


@asynccontextmanager
async def library_session(version: str = "2025-11-25") -> AsyncIterator[LibrarySession]:
    async with anyio.create_task_group() as group:
        yield LibrarySession(group, version)
        group.cancel_scope.cancel()


class Forms:
    """An elicitation handler that holds every form until cancelled, noting starts and ends."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled: list[str | None] = []

    async def __call__(self, params: Any, context: WorkContext) -> ElicitResult:
        self.started.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled.append(context.task_id)
        raise AssertionError("unreachable")


def scopes_of(receiver: Receiver, server: str = "notes") -> SessionScopes:
    def send_of(session: LibrarySession) -> Any:
        async def send(method: str, params: dict[str, Any] | None) -> None:
            session.sent.append((method, params))
            session.notified.set()

        return send

    return SessionScopes(
        receiver,
        server,
        group_of=lambda session: getattr(session, "_task_group", None),
        version_of=lambda session: session.version,
        send_of=send_of,
    )


def test_a_version_this_project_does_not_know_is_served_as_the_oldest_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert served_version("2025-06-18") == "2025-06-18"
    with caplog.at_level(logging.WARNING, "host_receiver.adapters"):
        assert served_version("2024-11-05") == LEGACY_VERSIONS[-1]
    assert "2024-11-05" in caplog.text


def test_newest_shared_version() -> None:
    assert newest_shared(("2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28")) == "2026-07-28"
    assert newest_shared(["2025-06-18", "2024-11-05"]) == "2025-06-18"
    assert newest_shared(["1999-01-01"]) == LEGACY_VERSIONS[-1]


def test_without_task_drops_only_the_task_member() -> None:
    assert without_task({"task": {"ttl": 5}, "maxTokens": 1}) == {"maxTokens": 1}


@pytest.mark.anyio
async def test_each_session_gets_its_own_scope_once_even_when_asked_at_once() -> None:
    scopes = scopes_of(Receiver(elicitation=Forms()))
    async with library_session() as one, library_session() as two:
        found: list[Any] = []

        async def ask(session: LibrarySession) -> None:
            found.append(await scopes.requestor(session))

        async with anyio.create_task_group() as group:
            for session in (one, one, one, two):
                group.start_soon(ask, session)
        assert len({id(r) for r in found}) == 2
        first, second = await scopes.requestor(one), await scopes.requestor(two)
        assert first.key != second.key
        assert first.name == second.name == "notes"


@pytest.mark.anyio
async def test_the_scope_ends_with_the_session_cancelling_its_tasks_work() -> None:
    forms = Forms()
    receiver = Receiver(elicitation=forms)
    scopes = scopes_of(receiver)
    async with library_session() as session:
        requestor = await scopes.requestor(session)
        created = await requestor.handle_request("elicitation/create", form_params(task={"ttl": 60_000}))
        task_id = created["task"]["taskId"]
        await forms.started.wait()
    assert forms.cancelled == [task_id]
    assert receiver.store.get(task_id) is None
    with pytest.raises(RuntimeError, match="no running task group"):
        await scopes.requestor(Unentered())


@pytest.mark.anyio
async def test_the_peer_speaks_the_sessions_version_and_notifies_through_it() -> None:
    forms = Forms()
    scopes = scopes_of(Receiver(elicitation=forms))
    async with library_session("2025-06-18") as session:
        requestor = await scopes.requestor(session)
        assert requestor.protocol_version == "2025-06-18"
        # 2025-06-18 has no client-hosted tasks: the task member is ignored, the form runs in the request.
        with anyio.move_on_after(0.05):
            await requestor.handle_request("elicitation/create", form_params(task={"ttl": 1}))
        assert forms.cancelled == [None]
        session.version = "2025-11-25"
        created = await requestor.handle_request("elicitation/create", form_params(task={"ttl": 60_000}))
        task_id = created["task"]["taskId"]
        await requestor.handle_request("tasks/cancel", {"taskId": task_id})
        with anyio.fail_after(1):
            await session.notified.wait()
    assert session.sent[0][0] == "notifications/tasks/status"
    assert session.sent[0][1] is not None
    assert (session.sent[0][1]["taskId"], session.sent[0][1]["status"]) == (task_id, "cancelled")


@pytest.mark.anyio
async def test_answer_returns_the_error_to_send() -> None:
    class Failing:
        def __init__(self, error: BaseException) -> None:
            self.error = error
            self.name = "notes"

        async def handle_request(self, method: str, params: Any) -> dict[str, Any]:
            raise self.error

    assert await answer(Failing(user_rejected()), "m", None) == user_rejected()  # type: ignore[arg-type]
    grouped = ExceptionGroup("one", [RpcError(-32602, "bad")])
    assert await answer(Failing(grouped), "m", None) == RpcError(-32602, "bad")  # type: ignore[arg-type]
    crashed = await answer(Failing(ValueError("secret detail")), "m", None)  # type: ignore[arg-type]
    assert crashed == RpcError(-32603, "Internal error")
