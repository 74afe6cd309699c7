"""A host on a shared store (``--store`` SQLite or PostgreSQL with ``--approve web --elicit web``):
the real command against the mcp 1.30 peer whose ``research`` tool runs as a task and asks a form,
then samples. The test is the inbox: it reads the store and answers through the Store API.

The host serves no page of its own; its items wait in the store with its name, the server's
identity, who they are routed to and its session; it stops cleanly (its items withdrawn), is
killed (the lease sweep withdraws them), or finds the store unreachable (a clear refusal).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from host_receiver._identity import stdio_identity
from host_receiver.errors import AlreadyAnswered
from host_receiver.store import InboxItem, SqlStore, open_store
from tests.cli.test_terminal import PEER_PYTHON, ROOT
from tests.cli_command import LIMIT_S, cli_env, start_cli

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TASK_SERVER = ROOT / "tests" / "interop" / "peers" / "py_task_server.py"
SESSION_ENDED = "the server's session ended"
UNREACHABLE = "the approval store is unreachable"
#: What the person answers to each kind of item.
ANSWERS: dict[str, dict[str, Any]] = {
    "form": {"action": "accept", "content": {"topic": "otters"}},
    "sampling": {"action": "approve"},
    "result": {"action": "send"},
    "url": {"action": "accept"},
}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    if not PEER_PYTHON.exists():
        pytest.skip("the Python peer is not installed (run .ci/install-peers)")
    return {**cli_env(tmp_path), "PYTHONPATH": str(ROOT)}


@contextmanager
def command(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """``host-receiver *args`` running for the block (killed after it if it has not ended)."""
    process = start_cli(env, *args)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


@contextmanager
def host(env: dict[str, str], store: str, *extra: str) -> Iterator[subprocess.Popen[str]]:
    """``host-receiver run --call research`` on the store, answering nothing itself."""
    with command(
        env,
        "run",
        "--approve",
        "web",
        "--elicit",
        "web",
        "--store",
        store,
        "--call",
        "research",
        *extra,
        "--",
        str(PEER_PYTHON),
        str(TASK_SERVER),
    ) as process:
        yield process


async def next_item(store: SqlStore, kind: str, process: subprocess.Popen[str]) -> InboxItem:
    """The first pending item of ``kind`` (the host writes it; the test waits for it)."""
    with anyio.fail_after(LIMIT_S):
        while True:
            found = [i for i in await store.pending_items() if i.kind == kind]
            if found:
                return found[0]
            assert process.poll() is None, process.communicate()
            await anyio.sleep(0.05)


async def ended(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    """The command's exit code, stdout and stderr once it ends."""
    out, err = await anyio.to_thread.run_sync(lambda: process.communicate(timeout=LIMIT_S))
    return process.returncode, out, err


async def test_the_items_wait_in_the_store_and_an_answer_given_there_reaches_the_server(
    env: dict[str, str], store_url: str
) -> None:
    async with open_store(store_url) as store:
        await store.add_person("ann", ["ops"])
        with host(env, store_url, "--for", "ops", "--for", "bob", "--host-name", "worker-7") as process:
            form = await next_item(store, "form", process)
            assert (form.host, form.server_name, form.server_title) == (
                "worker-7",
                "py-task-peer",
                "py-task-peer",
            )
            assert form.server_identity == stdio_identity([str(PEER_PYTHON), str(TASK_SERVER)])
            assert form.routed_to == ("ops", "bob") and form.session and form.lease_expires is not None
            assert form.payload["message"] == "What should I research?"
            assert [f["key"] for f in form.payload["fields"]] == ["topic"]
            await store.answer(form.id, ANSWERS["form"], by="ann", address="127.0.0.1")
            with pytest.raises(AlreadyAnswered):
                await store.answer(form.id, {"action": "decline"}, by="ann", address="127.0.0.1")
            seen = ["form"]
            while process.poll() is None:
                pending = [i for i in await store.pending_items() if i.session == form.session]
                for item in pending:
                    seen.append(item.kind)
                    await store.answer(item.id, ANSWERS[item.kind], by="ann", address="127.0.0.1")
                await anyio.sleep(0.05)
            code, out, err = await ended(process)
    assert code == 0, err
    assert "topic: otters; summary:" in out
    assert seen[:2] == ["form", "sampling"]
    assert "inbox:" not in err  # no page of its own


async def test_a_clean_stop_withdraws_the_hosts_pending_items_with_the_reason(
    env: dict[str, str], store_url: str
) -> None:
    async with open_store(store_url) as store:
        with host(env, store_url) as process:
            form = await next_item(store, "form", process)
            process.send_signal(signal.SIGINT)
            await ended(process)
        gone = await store.item(form.id)
    assert gone is not None and (gone.status, gone.reason) == ("withdrawn", SESSION_ENDED)


async def test_a_killed_hosts_items_are_withdrawn_by_the_sweep_once_its_lease_ran_out(
    env: dict[str, str], store_url: str
) -> None:
    async with open_store(store_url) as store:
        with host(env, store_url, "--lease", "0.5") as process:
            form = await next_item(store, "form", process)
            process.send_signal(signal.SIGKILL)
            await ended(process)
        assert await store.withdraw_expired_sessions(SESSION_ENDED) == []  # renewed just now
        left = await store.item(form.id)
        assert left is not None and left.status == "pending" and left.lease_expires is not None
        await anyio.sleep(max(left.lease_expires - time.time(), 0) + 0.1)
        assert await store.withdraw_expired_sessions(SESSION_ENDED) == [form.id]
        gone = await store.item(form.id)
    assert gone is not None and (gone.status, gone.reason) == ("withdrawn", SESSION_ENDED)


async def test_another_host_sweeps_a_killed_hosts_items_once_its_lease_ran_out(
    env: dict[str, str], store_url: str
) -> None:
    async with open_store(store_url) as store:
        with host(env, store_url, "--lease", "0.5", "--host-name", "killed") as process:
            form = await next_item(store, "form", process)
            process.send_signal(signal.SIGKILL)
            await ended(process)
        with host(env, store_url, "--lease", "0.5", "--host-name", "alive") as other:
            with anyio.fail_after(LIMIT_S):
                while (gone := await store.item(form.id)) is not None and gone.status == "pending":
                    assert other.poll() is None
                    await anyio.sleep(0.1)
            theirs = await next_item(store, "form", other)
            assert theirs.host == "alive" and theirs.status == "pending"
    assert gone is not None and (gone.status, gone.reason) == ("withdrawn", SESSION_ENDED)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_with_the_store_unreachable_the_form_is_declined_and_sampling_refused_saying_so(
    env: dict[str, str],
) -> None:
    url = f"postgresql://nobody@127.0.0.1:{closed_port()}/fleet"
    with host({**env, "PGCONNECT_TIMEOUT": "2"}, url) as process:
        code, out, err = await ended(process)
    # The host kept serving the call: the server got the declined form, then the refusal.
    assert "working: summarising decline" in err, err
    assert f"failed: {UNREACHABLE}" in err, err
    assert code == 2 and out == ""


async def test_the_demo_on_a_shared_store_is_answered_through_the_store(
    env: dict[str, str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    demo = ["demo", "--approve", "web", "--elicit", "web", "--llm-delay", "0", "--store", url, "--for", "ops"]
    seen: list[str] = []
    with command({**env, "HOST_RECEIVER_DEMO_PYTHON": str(PEER_PYTHON)}, *demo) as process:
        async with open_store(url) as store:
            with anyio.fail_after(LIMIT_S):
                while process.poll() is None:
                    for item in await store.pending_items():
                        assert item.routed_to == ("ops",)
                        await store.answer(item.id, demo_answer(item), by="ann", address=None)
                        seen.append(item.kind)
                    await anyio.sleep(0.05)
        code, out, err = await ended(process)
    assert code == 0, err
    assert seen == ["sampling", "result", "form", "url"], out
    assert "outcome: Published" in out and "inbox:" not in err


def demo_answer(item: InboxItem) -> dict[str, Any]:
    """What the person answers to the demo's items: a form with its defaults."""
    if item.kind != "form":
        return ANSWERS[item.kind]
    fields = item.payload["fields"]
    return {"action": "accept", "content": {f["key"]: f["value"] for f in fields if f["value"] is not None}}
