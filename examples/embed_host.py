"""Embed host-receiver with your own approval callbacks. Run: .venv/bin/python examples/embed_host.py"""

# It connects to examples/slow_summary_server.py and asks it for a summary; the
# server's sampling task comes back to the callbacks below, behind a rate limit,
# and is served by the offline echo provider. The server needs a Python with
# mcp 1.x: the one the demo uses ($HOST_RECEIVER_DEMO_PYTHON, else what
# `bash .ci/setup` wrote into this venv's host-receiver.toml, else this Python).

from __future__ import annotations

from pathlib import Path

import anyio

from host_receiver import (
    Approve,
    ElicitationService,
    FormView,
    Host,
    RateLimit,
    RateLimits,
    Receiver,
    Refuse,
    SamplingRequestView,
    SamplingResultView,
    SamplingService,
    Send,
    UrlAnswer,
    UrlView,
)
from host_receiver.cli.demo import server_python
from host_receiver.protocol.types import ElicitResult
from providers import EchoProvider, ProviderRegistry

HERE = Path(__file__).resolve().parent


class MyApprover:
    """Approve small requests, refuse big ones; send every result, logging it."""

    async def review_request(self, view: SamplingRequestView) -> Approve | Refuse:
        lowered = f" (lowered from {view.requested_max_tokens})" if view.clamped else ""
        task = f"task {view.task_id}"
        print(f"{view.server} asks {view.model} for up to {view.max_tokens} tokens{lowered} ({task})")
        return Approve() if view.max_tokens <= 500 else Refuse("Too long for this host")

    async def review_result(self, view: SamplingResultView) -> Send | Refuse:
        print(f"result from {view.result.model}: stop reason {view.result.stop_reason}")
        return Send()


class MyForms:
    """Fill forms with their defaults; never open links."""

    async def fill_form(self, view: FormView) -> ElicitResult:
        return ElicitResult(action="accept", content=view.schema.defaults())

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        return "decline"


async def main() -> None:
    registry = ProviderRegistry([EchoProvider()])
    approver = RateLimit(MyApprover(), RateLimits(requests_per_minute=20, tokens_per_hour=100_000))
    receiver = Receiver(
        sampling=SamplingService(registry, approver), elicitation=ElicitationService(MyForms())
    )
    async with registry, Host(receiver) as host:
        script = str(HERE / "slow_summary_server.py")
        server = await host.connect_stdio("summaries", server_python(), [script])
        result = await server.call_tool("summarise", {"text": "Tasks let a host answer long requests later."})
        print("summary:", result.text)


if __name__ == "__main__":
    anyio.run(main)
