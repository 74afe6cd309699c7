"""A fleet's processes as the tests run them: ``inbox serve`` (a subprocess) and the store read
back directly; shared by the fleet tests of tests/web, tests/client and tests/fleet."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import anyio

from host_receiver.store import SqlStore, open_store
from tests.cli_command import CLI

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
def inbox_serve(url: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``host-receiver inbox serve --store URL`` running; its address, from its first line on stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [*CLI, "inbox", "serve", "--store", url, "--listen", "127.0.0.1:0"],
        env=env,
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
