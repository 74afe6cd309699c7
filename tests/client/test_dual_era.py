"""The dual-era client against in-memory servers of either era: agreement, input rounds, bad input.

The server side is ``host_receiver.testing.FakeServer`` (a modern one checks
every request's envelope); every request the host sends to a modern server is
validated against the 2026-07-28 schema. The same rules against the real
SDK peers are in tests/interop/test_modern_era.py.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
import pytest
from trio.testing import MockClock

from host_receiver import (
    AutoApprove,
    DenyAll,
    ElicitationService,
    FillDefaults,
    FormView,
    Host,
    Receiver,
    RemoteTask,
    SamplingService,
    ServerConnection,
    TaskHandle,
    UrlAnswer,
    UrlView,
)
from host_receiver.client.options import DEFAULT_MAX_INPUT_ROUNDS, ConnectionOptions
from host_receiver.errors import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    USER_REJECTED,
    BadResult,
    InputRequestFailed,
    InputRoundsExceeded,
    MissingCapability,
    ProtocolError,
    RemoteTaskCancelled,
    RemoteTaskLost,
    RpcError,
    UnsupportedProtocolVersion,
)
from host_receiver.protocol.jsonrpc import Request
from host_receiver.protocol.modern import TASKS_EXTENSION
from host_receiver.protocol.types import ElicitResult
from host_receiver.protocol.versions import Era
from host_receiver.testing import FakeServer, ToolCall, ToolFunction
from providers import EchoProvider, ProviderRegistry
from tests.receiver_harness import form_params, sampling_params
from tests.schema import validate_message

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def receiver(**kwargs: Any) -> Receiver:
    kwargs.setdefault("sampling", SamplingService(ProviderRegistry([EchoProvider()]), AutoApprove()))
    kwargs.setdefault("elicitation", ElicitationService(FillDefaults()))
    return Receiver(**kwargs)


@asynccontextmanager
async def connected(
    server: FakeServer, host_receiver: Receiver | None = None, **options: Any
) -> AsyncIterator[ServerConnection]:
    async with server, Host(host_receiver or receiver(), ConnectionOptions(**options)) as host:
        yield await host.connect("fake", server.transport)
    check_wire(server)


def check_wire(server: FakeServer, *, fallback: bool = False) -> None:
    """Every request and notification the host sent, by the schema of the server's era (with
    ``fallback``, an ``initialize`` the host tried on a modern server by the legacy one)."""
    era = "modern" if server.modern else "legacy"
    for request in server.requests:
        message = {"jsonrpc": "2.0", "id": request.id, "method": request.method}
        validate_message(
            {**message, "params": request.params} if request.params is not None else message,
            era="legacy" if fallback and request.method == "initialize" else era,
        )
    for method, params in server.notifications:
        message = {"jsonrpc": "2.0", "method": method}
        validate_message({**message, "params": params} if params is not None else message, era=era)
    assert not (server.modern and server.initialized.is_set()), (
        "notifications/initialized on a modern connection"
    )


class StuckForms:
    """A person who never answers a form: ``waiting`` once asked, ``cancelled`` once the prompt is closed."""

    def __init__(self) -> None:
        self.waiting, self.cancelled = anyio.Event(), anyio.Event()

    async def fill_form(self, view: FormView) -> ElicitResult:
        self.waiting.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled.set()
        raise AssertionError("unreachable")

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        return "decline"


def asks(key: str, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"method": method}
    if params is not None:
        entry["params"] = params
    return {"resultType": "input_required", "inputRequests": {key: entry}}


# --- agreement (basic-versioning.mdx) ----------------------------------------------


async def test_auto_speaks_modern_to_a_modern_server_after_discover_and_stamps_every_request() -> None:
    async def whoami(call: ToolCall) -> str:
        return "hi"

    server = FakeServer(protocol_version=MODERN, tools={"whoami": whoami})
    async with connected(server) as connection:
        assert (connection.era, connection.protocol_version) == (Era.MODERN, MODERN)
        assert connection.server_info.name == "fake-server"
        assert (await connection.call_tool("whoami")).text == "hi"
    assert [r.method for r in server.requests] == ["server/discover", "tools/call"]
    for request in server.requests:
        meta = request.meta or {}
        assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "host-receiver"
        capabilities = meta["io.modelcontextprotocol/clientCapabilities"]
        assert capabilities["extensions"] == {TASKS_EXTENSION: {}}
        assert capabilities["elicitation"] == {"form": {}, "url": {}} and "tasks" not in capabilities
    assert not server.notifications  # no notifications/initialized in the modern era


async def test_auto_falls_back_to_initialize_when_discover_is_not_understood() -> None:
    server = FakeServer(protocol_version=LEGACY)  # answers server/discover with -32601
    async with connected(server) as connection:
        assert (connection.era, connection.protocol_version) == (Era.LEGACY, LEGACY)
    assert [r.method for r in server.requests] == ["server/discover", "initialize"]
    assert server.initialize_params is not None and server.initialize_params["protocolVersion"] == LEGACY
    assert server.initialized.is_set()


@pytest.mark.parametrize("protocol_version", [LEGACY, MODERN])
async def test_a_connection_logs_one_info_line_naming_its_era(
    protocol_version: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="host_receiver")
    async with connected(FakeServer(protocol_version=protocol_version)) as connection:
        era = connection.era.value
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) == 1, lines
    assert (
        lines[0].startswith("connected to fake-server")
        and f"(protocol {protocol_version}, {era})" in lines[0]
    )


async def test_auto_falls_back_when_a_legacy_server_stays_silent_on_discover() -> None:
    abandoned = anyio.Event()

    async def never(request: Request) -> dict[str, Any]:
        try:
            await anyio.sleep_forever()
        finally:
            abandoned.set()  # the host's notifications/cancelled reached it
        raise AssertionError("unreachable")

    server = FakeServer(protocol_version=LEGACY, methods={"server/discover": never})
    async with server, Host(receiver()) as host:
        host_connection = ServerConnection.connect(
            server.transport, ConnectionOptions(discover_timeout=0.2), receiver=host.receiver, name="fake"
        )
        async with host_connection as connection:
            assert connection.era is Era.LEGACY
    with anyio.fail_after(5):
        await abandoned.wait()  # the silent probe was abandoned, and the server told


async def test_a_modern_server_that_misses_the_probe_is_found_modern_by_its_answer_to_initialize() -> None:
    """A slow start can outlast ``discover_timeout``: the fallback's initialize then gets -32022
    naming a modern version, which identifies a modern server, probed again at that version."""
    probes: list[Request] = []

    async def discover(request: Request) -> dict[str, Any]:
        probes.append(request)
        if len(probes) == 1:
            await anyio.sleep_forever()  # still starting up
        return server.discover_result()

    async def whoami(call: ToolCall) -> str:
        return "hi"

    server = FakeServer(
        protocol_version=MODERN, tools={"whoami": whoami}, methods={"server/discover": discover}
    )
    async with server, Host(receiver()) as host:
        opened = ServerConnection.connect(
            server.transport, ConnectionOptions(discover_timeout=0.2), receiver=host.receiver, name="fake"
        )
        async with opened as connection:
            assert (connection.era, connection.protocol_version) == (Era.MODERN, MODERN)
            assert (await connection.call_tool("whoami")).text == "hi"
    methods = [r.method for r in server.requests]
    assert methods == ["server/discover", "initialize", "server/discover", "tools/call"]
    assert server.initialize_params is None  # refused: never answered as a legacy server
    check_wire(server, fallback=True)


async def test_a_modern_server_found_by_its_answer_to_initialize_gets_more_than_the_probe_timeout() -> None:
    """Once initialize was refused as by a modern server, the second server/discover is no era
    probe: a server still starting gets as long as initialize would, not ``discover_timeout``."""
    probes: list[Request] = []

    async def discover(request: Request) -> dict[str, Any]:
        probes.append(request)
        if len(probes) == 1:
            await anyio.sleep_forever()  # still starting up
        await anyio.sleep(0.3)  # slower than discover_timeout, once more
        return server.discover_result()

    server = FakeServer(protocol_version=MODERN, methods={"server/discover": discover})
    async with server, Host(receiver()) as host:
        opened = ServerConnection.connect(
            server.transport, ConnectionOptions(discover_timeout=0.05), receiver=host.receiver, name="fake"
        )
        async with opened as connection:
            assert (connection.era, connection.protocol_version) == (Era.MODERN, MODERN)
    assert [r.method for r in server.requests] == ["server/discover", "initialize", "server/discover"]


async def test_in_auto_mode_a_version_nobody_shares_names_every_version_this_client_speaks() -> None:
    async def refuse(request: Request) -> dict[str, Any]:
        raise RpcError(-32022, "Unsupported protocol version", {"supported": ["2024-11-05"]})

    server = FakeServer(protocol_version=LEGACY, methods={"initialize": refuse})
    async with server, Host(receiver()) as host:
        with pytest.raises(UnsupportedProtocolVersion) as raised:
            await host.connect("fake", server.transport)
    assert str(raised.value).endswith(
        "it supports 2024-11-05; this client 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"
    )


@pytest.mark.parametrize("protocol", [MODERN, LEGACY])
async def test_a_forced_version_is_spoken_or_fails_clearly(protocol: str) -> None:
    other = LEGACY if protocol == MODERN else MODERN
    forced = ConnectionOptions(protocol=protocol)
    async with FakeServer(protocol_version=other) as server, Host(receiver(), forced) as host:
        with pytest.raises(UnsupportedProtocolVersion) as raised:
            await host.connect("fake", server.transport)
    assert "2026-07-28" in str(raised.value) and "2025-11-25" in str(raised.value)


async def test_unsupported_version_with_a_mutual_legacy_version_uses_the_handshake() -> None:
    """-32022 naming a version both speak is answered with that version, here through initialize."""

    async def refuse(request: Request) -> dict[str, Any]:
        raise RpcError(
            -32022, "Unsupported protocol version", {"supported": ["2025-06-18"], "requested": MODERN}
        )

    server = FakeServer(protocol_version="2025-06-18", methods={"server/discover": refuse})
    async with connected(server) as connection:
        assert connection.protocol_version == "2025-06-18"
    assert (
        server.initialize_params is not None and server.initialize_params["protocolVersion"] == "2025-06-18"
    )


async def test_a_version_nobody_shares_names_both_sides() -> None:
    async def refuse(request: Request) -> dict[str, Any]:
        raise RpcError(
            -32022, "Unsupported protocol version", {"supported": ["2099-01-01"], "requested": MODERN}
        )

    server = FakeServer(protocol_version=LEGACY, methods={"server/discover": refuse})
    async with server, Host(receiver()) as host:
        with pytest.raises(
            UnsupportedProtocolVersion, match=r"it supports 2099-01-01; this client 2026-07-28"
        ):
            await host.connect("fake", server.transport)
    assert [r.method for r in server.requests] == ["server/discover"]  # a modern server: no initialize


async def test_a_version_refused_after_the_agreement_is_a_clear_error_naming_both_sides() -> None:
    """-32022 to a request of an agreed modern connection: 2026-07-28 is the only modern version,
    so there is none to switch to; the error names both sides' versions."""

    async def refused(call: ToolCall) -> str:
        raise RpcError(-32022, "Unsupported protocol version", {"supported": ["2099-01-01"]})

    server = FakeServer(protocol_version=MODERN, tools={"refused": refused})
    async with connected(server) as connection:
        with pytest.raises(UnsupportedProtocolVersion) as raised:
            await connection.call_tool("refused")
    assert "refused tools/call in MCP 2026-07-28" in str(raised.value)
    assert "it supports 2099-01-01" in str(raised.value)
    assert len(server.requests_of("tools/call")) == 1


SELF_CONTRADICTING = RpcError(
    -32022, "Unsupported protocol version", {"supported": [MODERN], "requested": MODERN}
)


async def test_a_32022_listing_the_version_it_refused_is_retried_once_and_the_retry_answers() -> None:
    """The conformance runner's request-metadata scenario: the first request of a version is refused
    with an error that lists that very version; one retry of the same request passes."""
    refusals = [SELF_CONTRADICTING]

    async def flaky(request: Request) -> dict[str, Any]:
        if refusals:
            raise refusals.pop()
        return server.discover_result()

    async def also_flaky(call: ToolCall) -> str:
        if not call_refused:
            call_refused.append(True)
            raise SELF_CONTRADICTING
        return "done"

    call_refused: list[bool] = []
    server = FakeServer(
        protocol_version=MODERN, tools={"once": also_flaky}, methods={"server/discover": flaky}
    )
    async with connected(server) as connection:
        assert connection.protocol_version == MODERN
        assert (await connection.call_tool("once")).text == "done"
    assert [r.method for r in server.requests] == ["server/discover"] * 2 + ["tools/call"] * 2


@pytest.mark.parametrize("where", ["server/discover", "tools/call"])
async def test_a_32022_listing_the_version_it_refused_twice_says_exactly_that(where: str) -> None:
    async def refuse(request: Request) -> dict[str, Any]:
        raise SELF_CONTRADICTING

    async def refuse_call(call: ToolCall) -> str:
        raise SELF_CONTRADICTING

    methods = {"server/discover": refuse} if where == "server/discover" else {}
    server = FakeServer(protocol_version=MODERN, tools={"refused": refuse_call}, methods=methods)
    async with server, Host(receiver()) as host:
        with pytest.raises(UnsupportedProtocolVersion) as raised:
            connection = await host.connect("fake", server.transport)
            await connection.call_tool("refused")
    assert f"refused {where} in MCP 2026-07-28 twice with -32022" in str(raised.value)
    assert "although the error lists 2026-07-28 as supported" in str(raised.value)
    assert "share no MCP protocol version" not in str(raised.value)
    assert len(server.requests_of(where)) == 2


async def test_a_missing_capability_names_what_is_missing() -> None:
    async def needs_url(call: ToolCall) -> str:
        raise RpcError(
            -32021,
            "Client did not declare the url elicitation capability",
            {"requiredCapabilities": {"elicitation": {"url": {}}}},
        )

    server = FakeServer(protocol_version=MODERN, tools={"connect": needs_url})
    async with connected(server) as connection:
        with pytest.raises(MissingCapability, match=r"elicitation\.url") as raised:
            await connection.call_tool("connect")
    assert raised.value.required == {"elicitation": {"url": {}}}


# --- input rounds (basic-patterns-mrtr.mdx) -----------------------------------------


async def test_an_input_round_is_answered_and_the_request_retried_with_the_state_byte_for_byte() -> None:
    state = 'opaque \u00e9 "quoted" \\ \n state'

    async def ask(call: ToolCall) -> dict[str, Any] | str:
        if call.input_responses is None:
            return {**asks("who", "elicitation/create", form_params()), "requestState": state}
        assert call.request_state == state  # exactly what was sent
        return f"got {call.input_responses['who']}"

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server) as connection:
        result = await connection.call_tool("ask", {"x": 1})
    assert result.text == "got {'action': 'accept', 'content': {'name': 'Ada'}}"
    first, retry = server.requests_of("tools/call")
    assert (first["name"], first["arguments"]) == (retry["name"], retry["arguments"]) == ("ask", {"x": 1})
    assert "inputResponses" not in first and "requestState" not in first
    assert retry["inputResponses"] == {"who": {"action": "accept", "content": {"name": "Ada"}}}
    assert retry["requestState"] == state
    ids = [r.id for r in server.requests if r.method == "tools/call"]
    assert len(set(ids)) == 2  # a new JSON-RPC id for the retry


async def test_without_a_request_state_the_retry_carries_none() -> None:
    async def ask(call: ToolCall) -> dict[str, Any] | str:
        if call.input_responses is None:
            return asks("llm", "sampling/createMessage", sampling_params("capital of France?"))
        return str(call.input_responses["llm"]["content"]["text"])

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server) as connection:
        assert (await connection.call_tool("ask")).text == "echo: capital of France?"
    assert "requestState" not in server.requests_of("tools/call")[1]


async def test_entries_of_one_round_run_side_by_side() -> None:
    both_asked = anyio.Event()
    asked: list[str] = []

    class WaitingForms:
        async def fill_form(self, view: FormView) -> ElicitResult:
            asked.append(view.message)
            if len(asked) == 2:
                both_asked.set()
            with anyio.fail_after(5):  # one after the other would never get here
                await both_asked.wait()
            return ElicitResult(action="accept", content={"name": view.message})

        async def consent_url(self, view: UrlView) -> UrlAnswer:
            return "decline"

    async def ask(call: ToolCall) -> dict[str, Any] | str:
        if call.input_responses is None:
            return {
                "resultType": "input_required",
                "inputRequests": {
                    key: {"method": "elicitation/create", "params": form_params(message=key)}
                    for key in ("a", "b")
                },
            }
        return ",".join(sorted(r["content"]["name"] for r in call.input_responses.values()))

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server, receiver(elicitation=ElicitationService(WaitingForms()))) as connection:
        assert (await connection.call_tool("ask")).text == "a,b"


async def test_a_refused_sampling_entry_ends_the_call_cancels_its_round_and_sends_nothing() -> None:
    forms = StuckForms()

    async def ask(call: ToolCall) -> dict[str, Any]:
        return {
            "resultType": "input_required",
            "inputRequests": {
                "llm": {"method": "sampling/createMessage", "params": sampling_params()},
                "form": {"method": "elicitation/create", "params": form_params()},
            },
        }

    host_receiver = receiver(
        sampling=SamplingService(ProviderRegistry([EchoProvider()]), DenyAll()),
        elicitation=ElicitationService(forms),
    )
    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server, host_receiver) as connection:
        with pytest.raises(InputRequestFailed) as raised:
            await connection.call_tool("ask")
        assert forms.cancelled.is_set()
    assert raised.value.code == USER_REJECTED and raised.value.key == "llm"
    assert len(server.requests_of("tools/call")) == 1  # no retry with an error


async def test_a_declined_elicitation_is_sent_back_as_an_answer() -> None:
    async def ask(call: ToolCall) -> dict[str, Any] | str:
        if call.input_responses is None:
            params = form_params(
                requestedSchema={"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}
            )
            return asks("form", "elicitation/create", params)
        return str(call.input_responses)

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server) as connection:  # FillDefaults declines a form it cannot fill
        assert (await connection.call_tool("ask")).text == "{'form': {'action': 'decline'}}"


async def test_a_server_that_never_stops_asking_is_stopped_at_the_round_cap() -> None:
    async def forever(call: ToolCall) -> dict[str, Any]:
        return {"resultType": "input_required", "requestState": "again"}

    server = FakeServer(protocol_version=MODERN, tools={"forever": forever})
    async with connected(server, max_input_rounds=3) as connection:
        with pytest.raises(InputRoundsExceeded, match="more than 3 times"):
            await connection.call_tool("forever")
        assert len(server.requests_of("tools/call")) == 4  # the call and three retries
        with pytest.raises(InputRoundsExceeded):  # and the connection still serves
            await connection.call_tool("forever")


async def test_the_default_round_cap_is_ten() -> None:
    async def forever(call: ToolCall) -> dict[str, Any]:
        return {"resultType": "input_required", "requestState": "again"}

    assert DEFAULT_MAX_INPUT_ROUNDS == 10
    server = FakeServer(protocol_version=MODERN, tools={"forever": forever})
    async with connected(server) as connection:
        assert connection.options.max_input_rounds == 10
        with pytest.raises(InputRoundsExceeded, match="more than 10 times"):
            await connection.call_tool("forever")
    assert len(server.requests_of("tools/call")) == 11  # the call and ten retries


async def test_a_cancelled_elicitation_is_sent_back_as_such() -> None:
    class Dismissing:
        async def fill_form(self, view: FormView) -> ElicitResult:
            return ElicitResult(action="cancel")

        async def consent_url(self, view: UrlView) -> UrlAnswer:
            return "decline"

    async def ask(call: ToolCall) -> dict[str, Any] | str:
        if call.input_responses is None:
            return asks("form", "elicitation/create", form_params())
        return str(call.input_responses)

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server, receiver(elicitation=ElicitationService(Dismissing()))) as connection:
        assert (await connection.call_tool("ask")).text == "{'form': {'action': 'cancel'}}"


async def test_an_input_request_the_client_did_not_declare_ends_the_call_and_sends_nothing() -> None:
    """roots/list with no roots configured: the client declared no ``roots``, which a server MUST
    NOT ask for; the entry gets what a pushed roots/list gets (-32601), so the call ends."""

    async def ask(call: ToolCall) -> dict[str, Any]:
        return asks("where", "roots/list", None)

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server) as connection:  # no roots=...
        capabilities = (server.requests[0].meta or {})["io.modelcontextprotocol/clientCapabilities"]
        assert "roots" not in capabilities
        with pytest.raises(InputRequestFailed) as raised:
            await connection.call_tool("ask")
    assert raised.value.code == METHOD_NOT_FOUND
    assert "input request 'where' (roots/list) failed: Method not found" in raised.value.message
    assert len(server.requests_of("tools/call")) == 1  # no retry


async def test_input_required_to_a_request_that_may_not_take_it_fails_clearly() -> None:
    async def tools(request: Request) -> dict[str, Any]:
        return asks("k", "elicitation/create", form_params())

    async def ok(call: ToolCall) -> str:
        return "fine"

    server = FakeServer(protocol_version=MODERN, tools={"ok": ok}, methods={"tools/list": tools})
    async with connected(server) as connection:
        with pytest.raises(BadResult, match="answered tools/list with input_required, which only"):
            await connection.list_tools()
        assert (await connection.call_tool("ok")).text == "fine"
    assert len(server.requests_of("tools/list")) == 1  # nothing answered, nothing retried


async def test_cancelling_the_call_cancels_the_work_of_its_round() -> None:
    forms = StuckForms()

    async def ask(call: ToolCall) -> dict[str, Any]:
        return asks("form", "elicitation/create", form_params())

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server, receiver(elicitation=ElicitationService(forms))) as connection:
        async with anyio.create_task_group() as group:
            group.start_soon(connection.call_tool, "ask")
            await forms.waiting.wait()
            group.cancel_scope.cancel()
        assert forms.cancelled.is_set()


async def test_roots_are_answered_from_the_receiver() -> None:
    async def ask(call: ToolCall) -> dict[str, Any] | str:
        if call.input_responses is None:
            return asks("roots", "roots/list", None)
        return str(call.input_responses["roots"])

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server, receiver(roots=["file:///srv/notes"])) as connection:
        assert (await connection.call_tool("ask")).text == "{'roots': [{'uri': 'file:///srv/notes'}]}"
        capabilities = (server.requests[0].meta or {})["io.modelcontextprotocol/clientCapabilities"]
        assert capabilities["roots"] == {}


async def test_fifty_calls_in_flight_never_mix_their_requests_or_states() -> None:
    all_asked = anyio.Event()
    waiting: list[str] = []

    async def echo_state(call: ToolCall) -> dict[str, Any] | str:
        tag = call.arguments["tag"]
        if call.input_responses is None:
            return {
                **asks(f"q-{tag}", "elicitation/create", form_params(message=tag)),
                "requestState": f"s-{tag}",
            }
        assert call.request_state == f"s-{tag}" and list(call.input_responses) == [f"q-{tag}"]
        return f"{tag}:{call.input_responses[f'q-{tag}']['content']['name']}"

    class Person:
        async def fill_form(self, view: FormView) -> ElicitResult:
            waiting.append(view.message)
            if len(waiting) == 50:
                all_asked.set()
            with anyio.fail_after(10):
                await all_asked.wait()  # all fifty are in flight at once
            return ElicitResult(action="accept", content={"name": view.message})

        async def consent_url(self, view: UrlView) -> UrlAnswer:
            return "decline"

    results: dict[str, str] = {}
    server = FakeServer(protocol_version=MODERN, tools={"echo_state": echo_state})
    # Fifty forms wait for the person at once: above the default cap of waiting requests (32).
    async with connected(
        server, receiver(elicitation=ElicitationService(Person(), max_waiting=50))
    ) as connection:

        async def one(tag: str) -> None:
            results[tag] = (await connection.call_tool("echo_state", {"tag": tag})).text

        async with anyio.create_task_group() as group:
            for n in range(50):
                group.start_soon(one, f"t{n}")
    assert results == {f"t{n}": f"t{n}:t{n}" for n in range(50)}


async def test_prompts_and_resources_take_input_rounds_too() -> None:
    async def prompt(request: Request) -> dict[str, Any]:
        params = request.params or {}
        if "inputResponses" not in params:
            return asks("topic", "elicitation/create", form_params())
        return {
            "resultType": "complete",
            "messages": [],
            "description": str(params["inputResponses"]["topic"]),
        }

    async def resource(request: Request) -> dict[str, Any]:
        params = request.params or {}
        if "requestState" not in params:
            return {"resultType": "input_required", "requestState": "r1"}
        return {
            "resultType": "complete",
            "contents": [{"uri": params["uri"], "text": params["requestState"]}],
        }

    server = FakeServer(protocol_version=MODERN, methods={"prompts/get": prompt, "resources/read": resource})
    async with connected(server) as connection:
        got = await connection.get_prompt("p")
        assert got.description == "{'action': 'accept', 'content': {'name': 'Ada'}}"
        read = await connection.read_resource("ask://x")
        assert read.model_dump()["contents"] == [{"uri": "ask://x", "text": "r1"}]


@pytest.mark.parametrize("version", [LEGACY, MODERN])
async def test_prompts_and_resources_pass_the_servers_progress_to_on_progress(version: str) -> None:
    """Each request (a modern retry too) carries a progress token of its own (basic-patterns-progress.mdx)."""
    tokens: list[object] = []

    async def reporting(request: Request, result: dict[str, Any]) -> dict[str, Any]:
        params, token = request.params or {}, request.progress_token
        tokens.append(token)
        if server.modern and "requestState" not in params:
            return {"resultType": "input_required", "requestState": "again"}
        for step in (1, 2):
            await server.notify(
                "notifications/progress",
                {"progressToken": token, "progress": step, "total": 2, "message": f"step {step}"},
            )
        return {**result, "resultType": "complete"} if server.modern else result

    async def prompt(request: Request) -> dict[str, Any]:
        return await reporting(request, {"messages": []})

    async def resource(request: Request) -> dict[str, Any]:
        return await reporting(request, {"contents": [{"uri": "r://x", "text": "x"}]})

    server = FakeServer(protocol_version=version, methods={"prompts/get": prompt, "resources/read": resource})
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connected(server) as connection:
        await connection.get_prompt("p", on_progress=on_progress)
        await connection.read_resource("r://x", on_progress=on_progress)
    assert seen == [(1, 2, "step 1"), (2, 2, "step 2")] * 2
    assert None not in tokens and len(set(tokens)) == len(tokens) == (4 if server.modern else 2)


# --- bad input: a clear error naming the key or field, and the connection keeps serving -------


IR = {"resultType": "input_required"}
BAD_RESULTS = [
    ("inputRequests not an object", {**IR, "inputRequests": [1]}, "inputRequests must be an object"),
    ("an entry not an object", {**IR, "inputRequests": {"k": 3}}, "inputRequests['k'] must be an object"),
    (
        "an unknown method",
        asks("k", "tools/call", {}),
        "inputRequests['k'].method 'tools/call' is not an input",
    ),
    (
        "params not an object",
        {**IR, "inputRequests": {"k": {"method": "roots/list", "params": 1}}},
        "inputRequests['k'].params must be an object",
    ),
    ("requestState not a string", {**IR, "requestState": 7}, "requestState must be a string"),
    (
        "inputRequests null",
        {**IR, "inputRequests": None, "requestState": "s"},
        "inputRequests must be an object, not null",
    ),
    (
        "inputRequests a string",
        {**IR, "inputRequests": "ask me", "requestState": "s"},
        "inputRequests must be an object, not str",
    ),
    (
        "requestState null",
        {**asks("k", "roots/list", None), "requestState": None},
        "requestState must be a string, not null",
    ),
    ("neither requests nor state", IR, "needs inputRequests or requestState"),
    (
        "empty inputRequests and no state",
        {**IR, "inputRequests": {}},
        "needs inputRequests or requestState; it has neither (its inputRequests is empty)",
    ),
    ("an unknown resultType", {"resultType": "maybe", "content": []}, "resultType 'maybe' is not one this"),
]
#: A final result that breaks the CallToolResult schema, in either era (protocol/results.py).
BROKEN = "fake answered tools/call with a result that breaks the schema: "
SCHEMA_BREAKS = [
    (
        "text not a string",
        {"content": [{"type": "text", "text": 7}]},
        f"{BROKEN}content.0.text.text: Input should be a valid string",
    ),
    ("no content", {"isError": False}, f"{BROKEN}content: Field required"),
    (
        "isError a string",
        {"content": [], "isError": "no"},
        f"{BROKEN}isError: Input should be a valid boolean",
    ),
    ("unknown block", {"content": [{"type": "video", "data": "x"}]}, f"{BROKEN}content.0: Input tag 'video'"),
]


@pytest.mark.parametrize(
    ("protocol", "result", "words"),
    [pytest.param(MODERN, r, w, id=i) for i, r, w in BAD_RESULTS]
    + [pytest.param(p, r, w, id=f"{i} ({p})") for i, r, w in SCHEMA_BREAKS for p in (LEGACY, MODERN)],
)
async def test_a_malformed_result_fails_that_call_clearly_and_the_connection_serves_on(
    protocol: str, result: dict[str, Any], words: str
) -> None:
    async def bad(call: ToolCall) -> dict[str, Any]:
        return result

    async def good(call: ToolCall) -> str:
        return "fine"

    server = FakeServer(protocol_version=protocol, tools={"bad": bad, "good": good})
    async with connected(server) as connection:
        with pytest.raises(BadResult, match=re.escape(words)):
            await connection.call_tool("bad")
        assert (await connection.call_tool("good")).text == "fine"
    assert len(server.requests_of("tools/call")) == 2  # nothing was answered that was not asked


async def test_an_entry_whose_params_fail_the_schema_fails_the_call_naming_the_key() -> None:
    async def bad(call: ToolCall) -> dict[str, Any]:
        return asks("llm", "sampling/createMessage", {"messages": [], "maxTokens": "many"})

    server = FakeServer(protocol_version=MODERN, tools={"bad": bad})
    async with connected(server) as connection:
        with pytest.raises(InputRequestFailed) as raised:
            await connection.call_tool("bad")
    assert raised.value.code == INVALID_PARAMS
    assert (
        "input request 'llm' (sampling/createMessage) failed: Invalid params: maxTokens"
        in raised.value.message
    )


# --- the tasks extension, in memory ------------------------------------------------------


def task(task_id: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": "2026-12-03T10:00:00Z",
        "lastUpdatedAt": "2026-12-03T10:00:00Z",
        "ttlMs": 60_000,
        "pollIntervalMs": 10,
        **extra,
    }


def task_server(*states: dict[str, Any], tools: dict[str, ToolFunction] | None = None) -> FakeServer:
    """A modern fake of the tasks extension: ``tools/call`` of ``long`` creates a task in the
    first of ``states``; each ``tasks/get`` answers the next one (the last one for ever after);
    ``tasks/update`` and ``tasks/cancel`` are acknowledged (the fake records them)."""
    created, *polled = states
    later = iter(polled)
    last = [created]

    async def start(call: ToolCall) -> dict[str, Any]:
        return {"resultType": "task", **created}

    async def get(request: Request) -> dict[str, Any]:
        last[0] = next(later, last[0])
        return {"resultType": "complete", **last[0]}

    async def ack(request: Request) -> dict[str, Any]:
        return {"resultType": "complete"}

    return FakeServer(
        protocol_version=MODERN,
        tools={"long": start, **(tools or {})},
        methods={"tasks/get": get, "tasks/update": ack, "tasks/cancel": ack},
    )


async def test_a_task_result_is_followed_to_its_end_answering_its_input_with_tasks_update() -> None:
    wanted = {"k1": {"method": "sampling/createMessage", "params": sampling_params("hi")}}
    done = {"content": [{"type": "text", "text": "done"}], "isError": False}
    server = task_server(
        task("t1", "working"),
        task("t1", "working"),
        task("t1", "input_required", inputRequests=wanted),
        task("t1", "input_required", inputRequests=wanted),
        task("t1", "completed", result=done),
    )
    seen: list[str] = []

    async def observe(remote: RemoteTask) -> None:
        seen.append(remote.status)

    async with connected(server) as connection:
        result = await connection.call_tool("long", on_task=observe)
    assert result.model_dump() == {"content": [{"type": "text", "text": "done"}], "isError": False}
    assert seen == ["working", "input_required", "completed"]  # each new state once
    (update,) = server.requests_of(
        "tasks/update"
    )  # the repeated input request (same key) was not answered twice
    assert update["taskId"] == "t1" and update["inputResponses"]["k1"]["content"]["text"] == "echo: hi"


async def test_cancelling_a_call_cancels_its_task_on_the_server() -> None:
    cancels: list[dict[str, Any]] = []
    polled = anyio.Event()

    async def start(call: ToolCall) -> dict[str, Any]:
        return {"resultType": "task", **task("t2", "working")}

    async def get(request: Request) -> dict[str, Any]:
        polled.set()
        return {"resultType": "complete", **task("t2", "working")}

    async def cancel(request: Request) -> dict[str, Any]:
        cancels.append(request.params or {})
        return {"resultType": "complete"}

    server = FakeServer(
        protocol_version=MODERN, tools={"slow": start}, methods={"tasks/get": get, "tasks/cancel": cancel}
    )
    async with connected(server) as connection, anyio.create_task_group() as group:
        group.start_soon(connection.call_tool, "slow")
        await polled.wait()
        group.cancel_scope.cancel()
    assert [c["taskId"] for c in cancels] == ["t2"]


async def test_a_failed_task_raises_its_error_and_a_denied_task_id_is_lost() -> None:
    async def fails(call: ToolCall) -> dict[str, Any]:
        return {"resultType": "task", **task("t3", "failed", error={"code": -32603, "message": "boom"})}

    async def vanishes(call: ToolCall) -> dict[str, Any]:
        return {"resultType": "task", **task("t4", "working")}

    async def get(request: Request) -> dict[str, Any]:
        raise RpcError(INVALID_PARAMS, "Task t4 not found")

    async def quick(call: ToolCall) -> str:
        return "fine"

    server = FakeServer(
        protocol_version=MODERN,
        tools={"fails": fails, "vanishes": vanishes, "quick": quick},
        methods={"tasks/get": get},
    )
    async with connected(server) as connection:
        with pytest.raises(RpcError, match="boom"):
            await connection.call_tool("fails")
        with pytest.raises(RemoteTaskLost, match="no longer knows task t4"):
            await connection.call_tool("vanishes")
        assert (await connection.call_tool("quick")).text == "fine"  # the same connection serves on
    assert server.requests_of("tasks/cancel") == []  # a task the server denied is not cancelled


@pytest.mark.parametrize(
    "anyio_backend",
    [pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio-virtual-time")],
)
async def test_tasks_get_is_paced_at_the_servers_poll_interval() -> None:
    """In virtual time (trio's MockClock jumps to the next deadline whenever every task waits),
    the polls in a 10 s window follow pollIntervalMs 250: about 40 (the 1 s default would make
    10, the 10 ms floor 1,000). No real clock is read."""
    server = task_server(task("t6", "working", pollIntervalMs=250))
    async with connected(server) as connection:
        with anyio.move_on_after(10):
            await connection.call_tool("long")
    polls = len(server.requests_of("tasks/get"))
    assert 30 <= polls <= 50, polls


async def test_a_task_the_server_cancelled_raises_remote_task_cancelled() -> None:
    server = task_server(
        task("t7", "working"), task("t7", "cancelled", statusMessage="stopped by the operator")
    )
    async with connected(server) as connection:
        with pytest.raises(RemoteTaskCancelled, match="the server cancelled task t7"):
            await connection.call_tool("long")
    assert server.requests_of("tasks/cancel") == []  # terminal already: nothing to cancel


async def test_a_task_past_its_ttl_is_given_up_and_the_connection_serves_on() -> None:
    async def quick(call: ToolCall) -> str:
        return "fine"

    server = task_server(task("t8", "working", ttlMs=300, pollIntervalMs=20), tools={"quick": quick})
    async with connected(server) as connection:
        lost = pytest.raises(RemoteTaskLost, match="did not finish within its ttl of 300 ms")
        with anyio.fail_after(10), lost:
            await connection.call_tool("long")
        assert (await connection.call_tool("quick")).text == "fine"  # the same connection serves on
    assert [c["taskId"] for c in server.requests_of("tasks/cancel")] == ["t8"]  # it may still run


async def test_a_task_answer_to_prompts_get_is_a_bad_result() -> None:
    async def prompt(request: Request) -> dict[str, Any]:
        return {"resultType": "task", **task("t9", "working")}

    server = FakeServer(protocol_version=MODERN, methods={"prompts/get": prompt})
    async with connected(server) as connection:
        with pytest.raises(
            BadResult, match="answered prompts/get with a task, which this request did not allow"
        ):
            await connection.get_prompt("p")
    assert server.requests_of("tasks/get") == []


# --- the task handle: a host that shows a task's progress itself ---------------------------


async def test_a_task_handle_shows_each_change_of_the_task_and_gives_the_final_result() -> None:
    wanted = {"k1": {"method": "elicitation/create", "params": form_params()}}
    done = {"content": [{"type": "text", "text": "deployed"}], "isError": False}
    server = task_server(
        task("t10", "working"),
        task("t10", "working", statusMessage="building"),
        task("t10", "working", statusMessage="building"),  # a poll that saw no change
        task("t10", "input_required", statusMessage="confirm?", inputRequests=wanted),
        task("t10", "working", statusMessage="rolling out"),
        task("t10", "completed", result=done),
    )
    async with connected(server) as connection, connection.watch_tool("long", {"env": "prod"}) as call:
        assert isinstance(call, TaskHandle)
        seen = [(t.status, t.status_message) async for t in call.updates()]
        result = await call.result()
        assert (call.done, call.task_id, call.status) == (True, "t10", "completed")
    assert seen == [
        ("working", None),
        ("working", "building"),
        ("input_required", "confirm?"),
        ("working", "rolling out"),
        ("completed", None),
    ]
    assert result.model_dump() == done
    assert server.requests_of("tools/call")[0]["arguments"] == {"env": "prod"}


async def test_a_task_handle_cancels_its_call_and_the_servers_task() -> None:
    server = task_server(task("t11", "working"))
    async with connected(server) as connection:
        async with connection.watch_tool("long") as call:
            async for state in call.updates():
                assert state.task_id == "t11"
                call.cancel()
            with pytest.raises(RemoteTaskCancelled, match="cancelled by this host"):
                await call.result()
        assert [c["taskId"] for c in server.requests_of("tasks/cancel")] == ["t11"]
        async with connection.watch_tool("long") as left, aclosing(left.updates()) as updates:
            await anext(updates)  # the task exists; the block ends before the call
        assert left.done and len(server.requests_of("tasks/cancel")) == 2


async def test_a_task_handle_of_a_direct_answer_has_no_task_and_the_result() -> None:
    async def quick(call: ToolCall) -> str:
        return "at once"

    server = FakeServer(protocol_version=MODERN, tools={"quick": quick})
    async with connected(server) as connection, connection.watch_tool("quick") as call:
        assert [t async for t in call.updates()] == []
        assert (await call.result()).text == "at once"
        assert (call.task, call.task_id, call.status, call.status_message) == (None, None, None, None)


async def test_without_the_extension_a_task_answer_is_invalid() -> None:
    async def start(call: ToolCall) -> dict[str, Any]:
        return {"resultType": "task", **task("t5", "working")}

    server = FakeServer(protocol_version=MODERN, tools={"long": start})
    async with connected(server, tasks_extension=False) as connection:
        with pytest.raises(BadResult, match="with a task"):
            await connection.call_tool("long")
        capabilities = (server.requests[0].meta or {})["io.modelcontextprotocol/clientCapabilities"]
        assert "extensions" not in capabilities


async def test_a_header_mismatch_makes_the_client_list_the_tools_and_try_once_more() -> None:
    refused: list[int] = []

    async def picky(call: ToolCall) -> str:
        if not refused:
            refused.append(1)
            raise RpcError(-32020, "mcp-param-region header does not match the body")
        return "ok"

    server = FakeServer(protocol_version=MODERN, tools={"picky": picky})
    async with connected(server) as connection:
        assert (await connection.call_tool("picky")).text == "ok"
    assert [r.method for r in server.requests] == [
        "server/discover",
        "tools/call",
        "tools/list",
        "tools/call",
    ]


# --- a server's text in the errors a host gets: escaped and cut ------------------------------------

EVIL = "\x1b[2J\x07\u202e" + "z" * 100_000


def shown_safely(message: str) -> None:
    """What a host may print as it is: every character printable, and short."""
    assert message.isprintable(), message[:300]
    assert len(message) < 2_000
    assert "\\x1b[2J\\x07\\u202e" in message  # the server's text is quoted, escaped


async def test_an_input_request_failure_quotes_the_servers_key_escaped_and_cut() -> None:
    async def bad(call: ToolCall) -> dict[str, Any]:
        return asks(EVIL, "sampling/createMessage", {"messages": [], "maxTokens": "many"})

    server = FakeServer(protocol_version=MODERN, tools={"bad": bad})
    async with connected(server) as connection:
        with pytest.raises(InputRequestFailed) as raised:
            await connection.call_tool("bad")
    shown_safely(str(raised.value))
    assert raised.value.key == EVIL  # the key itself, for the host's code


async def test_a_bad_tools_list_cursor_is_quoted_escaped_and_cut() -> None:
    async def pages(request: Request) -> dict[str, Any]:
        return {"tools": [], "nextCursor": EVIL}  # the same cursor again and again

    server = FakeServer(protocol_version=MODERN, methods={"tools/list": pages})
    async with connected(server) as connection:
        with pytest.raises(ProtocolError) as raised:
            await connection.list_tools()
    shown_safely(str(raised.value))


async def test_a_servers_version_list_is_quoted_escaped_and_cut() -> None:
    async def refuse(request: Request) -> dict[str, Any]:
        versions = [EVIL[:3_000]]  # an error's data over 4 KiB never leaves the server (it is dropped)
        raise RpcError(-32022, "Unsupported protocol version", {"supported": versions, "requested": MODERN})

    server = FakeServer(protocol_version=LEGACY, methods={"server/discover": refuse})
    async with server, Host(receiver()) as host:
        with pytest.raises(UnsupportedProtocolVersion) as raised:
            await host.connect("fake", server.transport)
    shown_safely(str(raised.value))


# --- task-augmented tools/call to a 2025-11-25 server (the tasks chapter, requestor side) -----

TOOL_TASKS: dict[str, Any] = {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}}


def legacy_task(task_id: str, status: str, **more: Any) -> dict[str, Any]:
    stamp = "2026-12-04T10:00:00Z"
    return {"taskId": task_id, "status": status, "createdAt": stamp, "lastUpdatedAt": stamp, **more}


def legacy_task_server(gets: list[dict[str, Any]], result: RpcError | dict[str, Any]) -> FakeServer:
    """A 2025-11-25 server whose tool ``long`` requires tasks: ``tasks/get`` answers ``gets`` in
    turn (the last one again and again), ``tasks/result`` answers ``result``."""

    async def tools(request: Request) -> dict[str, Any]:
        schema = {"type": "object"}
        return {"tools": [{"name": "long", "inputSchema": schema, "execution": {"taskSupport": "required"}}]}

    async def call(request: Request) -> dict[str, Any]:
        return {"task": gets[0]}

    async def get(request: Request) -> dict[str, Any]:
        return gets.pop(0) if len(gets) > 1 else gets[0]

    async def outcome(request: Request) -> dict[str, Any]:
        if isinstance(result, RpcError):
            raise result
        return result

    async def cancel(request: Request) -> dict[str, Any]:
        return legacy_task(gets[0]["taskId"], "cancelled")

    methods = {"tools/list": tools, "tools/call": call, "tasks/get": get, "tasks/result": outcome}
    return FakeServer(capabilities=TOOL_TASKS, methods={**methods, "tasks/cancel": cancel})


async def test_a_legacy_task_past_its_ttl_is_given_up_and_cancelled() -> None:
    server = legacy_task_server([legacy_task("L1", "working", ttl=300, pollInterval=20)], {"content": []})
    async with connected(server) as connection:
        with (
            anyio.fail_after(10),
            pytest.raises(RemoteTaskLost, match="did not finish within its ttl of 300 ms"),
        ):
            await connection.call_tool("long")
    assert server.requests_of("tools/call")[0]["task"] == {}
    assert [c["taskId"] for c in server.requests_of("tasks/cancel")] == ["L1"]
    assert server.requests_of("tasks/result") == []  # never input_required nor terminal


async def test_a_failed_legacy_task_raises_the_error_tasks_result_gives_and_is_not_cancelled() -> None:
    gets = [legacy_task("L2", "working", pollInterval=10), legacy_task("L2", "failed", pollInterval=10)]
    server = legacy_task_server(gets, RpcError(-32603, "the tool broke"))
    async with connected(server) as connection:
        with anyio.fail_after(10), pytest.raises(RpcError, match="the tool broke"):
            await connection.call_tool("long")
    assert server.requests_of("tasks/result") == [{"taskId": "L2"}]
    assert server.requests_of("tasks/cancel") == []


async def test_a_server_without_tool_tasks_is_never_asked_for_one() -> None:
    async def plain(call: ToolCall) -> str:
        return "plain"

    server = FakeServer(tools={"plain": plain})
    async with connected(server) as connection:
        with pytest.raises(
            ProtocolError, match=r"does not run tool calls as tasks .*tasks\.requests\.tools\.call"
        ):
            await connection.call_tool("plain", task=True)
        assert (await connection.call_tool("plain")).text == "plain"
    assert server.requests_of("tools/list") == []  # without the capability no definition is needed
    assert [p.get("task") for p in server.requests_of("tools/call")] == [None]
