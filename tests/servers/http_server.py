"""A small Streamable HTTP MCP endpoint for tests, on the standard library only.

It runs in a thread (``with StreamableHttpServer() as server: server.url``)
and speaks just enough of the 2025-11-25 transport to exercise a client:

- POST ``initialize`` -> JSON answer and a new ``Mcp-Session-Id``;
  other POSTs need that id (400 without, 404 once expired or deleted).
- POST notification or response -> 202; recorded in :attr:`received`.
- POST request ``ping`` -> JSON ``{}``; ``tools/call`` by tool name:
  ``json`` -> JSON result; ``sse`` -> SSE: priming event, a progress
  notification (if asked), a server request ``elicitation/create`` whose
  answer it waits for, then the result quoting that answer; ``drop`` -> SSE
  priming event with ``retry``, then the connection closes: the result
  comes when the client resumes with ``Last-Event-ID``; ``cut`` -> an SSE
  stream that closes at once, with no event id; ``crash`` -> HTTP 500;
  ``huge-json`` -> a JSON result of ``size`` bytes (its ``id`` first, or
  last with ``id_last``), or one that never ends (``endless``: it is written
  until the client hangs up); ``huge-sse`` -> SSE: a server request
  ``srv-big`` of ``size`` bytes, then (once the client answered it) the
  result; ``huge-error`` -> the same JSON body with HTTP 500; ``gzip-json``
  -> ``huge-json``'s body of ``size`` bytes, sent gzip-compressed;
  ``sse-kept`` -> an SSE answer on a kept-alive connection (chunked), the
  result and the stream's end written at once; ``sse-linger`` -> the same,
  but after the result the stream stays open (a comment every 20 ms) until
  the client hangs up, counted in :attr:`hung_up`.
- GET -> the session's standalone SSE stream (405 if ``get_stream=False``):
  :meth:`push` sends on it, :meth:`hang_up` closes it with a ``retry`` field
  and queues messages the client misses, and a GET with ``Last-Event-ID``
  replays them.
- DELETE -> 200, the session is gone.
- ``cookie``: the initialize answer sets it (``Set-Cookie``), as a load
  balancer's sticky session does.
- ``bearer_from``: from that request on (the first is 1, every verb counts),
  one without ``Authorization: Bearer t0ken`` is refused with 401 and a
  Bearer challenge, as a server that starts asking for a credential does.
- POST to ``/moved`` -> 307 to ``/mcp`` (method and body kept).
- POST ``server/discover`` (the dual-era probe): 400 without a session, as
  a legacy server answers; with ``discover_error``, 400 whose body is that
  JSON-RPC error (as a modern server answers); with ``discover_silent``, no
  answer at all until the server stops.

With ``tls`` (a server-side ``ssl.SSLContext``) it serves ``https``: each
connection's handshake happens in its own thread, on its first read.

Connections are HTTP/1.1 and kept alive after every answer of known length;
an SSE answer ends its connection (but ``sse-kept``'s). Every HTTP request is recorded in
:attr:`requests` (method, JSON-RPC method, headers, names in lower case, and
the client's port, one per connection) so that tests can check what the
client sent, in what order and on which connection.
"""

from __future__ import annotations

import json
import secrets
import ssl
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.serving import ServerThread

#: How long the server waits for the client before giving up (a test failure, not a timing claim).
PATIENCE = 10.0


@dataclass
class Recorded:
    """One HTTP request as the server saw it."""

    verb: str
    rpc_method: str | None
    headers: dict[str, str]
    port: int


@dataclass
class EventLog:
    """One SSE stream's events, kept for replay: ``name:index`` is each event's id."""

    name: str
    events: list[str] = field(default_factory=list)  # JSON data; "" for the priming event

    def event_id(self, index: int) -> str:
        return f"{self.name}:{index}"


@dataclass
class McpSession:
    session_id: str
    get_log: EventLog
    alive: bool = True
    hang_up_retry_ms: int | None = None
    missed: list[str] = field(default_factory=list)


class StreamableHttpServer:
    """The endpoint ``/mcp`` on 127.0.0.1, in a background thread."""

    def __init__(
        self,
        *,
        get_stream: bool = True,
        discover_error: dict[str, Any] | None = None,
        discover_silent: bool = False,
        tls: ssl.SSLContext | None = None,
        cookie: str | None = None,
        bearer_from: int | None = None,
    ) -> None:
        self.get_stream = get_stream
        self.cookie = cookie
        self.bearer_from = bearer_from
        self.discover_error = discover_error
        self.discover_silent = discover_silent
        self.stopping = False
        self.requests: list[Recorded] = []
        self.received: list[dict[str, Any]] = []
        self.sessions: dict[str, McpSession] = {}
        self.post_logs: dict[str, EventLog] = {}
        self.hung_up = 0  # sse-linger streams the client closed
        self.changed = threading.Condition()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.app = self  # type: ignore[attr-defined]
        self.scheme = "http" if tls is None else "https"
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self._serving = ServerThread(self._httpd)  # stopped at once, without a shutdown poll

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{self.scheme}://{host!s}:{port}/mcp"

    def __enter__(self) -> StreamableHttpServer:
        self._serving.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self.changed:
            self.stopping = True
            for session in self.sessions.values():
                session.alive = False
            self.changed.notify_all()
        self._serving.stop()
        self._httpd.server_close()

    # --- control and inspection (from the test's thread) ---------------------

    @property
    def session(self) -> McpSession:
        """The one session the tests open."""
        (session,) = self.sessions.values()
        return session

    def push(self, message: dict[str, Any]) -> None:
        """Send ``message`` on the standalone GET stream."""
        with self.changed:
            self.session.get_log.events.append(json.dumps(message))
            self.changed.notify_all()

    def hang_up(self, retry_ms: int, missed: list[dict[str, Any]]) -> None:
        """Close the GET stream's connection after telling the client to retry in ``retry_ms``.

        ``missed`` is sent on the stream once that connection is closed, so the
        client only gets it by resuming with ``Last-Event-ID``.
        """
        with self.changed:
            self.session.hang_up_retry_ms = retry_ms
            self.session.missed = [json.dumps(message) for message in missed]
            self.changed.notify_all()

    def expire(self) -> None:
        """Forget the session: its id gets 404 from now on."""
        with self.changed:
            self.session.alive = False
            self.changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Block until ``predicate()`` holds (call it through ``anyio.to_thread``)."""
        with self.changed:
            if not self.changed.wait_for(predicate, timeout=PATIENCE):
                raise TimeoutError("the client never did what the test expected")

    def answer_to(self, request_id: str) -> dict[str, Any]:
        """Wait for the client's response to the server request ``request_id``."""
        found: list[dict[str, Any]] = []

        def arrived() -> bool:
            found[:] = [m for m in self.received if m.get("id") == request_id]
            return bool(found)

        self.wait_for(arrived)
        return found[0]

    # --- request handling (handler threads) ----------------------------------

    def record(self, verb: str, rpc_method: str | None, headers: dict[str, str], port: int) -> None:
        with self.changed:
            self.requests.append(Recorded(verb, rpc_method, headers, port))

    def new_session(self) -> str:
        session_id = secrets.token_hex(8)
        with self.changed:
            get_log = EventLog(f"get-{session_id}", events=[""])  # starts with the priming event
            self.sessions[session_id] = McpSession(session_id, get_log)
        return session_id

    def find_session(self, session_id: str | None) -> McpSession | None:
        with self.changed:
            session = self.sessions.get(session_id or "")
            return session if session and session.alive else None


class _Server(ThreadingHTTPServer):
    # Room for a burst of connections, as a real server leaves: with the stdlib's 5, some of 40
    # connections opened at once were dropped and their SYN sent again a second later.
    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    server: Any
    disable_nagle_algorithm = True  # each write goes out at once, as a real server's would
    protocol_version = "HTTP/1.1"  # keep-alive

    @property
    def app(self) -> StreamableHttpServer:
        app: StreamableHttpServer = self.server.app
        return app

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    # --- verbs -------------------------------------------------------------

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/moved":  # the endpoint moved: a redirect that keeps the method and body
            self.send_response(307)
            self.send_header("Location", "/mcp")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.loads(raw)
        self.record("POST", body.get("method"))
        if self.refused():
            return None
        accept = self.headers.get("Accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            return self.send_plain(406, "Accept must list application/json and text/event-stream")
        if body.get("method") == "initialize":
            return self.initialize(body)
        if body.get("method") == "server/discover" and self.app.discover_error is not None:
            error = {"jsonrpc": "2.0", "id": body["id"], "error": self.app.discover_error}
            return self.send_json(error, status=400)
        if body.get("method") == "server/discover" and self.app.discover_silent:
            with self.app.changed:
                self.app.changed.wait_for(lambda: self.app.stopping)
            return None
        session = self.session_or_error()
        if session is None:
            return None
        if "id" not in body or "method" not in body:  # a notification or a response
            with self.app.changed:
                self.app.received.append(body)
                self.app.changed.notify_all()
            return self.send_plain(202, "")
        return self.answer_request(body)

    def do_GET(self) -> None:
        self.record("GET", None)
        if self.refused():
            return None
        if not self.app.get_stream:
            return self.send_plain(405, "no GET stream here")
        session = self.session_or_error()
        if session is None:
            return None
        last = self.headers.get("Last-Event-ID")
        if last is None:
            return self.stream_log(session, session.get_log, start=0, live=True)
        name, _, index = last.rpartition(":")
        log = session.get_log if name == session.get_log.name else self.app.post_logs.get(name)
        if log is None:
            return self.send_plain(404, "unknown stream")
        return self.stream_log(session, log, start=int(index) + 1, live=log is session.get_log)

    def do_DELETE(self) -> None:
        self.record("DELETE", None)
        if self.refused():
            return None
        session = self.session_or_error()
        if session is not None:
            with self.app.changed:
                session.alive = False
                self.app.changed.notify_all()
            self.send_plain(200, "")

    # --- behaviours ----------------------------------------------------------

    def initialize(self, body: dict[str, Any]) -> None:
        session_id = self.app.new_session()
        result = {
            "protocolVersion": body["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stdlib-http", "version": "1"},
        }
        self.send_json({"jsonrpc": "2.0", "id": body["id"], "result": result}, session_id)

    def answer_request(self, body: dict[str, Any]) -> None:
        request_id, method = body["id"], body["method"]
        params = body.get("params") or {}
        if method == "ping":
            return self.send_json({"jsonrpc": "2.0", "id": request_id, "result": {}})
        tool = params.get("name") if method == "tools/call" else None
        if tool == "json":
            return self.send_json({"jsonrpc": "2.0", "id": request_id, "result": _text("json")})
        if tool == "sse":
            return self.sse_with_server_request(request_id, params)
        if tool == "drop":
            log = EventLog(f"post-{secrets.token_hex(4)}")
            log.events = ["", json.dumps({"jsonrpc": "2.0", "id": request_id, "result": _text("resumed")})]
            self.app.post_logs[log.name] = log
            self.start_sse()
            self.write_event(log.event_id(0), "", retry_ms=20)
            return None  # the connection closes here, without the response
        if tool == "cut":
            self.start_sse()
            return None  # closes without an event id: nothing to resume from
        if tool in ("sse-kept", "sse-linger"):
            return self.chunked_sse(request_id, linger=tool == "sse-linger")
        if tool == "crash":
            return self.send_plain(500, "something broke")
        if tool in ("huge-json", "huge-sse", "huge-error", "gzip-json"):
            return self.huge(tool, request_id, params.get("arguments") or {})
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return self.send_json({"jsonrpc": "2.0", "id": request_id, "error": error})

    def chunked_sse(self, request_id: Any, *, linger: bool) -> None:
        """The result as an SSE stream on a kept-alive connection (tools ``sse-kept``, ``sse-linger``)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": _text("kept")})
        event = f"data: {answer}\n\n".encode()
        try:
            if not linger:
                self.wfile.write(_chunk(event) + _chunk(b""))  # the result and the end, in one write
                return
            self.wfile.write(_chunk(event))
            while not self.app.stopping:
                with self.app.changed:
                    self.app.changed.wait_for(lambda: self.app.stopping, timeout=0.02)
                self.wfile.write(_chunk(b": still here\n\n"))
                self.wfile.flush()
        except OSError:
            self.close_connection = True
            with self.app.changed:
                self.app.hung_up += 1
                self.app.changed.notify_all()

    def huge(self, tool: str, request_id: Any, arguments: dict[str, Any]) -> None:
        """A message of ``size`` bytes, or one without end, written piece by piece."""
        size, endless = int(arguments.get("size", 0)), bool(arguments.get("endless"))
        if tool == "huge-sse":
            self.start_sse()
            ask = {"jsonrpc": "2.0", "id": "srv-big", "method": "elicitation/create", "params": {"pad": ""}}
            head, tail = json.dumps(ask).split('""')
            self.write_raw(f'data: {head}"'.encode(), size, f'"{tail}\n\n'.encode())
            answer = self.app.answer_to("srv-big")
            result = _text(f"after the big one: {'error' in answer}")
            self.write_event("", json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))
            return
        self.send_response(500 if tool == "huge-error" else 200)
        self.send_header("Content-Type", "application/json")
        if tool == "gzip-json":
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Connection", "close")  # no Content-Length: the body ends when the connection closes
        self.close_connection = True
        self.end_headers()
        rpc_id = json.dumps(request_id)
        start = '{"jsonrpc": "2.0", ' + ("" if arguments.get("id_last") else f'"id": {rpc_id}, ')
        end = '"}]}' + (f', "id": {rpc_id}' if arguments.get("id_last") else "") + "}"
        opening = f'{start}"result": {{"content": [{{"type": "text", "text": "'.encode()
        self.write_raw(opening, -1 if endless else size, end.encode(), gzipped=tool == "gzip-json")

    def write_raw(self, head: bytes, size: int, tail: bytes, *, gzipped: bool = False) -> None:
        """``head``, then ``x`` up to ``size`` bytes in all (forever for -1), then ``tail``, as far as the
        client reads; ``gzipped``: compressed as it is written."""
        piece = b"x" * 65_536
        packer = zlib.compressobj(wbits=zlib.MAX_WBITS | 16) if gzipped else None

        def write(data: bytes) -> None:
            self.wfile.write(packer.compress(data) if packer is not None else data)

        try:
            write(head)
            left = size - len(head) - len(tail)
            while size < 0 or left > 0:
                write(piece if size < 0 else piece[:left])
                left -= len(piece)
            write(tail)
            if packer is not None:
                self.wfile.write(packer.flush())
            self.wfile.flush()
        except OSError:
            pass  # the client hung up

    def sse_with_server_request(self, request_id: Any, params: dict[str, Any]) -> None:
        self.start_sse()
        self.write_event("", "")
        token = (params.get("_meta") or {}).get("progressToken")
        if token is not None:
            progress = {"progressToken": token, "progress": 1, "total": 2}
            self.write_event("", json.dumps(_notification("notifications/progress", progress)))
        ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create", "params": {"message": "?"}}
        self.write_event("", json.dumps(ask))
        answer = self.app.answer_to("srv-1")
        result = _text(f"client answered {json.dumps(answer['result'], sort_keys=True)}")
        self.write_event("", json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))

    def stream_log(self, session: McpSession, log: EventLog, *, start: int, live: bool) -> None:
        """Write ``log`` from ``start``; if ``live``, keep writing what is pushed."""
        app = self.app
        self.start_sse()
        index = start
        while True:
            with app.changed:
                app.changed.wait_for(partial(_news, log, index, session))
                pending = log.events[index:]
                retry = session.hang_up_retry_ms if live else None
                if retry is not None:
                    session.hang_up_retry_ms = None
                    log.events.extend(session.missed)
                alive = session.alive
            for data in pending:
                if not self.write_event(log.event_id(index), data):
                    return
                index += 1
            if not live or not alive:
                return
            if retry is not None:
                self.write_event("", "", retry_ms=retry)
                return

    # --- wire helpers --------------------------------------------------------

    def record(self, verb: str, rpc_method: str | None) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.app.record(verb, rpc_method, headers, self.client_address[1])

    def refused(self) -> bool:
        """Refuse the request just recorded with 401 if ``bearer_from`` asks for a credential."""
        start = self.app.bearer_from
        if start is None or len(self.app.requests) < start:
            return False
        if self.headers.get("Authorization") == "Bearer t0ken":
            return False
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer error="invalid_token"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def session_or_error(self) -> McpSession | None:
        session_id = self.headers.get("Mcp-Session-Id")
        if session_id is None:
            self.send_plain(400, "missing Mcp-Session-Id")
            return None
        session = self.app.find_session(session_id)
        if session is None:
            self.send_plain(404, "session not found")
        return session

    def send_json(self, message: dict[str, Any], session_id: str | None = None, *, status: int = 200) -> None:
        data = json.dumps(message).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if session_id:
            self.send_header("Mcp-Session-Id", session_id)
            if self.app.cookie is not None:
                self.send_header("Set-Cookie", self.app.cookie)
        self.end_headers()
        self.wfile.write(data)

    def send_plain(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the stream's end is the connection's
        self.close_connection = True
        self.end_headers()
        self.wfile.flush()

    def write_event(self, event_id: str, data: str, *, retry_ms: int | None = None) -> bool:
        """Write one SSE event; False if the client has gone."""
        lines = [f"id: {event_id}"] if event_id else []
        if retry_ms is not None:
            lines.append(f"retry: {retry_ms}")
        lines.append(f"data: {data}")
        try:
            self.wfile.write(("\n".join(lines) + "\n\n").encode())
            self.wfile.flush()
        except OSError:
            return False
        return True


def _chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body (empty: the body's end)."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _news(log: EventLog, index: int, session: McpSession) -> bool:
    """Whether a stream writer has something to do."""
    return len(log.events) > index or not session.alive or session.hang_up_retry_ms is not None


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def _notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}
