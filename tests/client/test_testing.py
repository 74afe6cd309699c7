"""host_receiver.testing: the helpers host authors test their own hosts with."""

from __future__ import annotations

import pytest

from host_receiver import AutoApprove, Host, Receiver, SamplingService
from host_receiver.errors import INVALID_PARAMS, RpcError
from host_receiver.testing import FakeServer, RecordingPeer, ToolCall
from providers import EchoProvider, ProviderRegistry
from tests.receiver_harness import sampling_params
from tests.schema import validate, validate_notification

pytestmark = pytest.mark.anyio


def echo_receiver() -> Receiver:
    return Receiver(sampling=SamplingService(ProviderRegistry([EchoProvider()]), AutoApprove()))


async def summarise(call: ToolCall) -> str:
    reply = await call.request("sampling/createMessage", sampling_params(call.arguments["text"]))
    return str(reply["content"]["text"])


async def test_a_fake_servers_tool_samples_through_the_host() -> None:
    async with FakeServer(tools={"summarise": summarise}) as server, Host(echo_receiver()) as host:
        connection = await host.connect("fake", server.transport)
        result = await connection.call_tool("summarise", {"text": "tasks are good"})
        assert result.model_dump() == {
            "content": [{"type": "text", "text": "echo: tasks are good"}],
            "isError": False,
        }
        await server.initialized.wait()
        assert server.initialize_params is not None
        validate("InitializeRequestParams", server.initialize_params)
        assert server.initialize_params["capabilities"]["tasks"]["requests"] == {
            "sampling": {"createMessage": {}}
        }


async def test_a_fake_server_can_drive_a_task_and_sees_its_status_notifications() -> None:
    async with FakeServer() as server, Host(echo_receiver()) as host:
        await host.connect("fake", server.transport)
        created = await server.request("sampling/createMessage", {**sampling_params("hi"), "task": {}})
        task_id = created["task"]["taskId"]
        result = await server.request("tasks/result", {"taskId": task_id})
        assert result["content"]["text"] == "echo: hi"
        for params in server.notifications_of("notifications/tasks/status"):
            validate_notification("notifications/tasks/status", params)
        statuses = [p["status"] for p in server.notifications_of("notifications/tasks/status") if p]
        assert statuses == ["completed"]


async def test_an_unknown_tool_is_invalid_params() -> None:
    async with FakeServer() as server, Host(Receiver()) as host:
        connection = await host.connect("fake", server.transport)
        with pytest.raises(RpcError) as raised:
            await connection.call_tool("nope")
        assert raised.value.code == INVALID_PARAMS and "nope" in raised.value.message


async def test_a_recording_peer_stands_for_a_server_in_front_of_a_receiver() -> None:
    peer = RecordingPeer(name="direct")
    async with echo_receiver().attach(peer) as requestor:
        created = await requestor.handle_request("sampling/createMessage", {**sampling_params(), "task": {}})
        await requestor.handle_request("tasks/result", {"taskId": created["task"]["taskId"]})
    assert [method for method, _ in peer.notifications] == ["notifications/tasks/status"]
