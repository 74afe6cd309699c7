"""One limits check, before a task exists: refusals name the field, a clamp is shown and audited."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from host_receiver import (
    Approve,
    AutoApprove,
    Receiver,
    RequestDecision,
    ResultDecision,
    SamplingRequestView,
    SamplingResultView,
    SamplingService,
    Send,
)
from host_receiver.errors import INVALID_PARAMS
from host_receiver.protocol.types import SamplingMessage
from providers import EchoProvider, ProviderRegistry, SamplingLimits
from tests.receiver_harness import connect, sampling_params

pytestmark = pytest.mark.anyio
SAMPLING = "sampling/createMessage"


@dataclass
class Watching:
    """Approves everything and keeps the views it was shown."""

    views: list[SamplingRequestView] = field(default_factory=list)
    edit: Approve = field(default_factory=Approve)

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        self.views.append(view)
        return self.edit

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        return Send()


CLAMPED_3_OF_500 = "sampling maxTokens clamped requestor=notes model=echo-offline requested=500 granted=3"


def receiver(limits: SamplingLimits, approver: Any = None) -> Receiver:
    registry = ProviderRegistry([EchoProvider()], limits=limits)
    return Receiver(sampling=SamplingService(registry, approver or AutoApprove()))


def messages(count: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": {"type": "text", "text": f"m{n}"}} for n in range(count)]


@pytest.mark.parametrize("task", [True, False], ids=["task", "plain"])
async def test_a_request_over_the_message_limit_gets_invalid_params_and_no_task(task: bool) -> None:
    limits = SamplingLimits(max_messages=200)
    async with connect(receiver(limits)) as server:
        augmentation: dict[str, Any] = {"task": {}} if task else {}
        params = sampling_params(messages=messages(201), **augmentation)
        error = await server.error(SAMPLING, params)
        assert error.code == INVALID_PARAMS
        assert error.message == "Invalid params: messages: 201 messages exceed this host's limit of 200"
        assert error.data == {"field": "messages"}
        assert (await server.request("tasks/list"))["tasks"] == []
        # Right at the limit it is served.
        ok = await server.request(SAMPLING, sampling_params(messages=messages(200)))
        assert ok["model"] == "echo-offline"


async def test_max_tokens_over_the_limit_is_refused_when_the_policy_says_so() -> None:
    limits = SamplingLimits(max_tokens=100, over_max_tokens="refuse")
    async with connect(receiver(limits)) as server:
        error = await server.error(SAMPLING, sampling_params(maxTokens=101, task={}))
        assert error.code == INVALID_PARAMS and error.data == {"field": "maxTokens"}
        assert "maxTokens 101 exceeds this host's limit of 100" in error.message
        assert (await server.request("tasks/list"))["tasks"] == []


async def test_a_clamped_max_tokens_is_shown_to_the_person_and_in_the_audit_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    person = Watching()
    caplog.set_level(logging.INFO, logger="host_receiver.audit")
    async with connect(receiver(SamplingLimits(max_tokens=3), person), name="notes") as server:
        task_id = await server.create_task(SAMPLING, sampling_params("a b c d e f", maxTokens=500))
        result = await server.request("tasks/result", {"taskId": task_id})
    (view,) = person.views
    assert (view.max_tokens, view.requested_max_tokens, view.clamped) == (3, 500, True)
    assert result["stopReason"] == "maxTokens"  # the provider got 3, not 500
    # Audited once, where it was decided; the task created right after it is this one.
    clamped = [m for m in caplog.messages if "clamped" in m]
    assert clamped == [CLAMPED_3_OF_500]
    assert caplog.messages[caplog.messages.index(CLAMPED_3_OF_500) + 1].startswith(
        f"task created requestor=notes task={task_id} "
    )


async def test_a_clamp_is_audited_even_when_its_task_is_cancelled_before_it_starts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    person = Watching()
    caplog.set_level(logging.INFO, logger="host_receiver.audit")
    async with connect(receiver(SamplingLimits(max_tokens=3), person), name="notes") as server:
        # Both in one turn of the event loop: the work has not started when the cancel comes.
        created = server.requestor.dispatch(SAMPLING, sampling_params(maxTokens=500, task={}))
        assert isinstance(created, dict)
        cancelled = server.requestor.dispatch("tasks/cancel", {"taskId": created["task"]["taskId"]})
        assert isinstance(cancelled, dict) and cancelled["status"] == "cancelled"
    assert person.views == []  # nobody was asked: the work never ran
    assert [m for m in caplog.messages if "clamped" in m] == [CLAMPED_3_OF_500]


async def test_a_request_within_the_limits_is_not_marked_clamped(caplog: pytest.LogCaptureFixture) -> None:
    person = Watching()
    caplog.set_level(logging.INFO, logger="host_receiver.audit")
    async with connect(receiver(SamplingLimits(max_tokens=100), person)) as server:
        await server.request(SAMPLING, sampling_params(maxTokens=100))
    (view,) = person.views
    assert (view.max_tokens, view.clamped) == (100, False)
    assert not [m for m in caplog.messages if "clamped" in m]


async def test_a_persons_edit_is_bounded_by_the_same_limits(caplog: pytest.LogCaptureFixture) -> None:
    """Edited messages go through the one check again: the clamp still applies to the edit."""
    edited = SamplingMessage.model_validate({"role": "user", "content": {"type": "text", "text": "x y z w"}})
    person = Watching(edit=Approve(messages=[edited]))
    caplog.set_level(logging.INFO, logger="host_receiver.audit")
    async with connect(receiver(SamplingLimits(max_tokens=2), person)) as server:
        result = await server.request(SAMPLING, sampling_params(maxTokens=50))
    assert result["content"]["text"] == "echo: x"  # two words: the edit was sampled with maxTokens 2
    assert len([m for m in caplog.messages if "clamped" in m]) == 1  # the server's request, once
