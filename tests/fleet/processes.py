"""A fleet's processes as the tests run them: ``inbox serve`` (a subprocess) and the store read
back directly; shared by the fleet tests of tests/web, tests/client and tests/fleet."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import anyio

from host_receiver.store import ContinuableCall, InboxItem, SqlStore, open_store
from tests.cli_command import CLI, LIMIT_S

ROOT = Path(__file__).resolve().parents[2]
INBOX_LINE = re.compile(r"^inbox: (http://127\.0\.0\.1:\d+)/$")
#: A safety net for each request and event (seconds), never a measure of speed.
WAIT_S = 15
T = TypeVar("T")


def in_store(url: str, work: Callable[[SqlStore], Awaitable[T]]) -> T:
    """``await work(store)`` on the store ``url``, from a synchronous test."""

    async def main() -> T:
        async with open_store(url) as store:
            return await work(store)

    return anyio.run(main)


@contextmanager
def inbox_serve(
    url: str, *options: str, env: Mapping[str, str] = {}
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``host-receiver inbox serve --store URL *options`` running (``env`` added to this process's);
    its address, from its first line on stderr."""
    process = subprocess.Popen(
        [*CLI, "inbox", "serve", "--store", url, "--listen", "127.0.0.1:0", *options],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline().rstrip("\n")
        found = INBOX_LINE.match(line)
        assert found is not None, line + process.stderr.read()
        yield process, found[1]
    finally:
        if process.poll() is None:
            process.terminate()
        process.communicate(timeout=WAIT_S)


def kill(process: subprocess.Popen[str]) -> None:
    """``kill -9`` the process (a host that dies without a word) and reap it."""
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=LIMIT_S)


def calls(url: str) -> list[ContinuableCall]:
    """The continuable calls the store keeps."""

    async def read() -> list[ContinuableCall]:
        async with open_store(url) as store:
            return await store.calls()

    return anyio.run(read)


def until_lease_ends(url: str, call_id: str) -> None:
    """Sleep until the lease of ``call_id`` (of a killed process: never renewed again) has run out."""
    [call] = [c for c in calls(url) if c.id == call_id]
    assert call.lease_expires is not None
    time.sleep(max(0.0, call.lease_expires - time.time()) + 0.2)


def call_item(url: str, host: subprocess.Popen[str]) -> InboxItem:
    """The pending inbox item the host put in the store for its kept call's round."""
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        assert host.poll() is None, host.communicate()
        found = [i for i in in_store(url, lambda store: store.pending_items()) if i.call_id]
        if found:
            return found[-1]
        time.sleep(0.1)
    raise AssertionError("the host never put the round's item in the store")
