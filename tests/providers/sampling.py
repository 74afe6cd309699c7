"""What the vendor backends' tests share: a request, a run of one provider call, a progress recorder,
and an approver that keeps the views it was shown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from host_receiver import Receiver, SamplingService
from host_receiver.people.approval import (
    Approve,
    RequestDecision,
    ResultDecision,
    SamplingRequestView,
    SamplingResultView,
    Send,
)
from host_receiver.protocol.types import CreateMessageRequestParams, dump
from providers import ModelInfo, OpenAIProvider, Provider, ProviderRegistry, SamplingProgress
from tests.fake_openai import FakeOpenAI
from tests.receiver_harness import connect, sampling_params
from tests.schema import validate

__all__ = ["Watching", "hinted_task", "params", "recorder", "run", "user"]


def params(*messages: dict[str, Any], **extra: Any) -> CreateMessageRequestParams:
    """A request of ``messages`` (one user "Hi" without any), ``maxTokens`` 64, and ``extra``."""
    raw = {"messages": list(messages) or [user("Hi")], "maxTokens": 64}
    return CreateMessageRequestParams.model_validate({**raw, **extra})


def user(text: str) -> dict[str, Any]:
    """A user message of one text block."""
    return {"role": "user", "content": {"type": "text", "text": text}}


async def run(provider: Provider, request: CreateMessageRequestParams, **kw: Any) -> dict[str, Any]:
    """One call of ``provider`` with its first model (closed after it); the result as the server
    gets it, schema-checked."""
    try:
        result = await provider.sample(request, provider.models()[0], **kw)
    finally:
        await provider.aclose()
    out = dump(result)
    validate("CreateMessageResult", out)
    return out


def recorder() -> tuple[list[SamplingProgress], Callable[[SamplingProgress], Any]]:
    """A progress sink, and the list of the updates it received."""
    seen: list[SamplingProgress] = []

    async def sink(update: SamplingProgress) -> None:
        seen.append(update)

    return seen, sink


@dataclass
class Watching:
    """Approves everything and keeps the views it was shown."""

    views: list[SamplingRequestView] = field(default_factory=list)

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        self.views.append(view)
        return Approve()

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        return Send()


async def hinted_task(provider: Provider, hint: str, **extra: Any) -> tuple[dict[str, Any], Watching]:
    """A sampling task whose request hints at ``hint`` (with ``extra``), from the server "notes",
    through a registry of an OpenAI provider and ``provider``: its result and the approver that saw it.

    The OpenAI provider's own fake must receive nothing: the hint chose ``provider``.
    """
    with FakeOpenAI() as other:
        openai = OpenAIProvider(
            "openai", [ModelInfo("gpt-test", "openai")], api_key="k-123456", base_url=other.url
        )
        registry = ProviderRegistry([openai, provider])
        person = Watching()
        request = sampling_params(modelPreferences={"hints": [{"name": hint}]}, **extra)
        async with registry, connect(Receiver(sampling=SamplingService(registry, person)), "notes") as server:
            task_id = await server.create_task("sampling/createMessage", request)
            result = await server.request("tasks/result", {"taskId": task_id})
        assert other.requests == []
    return result, person
