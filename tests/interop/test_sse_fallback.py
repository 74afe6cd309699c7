"""The HTTP+SSE transport of 2024-11-05 as the fallback of a URL (2026-07-28 streamable-http.mdx,
"Backward Compatibility"), against mcp 1.30's SSE server (tests/interop/peers/py_task_server.py
``--sse``) and the TypeScript SDK 1.32's (server-everything ``sse``): found through the library
and the CLI, then served through the same pipeline (elicitation, sampling, a task-augmented tool
call)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import time
from collections.abc import Iterator

import anyio
import pytest

from host_receiver.client.connection import ClientConnection
from host_receiver.client.options import ConnectionOptions
from host_receiver.errors import HttpStatusError, UnsupportedProtocolVersion
from host_receiver.protocol.versions import Era
from host_receiver.transports.http import HttpTransport
from tests.cli.test_terminal import HOST
from tests.interop import everything_command, http_server
from tests.interop.conftest import running_host
from tests.interop.test_tool_tasks import Answers, task_peer_argv

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    with http_server([*task_peer_argv(), "--sse"]) as url:
        yield url


async def test_a_url_of_an_sse_server_falls_back_and_serves_forms_and_sampling(sse_url: str) -> None:
    async with running_host(ui=Answers(topic="tides")) as h:
        server = await h.host.connect_url("old", sse_url)
        assert server.era is Era.LEGACY
        with anyio.fail_after(30):
            plain = await server.call_tool("ask")
            tasked = await server.call_tool("research")  # taskSupport "required": a task, over SSE
    assert plain.text == "topic: tides; summary: echo: summarise tides"
    assert tasked.text.startswith("topic: tides; summary: ")


async def test_a_url_found_to_serve_sse_is_reached_over_sse_at_once_the_next_time(
    sse_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="host_receiver")
    async with running_host(ui=Answers(topic="tides")) as h:
        first = await h.host.connect_url("first", sse_url)
        second = await h.host.connect_url("second", sse_url)
        with anyio.fail_after(30):
            answer = await second.call_tool("ask")
    assert first.era is second.era is Era.LEGACY
    assert answer.text == "topic: tides; summary: echo: summarise tides"
    fell_back = [r for r in caplog.records if "trying the HTTP+SSE transport" in r.getMessage()]
    assert [r.getMessage().split(":")[0] for r in fell_back] == ["first"]  # no second failed POST


async def test_a_lone_client_connection_to_an_sse_servers_url_falls_back_too(sse_url: str) -> None:
    # The server serves only HTTP+SSE: its POST is refused (405), so a tool called is the fallback.
    with anyio.fail_after(30):
        async with ClientConnection.connect(HttpTransport(sse_url), name="old") as server:
            tools = await server.list_tools()
            answer = await server.call_tool("wait", task=False)
    assert server.era is Era.LEGACY
    assert {"research", "wait", "ask"} <= {tool.name for tool in tools}
    assert answer.text == "done at once"


@pytest.fixture(scope="module")
def everything_sse_url() -> Iterator[str]:
    """server-everything (TypeScript SDK 1.32) serving HTTP+SSE at /sse on a free port."""
    node, script, _ = everything_command()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [node, script, "sse"], env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        process.kill()
        process.wait()


async def test_the_ts_sdks_sse_server_is_reached_by_its_url_with_sampling_and_a_task(
    everything_sse_url: str,
) -> None:
    ui = Answers(interpretation="snake")
    async with running_host(ui=ui) as h:
        server = await h.host.connect_url("everything", everything_sse_url)
        with anyio.fail_after(30):
            sampled = await server.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 20})
            tasked = await server.call_tool("simulate-research-query", {"topic": "python", "ambiguous": True})
    assert "echo: Resource trigger-sampling-request context: hi" in sampled.text
    assert "# Research Report: python (snake)" in tasked.text  # its question came over the SSE stream
    assert ui.asked


async def test_a_url_that_serves_neither_transport_names_both_answers(sse_url: str) -> None:
    async with running_host() as h:
        with pytest.raises(HttpStatusError) as raised:
            await h.host.connect_url("nothing", sse_url.replace("/sse", "/nowhere"))
    assert raised.value.status == 404
    assert "nor does it serve the HTTP+SSE transport (HTTP 404 there too)" in str(raised.value)


async def test_a_modern_only_connection_does_not_fall_back(sse_url: str) -> None:
    async with running_host(options=ConnectionOptions(protocol="2026-07-28")) as h:
        with pytest.raises(UnsupportedProtocolVersion) as raised:
            await h.host.connect_url("old", sse_url)
    assert "does not speak MCP 2026-07-28" in str(raised.value)  # no GET was tried


@pytest.mark.slow
def test_the_cli_calls_a_tool_of_an_sse_server_by_its_url(sse_url: str) -> None:
    done = subprocess.run(
        [str(HOST), "call", "--json", "--elicit", "defaults", "--approve", "auto", "--provider", "echo",
         "ask", "--url", sse_url],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"][0]["text"] == "topic: nothing; summary: echo: summarise nothing"
