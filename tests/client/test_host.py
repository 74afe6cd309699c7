"""The host: several servers at once over in-memory transports, each its own requestor."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from typing import Any

import anyio
import pytest

from host_receiver.client.host import Host, ServerConnection, tune_gc_for_serving
from host_receiver.client.options import ConnectionOptions
from host_receiver.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from host_receiver.protocol.types import Implementation
from host_receiver.receiver import Receiver
from host_receiver.session import IncomingRequest, Session
from host_receiver.transports.memory import MemoryTransport
from tests.receiver_harness import sampling_params, sampling_script
from tests.schema import validate, validate_notification
from tests.servers.http_server import StreamableHttpServer

pytestmark = pytest.mark.anyio


class PlayedServer:
    """The test's side of a memory connection: answers initialize, then sends what the test says."""

    def __init__(self, session: Session, version: str) -> None:
        self.session = session
        self.version = version
        self.initialized = anyio.Event()
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        self.notifications: list[tuple[str, dict[str, Any] | None]] = []

    async def on_request(self, request: IncomingRequest) -> dict[str, Any]:
        assert request.method == "initialize"
        assert request.params is not None
        validate("InitializeRequestParams", request.params)
        self.client_capabilities = request.params["capabilities"]
        self.client_info = request.params["clientInfo"]
        return {
            "protocolVersion": self.version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "played", "version": "1"},
        }

    async def on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/initialized":
            self.initialized.set()
        else:
            validate_notification(method, params)
            self.notifications.append((method, params))


@asynccontextmanager
async def played(version: str = "2025-11-25") -> AsyncIterator[tuple[MemoryTransport, PlayedServer]]:
    transport = MemoryTransport()
    server: PlayedServer | None = None

    async def on_request(request: IncomingRequest) -> dict[str, Any]:
        assert server is not None
        return await server.on_request(request)

    async def on_notification(method: str, params: dict[str, Any] | None) -> None:
        assert server is not None
        await server.on_notification(method, params)

    async with Session(transport.peer, request_handler=on_request, notification_handler=on_notification) as s:
        server = PlayedServer(s, version)
        yield transport, server


async def test_two_servers_are_served_and_isolated() -> None:
    script = sampling_script(block=False)
    async with Host(Receiver(sampling=script)) as host, played() as (ta, a), played() as (tb, b):
        await host.connect("a", ta)
        await host.connect("b", tb)
        await a.initialized.wait()
        assert a.client_capabilities["tasks"]["requests"] == {"sampling": {"createMessage": {}}}
        created = await a.session.request("sampling/createMessage", {**sampling_params(), "task": {}})
        task_id = created["task"]["taskId"]
        result = await a.session.request("tasks/result", {"taskId": task_id})
        assert result["model"] == "test-model"
        with pytest.raises(RpcError) as foreign:
            await b.session.request("tasks/get", {"taskId": task_id})
        assert foreign.value.code == INVALID_PARAMS
        assert (await b.session.request("tasks/list"))["tasks"] == []
        assert [m for m, _ in a.notifications] == ["notifications/tasks/status"]
        assert script.calls[0][1].requestor_name == "a"


async def test_a_server_that_goes_away_ends_only_its_connection() -> None:
    script = sampling_script()
    async with Host(Receiver(sampling=script)) as host, played() as (ta, a), played() as (tb, b):
        conn_a = await host.connect("a", ta)
        conn_b = await host.connect("b", tb)
        await a.session.request("sampling/createMessage", {**sampling_params(), "task": {}})
        await script.started.wait()
        await ta.peer.aclose()  # server a vanishes mid-task
        await conn_a.wait_closed()
        assert script.cancelled == 1  # its work was cancelled
        assert not conn_b.closed
        created = await b.session.request("sampling/createMessage", {**sampling_params(), "task": {}})
        assert created["task"]["status"] == "working"
        script.release.set()


async def test_older_protocol_version_is_followed_from_the_first_request() -> None:
    script = sampling_script(block=False)
    async with Host(Receiver(sampling=script)) as host, played("2025-06-18") as (transport, server):
        connection = await host.connect("old", transport)
        assert connection.protocol_version == "2025-06-18"
        # No tasks in 2025-06-18: the task member is ignored and the result comes directly.
        result = await server.session.request("sampling/createMessage", {**sampling_params(), "task": {}})
        assert result["model"] == "test-model"
        tools = {"tools": [{"name": "f", "inputSchema": {"type": "object"}}]}
        with pytest.raises(RpcError) as refused:
            await server.session.request("sampling/createMessage", {**sampling_params(), **tools})
        assert refused.value.code == INVALID_PARAMS and "sampling.tools" in refused.value.message


async def test_closing_a_server_deletes_its_tasks() -> None:
    script = sampling_script()
    receiver = Receiver(sampling=script)
    async with Host(receiver) as host, played() as (transport, server):
        connection = await host.connect("a", transport)
        await server.session.request("sampling/createMessage", {**sampling_params(), "task": {}})
        await script.started.wait()
        await connection.close()
        assert connection.closed and script.cancelled == 1
        assert len(receiver.store) == 0  # type: ignore[arg-type]


async def test_duplicate_names_are_refused() -> None:
    async with Host(Receiver()) as host, played() as (transport, _), played() as (other, _):
        await host.connect("a", transport)
        with pytest.raises(ValueError, match="already connected"):
            await host.connect("a", other)


async def test_one_options_object_reaches_every_connection_unless_a_connect_gives_its_own() -> None:
    options = ConnectionOptions(client_info=Implementation(name="embedding-app", version="7"))
    own = replace(options, client_info=Implementation(name="other", version="1"))
    async with (
        Host(Receiver(), options) as host,
        played() as (ta, a),
        played() as (tb, b),
        played() as (tc, c),
    ):
        first = await host.connect("a", ta)
        second = await host.connect("b", tb)
        third = await host.connect("c", tc, options=own)
    assert first.options is options and second.options is options and third.options is own
    assert a.client_info == b.client_info == {"name": "embedding-app", "version": "7"}
    assert c.client_info == {"name": "other", "version": "1"}


async def ask_until_answered(server: PlayedServer, answers: list[RpcError]) -> None:
    """Send a sampling request (no task: it stays in flight) and keep the error it is answered with."""
    with pytest.raises(RpcError) as failed:
        await server.session.request("sampling/createMessage", sampling_params())
    answers.append(failed.value)


async def test_leaving_the_host_winds_every_connection_down_before_it_closes() -> None:
    script = sampling_script()
    answers: list[RpcError] = []
    async with played() as (transport, server), anyio.create_task_group() as group:
        async with Host(Receiver(sampling=script)) as host:
            connection = await host.connect("a", transport)
            group.start_soon(ask_until_answered, server, answers)
            await script.started.wait()
        assert connection.closed and connection.error is None
    assert script.cancelled == 1
    assert [(e.code, e.message) for e in answers] == [
        (INTERNAL_ERROR, "Not answered: the client is closing the connection")
    ]


async def test_a_server_connection_runs_in_any_task_group_and_closes_through_its_own_methods() -> None:
    script = sampling_script()
    receiver = Receiver(sampling=script)
    answers: list[RpcError] = []
    async with played() as (transport, server), anyio.create_task_group() as group:
        run = partial(
            ServerConnection.run, transport, receiver=receiver, options=ConnectionOptions(), name="a"
        )
        connection: ServerConnection = await group.start(run)
        assert (connection.name, connection.closed) == ("a", False)
        group.start_soon(ask_until_answered, server, answers)
        await script.started.wait()
        await connection.close()
        assert connection.closed and connection.error is None
    assert [e.code for e in answers] == [INTERNAL_ERROR]


def test_tune_gc_for_serving_freezes_start_up_objects_and_collects_less_often() -> None:
    threshold = gc.get_threshold()
    try:
        tune_gc_for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] > threshold[0]
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


async def test_an_http_origin_found_legacy_is_not_probed_again_by_the_same_host() -> None:
    receiver = Receiver()
    with StreamableHttpServer() as http, StreamableHttpServer() as other:
        async with Host(receiver) as host:
            first = await host.connect_url("first", http.url)
            again = await host.connect_url("again", http.url.replace("127.0.0.1", "localhost"))
            same = await host.connect_url("same", http.url)
            elsewhere = await host.connect_url("elsewhere", other.url)
            assert {s.protocol_version for s in (first, again, same, elsewhere)} == {"2025-11-25"}
        probes = [r.rpc_method for r in http.requests if r.rpc_method in ("server/discover", "initialize")]
        assert probes == ["server/discover", "initialize"] * 2 + ["initialize"]  # localhost: another origin
        assert [r.rpc_method for r in other.requests][:2] == ["server/discover", "initialize"]
