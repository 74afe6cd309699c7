"""Fixtures of the interop suite: real SDK peers, a host around them, and a wire check.

- ``endpoint`` is parametrised over SDK x transport (python/typescript x
  stdio/http). Stdio peers are started by the host itself, one per
  connection; HTTP peers run once per SDK for the whole session
  (:func:`http_peers`), each test getting its own MCP session on them.
- :func:`running_host` opens a :class:`~host_receiver.client.host.Host` whose every
  connection goes through a :class:`RecordingTransport`. When the block ends
  without error, every message the host sent is validated against the
  official schema of the connection's era (2025-11-25: requests,
  notifications, results by the method they answer, errors; 2026-07-28:
  every message of a modern connection, notifications included), so each
  scenario doubles as a wire-format check.
- :func:`fake_openai` is a loopback OpenAI-compatible server; the registry
  built by :func:`fake_registry` sends sampling to it through the real
  ``OpenAIProvider``, so a test can see a provider call start and stop.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from host_receiver.client.host import Host, ServerConnection
from host_receiver.client.options import ConnectionOptions
from host_receiver.errors import InvalidMessage
from host_receiver.handlers import ElicitationService, ModelRouter, SamplingService
from host_receiver.people.approval import (
    DEFAULT_MAX_WAITING,
    Approve,
    AutoApprove,
    ElicitationUI,
    FillDefaults,
    SamplingApprover,
    SamplingRequestView,
    SamplingResultView,
    Send,
)
from host_receiver.protocol.jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    Response,
    encode_message,
)
from host_receiver.protocol.types import RELATED_TASK_META_KEY
from host_receiver.receiver import Receiver, ReceiverConfig
from host_receiver.transports.base import MessageStream, Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport
from providers import Config, ModelInfo, ProviderEntry, ProviderRegistry, build_registry
from tests.fake_openai import FakeOpenAI
from tests.interop import RAW_SERVER, SDKS, HttpPeer, Sdk, peer_command
from tests.schema import (
    RESULT_OF,
    is_modern,
    validate,
    validate_message,
    validate_notification,
    validate_result,
)


@pytest.fixture
def anyio_backend() -> str:
    """The interop suite tests the peers, not the backend: once, on asyncio."""
    return "asyncio"


SAMPLING = "sampling/createMessage"
ELICITATION = "elicitation/create"
#: The request definitions of what a host sends to a server.
REQUEST_OF = {
    "initialize": "InitializeRequest",
    "ping": "PingRequest",
    "tools/list": "ListToolsRequest",
    "tools/call": "CallToolRequest",
}
#: Short polls keep the SDKs' polling loops (they honour pollInterval) quick.
TEST_CONFIG = ReceiverConfig(poll_interval_ms=50)
FAKE_MODEL = "fake-model"


# --- peers --------------------------------------------------------------------


class HttpPeers:
    """HTTP peers started on first use, one process per SDK, stopped at session end."""

    def __init__(self) -> None:
        self._running: dict[Sdk, HttpPeer] = {}

    def url(self, sdk: Sdk) -> str:
        if sdk not in self._running:
            self._running[sdk] = HttpPeer(peer_command(sdk))
        return self._running[sdk].url

    def stop(self) -> None:
        for peer in self._running.values():
            peer.stop()


@pytest.fixture(scope="session")
def http_peers() -> Iterator[HttpPeers]:
    peers = HttpPeers()
    yield peers
    peers.stop()


@dataclass(frozen=True)
class Endpoint:
    """One SDK peer over one transport; :meth:`transport` makes a fresh connection recipe."""

    sdk: Sdk
    kind: str  # "stdio" or "http"
    url: str | None = None

    def transport(self) -> Transport:
        if self.url is not None:
            return HttpTransport(self.url)
        command = peer_command(self.sdk)
        return StdioTransport(
            command.argv[0], command.argv[1:], env=command.env, inherit_env=True, name=self.sdk
        )

    def __str__(self) -> str:
        return f"{self.sdk}-{self.kind}"


ENDPOINTS = [(sdk, kind) for sdk in SDKS for kind in ("stdio", "http")]


def make_endpoint(sdk: Sdk, kind: str, http_peers: HttpPeers) -> Endpoint:
    """The endpoint for ``sdk`` over ``kind``; skips (fails on CI) without the peer."""
    peer_command(sdk)
    return Endpoint(sdk, kind, http_peers.url(sdk) if kind == "http" else None)


@pytest.fixture(params=ENDPOINTS, ids=[f"{sdk}-{kind}" for sdk, kind in ENDPOINTS])
def endpoint(request: pytest.FixtureRequest, http_peers: HttpPeers) -> Endpoint:
    sdk, kind = request.param
    return make_endpoint(sdk, kind, http_peers)


def raw_server(mode: str) -> StdioTransport:
    """The standard-library server of tests/interop/peers/raw_server.py in ``mode``."""
    return StdioTransport(sys.executable, [str(RAW_SERVER), "--mode", mode], name=f"raw-{mode}")


# --- recording and checking the wire ---------------------------------------------


@dataclass
class WireLog:
    """Every message one connection carried, both ways, as wire JSON."""

    name: str
    sent: list[dict[str, Any]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    #: The era the connection agreed on ("modern" or "legacy"), once it did.
    era: str | None = None
    #: How many messages were sent while agreeing (each judged by its own form).
    agreed_at: int = 0
    #: For each message sent, how many had been received by then: an answer is judged against the
    #: request of its id that came before it (mcp 1.30 may use one id twice: docs/peers.md).
    received_before: list[int] = field(default_factory=list)
    _arrivals: dict[str, anyio.Event] = field(default_factory=dict, repr=False)

    def record_sent(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        self.received_before.append(len(self.received))

    def record_received(self, message: dict[str, Any]) -> None:
        self.received.append(message)
        method = message.get("method")
        if method is not None and method in self._arrivals:
            self._arrivals.pop(method).set()

    def requests_received(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("method") == method and "id" in m]

    async def next_request(self, method: str) -> dict[str, Any]:
        """Wait for the next ``method`` request from the server (one not yet received)."""
        seen = len(self.requests_received(method))
        while len(self.requests_received(method)) == seen:
            await self._arrivals.setdefault(method, anyio.Event()).wait()
        return self.requests_received(method)[seen]

    async def notified(self, method: str) -> None:
        """Return once the server has sent notification ``method`` (at once if it came already)."""
        while not [m for m in self.received if m.get("method") == method and "id" not in m]:
            await self._arrivals.setdefault(method, anyio.Event()).wait()

    def notifications_sent(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if m.get("method") == method and "id" not in m]

    def agreed(self, era: str) -> None:
        """The connection agreed on ``era``: every message sent from now on is of that era."""
        self.era, self.agreed_at = era, len(self.sent)

    def check(self) -> int:
        """Validate everything the host sent against the official schema of its era; return the
        count. A modern connection's messages, notifications included, by the 2026-07-28 schema;
        those sent while agreeing (the probe, a fallback's ``initialize``) by their own form."""
        task_methods: dict[str, str] = {}
        for index, message in enumerate(self.sent):
            era = self.era if index >= self.agreed_at else None
            before = self.received[: self.received_before[index]]
            incoming = {m["id"]: m for m in before if "method" in m and "id" in m}
            try:
                _check_sent(message, incoming, task_methods, era)
            except Exception as exc:
                raise AssertionError(f"{self.name}: host sent an invalid message {message}: {exc}") from exc
        return len(self.sent)


def _check_sent(
    message: dict[str, Any],
    incoming: dict[Any, dict[str, Any]],
    task_methods: dict[str, str],
    era: str | None,
) -> None:
    validate_message(message, era=era)
    if era == "modern" or is_modern(message):
        return  # validate_message checked it against the 2026-07-28 schema
    method = message.get("method")
    if method is not None and "id" in message:
        if method in REQUEST_OF:
            validate(REQUEST_OF[method], message)
        return
    if method is not None:
        validate_notification(method, message.get("params"))
        return
    if "error" in message:
        validate("JSONRPCErrorResponse", message)
        return
    request = incoming.get(message["id"])
    assert request is not None, "a response to a request the server never sent"
    asked, result = request["method"], message["result"]
    if asked in (SAMPLING, ELICITATION) and "task" in (request.get("params") or {}) and "task" in result:
        validate_result(asked, result, task=True)
        task_methods[result["task"]["taskId"]] = asked
    elif asked in RESULT_OF:
        validate_result(asked, result)
    if asked == "tasks/result":
        task_id = request["params"]["taskId"]
        assert result["_meta"][RELATED_TASK_META_KEY] == {"taskId": task_id}
        if task_id in task_methods:
            validate(RESULT_OF[task_methods[task_id]], result)


class _RecordingStream(MessageStream):
    def __init__(self, inner: MessageStream, log: WireLog) -> None:
        self._inner = inner
        self._log = log

    async def send(self, message: Message) -> None:
        self._log.record_sent(encode_message(message))
        await self._inner.send(message)

    def send_nowait(self, message: Message) -> None:
        self._inner.send_nowait(message)  # raises WouldBlock when not taken: then send() logs it
        self._log.record_sent(encode_message(message))

    async def receive(self) -> Message | InvalidMessage:
        message = await self._inner.receive()
        if isinstance(message, Request | Notification | Response | ErrorResponse):
            self._log.record_received(encode_message(message))
        return message

    async def aclose(self) -> None:
        await self._inner.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self._inner.extra_attributes  # the binding of the stream it wraps


class RecordingTransport(Transport):
    """Wraps another transport and logs every message into ``log``."""

    def __init__(self, inner: Transport, log: WireLog) -> None:
        self.inner = inner
        self.log = log

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[MessageStream]:
        async with self.inner.connect() as stream:
            yield _RecordingStream(stream, self.log)


# --- the host under test -------------------------------------------------------------


@dataclass
class Harness:
    """A running host plus the wire log of each of its connections."""

    host: Host
    receiver: Receiver
    wires: dict[str, WireLog] = field(default_factory=dict)

    async def connect(self, name: str, target: Endpoint | Transport) -> ServerConnection:
        transport = target.transport() if isinstance(target, Endpoint) else target
        log = self.wires[name] = WireLog(name)
        server = await self.host.connect(name, RecordingTransport(transport, log))
        log.agreed(server.era.value)
        return server


@asynccontextmanager
async def running_host(
    *,
    router: ModelRouter | None = None,
    approver: SamplingApprover | None = None,
    ui: ElicitationUI | None = None,
    config: ReceiverConfig = TEST_CONFIG,
    opener: Callable[[str], bool] | None = None,
    receiver_options: dict[str, Any] | None = None,
    options: ConnectionOptions | None = None,
    max_waiting: int = DEFAULT_MAX_WAITING,
) -> AsyncIterator[Harness]:
    """A host with sampling (echo provider and AutoApprove unless told) and FillDefaults
    elicitation; on a clean exit, every message it sent is checked against the schema of its era.

    ``opener`` stands for the browser of URL elicitation (it notes the URL);
    ``receiver_options`` go to ``Receiver``, ``options`` to ``Host``; ``max_waiting`` caps the
    forms of one server waiting for ``ui`` at once.
    """
    registry = router if router is not None else build_registry(provider="echo", config=Config(), environ={})
    elicitation = (
        ElicitationService(ui or FillDefaults(), opener=opener, max_waiting=max_waiting)
        if opener
        else ElicitationService(ui or FillDefaults(), max_waiting=max_waiting)
    )
    receiver = Receiver(
        sampling=SamplingService(registry, approver or AutoApprove()),
        elicitation=elicitation,
        config=config,
        **(receiver_options or {}),
    )
    async with AsyncExitStack() as stack:
        if isinstance(registry, ProviderRegistry):
            await stack.enter_async_context(registry)
        host = await stack.enter_async_context(Host(receiver, options))
        harness = Harness(host, receiver)
        yield harness
    for log in harness.wires.values():
        log.check()


async def call_report(server: ServerConnection, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call one of the peers' tools and return its JSON report."""
    result = await server.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result}"
    report: dict[str, Any] = json.loads(result.text)
    return report


class Gate:
    """An approver that holds every sampling request until ``open`` is set."""

    def __init__(self) -> None:
        self.open = anyio.Event()

    async def review_request(self, view: SamplingRequestView) -> Approve:
        await self.open.wait()
        return Approve()

    async def review_result(self, view: SamplingResultView) -> Send:
        return Send()


def assert_task(task: dict[str, Any], *, status: str | None = None) -> None:
    """A Task as a server received it: valid per the schema, in ``status`` when given."""
    validate("Task", task)
    if status is not None:
        assert task["status"] == status, task


# --- the LLM behind sampling -----------------------------------------------------------


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def fake_registry(fake: FakeOpenAI, **entry: Any) -> ProviderRegistry:
    """A registry whose only provider is the real OpenAI provider talking to ``fake``."""
    provider = ProviderEntry(
        "fake",
        type="openai",
        base_url=fake.url,
        api_key_required=False,
        max_retries=0,
        models=(ModelInfo(id=FAKE_MODEL, provider="fake"),),
        **entry,
    )
    return build_registry(config=Config(providers=(provider,)), environ={})
