"""Several servers on one host: their tasks stay apart, and one server's failure stays its own.

- Isolation: two servers connected at once (for HTTP, two MCP sessions on the
  same server process, whose ``task_ids`` tool sees both) ask about each
  other's tasks with ``probe_task``: -32602 for get/result/cancel, never listed.
- A server that dies mid-task ends its own connection, its task's provider
  call stops and its tasks are deleted, while another server goes on.
- Malformed frames from a server are logged and answered where JSON-RPC says
  so; the host keeps serving that same server.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from host_receiver.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ConnectionClosed
from host_receiver.transports.http import HttpTransport
from tests.fake_openai import Completion, FakeOpenAI
from tests.interop import HttpPeer, peer_command
from tests.interop.conftest import (
    FAKE_MODEL,
    Endpoint,
    Gate,
    HttpPeers,
    assert_task,
    call_report,
    fake_registry,
    make_endpoint,
    raw_server,
    running_host,
)

pytestmark = pytest.mark.anyio

FORM = {"type": "object", "properties": {"ok": {"type": "boolean", "default": True}}}


def assert_invisible(probe: dict[str, Any]) -> None:
    """What a server learns about a task that is not its own: nothing."""
    for method in ("get", "result", "cancel"):
        assert probe[method]["error"]["code"] == INVALID_PARAMS, probe
    assert probe["list"]["result"]["listed"] is False, probe


# --- isolation -----------------------------------------------------------------------


async def test_two_servers_cannot_see_each_others_tasks(endpoint: Endpoint) -> None:
    async with running_host(approver=Gate()) as h:  # never opened: A's sampling task stays working
        a = await h.connect("a", endpoint)
        b = await h.connect("b", endpoint)
        held = await call_report(a, "start_sample_task", {"prompt": "held"})
        done = await call_report(a, "elicit_task", {"message": "ok?", "schema": FORM})
        own_ids = [held["task"]["taskId"], done["task"]["taskId"]]
        if endpoint.kind == "http":  # one server process: it knows every id it was given
            known = await call_report(b, "task_ids", {})
            assert set(own_ids) <= set(known["task_ids"])

        for task_id in own_ids:
            probe = await call_report(
                b, "probe_task", {"task_id": task_id, "methods": "get,result,cancel,list"}
            )
            assert_invisible(probe)

        # B's cancel did nothing: A still sees its held task working, and both tasks listed.
        mine = await call_report(a, "probe_task", {"task_id": own_ids[0], "methods": "get,list"})
        assert_task(mine["get"]["result"], status="working")
        assert mine["list"]["result"] == {"listed": True, "count": 2}


async def test_servers_of_both_sdks_at_once_are_isolated(http_peers: HttpPeers) -> None:
    python = make_endpoint("python", "stdio", http_peers)
    typescript = make_endpoint("typescript", "http", http_peers)
    async with running_host() as h:
        py_server = await h.connect("py", python)
        ts_server = await h.connect("ts", typescript)
        with anyio.fail_after(60):  # both run their tasks at the same time
            async with anyio.create_task_group() as group:
                reports: dict[str, dict[str, Any]] = {}

                async def sample(name: str) -> None:
                    server = py_server if name == "py" else ts_server
                    reports[name] = await call_report(server, "sample_task", {"prompt": name})

                group.start_soon(sample, "py")
                group.start_soon(sample, "ts")
        assert reports["py"]["result"]["content"]["text"] == "echo: py"
        assert reports["ts"]["result"]["content"]["text"] == "echo: ts"
        for prober, owner in ((py_server, "ts"), (ts_server, "py")):
            task_id = reports[owner]["task"]["taskId"]
            probe = await call_report(
                prober, "probe_task", {"task_id": task_id, "methods": "get,result,cancel,list"}
            )
            assert_invisible(probe)


# --- a server that dies --------------------------------------------------------------------


async def test_a_server_dying_mid_task_ends_only_its_own_connection(
    endpoint: Endpoint, fake_openai: FakeOpenAI
) -> None:
    fake_openai.queue(Completion(delay=60))  # the doomed server's task: a model call in flight
    async with running_host(router=fake_registry(fake_openai)) as h:
        steady = await h.connect("steady", endpoint)
        doomed = await h.connect("doomed", raw_server("die"))
        started = await doomed.call_tool("start_task", {"prompt": "a long essay"})
        task_id = json.loads(started.text)["result"]["task"]["taskId"]
        assert await anyio.to_thread.run_sync(fake_openai.wait_for_requests, 1, 20.0)

        with pytest.raises(ConnectionClosed):
            await doomed.call_tool("die", {})
        await doomed.wait_closed()

        assert await anyio.to_thread.run_sync(fake_openai.wait_for_disconnect, 20.0)
        assert h.receiver.store.get(task_id) is None  # its tasks went with it

        report = await call_report(steady, "sample_task", {"prompt": "still there?"})
        assert report["result"]["content"]["text"] == Completion().text
        assert report["result"]["model"] == FAKE_MODEL
        assert not steady.closed and steady.error is None


async def test_a_killed_http_server_ends_its_connection(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(Completion(delay=60))
    peer = HttpPeer(peer_command("python"))
    try:
        async with running_host(router=fake_registry(fake_openai)) as h:
            server = await h.connect("doomed", HttpTransport(peer.url, default_retry=0.05, max_reconnects=1))
            await call_report(server, "start_sample_task", {"prompt": "a long essay"})
            assert await anyio.to_thread.run_sync(fake_openai.wait_for_requests, 1, 20.0)
            peer.process.kill()
            peer.process.wait()
            with anyio.fail_after(20):  # a bound against hanging, not a timing check
                await server.wait_closed()
            assert server.closed and "cannot be reached" in (server.closed_reason or "")
            assert await anyio.to_thread.run_sync(fake_openai.wait_for_disconnect, 20.0)
    finally:
        peer.stop()


# --- malformed frames ------------------------------------------------------------------------


async def test_malformed_frames_are_logged_and_the_host_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("WARNING", logger="host_receiver")
    async with running_host() as h:
        server = await h.connect("garbage", raw_server("garbage"))
        echoed = await server.call_tool("echo", {"text": "still here"})
        sampled = await server.call_tool("sample", {"prompt": "through the noise"})
        replies = json.loads((await server.call_tool("replies", {})).text)
        assert not server.closed

    assert echoed.text == "still here"
    answer = json.loads(sampled.text)
    assert answer["result"]["content"] == {"type": "text", "text": "echo: through the noise"}
    errors = [r for r in replies if "error" in r]
    # A malformed request with a readable id gets -32600 on that id; JSON that is no
    # message at all gets -32600 without an id, text that is no JSON -32700.
    assert {"id": "bad-1", "code": INVALID_REQUEST} in [
        {"id": r.get("id"), "code": r["error"]["code"]} for r in errors
    ]
    assert {"id": 99, "code": INVALID_REQUEST} in [
        {"id": r.get("id"), "code": r["error"]["code"]} for r in errors
    ]
    assert any(r["error"]["code"] == PARSE_ERROR and "id" not in r for r in errors)
    assert not any(r.get("id") == 424242 for r in replies)  # a stray response is never answered
    logged = [r.getMessage() for r in caplog.records]
    assert any("malformed message from garbage" in m for m in logged)
    assert any("unknown request id 424242" in m for m in logged)
