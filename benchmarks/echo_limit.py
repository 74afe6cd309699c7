"""The transport limit: a bare JSON-RPC "receiver" that answers with canned JSON.

``echo_limit.py [--delay S] -- COMMAND [ARG...]`` starts the requestor as its
stdio child (reading its stdout through anyio, as host-receiver does, and
writing its stdin with ``os.write`` on a non-blocking pipe of its own, as
host-receiver's stdio transport does, so no write waits for the event loop
unless the pipe is full), sends
``initialize`` and ``notifications/initialized``, then answers every request
from a table of canned replies: no validation, no task state. It parses each
line (to learn the id and method) and writes all answers to one chunk of input
in one write. The only thing that waits is ``tasks/result`` with ``--delay``:
the task id carries its creation time, and the answer leaves ``delay`` seconds
after it, like a provider that takes that long. It exits when the requestor
closes its output.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import time
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc

STAMP = "2025-11-25T00:00:00.000Z"
SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "echo-limit"}


def task(task_id: str, status: str = "working") -> dict[str, Any]:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": STAMP,
        "lastUpdatedAt": STAMP,
        "ttl": 600_000,
        "pollInterval": 1000,
    }


PAGE = {"tasks": [task(f"canned-{i}") for i in range(10)], "nextCursor": "canned-9"}


class Canned:
    """The canned answer to each request; task ids carry their creation time."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.ids = itertools.count()

    def answer(self, request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "sampling/createMessage":
            return {"task": task(f"{next(self.ids)}-{time.monotonic_ns()}")}
        if method == "tasks/get":
            return task(params.get("taskId", ""))
        if method == "tasks/list":
            return PAGE
        if method == "tasks/cancel":
            return task(params.get("taskId", ""), "cancelled")
        if method == "tasks/result":
            meta = {"io.modelcontextprotocol/related-task": {"taskId": params.get("taskId")}}
            return {**SAMPLE, "_meta": meta}
        return {}

    def wait_for(self, params: dict[str, Any]) -> float:
        """Seconds until a ``tasks/result`` is due (0 without ``--delay``)."""
        if not self.delay:
            return 0.0
        created_ns = int(str(params.get("taskId", "0-0")).rpartition("-")[2] or 0)
        return max(0.0, created_ns / 1e9 + self.delay - time.monotonic())


class Echo(Canned):
    """Canned answers, written straight into the child's stdin pipe."""

    def __init__(self, stdin: int, delay: float) -> None:
        super().__init__(delay)
        os.set_blocking(stdin, False)
        self.stdin = stdin
        self.lock = anyio.Lock()  # held only by a write that found the pipe full

    async def write(self, data: bytes) -> None:
        if not self.lock.locked():
            try:
                written = os.write(self.stdin, data)
            except BlockingIOError:
                written = 0
            if written == len(data):
                return
            data = data[written:]
        async with self.lock:
            while data:
                await anyio.wait_writable(self.stdin)
                with contextlib.suppress(BlockingIOError):
                    data = data[os.write(self.stdin, data) :]

    async def answer_later(self, seconds: float, data: bytes) -> None:
        await anyio.sleep(seconds)
        await self.write(data)


def reply(request_id: Any, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


async def serve(command: Sequence[str], delay: float) -> None:
    child_stdin, stdin = os.pipe()
    try:
        process = await anyio.open_process(command, stdin=child_stdin, stderr=None)
    finally:
        os.close(child_stdin)
    async with process, anyio.create_task_group() as group:
        assert process.stdout is not None
        echo = Echo(stdin, delay)
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "sampling": {},
                "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}},
            },
            "clientInfo": {"name": "echo-limit", "version": "1"},
        }
        await echo.write(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode() + b"\n"
        )
        partial = b""
        async for chunk in process.stdout:
            *lines, partial = (partial + chunk).split(b"\n")
            out = []
            for line in lines:
                if not line.strip():
                    continue
                message = json.loads(line)
                method, request_id = message.get("method"), message.get("id")
                if method is None:
                    if request_id == 0:
                        out.append(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
                    continue
                if request_id is None:
                    continue
                params = message.get("params") or {}
                data = reply(request_id, echo.answer(request_id, method, params))
                wait = echo.wait_for(params) if method == "tasks/result" else 0.0
                if wait > 0:
                    group.start_soon(echo.answer_later, wait, data)
                else:
                    out.append(data)
            if out:
                await echo.write(b"".join(out))
        group.cancel_scope.cancel()
    os.close(stdin)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before a task's result is due")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the requestor command after --")
    anyio.run(serve, command, args.delay)


if __name__ == "__main__":
    main()
