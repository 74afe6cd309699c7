"""The dual-era client against in-memory servers of either era: agreement, input rounds, bad input.

The server side is ``host_receiver.testing.FakeServer`` (a modern one checks
every request's envelope); every request the host sends to a modern server is
validated against the 2026-07-28 schema. The same rules against the real
SDK peers are in tests/interop/test_modern_era.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from host_receiver import (
    AutoApprove,
    BadResult,
    DenyAll,
    ElicitationService,
    ElicitResult,
    Era,
    FillDefaults,
    FormView,
    Host,
    InputRequestFailed,
    InputRoundsExceeded,
    MissingCapability,
    ProtocolError,
    Receiver,
    RemoteTask,
    RemoteTaskLost,
    RpcError,
    SamplingService,
    ServerConnection,
    UnsupportedProtocolVersion,
    UrlAnswer,
    UrlView,
)
from host_receiver.protocol.errors import INVALID_PARAMS, USER_REJECTED
from host_receiver.protocol.jsonrpc import Request
from host_receiver.protocol.modern import TASKS_EXTENSION
from host_receiver.testing import FakeServer, ToolCall
from providers import EchoProvider, ProviderRegistry
from tests.receiver_harness import form_params, sampling_params
from tests.schema import validate_modern_request

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
    async with server, Host(host_receiver or receiver(), **options) as host:
        yield await host.connect("fake", server.transport)
    for request in server.requests:
        if server.modern:
            validate_modern_request(
                {"jsonrpc": "2.0", "id": 1, "method": request.method, "params": request.params}
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


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


# --- agreement (basic-versioning.mdx) ----------------------------------------------


async def test_auto_speaks_modern_to_a_modern_server_after_discover_and_stamps_every_request() -> None:
    async def whoami(call: ToolCall) -> str:
        return "hi"

    server = FakeServer(protocol_version=MODERN, tools={"whoami": whoami})
    async with connected(server) as connection:
        assert (connection.era, connection.protocol_version) == (Era.MODERN, MODERN)
        assert connection.server_info.name == "fake-server"
        assert text(await connection.call_tool("whoami")) == "hi"
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
            server.transport, receiver=host.receiver, name="fake", discover_timeout=0.2
        )
        async with host_connection as connection:
            assert connection.era is Era.LEGACY
    with anyio.fail_after(5):
        await abandoned.wait()  # the silent probe was abandoned, and the server told


@pytest.mark.parametrize("protocol", [MODERN, LEGACY])
async def test_a_forced_version_is_spoken_or_fails_clearly(protocol: str) -> None:
    other = LEGACY if protocol == MODERN else MODERN
    async with FakeServer(protocol_version=other) as server, Host(receiver(), protocol=protocol) as host:
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
    assert text(result) == "got {'action': 'accept', 'content': {'name': 'Ada'}}"
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
        return text({"content": [{"text": call.input_responses["llm"]["content"]["text"]}]})

    server = FakeServer(protocol_version=MODERN, tools={"ask": ask})
    async with connected(server) as connection:
        assert text(await connection.call_tool("ask")) == "echo: capital of France?"
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
        assert text(await connection.call_tool("ask")) == "a,b"


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
        assert text(await connection.call_tool("ask")) == "{'form': {'action': 'decline'}}"


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
        assert text(await connection.call_tool("ask")) == "{'roots': [{'uri': 'file:///srv/notes'}]}"
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
    async with connected(server, receiver(elicitation=ElicitationService(Person()))) as connection:

        async def one(tag: str) -> None:
            results[tag] = text(await connection.call_tool("echo_state", {"tag": tag}))

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
        assert got["description"] == "{'action': 'accept', 'content': {'name': 'Ada'}}"
        read = await connection.read_resource("ask://x")
        assert read["contents"] == [{"uri": "ask://x", "text": "r1"}]


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
    ("neither requests nor state", IR, "needs inputRequests or requestState"),
    ("an unknown resultType", {"resultType": "maybe", "content": []}, "resultType 'maybe' is not one this"),
]


@pytest.mark.parametrize(("result", "words"), [pytest.param(r, w, id=i) for i, r, w in BAD_RESULTS])
async def test_a_malformed_result_fails_that_call_clearly_and_the_connection_serves_on(
    result: dict[str, Any], words: str
) -> None:
    async def bad(call: ToolCall) -> dict[str, Any]:
        return result

    async def good(call: ToolCall) -> str:
        return "fine"

    server = FakeServer(protocol_version=MODERN, tools={"bad": bad, "good": good})
    async with connected(server) as connection:
        with pytest.raises(BadResult, match=words.replace("[", r"\[").replace("(", r"\(")):
            await connection.call_tool("bad")
        assert text(await connection.call_tool("good")) == "fine"
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


async def test_a_task_result_is_followed_to_its_end_answering_its_input_with_tasks_update() -> None:
    updates: list[dict[str, Any]] = []
    wanted = {"k1": {"method": "sampling/createMessage", "params": sampling_params("hi")}}
    done = {"content": [{"type": "text", "text": "done"}], "isError": False}
    states = iter(
        [
            task("t1", "working"),
            task("t1", "input_required", inputRequests=wanted),
            task("t1", "input_required", inputRequests=wanted),
            task("t1", "completed", result=done),
        ]
    )

    async def start(call: ToolCall) -> dict[str, Any]:
        return {"resultType": "task", **task("t1", "working")}

    async def get(request: Request) -> dict[str, Any]:
        return {"resultType": "complete", **next(states)}

    async def update(request: Request) -> dict[str, Any]:
        updates.append(request.params or {})
        return {"resultType": "complete"}

    seen: list[str] = []

    async def observe(remote: RemoteTask) -> None:
        seen.append(remote.status)

    server = FakeServer(
        protocol_version=MODERN, tools={"long": start}, methods={"tasks/get": get, "tasks/update": update}
    )
    async with connected(server) as connection:
        result = await connection.call_tool("long", on_task=observe)
    assert result == {"content": [{"type": "text", "text": "done"}], "isError": False}
    assert seen == ["working", "working", "input_required", "input_required", "completed"]
    (update,) = updates  # the repeated input request (same key) was not answered twice
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

    server = FakeServer(
        protocol_version=MODERN, tools={"fails": fails, "vanishes": vanishes}, methods={"tasks/get": get}
    )
    async with connected(server) as connection:
        with pytest.raises(RpcError, match="boom"):
            await connection.call_tool("fails")
        with pytest.raises(RemoteTaskLost, match="no longer knows task t4"):
            await connection.call_tool("vanishes")


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
        assert text(await connection.call_tool("picky")) == "ok"
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
