"""0.1 calls that 0.2 changed: each still works with a DeprecationWarning, or fails saying what to do.

They go in 0.3 (docs/changelog.md). These tests are host code written for 0.1,
so they use only what 0.1 offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from host_receiver import AutoApprove, Receiver, SamplingService
from host_receiver.errors import INVALID_PARAMS, RpcError
from host_receiver.protocol.types import SamplingRequest
from host_receiver.sampling import check_request
from providers import EchoProvider, ModelInfo, Provider, ProviderRegistry, SamplingLimits
from tests.receiver_harness import connect, sampling_params
from tests.test_limits import Watching, messages

pytestmark = pytest.mark.anyio
SAMPLING = "sampling/createMessage"


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


def test_check_request_with_limits_checks_them_as_0_1_did_with_a_warning() -> None:
    from host_receiver.protocol.types import CreateMessageRequestParams

    def params(**extra: Any) -> CreateMessageRequestParams:
        return CreateMessageRequestParams.model_validate(sampling_params(**extra))

    limits = SamplingLimits(max_tokens=100, max_messages=2)
    with pytest.warns(DeprecationWarning, match="check_request.*limits.*0\\.3"):
        check_request(params(maxTokens=100, messages=messages(2)), tools_declared=False, limits=limits)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"maxTokens": 101}, "maxTokens"),
        ({"messages": messages(3)}, "messages"),
    ]
    for too_much, field_name in cases:
        with pytest.warns(DeprecationWarning), pytest.raises(RpcError) as refused:
            check_request(params(**too_much), tools_declared=False, limits=limits)
        assert refused.value.code == INVALID_PARAMS and refused.value.data == {"field": field_name}
