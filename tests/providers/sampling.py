"""What the vendor backends' tests share: a request, a run of one provider call, a progress recorder,
and an approver that keeps the views it was shown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from host_receiver.approval import (
    Approve,
    RequestDecision,
    ResultDecision,
    SamplingRequestView,
    SamplingResultView,
    Send,
)
from host_receiver.protocol.types import CreateMessageRequestParams, dump
from providers import Provider, SamplingProgress
from tests.schema import validate

__all__ = ["Watching", "params", "recorder", "run", "user"]


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
