"""The stdio transport against real child processes (raw servers in tests/servers/)."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver.client.connection import ClientConnection
from host_receiver.errors import ConnectionClosed, TransportError
from host_receiver.protocol.jsonrpc import Notification
from host_receiver.protocol.results import CallToolResult
from host_receiver.session import IncomingRequest
from host_receiver.transports.stdio import StdioTransport

pytestmark = pytest.mark.anyio

SERVERS = Path(__file__).parent.parent / "servers"
LOGGER = "host_receiver.transports.stdio"


def raw_server(*args: str, **kwargs: Any) -> StdioTransport:
    return StdioTransport(sys.executable, [str(SERVERS / "stdio_mcp_server.py"), *args], name="raw", **kwargs)


async def sample(request: IncomingRequest) -> dict[str, Any]:
    assert request.method == "sampling/createMessage"
    return {"role": "assistant", "content": {"type": "text", "text": "sampled!"}, "model": "m"}


def text_of(result: CallToolResult) -> str:
    assert result.is_error is False, result
    return result.text


async def test_the_server_asks_the_client_mid_call_and_gets_the_answer() -> None:
    async with ClientConnection.connect(
        raw_server(), capabilities={"sampling": {}}, request_handler=sample
    ) as conn:
        assert text_of(await conn.call_tool("ask")) == "sampled!"
        big = "é" * 300_000  # spans many pipe reads both ways
        assert json.loads(text_of(await conn.call_tool("echo", {"big": big}))) == {"big": big}


async def test_garbage_lines_are_answered_with_errors_and_the_stream_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with ClientConnection.connect(raw_server(), capabilities={}) as conn:
        assert sorted(json.loads(text_of(await conn.call_tool("garbage")))) == [-32700, -32600]
        await conn.ping()
    assert "malformed message from raw-stdio" in caplog.text


async def test_an_oversized_line_is_dropped_without_losing_the_next_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport = raw_server(max_message_size=100_000)
    async with ClientConnection.connect(transport, capabilities={}) as conn:
        assert text_of(await conn.call_tool("big", {"size": 250_000})) == "after big"
    assert "over 100000 bytes; dropped" in caplog.text


async def test_a_server_dying_mid_call_ends_the_connection_cleanly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with ClientConnection.connect(raw_server(), capabilities={}) as conn:
        with pytest.raises(ConnectionClosed, match="raw-stdio closed the connection"):
            await conn.call_tool("die")
        await conn.wait_closed()
        with pytest.raises(ConnectionClosed):
            await conn.ping()
    assert "raw exited with status 3" in caplog.text


async def test_stderr_is_forwarded_line_by_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with ClientConnection.connect(raw_server(), capabilities={}) as conn:
        await conn.call_tool("log", {"text": "first line\nsecond line"})
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert "[raw] first line" in lines
    assert "[raw] second line" in lines


async def test_a_well_behaved_server_exits_when_its_input_closes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    async with ClientConnection.connect(raw_server(), capabilities={}):
        pass
    assert "raw exited with status 0" in caplog.text
    assert "did not exit" not in caplog.text


@pytest.mark.slow
async def test_a_server_ignoring_stdin_close_and_sigterm_is_killed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    transport = StdioTransport(
        sys.executable, [str(SERVERS / "stubborn_server.py")], name="stubborn", terminate_grace=0.2
    )
    async with ClientConnection.connect(transport, capabilities={}) as conn:
        assert conn.instructions is not None
        pid = int(conn.instructions.removeprefix("pid "))
    assert "stubborn did not exit; sending SIGTERM" in caplog.text
    assert "stubborn did not exit; sending SIGKILL" in caplog.text
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_the_environment_is_filtered_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOST_RECEIVER_TEST_SECRET", "s3cret")

    async def env_seen(transport: StdioTransport, name: str) -> str:
        async with ClientConnection.connect(transport, capabilities={}) as conn:
            return text_of(await conn.call_tool("env", {"name": name}))

    assert await env_seen(raw_server(), "HOST_RECEIVER_TEST_SECRET") == "<unset>"
    assert await env_seen(raw_server(), "PATH") == os.environ["PATH"]
    assert await env_seen(raw_server(env={"EXTRA": "1"}), "EXTRA") == "1"
    inherited = raw_server(inherit_env=True)
    assert await env_seen(inherited, "HOST_RECEIVER_TEST_SECRET") == "s3cret"


async def test_a_missing_command_is_a_transport_error() -> None:
    with pytest.raises(TransportError, match="cannot start"):
        async with StdioTransport("/nonexistent/mcp-server").connect():
            pass  # pragma: no cover


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_peer_that_does_not_read_holds_writes_back_and_then_gets_every_line_whole(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    transport = StdioTransport(sys.executable, [str(SERVERS / "late_reader.py"), str(gate)], name="late")
    pad = "x" * 100_000
    async with transport.connect() as stream:
        sent = 0
        for _ in range(2):  # notifications wait for the writer task, which then fills the pipe
            with pytest.raises(anyio.WouldBlock):  # the pipe is full and 1 MiB waits: no more
                while sent < 1000:
                    stream.send_nowait(Notification("line", {"n": sent, "pad": pad}))
                    sent += 1
            await anyio.sleep(0.1)
        assert 10 <= sent < 20
        done: list[int] = []

        async def blocked_send(n: int) -> None:
            await stream.send(Notification("line", {"n": n, "pad": pad}))
            done.append(n)

        with anyio.fail_after(10):  # a sender left waiting for ever fails here
            async with anyio.create_task_group() as group:
                group.start_soon(blocked_send, sent)
                await anyio.sleep(0.1)  # the first blocked sender waits before the second
                group.start_soon(blocked_send, sent + 1)
                await anyio.sleep(0.3)
                assert done == []  # nobody reads: both wait
                gate.touch()
        await stream.send(Notification("line", {"n": -1}))
        with anyio.fail_after(10):
            report = await stream.receive()
    assert sorted(done) == [sent, sent + 1]
    assert isinstance(report, Notification) and report.method == "seen" and report.params is not None
    assert report.params["intact"] is True
    ns = report.params["ns"]
    assert ns[:sent] == list(range(sent))  # taken without waiting: in order
    assert sorted(ns[sent:]) == [sent, sent + 1]  # two concurrent senders: both, in either order


async def test_aclose_writes_what_is_queued_then_closes_the_childs_input() -> None:
    async with raw_server().connect() as stream:
        await stream.send(Notification("notifications/initialized"))
        await stream.aclose()
        with pytest.raises(TransportError, match="no longer reading its input"):
            await stream.send(Notification("notifications/initialized"))
        with anyio.fail_after(10), pytest.raises(anyio.EndOfStream):  # the child saw its input end
            while True:
                await stream.receive()
