"""The Streamable HTTP client's own CPU per post: a request with its JSON answer, a notification's 202.

``python -m benchmarks.http_client_cpu [--posts N] [--rounds R] [--parser h11|llhttp]``

The wall time of the HTTP scenarios is mostly the other processes' on a
shared machine; this measures the one process a change to the client path
touches. The server is a minimal one on asyncio streams in a
process of its own (it answers at once, with one write); this process
opens :class:`~host_receiver.transports.http.HttpTransport` to it, agrees a
2025-11-25 session, then times ``time.process_time()`` over ``--posts``
sequential pings (each a POST answered with JSON) and as many
notifications (each a POST answered with an empty 202), and prints the
median of ``--rounds`` rounds of each, in µs of CPU per post. Point
``PYTHONPATH`` at a checkout to measure its code; alternate two checkouts to
compare them. ``--parser`` picks the lean pool's HTTP/1.1 wire
(:mod:`host_receiver._net.wire`): llhttp (httptools, the default when it is
installed) or h11.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

import anyio

from host_receiver._net import wire
from host_receiver.protocol.jsonrpc import Notification, Request, Response
from host_receiver.transports.base import MessageStream, StreamAttribute
from host_receiver.transports.http import HttpTransport

#: The server: asyncio streams and a minimal HTTP/1.1 reader (keep-alive, Content-Length bodies),
#: each answer written at once: a request's JSON answer (with a session id), or an empty 202.
_SERVER = r"""
import asyncio, json, sys

stream = None  # the GET stream's writer: the pushed pings go there

def push(request_id):
    ping = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()
    event = b"event: message\ndata: " + ping + b"\n\n"
    stream.write(b"%x\r\n%s\r\n" % (len(event), event))

async def serve(reader, writer):
    global stream
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):  # the client hung up
            return
        if head.startswith(b"GET"):
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            stream = writer
            push(1)
            continue
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        message = json.loads(await reader.readexactly(length)) if length else {}
        if "id" in message and "method" in message:
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
        else:
            writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
            if "result" in message:  # the answer to a pushed ping: push the next
                push(message["id"] + 1)

async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""
_INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "http-client-cpu", "version": "1"},
}


async def _pings(stream: MessageStream, first: int, posts: int) -> float:
    start = time.process_time()
    for index in range(first, first + posts):
        await stream.send(Request(index, "ping"))
        await stream.receive()
    return (time.process_time() - start) / posts * 1e6


async def _notes(stream: MessageStream, posts: int) -> float:
    note = Notification("notifications/progress", {"progressToken": 1, "progress": 1})
    start = time.process_time()
    for _ in range(posts):
        await stream.send(note)
    return (time.process_time() - start) / posts * 1e6


async def _pushed(stream: MessageStream, posts: int) -> float:
    start = time.process_time()
    for _ in range(posts):
        request = await stream.receive()
        assert isinstance(request, Request)
        stream.send_nowait(Response(request.id, {}))
    return (time.process_time() - start) / posts * 1e6


async def measure(url: str, posts: int, rounds: int) -> tuple[float, float, float]:
    """Median CPU µs per ping, per notification and per pushed ping over ``rounds`` rounds (one
    warm-up round first)."""
    pings: list[float] = []
    notes: list[float] = []
    pushed: list[float] = []
    async with HttpTransport(url).connect() as stream:
        await stream.send(Request(0, "initialize", _INITIALIZE))
        await stream.receive()
        next_id = 1
        for round_ in range(rounds + 1):
            ping, note = await _pings(stream, next_id, posts), await _notes(stream, posts)
            next_id += posts
            if round_:
                pings.append(ping)
                notes.append(note)
        binding = stream.extra(StreamAttribute.binding)
        binding.agree("2025-11-25")
        await binding.open_listener()
        for round_ in range(rounds + 1):
            answered = await _pushed(stream, posts)
            if round_:
                pushed.append(answered)
    return statistics.median(pings), statistics.median(notes), statistics.median(pushed)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http_client_cpu", description=__doc__)
    parser.add_argument("--posts", type=int, default=1000, help="posts of each kind per round (1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, after one warm-up (3)")
    parser.add_argument(
        "--parser",
        choices=["h11", "llhttp"],
        help="the lean pool's wire (the default: llhttp when httptools is installed, else h11)",
    )
    args = parser.parse_args(argv)
    if args.parser:
        wire.new_wire = wire.H11Wire if args.parser == "h11" else wire.LlhttpWire
    with subprocess.Popen(
        [sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as server:
        assert server.stdout is not None and server.stdin is not None
        url = server.stdout.readline().strip()
        try:
            ping, note, pushed = anyio.run(measure, url, args.posts, args.rounds)
        finally:
            server.stdin.close()
    print(f"wire: {wire.new_wire.__name__}")
    print(
        f"ping (JSON answer): {ping:.0f} µs CPU per post; notification (202): {note:.0f} µs; "
        f"pushed ping (an SSE event on the GET stream, answered by a POST): {pushed:.0f} µs"
    )


if __name__ == "__main__":
    main()
