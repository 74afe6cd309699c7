"""One trace across the server and the host: mcp 2.3.0's own MCP spans and the host's, over OTLP/HTTP.

The mcp 2.3.0 peer runs with the OpenTelemetry SDK on (peers/py2_traced.py,
its spans as JSON lines); the host runs the real SDK exporting over OTLP/HTTP
to the loopback receiver (tests/otlp_receiver.py). Its ``sample`` tool asks the
host for an LLM call: pushed as ``sampling/createMessage`` in 2025-11-25, as an
input round in 2026-07-28; over stdio and Streamable HTTP. The mcp 1.30 peer asks for a task-augmented one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

import pytest

from host_receiver import AutoApprove, Host, Receiver, SamplingService
from host_receiver.client.options import ConnectionOptions
from host_receiver.people.approval import Approve, SamplingRequestView, SamplingResultView, Send
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport
from tests.fake_openai import FakeOpenAI
from tests.interop import FASTMCP_SERVER, PEER_SCRIPTS, ROOT, http_server, peer_command, peer_python
from tests.interop.conftest import FAKE_MODEL, fake_registry, running_host
from tests.interop.test_modern_era import Forms
from tests.otlp_receiver import Exported, ExportedSpan, exported

pytestmark = pytest.mark.anyio

__all__ = ["exported"]  # the fixture (tests/otlp_receiver.py)

TRACED_PY2 = PEER_SCRIPTS / "py2_traced.py"
#: What precedes the drawn span tree in docs/observability.md.
TREE_MARK = "<!-- drawn by tests/interop/test_telemetry.py from a real export -->"


def peer_spans(path: Path) -> list[ExportedSpan]:
    """The peer's spans as the receiver's (ids in hex, its MCP method as ``method``)."""
    spans = []
    for line in path.read_text(encoding="utf-8").splitlines():
        span = json.loads(line)
        started = datetime.fromisoformat(span["start_time"].replace("Z", "+00:00"))
        spans.append(
            ExportedSpan(
                name=span["name"],
                kind=span["kind"].removeprefix("SpanKind."),
                trace_id=span["context"]["trace_id"].removeprefix("0x"),
                span_id=span["context"]["span_id"].removeprefix("0x"),
                parent_id=(span["parent_id"] or "").removeprefix("0x"),
                attributes=span["attributes"],
                events=[],
                links=[],
                status=0,
                service=span["resource"]["attributes"]["service.name"],
                start=int(started.timestamp() * 1e9),
            )
        )
    return spans


def documented_tree() -> str:
    """The span tree docs/observability.md shows."""
    text = (ROOT / "docs" / "observability.md").read_text(encoding="utf-8")
    return text.split(TREE_MARK, 1)[1].split("```text\n", 1)[1].split("```", 1)[0].rstrip("\n")


def children(spans: list[ExportedSpan], parent: ExportedSpan) -> list[str]:
    return sorted(span.name for span in spans if span.parent_id == parent.span_id)


class Person:
    """An approver that stands for a person (not a ready-made policy): approves, sends the result."""

    async def review_request(self, view: SamplingRequestView) -> Approve:
        return Approve()

    async def review_result(self, view: SamplingResultView) -> Send:
        return Send()


@pytest.fixture
def spans_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "peer-spans.jsonl"
    path.touch()
    yield path


async def serve_one_sampling(
    protocol: str, transport: Transport, exported: Exported, fake: FakeOpenAI
) -> None:
    """Call the peer's ``sample`` tool; the host samples through the fake OpenAI backend, a person
    approving the request and reviewing the result."""
    async with fake_registry(fake) as registry:
        receiver = Receiver(sampling=SamplingService(registry, Person()))
        options = ConnectionOptions(protocol=protocol, telemetry=exported.telemetry)
        async with Host(receiver, options) as host:
            server = await host.connect("py2", transport)
            result = await server.call_tool("sample", {"prompt": "Say hello"})
            assert not result.is_error, result


@pytest.mark.parametrize("kind", ["stdio", "http"])
@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
async def test_the_servers_trace_continues_into_the_hosts_spans_and_back(
    protocol: str, kind: str, exported: Exported, fake_openai: FakeOpenAI, spans_file: Path
) -> None:
    argv, env = [str(peer_python("py2")), str(TRACED_PY2)], {"PEER_SPANS": str(spans_file)}
    with ExitStack() as stack:
        transport: Transport = (
            StdioTransport(argv[0], argv[1:], env=env, name="py2")
            if kind == "stdio"
            else HttpTransport(stack.enter_context(http_server(argv, env)))
        )
        await serve_one_sampling(protocol, transport, exported, fake_openai)
    exported.flush()
    otlp = exported.otlp
    theirs = peer_spans(spans_file)
    sent = [span for span in otlp.named("tools/call sample") if span.kind == "CLIENT"]
    (serving,) = otlp.named("sampling/createMessage")
    trace_id = sent[0].trace_id
    facts = sent[0].attributes
    if kind == "stdio":
        assert facts["network.transport"] == "pipe" and "server.address" not in facts
    else:
        assert (facts["network.transport"], facts["server.address"]) == ("tcp", "127.0.0.1")
        assert facts["server.port"] > 0
        assert ("mcp.session.id" in facts) == (protocol == "2025-11-25")  # the legacy binding's session
    assert {span.trace_id for span in [*sent, serving]} == {trace_id}
    # The agreement's requests are CLIENT spans too, and the server's trace continues them.
    agreed = "initialize" if protocol == "2025-11-25" else "server/discover"
    (agreeing,) = [span for span in otlp.named(agreed) if span.kind == "CLIENT"]
    their_agreements = [s for s in theirs if s.kind == "SERVER" and s.name == agreed]
    assert [(s.trace_id, s.parent_id) for s in their_agreements] == [(agreeing.trace_id, agreeing.span_id)]
    # The server's own spans for our tools/call are children of our CLIENT spans.
    their_calls = [s for s in theirs if s.kind == "SERVER" and s.name == "tools/call sample"]
    assert their_calls, theirs
    assert {(s.trace_id, s.parent_id) for s in their_calls} <= {(trace_id, s.span_id) for s in sent}
    # Our serving of the sampling request holds the person's part and the model call.
    assert children(otlp.spans, serving) == [f"chat {FAKE_MODEL}", "person approval", "person review"]
    if protocol == "2025-11-25":
        # The server pushed it under its own CLIENT span, which our SERVER span continues.
        (pushed,) = [
            s
            for s in theirs
            if s.kind == "CLIENT" and s.attributes.get("mcp.method.name") == "sampling/createMessage"
        ]
        assert (serving.trace_id, serving.parent_id) == (pushed.trace_id, pushed.span_id)
        assert pushed.parent_id in {s.span_id for s in their_calls}
        if kind == "stdio":  # the drawing docs/observability.md shows, from this very export
            assert otlp.tree(sent[0], theirs) == documented_tree()
    else:
        # One span for the logical call holds each round and the input request fulfilled between them.
        (call,) = [span for span in otlp.named("tools/call sample") if span.kind == "INTERNAL"]
        assert children(otlp.spans, call) == [
            "sampling/createMessage",
            "tools/call sample",
            "tools/call sample",
        ]
        assert len(their_calls) == 2


async def test_a_task_augmented_sampling_request_of_mcp_1_30_is_one_span_linked_to_its_request(
    exported: Exported, fake_openai: FakeOpenAI
) -> None:
    command = peer_command("python")
    transport = StdioTransport(command.argv[0], list(command.argv[1:]), env=command.env, name="py")
    async with fake_registry(fake_openai) as registry:
        receiver = Receiver(sampling=SamplingService(registry, AutoApprove()))
        async with Host(receiver, ConnectionOptions(telemetry=exported.telemetry)) as host:
            server = await host.connect("py", transport)
            result = await server.call_tool("sample_task", {"prompt": "Say hello", "ttl_ms": 30_000})
            assert not result.is_error, result
    exported.flush()
    otlp = exported.otlp
    (creating,) = otlp.named("sampling/createMessage")
    work = otlp.one("task sampling/createMessage")
    assert work.links == [(creating.trace_id, creating.span_id)]
    assert [event[1]["host_receiver.task.status"] for event in work.events] == ["working", "completed"]
    # AutoApprove asks no person; the completed status was sent from the work
    assert children(otlp.spans, work) == [f"chat {FAKE_MODEL}", "notifications/tasks/status"]
    polled = {span.name for span in otlp.spans if span.kind == "SERVER"}
    assert {"tasks/get", "tasks/result"} <= polled


async def test_a_tool_called_as_a_task_is_one_span_with_its_states_as_events(exported: Exported) -> None:
    transport = StdioTransport(str(peer_python("fastmcp")), [str(FASTMCP_SERVER)], name="fastmcp")
    async with running_host(ui=Forms("Kay"), options=ConnectionOptions(telemetry=exported.telemetry)) as h:
        server = await h.connect("fastmcp", transport)
        result = await server.call_tool("task_form_then_llm", {"tag": "traced"})
        assert not result.is_error, result
    exported.flush()
    otlp = exported.otlp
    (call,) = [span for span in otlp.named("tools/call task_form_then_llm") if span.kind == "INTERNAL"]
    states = [event[1]["host_receiver.task.status"] for event in call.events]
    assert states[0] == "working" and states[-1] == "completed" and "input_required" in states
    below = children(otlp.spans, call)
    assert {"tools/call task_form_then_llm", "tasks/get", "tasks/update", "elicitation/create"} <= set(below)
