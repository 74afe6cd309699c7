"""Task-augmented ``tools/call`` to 2025-11-25 servers (the tasks chapter, requestor side).

Against the real peers: server-everything's ``simulate-research-query``
(TypeScript SDK 1.32, ``taskSupport: "required"``, asks a clarification
through ``tasks/result``) and tests/interop/peers/py_task_server.py (mcp
1.30's experimental tasks API: ``run_task``, status notifications, elicitation
and sampling queued for ``tasks/result``), through a real ``Host`` and the CLI.
Each test asserts what the server received or answered; on a clean exit every
message the host sent is validated against the 2025-11-25 schema
(``running_host``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import anyio
import pytest

from host_receiver import FormView, RemoteTask, UrlAnswer, UrlView
from host_receiver.errors import ProtocolError, RemoteTaskCancelled
from host_receiver.protocol.types import ElicitResult
from host_receiver.transports.stdio import StdioTransport
from tests.cli.test_terminal import HOST
from tests.interop import PEER_SCRIPTS, PEERS_DIR, everything_command
from tests.interop.conftest import running_host

pytestmark = pytest.mark.anyio
TASK_PEER = PEER_SCRIPTS / "py_task_server.py"
RELATED = "io.modelcontextprotocol/related-task"


def everything() -> StdioTransport:
    node, *args = everything_command()
    return StdioTransport(node, args, name="everything")


def task_peer_argv() -> list[str]:
    """The mcp 1.30 task peer's command (skips without the peer)."""
    python = PEERS_DIR / "py" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"the Python SDK peer is not installed ({python} is missing)")
    return [str(python), str(TASK_PEER)]


def task_peer() -> StdioTransport:
    python, *args = task_peer_argv()
    return StdioTransport(python, args, name="py-tasks")


class Answers:
    """A person at the form: answers every field with ``values`` (and notes what was asked)."""

    def __init__(self, **values: str) -> None:
        self.values = values
        self.asked: list[str] = []

    async def fill_form(self, view: FormView) -> ElicitResult:
        self.asked.append(view.message)
        return ElicitResult(action="accept", content=dict(self.values))

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        return "decline"


async def test_a_required_task_tool_runs_as_a_task_and_its_question_is_answered() -> None:
    ui = Answers(interpretation="snake")
    async with running_host(ui=ui) as h:
        server = await h.connect("everything", everything())
        states: list[RemoteTask] = []
        arguments = {"topic": "python", "ambiguous": True}
        async with server.watch_tool("simulate-research-query", arguments) as call:
            with anyio.fail_after(30):
                states = [task async for task in call.updates()]
                result = await call.result()
    assert not result.is_error, result
    assert "# Research Report: python (snake)" in result.text
    assert ui.asked and "could have multiple interpretations" in ui.asked[0]
    wire = h.wires["everything"]
    (called,) = [m for m in wire.sent if m.get("method") == "tools/call"]
    assert called["params"]["task"] == {}  # sent task-augmented though the caller did not ask: "required"
    assert [m for m in wire.sent if m.get("method") == "tools/list"]  # the definition was looked up
    task_id = states[0].task_id
    assert {"working", "input_required"} <= {t.status for t in states}
    assert states[-1].status == call.status == "completed"  # seen even when tasks/result came first
    assert [m["params"] for m in wire.sent if m.get("method") == "tasks/result"] == [{"taskId": task_id}]
    assert [m for m in wire.sent if m.get("method") == "tasks/get"]  # polled at its pollInterval
    (asked,) = wire.requests_received("elicitation/create")
    assert asked["params"]["_meta"][RELATED] == {"taskId": task_id}  # came through tasks/result


async def test_cancelling_a_task_call_sends_tasks_cancel_and_the_server_cancels_it() -> None:
    async with running_host() as h:
        server = await h.connect("everything", everything())
        async with server.watch_tool("simulate-research-query", {"topic": "tides"}) as call:
            with anyio.fail_after(20):
                async for task in call.updates():
                    if task.status == "working":
                        call.cancel()
                with pytest.raises(RemoteTaskCancelled):
                    await call.result()
        (cancel,) = [m for m in h.wires["everything"].sent if m.get("method") == "tasks/cancel"]
        answer = next(m for m in h.wires["everything"].received if m.get("id") == cancel["id"])
    assert answer["result"]["status"] == "cancelled"


async def test_asking_a_task_of_a_tool_that_forbids_it_is_refused_before_anything_is_sent() -> None:
    async with running_host() as h:
        server = await h.connect("everything", everything())
        refused = r"tool 'echo' of .* does not run as a task .*taskSupport is 'forbidden'"
        with pytest.raises(ProtocolError, match=refused):
            await server.call_tool("echo", {"message": "hi"}, task=True)
        plain = await server.call_tool("echo", {"message": "hi"})  # None: a plain call, as the tool wants
    assert "Echo: hi" in plain.text
    calls = [m["params"] for m in h.wires["everything"].sent if m.get("method") == "tools/call"]
    assert [c for c in calls if "task" in c] == []


async def test_an_mcp1_task_tool_asks_and_samples_through_tasks_result_and_reports_its_states() -> None:
    ui = Answers(topic="tides")
    async with running_host(ui=ui) as h:
        server = await h.connect("py-tasks", task_peer())
        with anyio.fail_after(30):
            result = await server.call_tool("research", task_ttl_ms=60000)
    assert result.text.startswith("topic: tides; summary: ")
    assert "summarise tides" in result.text  # the echo provider's answer to the task's sampling request
    wire = h.wires["py-tasks"]
    (called,) = [m for m in wire.sent if m.get("method") == "tools/call"]
    assert called["params"]["task"] == {"ttl": 60000}
    (sampled,) = wire.requests_received("sampling/createMessage")
    task_id = sampled["params"]["_meta"][RELATED]["taskId"]
    statuses = [m["params"] for m in wire.received if m.get("method") == "notifications/tasks/status"]
    assert {"working", "completed"} <= {s["status"] for s in statuses if s["taskId"] == task_id}


async def test_an_optional_task_tool_runs_as_a_task_when_asked_and_cancelling_cancels_its_task() -> None:
    async with running_host() as h:
        server = await h.connect("py-tasks", task_peer())
        assert (await server.call_tool("wait")).text == "done at once"  # optional: plain unless asked
        async with server.watch_tool("wait", {"seconds": 60}, task=True) as call:
            with anyio.fail_after(20):
                async for _ in call.updates():
                    call.cancel()
                with pytest.raises(RemoteTaskCancelled):
                    await call.result()
        statuses = json.loads((await server.call_tool("statuses")).text)
    assert list(statuses.values()) == ["cancelled"]


@pytest.mark.slow
def test_the_cli_calls_a_required_task_tool_and_shows_its_states_on_stderr() -> None:
    done = subprocess.run(
        [str(HOST), "call", "--json", "--elicit", "defaults", "simulate-research-query", "topic=tides",
         "--", *everything_command()],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "# Research Report: tides" in json.loads(done.stdout)["content"][0]["text"]
    assert "working: Gathering sources..." in done.stderr
    assert " completed" in done.stderr


@pytest.mark.slow
def test_ctrl_c_cancels_a_task_call_of_the_cli_and_exits_2(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [str(HOST), "run", "--call", "wait", "--task", "--args", '{"seconds": 60}', "--", *task_peer_argv()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert process.stderr is not None
    try:
        for line in process.stderr:
            if " working: waiting" in line:
                break
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 2
    assert "wait interrupted: the call was cancelled" in stderr
