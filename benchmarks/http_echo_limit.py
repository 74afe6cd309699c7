"""The Streamable HTTP transport limit: a bare MCP client that answers with canned JSON.

``python -m benchmarks.http_echo_limit --url URL [--call TOOL] [--connections N]``

The cheapest honest client of the binding (2025-11-25) that this suite can
write: raw non-blocking sockets awaited with anyio (:mod:`benchmarks.loopback`)
and a hand-written HTTP/1.1 reader (status line, headers, ``Content-Length``
or chunked bodies, SSE events), no validation and no state. It posts
``initialize`` (reading the answer as JSON or as an SSE stream) and keeps the
``Mcp-Session-Id``, posts ``notifications/initialized``, then either opens the
standalone GET stream or, with ``--call``, posts ``tools/call`` and reads its
answer stream. Every request that arrives there is answered from the table of
:class:`benchmarks.echo_limit.Canned`, each answer its own POST as the binding
requires, on at most ``--connections`` keep-alive connections (4: as many as
host-receiver posts at once). An answer is written from the task that read
the request when a connection is idle, else queued for the first connection
whose 202 comes back; one task per connection reads the 202s. It exits when
the stream ends (the requestor finished).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from benchmarks.echo_limit import Canned, reply
from benchmarks.loopback import Socket

PROTOCOL_VERSION = "2025-11-25"
CAPABILITIES: dict[str, Any] = {
    "sampling": {},
    "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}},
}


class HttpError(Exception):
    """The server answered something this client does not expect."""


class Connection:
    """One keep-alive HTTP/1.1 connection and what has been read from it."""

    def __init__(self, sock: Socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    async def fill(self) -> None:
        data = await self.sock.receive()
        if not data:
            raise EOFError("the server closed the connection")
        self.buffer += data

    async def read_until(self, marker: bytes) -> bytes:
        """Bytes up to ``marker``, which is consumed too."""
        while (end := self.buffer.find(marker)) < 0:
            await self.fill()
        data = bytes(self.buffer[:end])
        del self.buffer[: end + len(marker)]
        return data

    async def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self.fill()
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def head(self) -> tuple[int, dict[bytes, bytes]]:
        """The status and headers (names in lower case) of the next response."""
        lines = (await self.read_until(b"\r\n\r\n")).split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        return status, headers

    async def chunks(self, headers: dict[bytes, bytes]) -> AsyncIterator[bytes]:
        """The body as it comes: chunk by chunk, or in one piece with a ``Content-Length``."""
        if b"content-length" in headers:
            size = int(headers[b"content-length"])
            if size:
                yield await self.read_exactly(size)
            return
        if headers.get(b"transfer-encoding", b"").lower() != b"chunked":
            raise HttpError("a body neither chunked nor of known length")
        while size := int((await self.read_until(b"\r\n")).partition(b";")[0], 16):
            data = await self.read_exactly(size + 2)
            yield data[:-2]
        while await self.read_until(b"\r\n"):  # trailers, up to the empty line
            pass

    async def events(self, headers: dict[bytes, bytes]) -> AsyncIterator[bytes]:
        """The data of each SSE event of the body."""
        text = b""
        async for chunk in self.chunks(headers):
            text += chunk.replace(b"\r\n", b"\n") if b"\r" in chunk else chunk
            *blocks, text = text.split(b"\n\n")
            for block in blocks:
                lines = [line[5:] for line in block.split(b"\n") if line.startswith(b"data:")]
                if lines:
                    yield b"\n".join(line[1:] if line[:1] == b" " else line for line in lines)

    async def messages(self, headers: dict[bytes, bytes]) -> AsyncIterator[dict[str, Any]]:
        """The JSON-RPC messages of the body: one JSON object, or one per SSE event."""
        if headers.get(b"content-type", b"").startswith(b"text/event-stream"):
            async for data in self.events(headers):
                yield json.loads(data)
        else:
            yield json.loads(b"".join([chunk async for chunk in self.chunks(headers)]))


class Client:
    """Requests to the endpoint; answers posted on at most ``limit`` connections."""

    def __init__(self, url: str, limit: int, group: anyio.abc.TaskGroup) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.target = (parts.path or "/").encode()
        self.authority = parts.netloc.encode()
        self.session = b""
        self.limit = limit
        self.group = group
        self.opened = 0
        self.idle: list[Connection] = []
        self.waiting: deque[bytes] = deque()  # answers for which no connection was idle

    def request(self, method: bytes, body: bytes = b"") -> bytes:
        head = [
            method + b" " + self.target + b" HTTP/1.1",
            b"host: " + self.authority,
            b"accept: "
            + (b"text/event-stream" if method == b"GET" else b"application/json, text/event-stream"),
        ]
        if self.session:
            head += [
                b"mcp-session-id: " + self.session,
                b"mcp-protocol-version: " + PROTOCOL_VERSION.encode(),
            ]
        if method == b"POST":
            head += [b"content-type: application/json", b"content-length: " + str(len(body)).encode()]
        return b"\r\n".join(head) + b"\r\n\r\n" + body

    async def connect(self) -> Connection:
        return Connection(await Socket.connect(self.host, self.port))

    async def call(self, conn: Connection, message: dict[str, Any]) -> dict[str, Any]:
        """Post a request on ``conn`` and read its answer (the body to its end)."""
        await conn.sock.send(self.request(b"POST", json.dumps(message).encode()))
        status, headers = await conn.head()
        if status != 200:
            raise HttpError(f"HTTP {status} for {message.get('method')}")
        self.session = self.session or headers.get(b"mcp-session-id", b"")
        answer = None
        async for received in conn.messages(headers):
            if received.get("id") == message["id"] and "method" not in received:
                answer = received
        if answer is None:
            raise HttpError(f"no answer to {message.get('method')}")
        return answer

    async def post(self, body: bytes) -> None:
        """POST one answer: on an idle connection now, on a new one, or queued for the next free one."""
        if self.idle:
            await self.idle.pop().sock.send(self.request(b"POST", body))
        elif self.opened < self.limit:
            self.opened += 1
            conn = await self.connect()
            await conn.sock.send(self.request(b"POST", body))
            self.group.start_soon(self.accepted, conn)
        else:
            self.waiting.append(body)

    async def accepted(self, conn: Connection) -> None:
        """Read the 202s on ``conn``; after each, post what waits or make it idle."""
        while True:
            try:
                status, headers = await conn.head()
            except EOFError:
                return  # the requestor is gone
            async for _ in conn.chunks(headers):
                pass
            if status != 202:
                raise HttpError(f"HTTP {status} for a posted message")
            if self.waiting:
                await conn.sock.send(self.request(b"POST", self.waiting.popleft()))
            else:
                self.idle.append(conn)


async def answer_stream(client: Client, conn: Connection, headers: dict[bytes, bytes], call_id: Any) -> None:
    """Answer every request of the stream on ``conn`` until it ends (or answers ``call_id``)."""
    canned = Canned()
    async for message in conn.messages(headers):
        method, request_id = message.get("method"), message.get("id")
        if method is not None and request_id is not None:
            await client.post(
                reply(request_id, canned.answer(request_id, method, message.get("params") or {}))
            )
        elif method is None and request_id == call_id is not None:
            return


async def serve(url: str, tool: str | None, connections: int) -> None:
    async with anyio.create_task_group() as group:
        client = Client(url, connections, group)
        first = await client.connect()
        init = {"protocolVersion": PROTOCOL_VERSION, "capabilities": CAPABILITIES}
        init["clientInfo"] = {"name": "http-echo-limit", "version": "1"}
        await client.call(first, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        await first.sock.send(
            client.request(b"POST", b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        )
        client.opened += 1
        group.start_soon(client.accepted, first)
        stream = await client.connect()
        call_id = None
        if tool is None:
            await stream.sock.send(client.request(b"GET"))
        else:
            call_id = 1
            call = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": tool}}
            await stream.sock.send(client.request(b"POST", json.dumps(call).encode()))
        status, headers = await stream.head()
        if status != 200:
            raise HttpError(f"HTTP {status} for the {'GET stream' if tool is None else 'tool call'}")
        with contextlib.suppress(EOFError):  # the requestor is gone
            await answer_stream(client, stream, headers, call_id)
        group.cancel_scope.cancel()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the requestor's MCP endpoint")
    parser.add_argument(
        "--call", metavar="TOOL", help="run inside a tools/call of TOOL (else: the GET stream)"
    )
    parser.add_argument("--connections", type=int, default=4, help="keep-alive connections for answers")
    args = parser.parse_args(argv)
    anyio.run(serve, args.url, args.call, args.connections)


if __name__ == "__main__":
    main()
