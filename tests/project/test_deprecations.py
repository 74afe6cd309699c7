"""Calls that a release changed: each still works with a DeprecationWarning, or fails saying what to do.

0.1 calls that 0.2 changed go in 0.3; 0.2 calls that 0.3 changed go in 0.4
(docs/changelog.md). These tests are host code written for the older
release, so they use only what it offered.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver import AutoApprove, ClientConnection, Host, Receiver, SamplingService
from host_receiver.errors import INVALID_PARAMS
from host_receiver.protocol.sampling_rules import check_request
from host_receiver.protocol.types import Implementation, SamplingRequest
from host_receiver.protocol.versions import Era
from host_receiver.testing import FakeServer
from host_receiver.transports.stdio import StdioTransport
from providers import EchoProvider, ModelInfo, Provider, ProviderRegistry, SamplingLimits
from tests.handlers.test_limits import Watching, messages
from tests.receiver_harness import connect, sampling_params

pytestmark = pytest.mark.anyio
SAMPLING = "sampling/createMessage"
STDIO_SERVER = Path(__file__).parents[1] / "servers" / "stdio_mcp_server.py"


def service() -> SamplingService:
    return SamplingService(ProviderRegistry([EchoProvider()]), AutoApprove())


def test_receiver_sampling_limits_is_a_type_error_that_names_where_the_limits_went() -> None:
    with pytest.raises(TypeError, match=r"ProviderRegistry\(\.\.\., limits=SamplingLimits") as raised:
        Receiver(sampling=service(), sampling_limits=SamplingLimits(max_tokens=10))  # type: ignore[arg-type]
    assert "[limits]" in str(raised.value) and "changelog" in str(raised.value)


async def test_attach_with_a_notify_function_serves_that_server_with_a_warning() -> None:
    sent: list[tuple[str, dict[str, Any] | None]] = []
    notified = anyio.Event()

    async def notify(method: str, params: dict[str, Any] | None) -> None:
        sent.append((method, params))
        notified.set()

    receiver = Receiver(sampling=service())
    with pytest.warns(DeprecationWarning, match=r"attach\(notify.*0\.3.*Peer"):
        async with receiver.attach(notify, name="old-host", protocol_version="2025-11-25") as requestor:
            assert (requestor.name, requestor.protocol_version) == ("old-host", "2025-11-25")
            created = await requestor.handle_request(SAMPLING, sampling_params(task={}))
            task_id = created["task"]["taskId"]
            result = await requestor.handle_request("tasks/result", {"taskId": task_id})
            with anyio.fail_after(10):
                await notified.wait()  # the status notification goes out from a task of the scope
    assert result["model"] == "echo-offline"
    assert sent[0][0] == "notifications/tasks/status" and sent[0][1] is not None
    assert sent[0][1]["taskId"] == task_id and sent[0][1]["status"] == "completed"


async def test_attach_with_a_notify_function_defaults_to_what_0_1_served() -> None:
    async def notify(method: str, params: dict[str, Any] | None) -> None:
        return None

    with pytest.warns(DeprecationWarning):
        async with Receiver(sampling=service()).attach(notify) as requestor:
            assert (requestor.name, requestor.protocol_version) == ("server", "2025-11-25")


@dataclass
class OldRouter:
    """A router written for 0.1: ``choose`` returns a provider and a model, nothing bounds the request."""

    provider: Provider = field(default_factory=EchoProvider)

    def choose(
        self, params: SamplingRequest, server: str, model: str | None = None
    ) -> tuple[Provider, ModelInfo]:
        return self.provider, self.provider.models()[0]

    def allowed_models(self, server: str) -> Sequence[str]:
        return [m.id for m in self.provider.models()]


async def test_a_router_with_only_choose_still_serves_within_the_one_limits_check() -> None:
    person = Watching()
    with pytest.warns(DeprecationWarning, match=r"choose\(\) and no plan\(\).*0\.3"):
        sampling = SamplingService(OldRouter(), person)  # type: ignore[arg-type]
    async with connect(Receiver(sampling=sampling)) as server:
        served = await server.request(SAMPLING, sampling_params("a b c", maxTokens=50_000))
        error = await server.error(SAMPLING, sampling_params(messages=messages(1_001), task={}))
        assert (await server.request("tasks/list"))["tasks"] == []
    assert served["model"] == "echo-offline"
    (view,) = person.views
    assert (view.requested_max_tokens, view.max_tokens, view.clamped) == (50_000, 32_768, True)
    assert error.code == INVALID_PARAMS and error.data == {"field": "messages"}


def test_check_request_with_limits_is_a_type_error_that_names_where_the_limits_went() -> None:
    # 0.2 announced its removal in 0.3: 0.1's call now says where the limits went.
    from host_receiver.protocol.types import CreateMessageRequestParams

    request = CreateMessageRequestParams.model_validate(sampling_params(maxTokens=100, messages=messages(2)))
    with pytest.raises(
        TypeError, match=r"removed in host-receiver 0\.3.*ProviderRegistry\(\.\.\., limits=SamplingLimits"
    ):
        check_request(request, tools_declared=False, limits=SamplingLimits(max_tokens=100))


def test_sampling_limits_from_the_sampling_rules_module_is_served_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"SamplingLimits moved to providers\.SamplingLimits"):
        from host_receiver.protocol.sampling_rules import SamplingLimits as Old  # type: ignore[attr-defined]
    assert Old is SamplingLimits


async def test_the_0_2_connection_keywords_on_host_reach_every_connection_with_a_warning() -> None:
    with pytest.warns(
        DeprecationWarning,
        match=r"Host\(client_info=, max_input_rounds=, protocol=\).*0\.4.*ConnectionOptions",
    ):
        host = Host(Receiver(), protocol="2025-11-25", max_input_rounds=3, client_info=None)
    async with FakeServer() as server, host:
        connection = await host.connect("fake", server.transport)
        assert (connection.era, connection.options.max_input_rounds) == (Era.LEGACY, 3)
        assert connection.options.client_info.name == "host-receiver"  # None was "the default" in 0.2


async def test_the_0_2_protocol_keyword_of_connect_still_chooses_with_a_warning() -> None:
    async with FakeServer() as server, Host(Receiver()) as host:
        with pytest.warns(DeprecationWarning, match=r"Host\.connect\(protocol=\)"):
            connection = await host.connect("fake", server.transport, protocol="2025-11-25")
        assert connection.options.protocol == "2025-11-25" and connection.era is Era.LEGACY
        with pytest.warns(DeprecationWarning, match=r"Host\.connect_stdio\(protocol=\)"):
            raw = await host.connect_stdio("raw", sys.executable, [str(STDIO_SERVER)], protocol="2025-11-25")
        assert raw.era is Era.LEGACY
        await raw.close()


async def test_the_0_2_keywords_of_client_connection_connect_still_work_with_a_warning() -> None:
    transport = StdioTransport(sys.executable, [str(STDIO_SERVER)], name="raw")
    with pytest.warns(DeprecationWarning, match=r"ClientConnection\.connect\(client_info=, protocol="):
        opened = ClientConnection.connect(
            transport,
            capabilities={},
            protocol="2025-11-25",
            client_info=Implementation(name="h", version="1"),
        )
    async with opened as connection:
        sent = json.loads((connection.instructions or "").removeprefix("client sent "))
        assert sent["clientInfo"] == {"name": "h", "version": "1"} and connection.era is Era.LEGACY


def test_a_keyword_that_was_never_an_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Host\\(\\) got an unexpected keyword argument 'protocl'"):
        Host(Receiver(), protocl="2025-11-25")
