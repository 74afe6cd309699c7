"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

Rules:

* It is a real HTTP/1.1 server (``http.server.ThreadingHTTPServer``, one thread
  per connection, keep-alive), so the real ``openai`` client talks to it exactly
  as it talks to a real backend: JSON replies with ``Content-Length``, streamed
  replies as ``text/event-stream`` over chunked transfer encoding, ending with
  ``data: [DONE]``.
* ``POST .../chat/completions`` answers with the next scripted reply (a FIFO
  queue filled with :meth:`FakeOpenAI.queue`), or with the default reply when
  the queue is empty. Whether the answer is JSON or a stream follows the
  request's own ``stream`` flag, so one :class:`Completion` serves both.
* Every request is recorded (:class:`RecordedRequest`: method, path, lowercase
  headers, parsed JSON body). While it waits or streams, the server watches the
  socket: when the client goes away, the request is marked ``disconnected`` and
  waiters of :meth:`FakeOpenAI.wait_for_disconnect` wake up.
* Waiting never spins: delays are ``select`` calls on the client socket and on a
  wake-up socket that is signalled when the server stops.

As a script it serves until interrupted and prints its base URL on stdout::

    python tests/fake_openai.py --port 0 --delay 1.0
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = [
    "Completion",
    "Drop",
    "ErrorReply",
    "FakeOpenAI",
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


class _Interrupted(Exception):
    """The client went away (or the server is stopping) while we waited or wrote."""


class _Dropped(Exception):
    """The script made the server drop the connection (not a client disconnect)."""


#: The message of a scripted in-stream error event.
STREAM_ERROR = "The server had an error while processing your request."


# --- the server --------------------------------------------------------------


class FakeOpenAI:
    """The fake server; a context manager that serves from a background thread."""

    def __init__(
        self,
        *,
        default: Reply | None = None,
        delay: float = 0.0,
        port: int = 0,
    ) -> None:
        self.default: Reply = default if default is not None else Completion()
        self.delay = delay
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._changed = threading.Condition()
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = False
        self._counter = 0
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # lifecycle

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL to give the ``openai`` client (ends with ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join()
        self._httpd.server_close()
        self._wake_r.close()
        self._wake_w.close()

    def _serve(self) -> None:
        """Accept connections until :meth:`stop` signals the wake-up socket."""
        listener = self._httpd.socket
        while True:
            readable, _, _ = select.select([listener, self._wake_r], [], [])
            if self._wake_r in readable:
                return
            self._httpd._handle_request_noblock()  # type: ignore[attr-defined]  # accept; a thread each

    def __enter__(self) -> FakeOpenAI:
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

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` requests arrived; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.requests) >= count, timeout)

    def wait_for_disconnect(self, timeout: float = 5.0) -> bool:
        """Block until some request saw its client go away; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: any(r.disconnected for r in self.requests), timeout)

    @property
    def chat_bodies(self) -> list[Any]:
        """The JSON bodies of the chat-completions requests, in arrival order."""
        with self._changed:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    # used by the handler

    def _record(self, request: RecordedRequest) -> tuple[Reply, int]:
        with self._changed:
            self.requests.append(request)
            self._counter += 1
            reply = self._replies.popleft() if self._replies else self.default
            self._changed.notify_all()
            return reply, self._counter

    def _mark(self, request: RecordedRequest, *, disconnected: bool) -> None:
        with self._changed:
            if disconnected:
                request.disconnected = True
            else:
                request.completed = True
            self._changed.notify_all()

    def _wait(self, conn: socket.socket, seconds: float) -> None:
        """Sleep ``seconds`` unless the client disconnects or the server stops."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([conn, self._wake_r], [], [], remaining)
            if self._wake_r in readable:
                raise _Interrupted
            if conn in readable:
                try:
                    peeked = conn.recv(1, socket.MSG_PEEK)
                except OSError:
                    raise _Interrupted from None
                if not peeked:
                    raise _Interrupted
                # Pipelined bytes (never sent by the openai client): just sleep.
                time.sleep(max(0.0, deadline - time.monotonic()))
                return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 4096
    allow_reuse_address = True
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    # routing

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": []})
        else:
            self._send_json(404, _error_body("Not found", "invalid_request_error", None))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        record = RecordedRequest(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        fake = self.server.fake
        if not self.path.rstrip("/").endswith("/chat/completions"):
            fake._record(record)
            self._send_json(404, _error_body("Not found", "invalid_request_error", None))
            return
        reply, number = fake._record(record)
        delay = reply.delay if reply.delay is not None else fake.delay
        try:
            fake._wait(self.connection, delay)
            if isinstance(reply, Drop):
                self._abort()
                raise _Dropped
            if isinstance(reply, ErrorReply):
                body_out = _error_body(reply.message, reply.type, reply.code)
                self._send_json(reply.status, body_out, reply.headers)
            elif isinstance(reply, Completion):
                model = body.get("model", "fake") if isinstance(body, dict) else "fake"
                if isinstance(body, dict) and body.get("stream"):
                    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    self._stream(reply, model, number, include_usage)
                else:
                    self._send_json(200, _completion_body(reply, model, number))
            fake._mark(record, disconnected=False)
        except _Dropped:
            pass  # neither completed nor a client disconnect
        except (_Interrupted, BrokenPipeError, ConnectionResetError):
            fake._mark(record, disconnected=True)
            self.close_connection = True

    # writing

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_fake")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _stream(self, reply: Completion, model: str, number: int, include_usage: bool) -> None:
        fake = self.server.fake
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for index, chunk in enumerate(_stream_chunks(reply, model, number, include_usage)):
            if reply.drop_after is not None and index >= reply.drop_after:
                self._abort()
                raise _Dropped
            if index and reply.chunk_delay:
                fake._wait(self.connection, reply.chunk_delay)
            failing = reply.error_after is not None and index >= reply.error_after
            if failing:
                chunk = _error_body(STREAM_ERROR, "server_error", None)
            self._write_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
            if failing:
                break
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _abort(self) -> None:
        """Close the connection as a crashed server would."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


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


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM; print the base URL on stdout first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--text", default="Hello from fake-openai.", help="the reply text")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between streamed chunks")
    args = parser.parse_args(argv)
    fake = FakeOpenAI(
        default=Completion(text=args.text, chunk_delay=args.chunk_delay),
        delay=args.delay,
        port=args.port,
    )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with fake:
        print(fake.url, flush=True)
        stop.wait()
    print(f"served {len(fake.requests)} requests", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
