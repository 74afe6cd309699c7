"""The requestor over Streamable HTTP: an MCP server of the 2025-11-25 era on 127.0.0.1.

``python -m benchmarks.http_requestor --framing json|sse --scenario latency|scale [--size S] --out PATH``

It runs the scenarios of :mod:`benchmarks.requestor` unchanged, over a
second wire. It listens on a free port of 127.0.0.1, prints its endpoint URL
(``http://127.0.0.1:PORT/mcp``) on stdout, then reads the receiver's pid from
stdin (one line: the driver starts the receiver after reading the URL, so
only it knows the pid); memory and CPU are read from ``/proc/<pid>``.

One MCP session: ``initialize`` is answered with an ``Mcp-Session-Id``, and
every later request must carry it (400 without it, 404 with another one; the
``server/discover`` probe of a dual-era client thus gets 400 and a JSON-RPC
error, as an mcp 1.x server answers it). ``ping`` gets ``{}``, other requests
-32601. ``DELETE`` is answered 200.

Framings (``--framing``):

- ``json``: the server answers the client's requests with
  ``application/json``. The scenario starts once the client opens the
  standalone GET stream, and the server's requests travel on it as SSE events.
- ``sse``: the server answers the client's requests with
  ``text/event-stream`` (one event, then the stream ends) and GET with 405.
  ``tools/list`` names one tool, ``benchmark``; the scenario runs inside the
  client's ``tools/call`` of it: the server's requests travel on that POST's
  response stream (as mcp 1.x servers send requests related to a tool call),
  which ends with the ``CallToolResult``.

Either way the client's answers and notifications come as POSTs; each is
handed to the scenario first and then answered 202 (after one turn of the
event loop, so the 202 is not inside the round trip being timed). Events are
``event: message`` with the JSON on one ``data:`` line and no id (so no
resumption); requests written at once go out as one chunk in one ``send``.
Sockets are non-blocking and written before the loop yields, as the stdio
wire does; HTTP is parsed by h11. Unlike stdio, the timed sequential path
waits on the event loop: an answer may come on any of the client's
connections.
"""

from __future__ import annotations

import argparse
import binascii
import json
import os
import socket
import sys
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import anyio
import anyio.lowlevel
import h11

from benchmarks.loopback import Socket
from benchmarks.requestor import (
    DONE_TEXT,
    SIZES,
    Message,
    ReceiverGone,
    Requestor,
    Results,
    measure,
    options,
    save,
)

FRAMINGS = ("json", "sse")
SCENARIOS = ("latency", "scale")
#: Every answer over HTTP is a POST, so the full size is smaller than on stdio where it would
#: only spend the time budgets: 1,000 sequential requests, 10,000 pipelined gets, 1,000
#: samples per scale level, and a store filled for up to 240 s at 100 creates/s or more.
HTTP_SIZES = {
    "full": replace(
        SIZES["full"],
        warmup=200,
        sequential=1000,
        list_calls=200,
        pipelined_creates=2000,
        pipelined_gets=10_000,
        scale_samples=1000,
        fill_budget_s=240.0,
        fill_min_rate=100.0,
        phase_budget_s=20.0,
    ),
    # Five receivers run side by side in the smoke run (CI): a few requests each.
    "smoke": replace(
        SIZES["smoke"],
        warmup=5,
        sequential=30,
        list_calls=5,
        pipelined_creates=50,
        pipelined_gets=100,
        scale_levels=(50, 200),
        scale_samples=20,
        fill_min_rate=1.0,
    ),
}
PATH = b"/mcp"
TOOL = "benchmark"
PROTOCOL_VERSION = "2025-11-25"
SSE_HEADERS = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]


def emit(conn: h11.Connection, event: h11.Event) -> bytes:
    """The bytes h11 makes of ``event`` (never None for the events sent here)."""
    data = conn.send(event)
    assert data is not None
    return data


def sse(lines: bytes) -> bytes:
    """JSON lines as SSE events, one per line."""
    return b"".join(b"event: message\ndata: " + line + b"\n\n" for line in lines.splitlines() if line)


class Stream:
    """An open SSE response: where the server's requests go."""

    def __init__(self, conn: h11.Connection, sock: Socket) -> None:
        self.conn, self.sock = conn, sock
        self.ended = anyio.Event()

    async def send(self, lines: bytes) -> None:
        await self.sock.send(emit(self.conn, h11.Data(data=sse(lines))))

    async def end(self) -> None:
        if not self.ended.is_set():
            self.ended.set()
            await self.sock.send(emit(self.conn, h11.EndOfMessage()))


class HttpWire:
    """The requestor's wire over HTTP: out on the open SSE stream, in from the client's POSTs."""

    def __init__(self) -> None:
        self.stream: Stream | None = None
        self.opened = anyio.Event()
        self._messages: deque[Message] = deque()
        self._arrived = anyio.Event()
        self._gone: str | None = None

    async def send(self, data: bytes) -> None:
        if self.stream is None or self.stream.ended.is_set():
            raise ReceiverGone("no stream to the receiver is open")
        await self.stream.send(data)

    async def receive(self) -> Message:
        while not self._messages:
            if self._gone is not None:
                raise ReceiverGone(self._gone)
            self._arrived = anyio.Event()
            await self._arrived.wait()
        return self._messages.popleft()

    receive_sequential = receive

    def read_available(self) -> bool:
        return bool(self._messages)

    def take(self) -> Message:
        return self._messages.popleft()

    def deliver(self, message: Message) -> None:
        self._messages.append(message)
        self._arrived.set()

    def close(self, why: str) -> None:
        self._gone = why
        self._arrived.set()


class Endpoint:
    """The MCP endpoint: one session over HTTP/1.1 connections, in one framing."""

    def __init__(self, framing: str) -> None:
        self.framing = framing
        self.wire = HttpWire()
        self.session_id = binascii.hexlify(os.urandom(16)).decode()
        self.client_capabilities: Message = {}
        self.tool_call_id: Any = None

    async def serve(self, listener: socket.socket) -> None:
        """Accept connections until cancelled."""
        async with anyio.create_task_group() as group:
            while True:
                try:
                    sock, _ = listener.accept()
                except BlockingIOError:
                    await anyio.wait_readable(listener)
                    continue
                group.start_soon(self.connection, Socket(sock))

    async def connection(self, sock: Socket) -> None:
        """Serve one connection's requests, one after the other (keep-alive)."""
        conn = h11.Connection(h11.SERVER)
        request: h11.Request | None = None
        body: list[bytes] = []
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await sock.receive())
                elif isinstance(event, h11.Request):
                    request, body = event, []
                elif isinstance(event, h11.Data):
                    body.append(event.data)
                elif isinstance(event, h11.EndOfMessage) and request is not None:
                    await self.respond(conn, sock, request, b"".join(body))
                    if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                        break
                    conn.start_next_cycle()
                else:  # the client closed the connection
                    break
        except (h11.ProtocolError, OSError):
            import traceback

            traceback.print_exc()
        finally:
            sock.close()

    async def respond(self, conn: h11.Connection, sock: Socket, request: h11.Request, body: bytes) -> None:
        if request.target.partition(b"?")[0] != PATH:
            return await self.status(conn, sock, 404)
        session = next((value for name, value in request.headers if name == b"mcp-session-id"), None)
        if request.method == b"POST":
            return await self.post(conn, sock, session, body)
        if session is None or session.decode() != self.session_id:
            return await self.status(conn, sock, 400 if session is None else 404)
        if request.method == b"GET":
            if self.framing != "json":
                return await self.status(conn, sock, 405)
            return await self.open_stream(conn, sock, None)
        if request.method == b"DELETE":
            return await self.status(conn, sock, 200)
        return await self.status(conn, sock, 405)

    async def post(self, conn: h11.Connection, sock: Socket, session: bytes | None, body: bytes) -> None:
        try:
            message = json.loads(body)
        except ValueError:
            return await self.status(conn, sock, 400)
        if not isinstance(message, dict):
            return await self.status(conn, sock, 400)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize" and request_id is not None:
            self.client_capabilities = (message.get("params") or {}).get("capabilities", {})
            result = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"logging": {}, "tools": {}},
                "serverInfo": {"name": "bench-requestor", "version": "1"},
            }
            return await self.answer(conn, sock, request_id, {"result": result}, self.session_header())
        if session is None or session.decode() != self.session_id:
            error = {"code": -32600, "message": "Bad Request: no valid session id"}
            body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
            return await self.status(conn, sock, 400 if session is None else 404, body)
        if method is None:  # an answer to one of our requests
            self.wire.deliver(message)
            await anyio.lowlevel.checkpoint()  # the scenario takes it before the 202 is written
            return await self.status(conn, sock, 202)
        if request_id is None:  # a notification
            if method != "notifications/initialized":
                self.wire.deliver(message)
            return await self.status(conn, sock, 202)
        tool = (message.get("params") or {}).get("name") if method == "tools/call" else None
        if tool == TOOL and self.framing == "sse" and self.wire.stream is None:
            return await self.open_stream(conn, sock, request_id)
        reply: Message
        if method == "ping":
            reply = {"result": {}}
        elif method == "tools/list" and self.framing == "sse":
            tool = {"name": TOOL, "description": "runs the benchmark", "inputSchema": {"type": "object"}}
            reply = {"result": {"tools": [tool]}}
        else:
            reply = {"error": {"code": -32601, "message": f"Method not found: {method}"}}
        return await self.answer(conn, sock, request_id, reply)

    def session_header(self) -> list[tuple[str, str]]:
        return [("mcp-session-id", self.session_id)]

    async def answer(
        self,
        conn: h11.Connection,
        sock: Socket,
        request_id: Any,
        reply: Message,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        """A request's answer: a JSON body (``json`` framing) or a one-event SSE stream (``sse``)."""
        data = json.dumps({"jsonrpc": "2.0", "id": request_id, **reply}).encode()
        if self.framing == "json":
            head = [("content-type", "application/json"), ("content-length", str(len(data))), *headers]
        else:
            head, data = [*SSE_HEADERS, *headers], sse(data)
        response = h11.Response(status_code=200, headers=head)
        end = h11.EndOfMessage()
        await sock.send(emit(conn, response) + emit(conn, h11.Data(data=data)) + emit(conn, end))

    async def status(self, conn: h11.Connection, sock: Socket, code: int, body: bytes = b"") -> None:
        headers = [("content-length", str(len(body)))]
        if body:
            headers.append(("content-type", "application/json"))
        data = emit(conn, h11.Response(status_code=code, headers=headers))
        if body:
            data += emit(conn, h11.Data(data=body))
        await sock.send(data + emit(conn, h11.EndOfMessage()))

    async def open_stream(self, conn: h11.Connection, sock: Socket, tool_call_id: Any) -> None:
        """Make this response the stream the scenario writes to; return once it ended."""
        if self.wire.stream is not None:
            return await self.status(conn, sock, 409)
        await sock.send(emit(conn, h11.Response(status_code=200, headers=SSE_HEADERS)))
        stream = self.wire.stream = Stream(conn, sock)
        self.tool_call_id = tool_call_id
        self.wire.opened.set()
        async with anyio.create_task_group() as group:
            group.start_soon(self.watch, conn, sock, stream)
            await stream.ended.wait()
            group.cancel_scope.cancel()

    async def watch(self, conn: h11.Connection, sock: Socket, stream: Stream) -> None:
        """While ``stream`` is open, notice the client closing its connection."""
        while True:
            data = await sock.receive()
            conn.receive_data(data)
            if not data:
                self.wire.close("the receiver closed the stream")
                stream.ended.set()
                return


class HttpRequestor(Requestor):
    """The scenarios' requestor on an :class:`Endpoint`."""

    def __init__(self, endpoint: Endpoint, receiver_pid: int) -> None:
        super().__init__(endpoint.wire, receiver_pid)
        self.endpoint = endpoint

    async def handshake(self) -> None:
        """Wait for the stream the framing runs on (the GET stream, or the tools/call's)."""
        await self.endpoint.wire.opened.wait()
        self.client_capabilities = self.endpoint.client_capabilities

    async def finish(self) -> None:
        """Say done, answer the tools/call (``sse``) and end the stream."""
        await super().finish()
        if self.endpoint.tool_call_id is not None:
            result = {"content": [{"type": "text", "text": DONE_TEXT}], "isError": False}
            answer = {"jsonrpc": "2.0", "id": self.endpoint.tool_call_id, "result": result}
            await self.wire.send(json.dumps(answer).encode())
        if self.endpoint.wire.stream is not None:
            await self.endpoint.wire.stream.end()


async def run(args: argparse.Namespace) -> Results:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    endpoint = Endpoint(args.framing)
    print(f"http://127.0.0.1:{listener.getsockname()[1]}{PATH.decode()}", flush=True)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(endpoint.serve, listener)
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not line.strip().isdigit():
                sys.exit("http_requestor: expected the receiver's pid on stdin")
            results = await measure(HttpRequestor(endpoint, int(line)), args, HTTP_SIZES)
            results["framing"] = args.framing
            group.cancel_scope.cancel()
    finally:
        listener.close()
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = options(__doc__.splitlines()[0], SCENARIOS)
    parser.add_argument("--framing", choices=FRAMINGS, required=True)
    args = parser.parse_args(argv)
    save(anyio.run(run, args), args.out)


if __name__ == "__main__":
    main()
