"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

Rules:

* It is a real HTTP/1.1 server (keep-alive) on the standard library's asyncio,
  in an event loop of its own on a background thread, so the real ``openai``
  client talks to it exactly as it talks to a real backend: JSON replies with
  ``Content-Length``, streamed replies as ``text/event-stream`` over chunked
  transfer encoding, ending with ``data: [DONE]``. One task per connection and
  no thread per request: a thousand concurrent one-second requests are answered
  in about a second on two cores (benchmarks rely on that).
* ``POST .../chat/completions`` answers with the next scripted reply (a FIFO
  queue filled with :meth:`FakeOpenAI.queue`), or with the default reply when
  the queue is empty. Whether the answer is JSON or a stream follows the
  request's own ``stream`` flag, so one :class:`Completion` serves both.
* Every POST is recorded (:class:`RecordedRequest`: method, path, lowercase
  headers, parsed JSON body), and every GET (``GET .../models`` lists the
  fake's ``models``, or fails with ``models_error``), unless ``keep_requests`` is off, as in script
  mode, where nobody reads them. While it waits or streams, the server watches the
  connection: when the client goes away (or the server stops), the request is
  marked ``disconnected`` and waiters of :meth:`FakeOpenAI.wait_for_disconnect`
  wake up.
* Each request records which connection carried it (numbered in accept order),
  so keep-alive reuse shows; :meth:`FakeOpenAI.close_idle_connections` closes
  the connections that are between requests, as a keep-alive expiry would.
* With ``tls`` (a server-side ``ssl.SSLContext``) it serves https instead.
* An :class:`Endless` reply writes as fast as the client reads (asyncio's
  flow control), until the client hangs up.
* Waiting never spins: a delay is a wait on the connection's closed-future with
  a timeout.

As a script it serves until interrupted and prints its base URL on stdout::

    python tests/fake_openai.py --port 0 --delay 1.0

(and so do the other vendors' fakes, from the repository's root:
``python -m tests.fake_anthropic``, ``python -m tests.fake_gemini``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import ssl
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self

__all__ = [
    "Completion",
    "Drop",
    "Endless",
    "ErrorReply",
    "FakeOpenAI",
    "RawBody",
    "RawStream",
    "RecordedRequest",
    "Reply",
    "ToolCall",
]


# --- scripted replies ------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """A function call the fake model makes."""

    id: str
    name: str
    arguments: str  # JSON text, sent as-is


@dataclass(frozen=True)
class Reply:
    """Base of every scripted reply; ``delay`` is seconds before the first byte."""

    delay: float | None = None


@dataclass(frozen=True)
class Completion(Reply):
    """A successful completion, sent as JSON or as a stream.

    When streamed, ``text`` is split into ``pieces`` (by default one per word,
    whitespace kept), each in its own chunk, ``chunk_delay`` seconds apart.
    ``drop_after`` closes the connection abruptly after that many chunks;
    ``error_after`` sends an in-stream error event (``data: {"error": ...}``)
    after that many chunks instead of the rest.
    ``choice_extra`` is merged into the choice (e.g. vLLM's ``stop_reason``).
    """

    text: str | None = "Hello from fake-openai."
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None  # None: "tool_calls" if any, else "stop"
    pieces: tuple[str, ...] | None = None
    chunk_delay: float = 0.0
    drop_after: int | None = None
    error_after: int | None = None
    choice_extra: Mapping[str, Any] = field(default_factory=dict)
    usage: Mapping[str, int] | None = None  # None: computed


@dataclass(frozen=True)
class ErrorReply(Reply):
    """An HTTP error with an OpenAI-style error body."""

    status: int = 500
    message: str = "Internal server error"
    type: str = "server_error"
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drop(Reply):
    """Close the connection without sending any response."""


@dataclass(frozen=True)
class RawStream(Reply):
    """A 200 event stream of these ``data:`` payloads exactly as given (JSON or not), then ``[DONE]``.

    ``chunk_delay`` seconds pass before each event after the first; ``repeat``
    sends the events that many times (a trickle that never ends, for a large one).
    """

    events: tuple[str, ...] = ()
    chunk_delay: float = 0.0
    repeat: int = 1


@dataclass(frozen=True)
class RawBody(Reply):
    """A reply whose body is these bytes exactly, with this status and content type (and ``headers``)."""

    body: bytes = b""
    status: int = 200
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Endless(Reply):
    """A reply that never ends: ``head``, then ``filler`` again and again until the client hangs up.

    Chunked, with this status and content type; the request is marked
    ``disconnected`` when the client goes.
    """

    head: bytes = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
    filler: bytes = b"x" * 65_536
    status: int = 200
    content_type: str = "application/json"


# --- recording -------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    disconnected: bool = False
    completed: bool = False
    connection: int = 0  # which connection (numbered from 1 in accept order) carried it


class _Interrupted(Exception):
    """The client went away (or the server is stopping) while we waited or wrote."""


class _Dropped(Exception):
    """The script made the server drop the connection (not a client disconnect)."""


#: The message of a scripted in-stream error event.
STREAM_ERROR = "The server had an error while processing your request."


# --- the server --------------------------------------------------------------


class OpenAIWire:
    """The chat-completions wire format: what the fake says, in the words of an OpenAI-compatible API.

    A fake of another vendor's API is this server with another wire
    (tests/fake_anthropic.py): the scripted replies, the faults and the
    recording are the same.
    """

    #: The path (its end) that samples.
    path = "/chat/completions"

    def __init__(self, models: Sequence[str] = ()) -> None:
        #: What ``GET .../models`` lists.
        self.models = tuple(models)

    #: What ends a stream, after its last event.
    end = b"data: [DONE]\n\n"

    def error_body(self, message: str, type_: str, code: str | None, status: int = 500) -> dict[str, Any]:
        """The body of an error answered with HTTP ``status``."""
        return _error_body(message, type_, code)

    def models_body(self) -> dict[str, Any]:
        data = [
            {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "fake"} for m in self.models
        ]
        return {"object": "list", "data": data}

    def samples(self, route: str) -> bool:
        """Whether a POST to ``route`` (its path, without the query) asks for a completion."""
        return route.endswith(self.path)

    def streams(self, body: Any, path: str) -> bool:
        """Whether the request (its body, its path with the query) asks for a stream."""
        return isinstance(body, dict) and bool(body.get("stream"))

    def model(self, route: str, body: Any) -> str:
        """The model the request names."""
        return str(body.get("model", "fake")) if isinstance(body, dict) else "fake"

    def reply_body(self, reply: Completion, model: str, number: int) -> dict[str, Any]:
        return _completion_body(reply, model, number)

    def events(self, reply: Completion, model: str, number: int, body: Any) -> Iterator[bytes]:
        """Each event of the streamed reply, as the bytes of its SSE event."""
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        for chunk in _stream_chunks(reply, model, number, include_usage):
            yield f"data: {json.dumps(chunk)}\n\n".encode()

    def error_event(self) -> bytes:
        return f"data: {json.dumps(_error_body(STREAM_ERROR, 'server_error', None))}\n\n".encode()


class FakeOpenAI:
    """The fake server; a context manager that serves from a background thread.

    The thread runs its own asyncio event loop: one task per connection and no
    thread per request, so a thousand concurrent slow requests cost a thousand
    sleeping tasks. Its wire format is :attr:`wire`.
    """

    #: The wire format this fake speaks (a subclass's ``make_wire`` gives another).
    wire: OpenAIWire

    def __init__(
        self,
        *,
        default: Reply | None = None,
        delay: float = 0.0,
        port: int = 0,
        tls: ssl.SSLContext | None = None,
        keep_requests: bool = True,
        models: Sequence[str] = (),
    ) -> None:
        self.wire = self.make_wire(models)
        #: The answer to ``GET .../models`` when set (else the list of ``models``).
        self.models_error: ErrorReply | None = None
        self.default: Reply = default if default is not None else Completion()
        self.delay = delay
        #: Every request served, when ``keep_requests`` (a long-running script does not keep them).
        self.requests: list[RecordedRequest] = []
        self.keep_requests = keep_requests
        self._replies: deque[Reply] = deque()
        self._changed = threading.Condition()
        self._counter = 0
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", port))
        self._listener.listen(_BACKLOG)
        self._listener.setblocking(False)
        self._tls = tls
        self._connections = 0
        self._close_idle: Callable[[], Coroutine[Any, Any, None]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @staticmethod
    def make_wire(models: Sequence[str]) -> OpenAIWire:
        """The wire format, listing ``models``."""
        return OpenAIWire(models)

    # lifecycle

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def served(self) -> int:
        """How many requests arrived (kept or not)."""
        return self._counter

    @property
    def url(self) -> str:
        """The base URL to give the ``openai`` client (ends with ``/v1``)."""
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="fake-openai", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def stop(self) -> None:
        """Stop accepting, drop every open connection and join the thread."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._listener.close()

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve(loop, ready))
        finally:
            loop.close()

    async def _serve(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        connections: set[_Connection] = set()
        self._stop = asyncio.Event()
        server = await loop.create_server(
            lambda: _Connection(self, connections),
            sock=self._listener,
            backlog=_BACKLOG,
            ssl=self._tls,
        )

        async def close_idle() -> None:
            idle = [connection for connection in connections if not connection.busy]
            for connection in idle:
                connection.drop()
            if idle:  # wait until their sockets are closed
                await asyncio.wait([connection.lost for connection in idle], timeout=5)

        self._close_idle = close_idle
        self._loop = loop
        ready.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            for connection in list(connections):
                connection.drop()
            tasks = [c.task for c in connections if c.task is not None]
            if tasks:
                await asyncio.wait(tasks, timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # scripting and inspection

    def queue(self, *replies: Reply) -> None:
        """Append replies; each chat-completions request takes the oldest one."""
        with self._changed:
            self._replies.extend(replies)

    def close_idle_connections(self) -> None:
        """Close every connection that is between requests, as a server's keep-alive expiry would."""
        loop, close_idle = self._loop, self._close_idle
        if loop is not None and close_idle is not None:
            asyncio.run_coroutine_threadsafe(close_idle(), loop).result(timeout=10)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` requests arrived; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._counter >= count, timeout)

    def wait_for_disconnect(self, timeout: float = 5.0) -> bool:
        """Block until some request saw its client go away; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: any(r.disconnected for r in self.requests), timeout)

    @property
    def chat_bodies(self) -> list[Any]:
        """The JSON bodies of the chat-completions requests, in arrival order."""
        with self._changed:
            return [r.body for r in self.requests if self.wire.samples(r.path.split("?", 1)[0])]

    # used by the connections

    def _record(self, request: RecordedRequest) -> tuple[Reply, int]:
        with self._changed:
            if self.keep_requests:
                self.requests.append(request)
            self._counter += 1
            reply = self._replies.popleft() if self._replies else self.default
            self._changed.notify_all()
            return reply, self._counter

    def _listed(self, request: RecordedRequest) -> None:
        """Record a GET (it takes no scripted reply and is not counted in :attr:`served`)."""
        with self._changed:
            if self.keep_requests:
                self.requests.append(request)

    def _mark(self, request: RecordedRequest, *, disconnected: bool) -> None:
        with self._changed:
            if disconnected:
                request.disconnected = True
            else:
                request.completed = True
            self._changed.notify_all()


_BACKLOG = 4096
_HEAD_LIMIT = 64 * 1024


@dataclass
class _Request:
    method: str
    path: str
    version: str
    headers: dict[str, str]
    body: bytes


class _Connection(asyncio.Protocol):
    """One client connection: HTTP/1.1 with keep-alive, one request at a time.

    Bytes arrive in ``data_received``; a task per connection parses requests and
    answers them. The connection ends when the client closes it (or half-closes:
    the openai client never does while it waits), which wakes any delay at once.
    """

    def __init__(self, fake: FakeOpenAI, registry: set[_Connection]) -> None:
        self.fake = fake
        self.registry = registry
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.arrived: asyncio.Future[None] | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.number = 0
        self.busy = False  # between the first byte of a request and the end of its response
        self.writable: asyncio.Future[None] | None = None  # pending while writing is paused

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.fake._connections += 1
        self.number = self.fake._connections
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.registry.add(self)
        self.task = asyncio.get_running_loop().create_task(self._serve())

    def data_received(self, data: bytes) -> None:
        self.busy = True
        self.buffer += data
        self._wake()

    def pause_writing(self) -> None:
        self.writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    def eof_received(self) -> bool:
        self._gone()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.registry.discard(self)
        if not self.lost.done():
            self.lost.set_result(None)
        self._gone()

    def _gone(self) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        self._wake()

    def _wake(self) -> None:
        if self.arrived is not None and not self.arrived.done():
            self.arrived.set_result(None)

    def drop(self) -> None:
        """Close the connection as a crashed server would (pending output is flushed)."""
        if self.transport is not None:
            self.transport.close()
        self._gone()

    # serving

    async def _serve(self) -> None:
        try:
            while (request := await self._read_request()) is not None:
                keep_alive = await self._respond(request)
                self.busy = bool(self.buffer)
                if not keep_alive:
                    break
        except Exception:  # a bug in this file: show it, as http.server would
            traceback.print_exc()
        finally:
            self.drop()

    async def _read_request(self) -> _Request | None:
        """The next complete request, or None once the client is gone or sent garbage."""
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            if len(self.buffer) > _HEAD_LIMIT or not await self._more():
                return None
        head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        try:
            method, path, version = head[0].split(" ", 2)
        except ValueError:
            return None
        headers: dict[str, str] = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            return None
        while len(self.buffer) < end + 4 + length:
            if not await self._more():
                return None
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        return _Request(method, path, version, headers, body)

    async def _more(self) -> bool:
        """Wait for more bytes; False when the client has gone."""
        if self.closed.done():
            return False
        self.arrived = asyncio.get_running_loop().create_future()
        await self.arrived
        self.arrived = None
        return not self.closed.done() or bool(self.buffer)

    async def _drained(self) -> None:
        """Wait while the transport's write buffer is full (its flow control), unless the client goes."""
        if self.writable is not None and not self.writable.done():
            await asyncio.wait([self.writable, self.closed], return_when=asyncio.FIRST_COMPLETED)
        if self.closed.done():
            raise _Interrupted

    async def _wait(self, seconds: float) -> None:
        """Sleep ``seconds`` unless the client disconnects or the server stops."""
        if self.closed.done():
            raise _Interrupted
        if seconds > 0:
            await asyncio.wait([self.closed], timeout=seconds)
            if self.closed.done():
                raise _Interrupted

    async def _respond(self, request: _Request) -> bool:
        """Answer one request; whether the connection may serve another."""
        keep_alive = request.version == "HTTP/1.1" and request.headers.get("connection") != "close"
        route = request.path.split("?", 1)[0].rstrip("/")
        wire = self.fake.wire
        if request.method == "GET":
            self.fake._listed(
                RecordedRequest("GET", request.path, request.headers, None, connection=self.number)
            )
            failing = self.fake.models_error
            if route.endswith("/models") and failing is not None:
                error = wire.error_body(failing.message, failing.type, failing.code, failing.status)
                self._send_json(failing.status, error, failing.headers)
            elif route.endswith("/models"):
                self._send_json(200, wire.models_body())
            else:
                self._send_json(404, wire.error_body("Not found", "invalid_request_error", None, 404))
            return keep_alive
        if request.method != "POST":
            self._send_json(501, wire.error_body("Unsupported method", "invalid_request_error", None, 501))
            return keep_alive
        try:
            body: Any = json.loads(request.body) if request.body else None
        except ValueError:
            body = request.body.decode("utf-8", "replace")
        record = RecordedRequest(
            method="POST", path=request.path, headers=request.headers, body=body, connection=self.number
        )
        fake = self.fake
        if not wire.samples(route):
            fake._record(record)
            self._send_json(404, wire.error_body("Not found", "invalid_request_error", None, 404))
            return keep_alive
        reply, number = fake._record(record)
        delay = reply.delay if reply.delay is not None else fake.delay
        try:
            await self._wait(delay)
            if isinstance(reply, Drop):
                raise _Dropped
            if isinstance(reply, ErrorReply):
                body_out = wire.error_body(reply.message, reply.type, reply.code, reply.status)
                self._send_json(reply.status, body_out, reply.headers)
            elif isinstance(reply, RawBody):
                head = {"Content-Type": reply.content_type, "Content-Length": str(len(reply.body))}
                self._write(self._head(reply.status, {**head, **reply.headers}) + reply.body)
            elif isinstance(reply, Endless):
                await self._endless(reply)
            elif isinstance(reply, RawStream):
                await self._raw_stream(reply)
            elif isinstance(reply, Completion):
                model = wire.model(route, body)
                if wire.streams(body, request.path):
                    await self._stream(reply, model, number, body)
                else:
                    self._send_json(200, wire.reply_body(reply, model, number))
            fake._mark(record, disconnected=False)
        except _Dropped:
            return False  # neither completed nor a client disconnect
        except _Interrupted:
            fake._mark(record, disconnected=True)
            return False
        return keep_alive

    # writing

    def _write(self, data: bytes) -> None:
        if self.closed.done() or self.transport is None or self.transport.is_closing():
            raise _Interrupted
        self.transport.write(data)

    def _head(self, status: int, headers: Mapping[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} {_reason(status)}", "Server: fake-openai"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        head = {
            "Content-Type": "application/json",
            "Content-Length": str(len(data)),
            "x-request-id": "req_fake",
            **(headers or {}),
        }
        self._write(self._head(status, head) + data)

    async def _stream(self, reply: Completion, model: str, number: int, body: Any) -> None:
        """Send the stream; chunks without a delay between them go out in one write."""
        head = {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
        }
        pending = [self._head(200, head)]
        wire = self.fake.wire
        for index, event in enumerate(wire.events(reply, model, number, body)):
            if reply.drop_after is not None and index >= reply.drop_after:
                self._write(b"".join(pending))
                raise _Dropped
            if index and reply.chunk_delay:
                self._write(b"".join(pending))
                pending.clear()
                await self._wait(reply.chunk_delay)
            failing = reply.error_after is not None and index >= reply.error_after
            pending.append(_chunk(wire.error_event() if failing else event))
            if failing:
                break
        if wire.end:
            pending.append(_chunk(wire.end))
        pending.append(b"0\r\n\r\n")
        self._write(b"".join(pending))

    async def _raw_stream(self, reply: RawStream) -> None:
        """Send the scripted events as they are, each in its own write when there is a delay."""
        head = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
        self._write(self._head(200, head))
        for round_ in range(reply.repeat):
            for index, event in enumerate(reply.events):
                if (round_ or index) and reply.chunk_delay:
                    await self._wait(reply.chunk_delay)
                self._write(_chunk(f"data: {event}\n\n".encode()))
        self._write((_chunk(self.fake.wire.end) if self.fake.wire.end else b"") + b"0\r\n\r\n")

    async def _endless(self, reply: Endless) -> None:
        """Write the head, then the filler until the client hangs up (waiting while its buffer is full)."""
        head = {"Content-Type": reply.content_type, "Transfer-Encoding": "chunked"}
        self._write(self._head(reply.status, head) + _chunk(reply.head))
        while True:
            self._write(_chunk(reply.filler))
            await self._drained()


def _chunk(data: bytes) -> bytes:
    """One piece of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


# --- wire format -------------------------------------------------------------


def _error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _split_words(text: str) -> tuple[str, ...]:
    pieces: list[str] = []
    for word in text.split(" "):
        if pieces:
            pieces[-1] += " "
        pieces.append(word)
    return tuple(p for p in pieces if p)


def _finish_reason(reply: Completion) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(reply: Completion, pieces: int) -> dict[str, int]:
    if reply.usage is not None:
        return dict(reply.usage)
    completion = max(pieces, 1)
    return {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}


def _completion_body(reply: Completion, model: str, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
    pieces = len(_split_words(reply.text or "")) + len(reply.tool_calls)
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _finish_reason(reply),
                "logprobs": None,
                **reply.choice_extra,
            }
        ],
        "usage": _usage(reply, pieces),
    }


def _stream_chunks(
    reply: Completion, model: str, number: int, include_usage: bool
) -> Iterator[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None, **extra}
        return {**base, "choices": [choice]}

    yield chunk({"role": "assistant", "content": ""})
    pieces = reply.pieces if reply.pieces is not None else _split_words(reply.text or "")
    for piece in pieces:
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        head = {"index": index, "id": call.id, "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        half = len(call.arguments) // 2
        for part in (call.arguments[:half], call.arguments[half:]):
            if part:
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, _finish_reason(reply), **reply.choice_extra)
    if include_usage:
        count = len(pieces) + 2 * len(reply.tool_calls)
        yield {**base, "choices": [], "usage": _usage(reply, count)}


# --- script ------------------------------------------------------------------


def main(argv: list[str] | None = None, fake_class: type[FakeOpenAI] | None = None) -> int:
    """Serve until SIGINT/SIGTERM; print the base URL on stdout first.

    ``fake_class`` is the server to run (another vendor's fake runs this with its own).
    """
    kind = fake_class or FakeOpenAI
    parser = argparse.ArgumentParser(description=(sys.modules[kind.__module__].__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--text", default="Hello from fake-openai.", help="the reply text")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between streamed chunks")
    args = parser.parse_args(argv)
    fake = kind(
        default=Completion(text=args.text, chunk_delay=args.chunk_delay),
        delay=args.delay,
        port=args.port,
        keep_requests=False,  # nobody reads them here: memory would grow with every request
    )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with fake:
        print(fake.url, flush=True)
        stop.wait()
    print(f"served {fake.served} requests", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
