"""host_receiver.telemetry: the spans and metrics a backend receives, through the real SDK over OTLP/HTTP.

Each test runs the OpenTelemetry SDK (batch span processor, periodic metric
reader) exporting over OTLP/HTTP to a loopback receiver that decodes the
protobuf (tests/otlp_receiver.py), with a host's own providers passed in
``ConnectionOptions(telemetry=...)``; the sampling goes through the real
OpenAI provider to a loopback server of its wire format that reports usage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from host_receiver import Host, Receiver, SamplingService
from host_receiver.client.options import ConnectionOptions
from host_receiver.errors import RpcError
from host_receiver.handlers import ElicitationService
from host_receiver.people.approval import (
    Approve,
    AutoApprove,
    FillDefaults,
    FormView,
    Refuse,
    SamplingRequestView,
    SamplingResultView,
    Send,
    UrlAnswer,
    UrlView,
)
from host_receiver.people.policies import ModelAllowList, RememberDecisions
from host_receiver.protocol.types import ElicitResult
from host_receiver.telemetry import CAPTURE_CONTENT, DISTINCT_NAMES
from host_receiver.testing import FakeServer, ToolCall
from providers import Config, EchoProvider, ModelInfo, ProviderEntry, ProviderRegistry, build_registry
from tests.fake_openai import FakeOpenAI
from tests.otlp_receiver import Exported, exported
from tests.receiver_harness import sampling_params

pytestmark = pytest.mark.anyio

__all__ = ["exported"]  # the fixture (tests/otlp_receiver.py)

#: A server's trace context, as mcp 2.x puts it in params._meta.
SERVER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SERVER_SPAN = "00f067aa0ba902b7"
MODEL = "fake-model"


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


class Reviewer:
    """An approver that approves the request and sends the result, or refuses the request."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse

    async def review_request(self, view: SamplingRequestView) -> Approve | Refuse:
        return Refuse("not this one") if self.refuse else Approve()

    async def review_result(self, view: SamplingResultView) -> Send:
        return Send()


@asynccontextmanager
async def host_for(exported: Exported, fake: FakeOpenAI, *, refuse: bool = False) -> AsyncIterator[Host]:
    entry = ProviderEntry(
        "fake",
        type="openai",
        base_url=fake.url,
        api_key_env="FAKE_KEY",
        max_retries=0,
        models=(ModelInfo(id=MODEL, provider="fake"),),
    )
    async with build_registry(
        config=Config(providers=(entry,)), environ={"FAKE_KEY": "sk-secret-never-exported"}
    ) as registry:
        receiver = Receiver(
            sampling=SamplingService(registry, Reviewer(refuse)),
            elicitation=ElicitationService(DeclineForms()),
        )
        async with Host(receiver, ConnectionOptions(telemetry=exported.telemetry)) as host:
            yield host


class DeclineForms:
    """Every form and URL declined."""

    async def fill_form(self, view: FormView) -> ElicitResult:
        return ElicitResult(action="decline")

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        return "decline"


def traced(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the server's trace context in ``_meta``."""
    return {**params, "_meta": {"traceparent": f"00-{SERVER_TRACE}-{SERVER_SPAN}-01"}}


async def ask(call: ToolCall) -> str:
    """A tool whose server asks the host to sample, carrying its own trace context."""
    reply = await call.request("sampling/createMessage", traced(sampling_params("secret prompt")))
    return str(reply["content"]["text"])


async def test_a_sampling_request_is_one_trace_from_the_servers_context(
    exported: Exported, fake_openai: FakeOpenAI
) -> None:
    async with FakeServer(tools={"ask": ask}) as server, host_for(exported, fake_openai) as host:
        connection = await host.connect("fake", server.transport)
        result = await connection.call_tool("ask")
        assert not result.is_error
    exported.flush()
    otlp = exported.otlp

    # The tool call the host sent carried its CLIENT span's context in _meta.
    call = otlp.one("tools/call ask")
    assert call.kind == "CLIENT"
    (sent,) = server.requests_of("tools/call")
    assert sent["_meta"]["traceparent"].startswith(f"00-{call.trace_id}-{call.span_id}-")
    assert call.attributes["mcp.method.name"] == "tools/call"
    assert call.attributes["gen_ai.tool.name"] == "ask"
    assert call.attributes["gen_ai.operation.name"] == "execute_tool"
    assert call.attributes["mcp.protocol.version"] == "2025-11-25"
    assert call.attributes["jsonrpc.request.id"].isdigit()

    # The server's sampling request continues the server's trace, and holds the person and the model.
    serving = otlp.one("sampling/createMessage")
    assert (serving.kind, serving.trace_id, serving.parent_id) == ("SERVER", SERVER_TRACE, SERVER_SPAN)
    assert otlp.tree(serving) == "\n".join(
        [
            "sampling/createMessage (SERVER, host-receiver)",
            "    person approval (INTERNAL, host-receiver)",
            f"    chat {MODEL} (CLIENT, host-receiver)",
            "    person review (INTERNAL, host-receiver)",
        ]
    )
    assert otlp.one("person approval").attributes["host_receiver.person.outcome"] == "approved"
    assert otlp.one("person review").attributes["host_receiver.person.outcome"] == "approved"

    chat = otlp.one(f"chat {MODEL}").attributes
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.provider.name"] == "openai"
    assert chat["gen_ai.request.model"] == MODEL
    assert chat["gen_ai.request.max_tokens"] == 50
    assert chat["gen_ai.response.model"] == MODEL
    assert chat["gen_ai.response.id"].startswith("chatcmpl-fake-")
    assert chat["gen_ai.response.finish_reasons"] == ["endTurn"]
    assert chat["gen_ai.usage.input_tokens"] == 10
    assert chat["gen_ai.usage.output_tokens"] > 0
    assert chat["server.address"] == "127.0.0.1"
    # Content only on opt-in; no key anywhere.
    assert "gen_ai.input.messages" not in chat and "gen_ai.output.messages" not in chat
    everything = repr([(s.attributes, s.events) for s in otlp.spans]) + repr(otlp.metrics)
    assert "secret prompt" not in everything
    assert "sk-secret" not in everything

    # The metrics, with their units and attributes.
    assert otlp.units["mcp.client.operation.duration"] == "s"
    assert {p.attributes["mcp.method.name"] for p in otlp.metrics["mcp.client.operation.duration"]} >= {
        "tools/call"
    }
    (server_point,) = otlp.metrics["mcp.server.operation.duration"]
    assert server_point.attributes["mcp.method.name"] == "sampling/createMessage"
    assert otlp.metrics["mcp.client.session.duration"][0].count == 1
    (genai,) = otlp.metrics["gen_ai.client.operation.duration"]
    assert genai.attributes["gen_ai.provider.name"] == "openai"
    tokens = {p.attributes["gen_ai.token.type"]: p.value for p in otlp.metrics["gen_ai.client.token.usage"]}
    assert tokens["input"] == 10
    assert otlp.units["gen_ai.client.token.usage"] == "{token}"
    waits = {
        p.attributes["host_receiver.person.step"] for p in otlp.metrics["host_receiver.person.wait.duration"]
    }
    assert waits == {"approval", "review"}


async def test_content_is_recorded_only_on_opt_in(
    exported: Exported, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT, "true")
    async with FakeServer(tools={"ask": ask}) as server, host_for(exported, fake_openai) as host:
        connection = await host.connect("fake", server.transport)
        await connection.call_tool("ask")
    exported.flush()
    chat = exported.otlp.one(f"chat {MODEL}").attributes
    (message,) = json.loads(chat["gen_ai.input.messages"])
    assert message == {"role": "user", "parts": [{"type": "text", "content": "secret prompt"}]}
    (reply,) = json.loads(chat["gen_ai.output.messages"])
    assert reply["role"] == "assistant" and reply["parts"][0]["type"] == "text"
    assert "sk-secret" not in repr(exported.otlp.spans)


async def test_a_refusal_is_the_persons_outcome_and_the_requests_error(
    exported: Exported, fake_openai: FakeOpenAI
) -> None:
    async with FakeServer() as server, host_for(exported, fake_openai, refuse=True) as host:
        await host.connect("fake", server.transport)
        with pytest.raises(RpcError):
            await server.request("sampling/createMessage", sampling_params("hi"))
    exported.flush()
    otlp = exported.otlp
    assert otlp.one("person approval").attributes["host_receiver.person.outcome"] == "refused"
    serving = otlp.one("sampling/createMessage")
    assert serving.failed
    assert serving.attributes["error.type"] == "-1"
    assert serving.attributes["rpc.response.status_code"] == "-1"
    assert otlp.named(f"chat {MODEL}") == []


async def test_a_malformed_trace_context_is_ignored_and_the_request_served(
    exported: Exported, fake_openai: FakeOpenAI
) -> None:
    async with FakeServer() as server, host_for(exported, fake_openai) as host:
        await host.connect("fake", server.transport)
        params = {**sampling_params("hi"), "_meta": {"traceparent": "00-zz-not-a-context", "tracestate": 7}}
        reply = await server.request("sampling/createMessage", params)
        assert reply["role"] == "assistant"
    exported.flush()
    serving = exported.otlp.one("sampling/createMessage")
    assert serving.parent_id == "" and serving.trace_id != SERVER_TRACE


async def test_a_task_is_one_span_linked_to_the_request_that_created_it(
    exported: Exported, fake_openai: FakeOpenAI
) -> None:
    async with FakeServer() as server, host_for(exported, fake_openai) as host:
        await host.connect("fake", server.transport)
        created = await server.request(
            "sampling/createMessage", traced({**sampling_params("hi"), "task": {}})
        )
        await server.request("tasks/result", {"taskId": created["task"]["taskId"]})
    exported.flush()
    otlp = exported.otlp
    creating = otlp.named("sampling/createMessage")[0]
    assert creating.trace_id == SERVER_TRACE
    work = otlp.one("task sampling/createMessage")
    assert work.links == [(creating.trace_id, creating.span_id)]
    assert [event[1]["host_receiver.task.status"] for event in work.events] == ["working", "completed"]
    assert {s.name for s in otlp.spans if s.parent_id == work.span_id} >= {f"chat {MODEL}", "person approval"}
    finished = otlp.metrics["host_receiver.receiver.tasks.finished"]
    assert [(p.attributes["host_receiver.task.status"], p.value) for p in finished] == [("completed", 1)]
    assert [p.value for p in otlp.metrics["host_receiver.receiver.tasks.active"]] == [0]
    assert otlp.one("tasks/result").parent_id == ""


async def test_a_policy_that_asks_no_person_records_no_person_span(exported: Exported) -> None:
    """AutoApprove and FillDefaults (as ``--approve auto --elicit defaults``), also wrapped in other
    policies, decide alone: no ``person`` span and no wait for a person is recorded."""
    registry = ProviderRegistry([EchoProvider()])
    approver = ModelAllowList(RememberDecisions(AutoApprove()))
    receiver = Receiver(
        sampling=SamplingService(registry, approver), elicitation=ElicitationService(FillDefaults())
    )
    form = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
    async with (
        FakeServer() as server,
        Host(receiver, ConnectionOptions(telemetry=exported.telemetry)) as host,
    ):
        await host.connect("fake", server.transport)
        await server.request("sampling/createMessage", sampling_params("hi"))
        assert (await server.request("elicitation/create", form))["action"] == "accept"
    exported.flush()
    otlp = exported.otlp
    assert otlp.tree(otlp.one("sampling/createMessage")) == "\n".join(
        ["sampling/createMessage (SERVER, host-receiver)", "    chat echo-offline (CLIENT, host-receiver)"]
    )
    assert otlp.named("elicitation/create")
    assert not [span.name for span in otlp.spans if span.name.startswith("person")]
    assert "host_receiver.person.wait.duration" not in otlp.metrics


async def test_a_hostile_servers_names_are_sanitised_and_bounded(
    exported: Exported, fake_openai: FakeOpenAI
) -> None:
    names = [f"tool-{i}\x1b[31m" for i in range(DISTINCT_NAMES + 5)]

    async def answer(call: ToolCall) -> str:
        return "ok"

    async with (
        FakeServer(tools=dict.fromkeys(names, answer)) as server,
        host_for(exported, fake_openai) as host,
    ):
        connection = await host.connect("fake", server.transport)
        for name in names:
            await connection.call_tool(name)
    exported.flush()
    span_names = {span.name for span in exported.otlp.spans if span.name.startswith("tools/call")}
    assert "tools/call tool-0\\x1b[31m" in span_names
    assert all("\x1b" not in name for name in span_names)
    assert len(span_names) == DISTINCT_NAMES + 1  # the first names, and the bare method for the rest
    labels = {
        p.attributes["gen_ai.tool.name"]
        for p in exported.otlp.metrics["mcp.client.operation.duration"]
        if p.attributes["mcp.method.name"] == "tools/call"  # not the agreement's requests
    }
    assert "_OTHER" in labels and len(labels) == DISTINCT_NAMES + 1


async def test_a_tool_error_is_the_calls_error_type(exported: Exported, fake_openai: FakeOpenAI) -> None:
    async def broken(call: ToolCall) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "it broke"}], "isError": True}

    async with FakeServer(tools={"broken": broken}) as server, host_for(exported, fake_openai) as host:
        connection = await host.connect("fake", server.transport)
        result = await connection.call_tool("broken")
        assert result.is_error
    exported.flush()
    assert exported.otlp.one("tools/call broken").attributes["error.type"] == "tool_error"


@pytest.mark.slow
def test_without_the_api_installed_nothing_changes() -> None:
    script = """
import sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
import anyio
from host_receiver import AutoApprove, Host, Receiver, SamplingService
from host_receiver.testing import FakeServer
from providers import EchoProvider, ProviderRegistry

async def ask(call):
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5,
              "_meta": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
    reply = await call.request("sampling/createMessage", params)
    return reply["content"]["text"]

async def main():
    receiver = Receiver(sampling=SamplingService(ProviderRegistry([EchoProvider()]), AutoApprove()))
    async with FakeServer(tools={"ask": ask}) as server, Host(receiver) as host:
        connection = await host.connect("fake", server.transport)
        result = await connection.call_tool("ask")
        (sent,) = server.requests_of("tools/call")
        print(result.text, "_meta" in sent, any(m.startswith("opentelemetry.") for m in sys.modules))

anyio.run(main)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["echo:", "hi", "False", "False"]


@pytest.mark.slow  # a fresh interpreter, and a wait of SDK_LOOK_EVERY: 4.5 s
def test_with_the_api_and_no_sdk_nothing_is_recorded_until_an_sdk_is_set() -> None:
    """The API alone records nothing (and builds nothing); an SDK set up later, while connected, records
    (within ``SDK_LOOK_EVERY``)."""
    script = """
import anyio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from host_receiver import AutoApprove, Host, Receiver, SamplingService
from host_receiver.telemetry import SDK_LOOK_EVERY
from host_receiver.testing import FakeServer
from providers import EchoProvider, ProviderRegistry

async def ask(call):
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
    reply = await call.request("sampling/createMessage", params)
    return reply["content"]["text"]

async def main():
    receiver = Receiver(sampling=SamplingService(ProviderRegistry([EchoProvider()]), AutoApprove()))
    exporter = InMemorySpanExporter()
    async with FakeServer(tools={"ask": ask}) as server, Host(receiver) as host:
        connection = await host.connect("fake", server.transport)
        await connection.call_tool("ask")
        before = len(exporter.get_finished_spans())
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        await anyio.sleep(SDK_LOOK_EVERY)
        await connection.call_tool("ask")
        names = sorted({span.name for span in exporter.get_finished_spans()})
        (_, sent) = server.requests_of("tools/call")
        print(before, "traceparent" in sent.get("_meta", {}), "|".join(names))

anyio.run(main)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    before, propagated, names = done.stdout.split(maxsplit=2)
    assert (before, propagated) == ("0", "True")
    recorded = names.strip().split("|")
    assert {"tools/call ask", "sampling/createMessage"} <= set(recorded)
    assert any(name.startswith("chat ") for name in recorded)


async def test_notifications_are_spans_carrying_the_trace_context(
    exported: Exported, fake_openai: FakeOpenAI
) -> None:
    async with FakeServer() as server, host_for(exported, fake_openai) as host:
        await host.connect("fake", server.transport)
        await server.notify("notifications/tools/list_changed", traced({}))
        created = await server.request("sampling/createMessage", {**sampling_params("hi"), "task": {}})
        await server.request("tasks/result", {"taskId": created["task"]["taskId"]})
    exported.flush()
    otlp = exported.otlp
    # Received: a SERVER span continuing the context in its _meta.
    received = otlp.one("notifications/tools/list_changed")
    assert (received.kind, received.trace_id, received.parent_id) == ("SERVER", SERVER_TRACE, SERVER_SPAN)
    assert received.attributes["mcp.method.name"] == "notifications/tools/list_changed"
    # Sent: a CLIENT span in the task's work, its context in the notification's _meta.
    work = otlp.one("task sampling/createMessage")
    sent = otlp.named("notifications/tasks/status")
    assert sent and {(s.kind, s.parent_id) for s in sent} == {("CLIENT", work.span_id)}
    assert all("jsonrpc.request.id" not in s.attributes for s in sent)
    notices = server.notifications_of("notifications/tasks/status")
    contexts = {n["_meta"]["traceparent"].rsplit("-", 1)[0] for n in notices if n}
    assert contexts == {f"00-{s.trace_id}-{s.span_id}" for s in sent}
