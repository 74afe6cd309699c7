"""Random sequences of task operations over several requestors, checked after every step.

A model keeps what each requestor should see; after each operation the test
checks lifecycle (statuses only move along the table, terminal sticks),
isolation (no requestor reaches another's task) and pagination (walking
``tasks/list`` yields exactly the requestor's live tasks in creation order).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_receiver.errors import INVALID_PARAMS, RpcError
from host_receiver.protocol.types import CreateMessageResult, TextContent
from host_receiver.receiver import Receiver, ReceiverConfig
from host_receiver.receiver.tasks.state import ALLOWED_MOVES, TaskStatus
from host_receiver.receiver.work import WorkContext
from tests.receiver_harness import FakeServer, connect, sampling_params, settle

pytestmark = pytest.mark.slow

REQUESTORS = 2


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Controlled:
    """A sampling handler each task of which the test finishes explicitly."""

    gates: dict[str, anyio.Event] = field(default_factory=dict)
    outcomes: dict[str, RpcError | None] = field(default_factory=dict)

    async def __call__(self, params: Any, context: WorkContext) -> CreateMessageResult:
        assert context.task_id is not None
        gate = self.gates.setdefault(context.task_id, anyio.Event())
        await gate.wait()
        error = self.outcomes[context.task_id]
        if error is not None:
            raise error
        return CreateMessageResult(role="assistant", content=TextContent(text="ok"), model="m")


@dataclass
class ModelTask:
    owner: int
    status: str
    deadline: float


operations = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.integers(0, REQUESTORS - 1), st.integers(1, 5)),
        st.tuples(st.just("complete"), st.integers(0, 50), st.booleans()),
        st.tuples(st.just("cancel"), st.integers(0, REQUESTORS - 1), st.integers(0, 50)),
        st.tuples(st.just("result"), st.integers(0, REQUESTORS - 1), st.integers(0, 50)),
        st.tuples(st.just("advance"), st.integers(500, 3000), st.just(0)),
    ),
    max_size=50,
)


@asynccontextmanager
async def servers(receiver: Receiver) -> AsyncIterator[list[FakeServer]]:
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(connect(receiver, f"s{i}")) for i in range(REQUESTORS)]


async def check(
    servers_: list[FakeServer], model: dict[str, ModelTask], history: dict[str, list[str]]
) -> None:
    for index, server in enumerate(servers_):
        listed: list[str] = []
        cursor = None
        while True:
            page = await server.request("tasks/list", {} if cursor is None else {"cursor": cursor})
            assert len(page["tasks"]) <= 2
            listed += [t["taskId"] for t in page["tasks"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert listed == [t for t, m in model.items() if m.owner == index]
    for task_id, expected in model.items():
        for index, server in enumerate(servers_):
            if index == expected.owner:
                got = await server.request("tasks/get", {"taskId": task_id})
                assert got["status"] == expected.status
                statuses = history[task_id]
                if statuses[-1] != got["status"]:
                    assert TaskStatus(got["status"]) in ALLOWED_MOVES[TaskStatus(statuses[-1])]
                    statuses.append(got["status"])
            else:
                error = await server.error("tasks/get", {"taskId": task_id})
                assert error.code == INVALID_PARAMS


async def run(ops: list[tuple[str, int, Any]]) -> None:
    clock = FakeClock()
    handler = Controlled()
    config = ReceiverConfig(page_size=2, default_ttl_ms=None, max_active_tasks=1000)
    receiver = Receiver(sampling=handler, config=config, clock=clock)
    model: dict[str, ModelTask] = {}
    history: dict[str, list[str]] = {}
    expired: set[str] = set()
    async with servers(receiver) as srv:
        for op, a, b in ops:
            ids = list(model)
            if op == "create":
                task_id = await srv[a].create_task("sampling/createMessage", sampling_params(), ttl=b * 1000)
                model[task_id] = ModelTask(owner=a, status="working", deadline=clock.now + b)
                history[task_id] = ["working"]
                await settle()
            elif op == "complete" and ids:
                task_id = ids[a % len(ids)]
                handler.outcomes[task_id] = None if b else RpcError(-1, "User rejected sampling request")
                handler.gates.setdefault(task_id, anyio.Event()).set()
                await settle()
                if model[task_id].status == "working":
                    model[task_id].status = "completed" if b else "failed"
            elif op == "cancel" and ids:
                task_id = ids[b % len(ids)]
                if model[task_id].owner != a:
                    assert (await srv[a].error("tasks/cancel", {"taskId": task_id})).code == INVALID_PARAMS
                elif model[task_id].status == "working":
                    assert (await srv[a].request("tasks/cancel", {"taskId": task_id}))[
                        "status"
                    ] == "cancelled"
                    model[task_id].status = "cancelled"
                else:
                    error = await srv[a].error("tasks/cancel", {"taskId": task_id})
                    assert model[task_id].status in error.message
            elif op == "result" and ids:
                task_id = ids[b % len(ids)]
                owner = model[task_id].owner
                if model[task_id].status == "completed":
                    assert (await srv[owner].request("tasks/result", {"taskId": task_id}))["model"] == "m"
                elif model[task_id].status in ("failed", "cancelled"):
                    await srv[owner].error("tasks/result", {"taskId": task_id})
                else:
                    with anyio.move_on_after(0.001) as scope:
                        await srv[owner].request("tasks/result", {"taskId": task_id})
                    assert scope.cancelled_caught, "tasks/result returned for a live task"
            elif op == "advance":
                clock.now += a / 1000
                for s in srv:
                    s.requestor.expire_due()
                for task_id in [t for t, m in model.items() if m.deadline <= clock.now]:
                    del model[task_id]
                    expired.add(task_id)
            await check(srv, model, history)
        for task_id in expired:
            error = await srv[0].error("tasks/get", {"taskId": task_id})
            assert error.code == INVALID_PARAMS


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_random_operation_sequences_keep_lifecycle_isolation_and_paging(
    backend: str, ops: list[tuple[str, int, Any]]
) -> None:
    anyio.run(run, ops, backend=backend)
