"""host-receiver against 2026-07-28 servers: mcp 2.3.0 (input rounds) and fastmcp-tasks (the tasks extension).

The peers are real processes (tests/interop/peers/py2_server.py on mcp 2.3.0
over stdio, stateful and stateless Streamable HTTP; fastmcp_server.py on
fastmcp 4.1.4 + fastmcp-tasks), driven through a real ``Host``. Each test
asserts what the SERVER received (its tools return a report of every request
of a call: inputResponses, requestState, _meta, headers). On a clean exit
every message the host sent is validated against the 2026-07-28 schema
(``running_host``). docs/peers-modern.md has the wire facts these rest on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver import DenyAll, FormView, RemoteTask, ServerConnection, UrlAnswer, UrlView
from host_receiver.client.options import ConnectionOptions
from host_receiver.errors import (
    USER_REJECTED,
    InputRequestFailed,
    InputRoundsExceeded,
    MissingCapability,
    RemoteTaskCancelled,
    RpcError,
)
from host_receiver.protocol.results import CallToolResult
from host_receiver.protocol.types import ElicitResult
from host_receiver.protocol.versions import Era
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport
from tests.cli.test_terminal import HOST
from tests.interop import FASTMCP_SERVER, PY2_SERVER, everything_command, http_server, peer_python
from tests.interop.conftest import RecordingTransport, WireLog, running_host

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


# --- peers ---------------------------------------------------------------------------


@dataclass
class ModernPeers:
    """HTTP peers started on first use, one process per (peer, mode), stopped at session end."""

    _running: dict[tuple[str, str], Any] = field(default_factory=dict)
    _urls: dict[tuple[str, str], str] = field(default_factory=dict)

    def url(self, peer: str, mode: str) -> str:
        key = (peer, mode)
        if key not in self._urls:
            python, script = _peer(peer)
            context = http_server([str(python), str(script), "--port", "0", "--http", mode])
            self._urls[key] = context.__enter__()
            self._running[key] = context
        return self._urls[key]

    def stop(self) -> None:
        for context in self._running.values():
            context.__exit__(None, None, None)


def _peer(peer: str) -> tuple[Any, Any]:
    return (peer_python("py2"), PY2_SERVER) if peer == "py2" else (peer_python("fastmcp"), FASTMCP_SERVER)


@pytest.fixture(scope="module")
def modern_peers() -> Iterator[ModernPeers]:
    peers = ModernPeers()
    yield peers
    peers.stop()


def transport(peer: str, kind: str, peers: ModernPeers) -> StdioTransport | HttpTransport:
    if kind == "stdio":
        python, script = _peer(peer)
        return StdioTransport(str(python), [str(script)], name=f"{peer}-stdio")
    return HttpTransport(peers.url(peer, kind))


def report_of(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result
    report: dict[str, Any] = json.loads(result.text)
    return report


class Forms:
    """A person at the form: fills ``name`` (and remembers what was asked)."""

    def __init__(self, name: str = "Grace", hold: anyio.Event | None = None, expect: int = 0) -> None:
        self.name = name
        self.hold = hold
        self.asked: list[str] = []
        self.urls: list[UrlView] = []
        #: Set once ``expect`` forms have been asked for.
        self.all_asked = anyio.Event()
        self.expect = expect

    async def fill_form(self, view: FormView) -> ElicitResult:
        self.asked.append(view.message)
        if len(self.asked) == self.expect:
            self.all_asked.set()
        if self.hold is not None:
            await self.hold.wait()
        strings = {f.name: self.name for f in view.schema.fields if f.kind == "string"}
        return ElicitResult(action="accept", content={**view.values, **strings})

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        self.urls.append(view)
        return "accept"


TRANSPORTS = ["stdio", "stateful", "stateless"]


# --- versioning: the era is found, and every request carries the envelope -------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_a_modern_server_is_spoken_to_in_its_era_with_the_envelope_and_headers(
    kind: str, modern_peers: ModernPeers
) -> None:
    async with running_host(ui=Forms()) as h:
        server = await h.connect("py2", transport("py2", kind, modern_peers))
        assert (server.era, server.protocol_version) == (Era.MODERN, MODERN)
        report = report_of(await server.call_tool("whoami", {"tag": f"who-{kind}"}))
    assert report["era"] == "modern" and report["protocol_version"] == MODERN
    assert report["client_info"]["name"] == "host-receiver"
    capabilities = report["client_capabilities"]
    assert capabilities["elicitation"] == {"form": {}, "url": {}}
    assert capabilities["sampling"] == {"tools": {}}
    assert capabilities["extensions"] == {TASKS: {}}
    assert "tasks" not in capabilities  # no client-hosted tasks in 2026-07-28
    sent = [m["method"] for m in h.wires["py2"].sent if "method" in m]
    assert sent[0] == "server/discover" and "initialize" not in sent
    if kind != "stdio":
        headers = report["headers"]
        assert (headers["mcp-protocol-version"], headers["mcp-method"], headers["mcp-name"]) == (
            MODERN,
            "tools/call",
            "whoami",
        )
        assert "mcp-session-id" not in headers


async def test_a_slow_starting_modern_server_that_misses_the_probe_is_still_spoken_to_in_its_era(
    modern_peers: ModernPeers,
) -> None:
    """fastmcp takes seconds to start: with a probe timeout shorter than that (here 10 ms; under
    load 10 s was not enough), the fallback's initialize reaches a modern-only server, which
    refuses it with -32022 naming 2026-07-28. That modern error makes the connection modern."""
    async with running_host(ui=Forms("Ada")) as h:
        log = h.wires["fastmcp"] = WireLog("fastmcp")
        recorded = RecordingTransport(transport("fastmcp", "stdio", modern_peers), log)
        quick = ConnectionOptions(discover_timeout=0.01)
        opened = ServerConnection.connect(recorded, quick, receiver=h.receiver, name="fastmcp")
        async with opened as server:
            log.agreed(server.era.value)
            assert (server.era, server.protocol_version) == (Era.MODERN, MODERN)
            report = report_of(await server.call_tool("mrtr_form", {"tag": "slow-start"}))
    assert report["protocol_version"] == MODERN
    assert report["elicitation"]["content"]["name"] == "Ada"
    sent = [m["method"] for m in log.sent if "method" in m and "id" in m]
    assert sent[:3] == ["server/discover", "initialize", "server/discover"]
    (initialize,) = [m for m in log.sent if m.get("method") == "initialize"]
    (refused,) = [m for m in log.received if m.get("id") == initialize["id"] and "method" not in m]
    assert refused["error"]["code"] == -32022 and refused["error"]["data"]["supported"] == [MODERN]


async def test_the_legacy_handshake_is_spoken_when_asked_and_the_server_pushes() -> None:
    async with running_host(ui=Forms(), options=ConnectionOptions(protocol="2025-11-25")) as h:
        server = await h.connect("py2", transport("py2", "stdio", ModernPeers()))
        assert server.era is Era.LEGACY
        report = report_of(await server.call_tool("elicit_form", {"tag": "legacy"}))
    assert report["era"] == "legacy"
    assert report["elicitation"]["content"]["name"] == "Grace"
    assert h.wires["py2"].requests_received("elicitation/create")  # pushed mid-call, legacy style


@pytest.mark.parametrize(
    "notification",
    [
        pytest.param({"jsonrpc": "2.0", "method": "notifications/initialized"}, id="initialized"),
        pytest.param(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "no id"}},
            id="cancelled-without-requestId",
        ),
    ],
)
def test_the_wire_check_holds_a_modern_connections_notifications_to_the_2026_schema(
    notification: dict[str, Any],
) -> None:
    """Each is valid in 2025-11-25 and not in 2026-07-28: the check must judge it by the era."""
    legacy, modern = WireLog("legacy"), WireLog("modern")
    for log, era in ((legacy, "legacy"), (modern, "modern")):
        log.agreed(era)
        log.record_sent(notification)
    assert legacy.check() == 1
    with pytest.raises(AssertionError, match="host sent an invalid message"):
        modern.check()


# --- input rounds (basic-patterns-mrtr.mdx) ----------------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_an_elicitation_round_is_answered_through_the_form(
    kind: str, modern_peers: ModernPeers
) -> None:
    forms = Forms("Ada")
    async with running_host(ui=forms) as h:
        server = await h.connect("py2", transport("py2", kind, modern_peers))
        report = report_of(await server.call_tool("elicit_form", {"tag": f"form-{kind}"}))
    assert forms.asked == ["Who are you?"]
    assert report["elicitation"] == {
        "action": "accept",
        "content": {"name": "Ada", "age": 42, "subscribe": False},
    }
    first, retry = report["rounds"]
    assert first["request_id"] != retry["request_id"]  # a new JSON-RPC id
    assert (first["request_state"], retry["request_state"]) == (False, True)  # the state came back
    assert list(retry["input_responses"]) == ["__main__:ask_person"]  # under the server's own key


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_two_rounds_in_a_row_form_then_sampling(kind: str, modern_peers: ModernPeers) -> None:
    async with running_host(ui=Forms("Lin")) as h:
        server = await h.connect("py2", transport("py2", kind, modern_peers))
        report = report_of(await server.call_tool("elicit_then_sample", {"tag": f"two-{kind}"}))
    assert report["elicitation"]["content"]["name"] == "Lin"
    assert report["sampling"]["model"] == "echo-offline"
    assert report["sampling"]["content"]["text"] == "echo: Write one line greeting Lin."
    assert [sorted(r["input_responses"] or {}) for r in report["rounds"]] == [
        [],
        ["__main__:ask_person"],
        ["__main__:llm_after_form"],
    ]  # each retry carried only its own round


async def test_a_sampling_round_with_tools_and_a_roots_round(modern_peers: ModernPeers) -> None:
    roots = {"roots": ["file:///srv/project"]}
    async with running_host(receiver_options=roots) as h:
        server = await h.connect("py2", transport("py2", "stdio", modern_peers))
        tools = report_of(await server.call_tool("sample_tools", {"prompt": "weather?", "tag": "st"}))
        listed = report_of(await server.call_tool("list_roots", {"tag": "roots"}))
    content = tools["sampling"]["content"]
    blocks = content if isinstance(content, list) else [content]
    calls = [b for b in blocks if b["type"] == "tool_use"]
    assert [c["name"] for c in calls] == ["get_weather"]  # the echo provider calls the offered tool
    assert tools["sampling"]["stopReason"] == "toolUse"
    assert listed["roots"] == {"roots": [{"uri": "file:///srv/project"}]}
    assert listed["client_capabilities"]["roots"] == {}


async def test_a_url_round_is_consented_and_opened(modern_peers: ModernPeers) -> None:
    opened: list[str] = []
    forms = Forms()

    def opener(url: str) -> bool:
        opened.append(url)
        return True

    async with running_host(ui=forms, opener=opener) as h:
        server = await h.connect("py2", transport("py2", "stdio", modern_peers))
        report = report_of(await server.call_tool("elicit_url", {"tag": "url"}))
    assert report["elicitation"] == {"action": "accept"}
    (view,) = forms.urls
    assert view.elicitation_id is None and view.url == "https://example.com/connect"
    assert opened == ["https://example.com/connect"]


async def test_without_the_url_mode_the_server_names_the_missing_capability(
    modern_peers: ModernPeers,
) -> None:
    async with running_host(receiver_options={"elicitation_modes": ("form",)}) as h:
        server = await h.connect("py2", transport("py2", "stdio", modern_peers))
        with pytest.raises(MissingCapability, match=r"elicitation\.url"):
            await server.call_tool("elicit_url", {"tag": "no-url"})
        assert report_of(await server.call_tool("whoami", {"tag": "still"}))["era"] == "modern"


async def test_a_declined_form_goes_back_and_state_only_rounds_are_retried(modern_peers: ModernPeers) -> None:
    async with running_host() as h:  # FillDefaults declines a form whose required name has no default
        server = await h.connect("py2", transport("py2", "stdio", modern_peers))
        declined = report_of(await server.call_tool("elicit_form", {"tag": "decline"}))
        legs = report_of(await server.call_tool("state_only", {"n": 2, "tag": "state"}))
    assert declined["elicitation"] == {"action": "decline"}
    assert declined["rounds"][1]["input_responses"] == {"__main__:ask_person": {"action": "decline"}}
    assert [r["request_state"] for r in legs["rounds"]] == [False, True, True]
    assert all(not r["input_responses"] for r in legs["rounds"])


async def test_a_refused_sampling_ends_the_call_and_nothing_is_sent(modern_peers: ModernPeers) -> None:
    async with running_host(approver=DenyAll()) as h:
        server = await h.connect("py2", transport("py2", "stdio", modern_peers))
        with pytest.raises(InputRequestFailed) as raised:
            await server.call_tool("sample", {"prompt": "no", "tag": "refused"})
    assert raised.value.code == USER_REJECTED
    calls = [m for m in h.wires["py2"].sent if m.get("method") == "tools/call"]
    assert len(calls) == 1  # no retry carrying an error


async def test_the_round_cap_ends_a_server_that_keeps_asking(modern_peers: ModernPeers) -> None:
    async with running_host(ui=Forms(), options=ConnectionOptions(max_input_rounds=3)) as h:
        server = await h.connect("py2", transport("py2", "stdio", modern_peers))
        done = report_of(await server.call_tool("rounds", {"n": 3, "tag": "cap-ok"}))
        with pytest.raises(InputRoundsExceeded, match="more than 3 times"):
            await server.call_tool("rounds", {"n": 4, "tag": "cap-over"})
    assert done["answered"] == 3


async def test_prompts_and_resources_take_their_input_rounds(modern_peers: ModernPeers) -> None:
    async with running_host(ui=Forms()) as h:
        server = await h.connect("py2", transport("py2", "stateless", modern_peers))
        prompt = await server.get_prompt("ask_prompt", {"tag": "prompt"})
        resource = await server.read_resource("ask://weather")
    assert "Grace" in prompt.model_dump_json()
    assert "weather" in resource.model_dump_json() and resource.result_type in (None, "complete")


@pytest.mark.parametrize("kind", ["stdio", "stateless"])
async def test_cancelling_a_call_cancels_it_on_the_server(kind: str, modern_peers: ModernPeers) -> None:
    tag = f"cancel-{kind}"
    async with running_host() as h:
        server = await h.connect("py2", transport("py2", kind, modern_peers))
        with anyio.move_on_after(0.8):
            await server.call_tool("slow", {"seconds": 10, "tag": tag})
        with anyio.fail_after(10):
            while True:  # the server notices the cancellation on its own schedule
                events = json.loads((await server.call_tool("events", {"tag": tag})).text)
                if events["events"]:
                    break
                await anyio.sleep(0.1)
    assert [e["event"] for e in events["events"]] == ["cancelled"]
    cancels = h.wires["py2"].notifications_sent("notifications/cancelled")
    assert bool(cancels) == (kind == "stdio")  # over HTTP, closing the stream is the cancellation


async def test_fifty_calls_in_flight_at_once_never_mix_their_rounds(modern_peers: ModernPeers) -> None:
    hold = anyio.Event()
    forms = Forms(hold=hold, expect=50)
    results: dict[int, dict[str, Any]] = {}
    async with running_host(ui=forms, max_waiting=50) as h:  # above the default cap of 32
        server = await h.connect("py2", transport("py2", "stateless", modern_peers))

        async def call(n: int) -> None:
            results[n] = report_of(
                await server.call_tool("elicit_form", {"tag": f"many-{n}", "message": f"m{n}"})
            )

        async with anyio.create_task_group() as group:
            for n in range(50):
                group.start_soon(call, n)
            with anyio.fail_after(30):
                await forms.all_asked.wait()  # all fifty wait for the person at once
            hold.set()
    assert sorted(forms.asked) == sorted(f"m{n}" for n in range(50))
    for report in results.values():
        first, retry = report["rounds"]  # rounds are kept per (tool, arguments): this call's own
        assert first["request_state"] is False and retry["request_state"] is True
        assert retry["input_responses"]["__main__:ask_person"]["content"]["name"] == "Grace"
        assert report["elicitation"]["content"]["name"] == "Grace"
    assert len({tuple(r["request_id"] for r in rep["rounds"]) for rep in results.values()}) == 50


# --- the tasks extension (fastmcp-tasks) --------------------------------------------------


@pytest.mark.parametrize("kind", ["stdio", "stateless"])
async def test_a_task_asking_a_form_then_an_llm_is_followed_to_its_result(
    kind: str, modern_peers: ModernPeers
) -> None:
    seen: list[str] = []

    async def observe(task: RemoteTask) -> None:
        seen.append(task.status)

    async with running_host(ui=Forms("Kay")) as h:
        server = await h.connect("fastmcp", transport("fastmcp", kind, modern_peers))
        result = await server.call_tool("task_form_then_llm", {"tag": f"task-{kind}"}, on_task=observe)
    report = report_of(result)
    assert report["background_task"] is True
    assert report["first"] == {"form": {"action": "accept", "content": {"name": "Kay", "age": 42}}}
    assert report["input_responses"]["llm"]["model"] == "echo-offline"
    assert seen[0] == "working" and seen[-1] == "completed" and "input_required" in seen
    methods = [r["method"] for r in report["requests"]]
    assert methods.count("tasks/update") == 2  # one per step, each answered once
    for request in report["requests"]:
        capabilities = request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        assert capabilities["extensions"] == {TASKS: {}}  # declared on every request


@pytest.mark.parametrize("kind", ["stdio", "stateless"])
async def test_a_server_that_refuses_subscriptions_listen_has_its_task_polled(
    kind: str, modern_peers: ModernPeers
) -> None:
    """fastmcp-tasks advertises the extension but answers ``subscriptions/listen`` -32601: the
    subscription for the task is tried once, and the task is polled to its end."""
    async with running_host() as h:
        server = await h.connect("fastmcp", transport("fastmcp", kind, modern_peers))
        result = await server.call_tool("task_slow", {"seconds": 1, "tag": f"listen-{kind}"})
    assert report_of(result)["background_task"] is True
    wire = h.wires["fastmcp"]
    (listen,) = [m for m in wire.sent if m.get("method") == "subscriptions/listen"]
    polls = [m["params"]["taskId"] for m in wire.sent if m.get("method") == "tasks/get"]
    assert polls and listen["params"]["notifications"] == {"taskIds": [polls[0]]}
    (answer,) = [m for m in wire.received if m.get("id") == listen["id"] and "method" not in m]
    assert answer["error"]["code"] == -32601


async def test_a_failed_task_raises_and_a_tool_error_is_a_result(modern_peers: ModernPeers) -> None:
    async with running_host() as h:
        server = await h.connect("fastmcp", transport("fastmcp", "stdio", modern_peers))
        with pytest.raises(RpcError, match="task_fail always fails") as raised:
            await server.call_tool("task_fail", {"tag": "fail"})
        tool_error = await server.call_tool("task_tool_error", {"tag": "tool-error"})
    assert raised.value.code == -32603
    assert tool_error.is_error is True


async def test_cancelling_a_call_cancels_its_task(modern_peers: ModernPeers) -> None:
    async with running_host() as h:
        server = await h.connect("fastmcp", transport("fastmcp", "stdio", modern_peers))
        with anyio.move_on_after(1.0):
            await server.call_tool("task_slow", {"seconds": 30, "tag": "slow-cancel"})
        # fastmcp-tasks cancels through its docket worker: once over 10 s in CI on 2 busy cores;
        # still well under the task's 30 s, so a task that was never cancelled cannot pass.
        with anyio.fail_after(25):
            while True:
                events = json.loads((await server.call_tool("events", {"tag": "slow-cancel"})).text)
                if any(e.get("event") == "cancelled" for e in events["events"]):
                    break
                await anyio.sleep(0.1)
    assert "tasks/cancel" in [r["method"] for r in events["requests"]]


async def test_a_task_handle_watches_a_real_task_and_cancels_another(modern_peers: ModernPeers) -> None:
    async with running_host(ui=Forms("Kay")) as h:
        server = await h.connect("fastmcp", transport("fastmcp", "stdio", modern_peers))
        async with server.watch_tool("task_form_then_llm", {"tag": "handle"}) as call:
            statuses = [t.status async for t in call.updates()]
            report = report_of(await call.result())
        async with server.watch_tool("task_slow", {"seconds": 30, "tag": "handle-cancel"}) as slow:
            async with aclosing(slow.updates()) as updates:
                assert (await anext(updates)).status == "working"
            slow.cancel()
            with pytest.raises(RemoteTaskCancelled, match="cancelled by this host"):
                await slow.result()
        # fastmcp-tasks cancels through its docket worker: once over 10 s in CI on 2 busy cores;
        # still well under the task's 30 s, so a task that was never cancelled cannot pass.
        with anyio.fail_after(25):
            while True:  # the server notices the cancellation on its own schedule
                reply = await server.call_tool("events", {"tag": "handle-cancel"})
                events = json.loads(reply.text)
                if any(e.get("event") == "cancelled" for e in events["events"]):
                    break
                await anyio.sleep(0.1)
    assert call.task_id is not None and call.status == "completed"
    assert statuses[0] == "working" and statuses[-1] == "completed" and "input_required" in statuses
    assert report["first"]["form"]["content"]["name"] == "Kay"
    assert "tasks/cancel" in [r["method"] for r in events["requests"]]


async def test_without_the_extension_a_task_tool_names_what_is_missing(modern_peers: ModernPeers) -> None:
    async with running_host(options=ConnectionOptions(tasks_extension=False)) as h:
        server = await h.connect("fastmcp", transport("fastmcp", "stdio", modern_peers))
        with pytest.raises(MissingCapability, match=r"extensions\.io\.modelcontextprotocol/tasks"):
            await server.call_tool("task_form", {"tag": "no-ext"})


# --- the CLI contract -------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``host-receiver --log-level INFO run --approve auto --elicit defaults ARGS``, output captured."""
    command = [str(HOST), "--log-level", "INFO", "run", "--approve", "auto", "--elicit", "defaults", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)


def over_stdio(peer: str) -> list[str]:
    """``-- PYTHON SCRIPT``: the peer as the CLI's stdio server."""
    python, script = _peer(peer)
    return ["--", str(python), str(script)]


def final_result(done: subprocess.CompletedProcess[str]) -> CallToolResult:
    """The CallToolResult the CLI printed: one JSON line, never an input_required or task result."""
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result.get("resultType", "complete") == "complete", result
    assert not {"inputRequests", "requestState", "taskId", "status"} & set(result), result
    return CallToolResult.model_validate(result)


def test_the_cli_prints_the_final_result_of_a_stateless_modern_server(modern_peers: ModernPeers) -> None:
    url = modern_peers.url("py2", "stateless")
    result = final_result(cli("--call", "elicit_then_sample", "--args", '{"tag": "cli"}', "--url", url))
    assert report_of(result)["sampling"]["model"] == "echo-offline"


def test_the_cli_prints_the_final_result_over_stdio_and_logs_the_era_once() -> None:
    done = cli("--call", "elicit_then_sample", "--args", '{"tag": "cli-stdio"}', *over_stdio("py2"))
    report = report_of(final_result(done))
    assert (report["era"], report["sampling"]["model"]) == ("modern", "echo-offline")
    connected = [line for line in done.stderr.splitlines() if "connected to" in line]
    assert len(connected) == 1 and "(protocol 2026-07-28, modern)" in connected[0], done.stderr


def test_the_cli_prints_the_final_result_of_a_task_never_the_task() -> None:
    done = cli("--call", "task_form_then_llm", "--args", '{"tag": "cli-task"}', *over_stdio("fastmcp"))
    report = report_of(final_result(done))
    assert report["background_task"] is True  # it ran as a task of the extension
    assert report["sampling"]["model"] == "echo-offline"


def test_the_cli_round_cap_ends_a_two_round_tool_clearly() -> None:
    done = cli("--max-input-rounds", "1", "--call", "rounds", "--args", '{"n": 2}', *over_stdio("py2"))
    assert done.returncode == 2 and done.stdout == ""
    assert "rounds failed: the server asked for input on tools/call more than 1 time in a row" in done.stderr
    with_two = cli("--max-input-rounds", "2", "--call", "rounds", "--args", '{"n": 2}', *over_stdio("py2"))
    assert report_of(final_result(with_two))["answered"] == 2


def test_the_cli_without_the_tasks_extension_names_what_a_task_tool_misses() -> None:
    done = cli("--no-tasks-extension", "--call", "task_form", *over_stdio("fastmcp"))
    assert done.returncode == 2 and done.stdout == ""
    assert "extensions.io.modelcontextprotocol/tasks" in done.stderr


def test_the_cli_offers_its_roots(tmp_path: Path) -> None:
    done = cli(
        "--root", str(tmp_path), "--call", "list_roots", "--args", '{"tag": "cli-roots"}', *over_stdio("py2")
    )
    assert report_of(final_result(done))["roots"] == {"roots": [{"uri": tmp_path.resolve().as_uri()}]}


def test_the_cli_speaks_the_legacy_era_when_asked() -> None:
    done = cli(
        "--protocol", "2025-11-25", "--call", "whoami", "--args", '{"tag": "cli-legacy"}', *over_stdio("py2")
    )
    assert report_of(final_result(done))["era"] == "legacy"
    assert "(protocol 2025-11-25, legacy)" in done.stderr


def test_the_cli_says_clearly_when_a_legacy_server_is_forced_modern() -> None:
    from tests.interop import peer_command

    legacy = peer_command("python")
    done = subprocess.run(
        [str(HOST), "run", "--protocol", MODERN, "--approve", "auto", "--call", "whoami", "--", *legacy.argv],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=None,
    )  # fmt: skip
    assert done.returncode == 2
    assert "does not speak MCP 2026-07-28" in done.stderr and "'auto'" in done.stderr
    assert sys.executable  # the legacy peer ran on its own venv


# --- legacy peers: found legacy after the probe, and served as before ----------------------


def everything() -> StdioTransport:
    """The reference server-everything (TS SDK 1.32, 2025-11-25) over stdio."""
    node, *args = everything_command()
    return StdioTransport(node, args, name="everything")


async def test_server_everything_is_found_legacy_and_its_async_tools_get_client_hosted_tasks() -> None:
    async with running_host() as h:
        server = await h.connect("everything", everything())
        assert (server.era, server.protocol_version) == (Era.LEGACY, "2025-11-25")
        with anyio.fail_after(10):  # it registers the task tools once it has seen our capabilities
            await h.wires["everything"].notified("notifications/tools/list_changed")
        assert "trigger-sampling-request-async" in [t.name for t in await server.list_tools()]
        result = await server.call_tool(
            "trigger-sampling-request-async", {"prompt": "hello", "maxTokens": 20}
        )
    assert not result.is_error, result
    assert "echo: Resource trigger-sampling-request-async context: hello" in result.model_dump_json()
    wire = h.wires["everything"]
    sent = [m["method"] for m in wire.sent if "method" in m and "id" in m]
    assert sent[:2] == ["server/discover", "initialize"]  # the probe, then the handshake
    (pushed,) = wire.requests_received("sampling/createMessage")
    assert pushed["params"]["task"] == {"ttl": 300000}  # task-augmented: served as a client-hosted task
    assert wire.requests_received("tasks/get") and wire.requests_received("tasks/result")
