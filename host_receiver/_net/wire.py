"""HTTP/1.1 on one connection, one exchange at a time: the pool's requests written, its responses parsed.

(About 460 lines, one idea: two parsers behind one interface, held to the
same bounds; apart, each bound would be written twice in two places.)

Two implementations of one small interface (:class:`Wire`), both held to the
same tests (tests/_net/test_wire.py):

* :class:`LlhttpWire` parses responses with httptools (llhttp, the parser
  uvicorn uses), and writes request heads itself, validated as h11
  validates them. It is used when httptools is installed
  (``host-receiver[speed]``).
* :class:`H11Wire` does both with h11, otherwise.

Rules (both):

* Events are a :class:`Head`, body bytes, and :data:`END`; interim (1xx)
  responses are skipped. A ``101 Switching Protocols`` nobody asked for is an
  error.
* A response head still incomplete after ``MAX_HEAD`` bytes is an error
  (h11's ``max_incomplete_event_size``): a server cannot make the pool buffer
  a head without end.
* The framing is the response's: ``Content-Length``, ``chunked``, none for a
  ``HEAD``, 1xx, 204 or 304, else the body runs to the end of the stream. A
  close before the head is complete is "Server disconnected without sending
  a response."; a close before a framed body is complete is an error naming
  what was missing.
* :meth:`Wire.reusable` after :data:`END`: both sides allow keep-alive
  (HTTP/1.1, no ``Connection: close``, a framed body) and nothing follows the
  response. After a ``HEAD``, the llhttp wire does not reuse the connection
  (llhttp cannot be told that such a response has no body, so it is stopped
  at the head and what followed is unknown).
* Both refuse what is not HTTP/1.1, a ``Transfer-Encoding`` other than
  ``chunked``, a ``Content-Length`` that is not a number, two different ones,
  a bad chunk. llhttp is stricter than h11 on a few things h11 lets through
  (obsolete line folding, a control character in a header value, the same
  ``Content-Length`` twice or as a list, ``Transfer-Encoding`` with
  ``Content-Length``):
  those are errors on the llhttp wire. A bare LF as a line's end is read by
  both.
* A request's headers are validated as h11 does (names are tokens; values
  hold no NUL, CR, LF or surrounding whitespace; a ``Host``; one
  ``Content-Length``; ``Transfer-Encoding: chunked`` only): a bad one is a
  :class:`_LocalError` and nothing is written. Its body is framed by its
  headers: chunked, or exactly ``Content-Length`` bytes.

Errors are :class:`_LocalError` (the request) and :class:`_RemoteError` (the
response), with h11's words where h11 has them; the pool raises them as
httpx's ``LocalProtocolError`` and ``RemoteProtocolError``.

Fixed caps (docs/limits.md): ``MAX_HEAD``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Final, Protocol

import h11

__all__ = [
    "END",
    "HAVE_LLHTTP",
    "MAX_HEAD",
    "H11Wire",
    "Head",
    "LlhttpWire",
    "Wire",
    "new_wire",
]

#: The most bytes of a response head buffered before it is complete (h11's default).
MAX_HEAD = 16 * 1024

Header = tuple[bytes, bytes]


class _LocalError(Exception):
    """The request cannot be written as given."""


class _RemoteError(Exception):
    """The server's bytes are not an HTTP/1.1 response, or it closed too early."""


class Head:
    """A final response's status line and headers."""

    __slots__ = ("headers", "http_version", "reason", "status_code")

    def __init__(self, status_code: int, reason: bytes, http_version: bytes, headers: list[Header]) -> None:
        self.status_code = status_code
        self.reason = reason
        self.http_version = http_version
        self.headers = headers


class _End:
    __slots__ = ()

    def __repr__(self) -> str:
        return "END"


#: The response is complete.
END: Final = _End()

Event = Head | bytes | _End

_DISCONNECTED = "Server disconnected without sending a response."


class Wire(Protocol):
    """One connection's HTTP/1.1, one request and its response at a time."""

    def request(self, method: bytes, target: bytes, headers: list[Header]) -> bytes:
        """The request head's bytes (validated); raises :class:`_LocalError`."""

    def data(self, chunk: bytes) -> bytes:
        """A non-empty piece of the request body, framed."""

    def end(self) -> bytes:
        """The end of the request body, framed; :class:`_LocalError` when it is short."""

    def receive(self, data: bytes) -> None:
        """Bytes from the server; ``b""`` when it closed."""

    def next_event(self) -> Event | None:
        """The next event from the bytes received, or None when more are needed."""

    def reusable(self) -> bool:
        """After :data:`END`: may the connection serve another request?"""

    def next_cycle(self) -> None:
        """Ready for the next request (only when :meth:`reusable`)."""


# --- h11 ---------------------------------------------------------------------


class H11Wire:
    """The wire on h11, for writing and parsing."""

    __slots__ = ("_h11",)

    def __init__(self) -> None:
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)

    def request(self, method: bytes, target: bytes, headers: list[Header]) -> bytes:
        try:
            return self._h11.send(h11.Request(method=method, target=target, headers=headers)) or b""
        except h11.LocalProtocolError as exc:
            raise _LocalError(str(exc)) from exc

    def data(self, chunk: bytes) -> bytes:
        try:
            return self._h11.send(h11.Data(data=chunk)) or b""
        except h11.LocalProtocolError as exc:
            raise _LocalError(str(exc)) from exc

    def end(self) -> bytes:
        try:
            return self._h11.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError as exc:
            raise _LocalError(str(exc)) from exc

    def receive(self, data: bytes) -> None:
        if not data and self._h11.their_state is h11.SEND_RESPONSE:
            raise _RemoteError(_DISCONNECTED)
        self._h11.receive_data(data)

    def next_event(self) -> Event | None:
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                if "_SWITCH_UPGRADE" in str(exc):  # a 101 for a switch the client did not propose
                    raise _RemoteError("the server switched protocols") from exc
                raise _RemoteError(str(exc)) from exc
            if isinstance(event, h11.Data):
                return bytes(event.data)
            if isinstance(event, h11.Response):
                return Head(event.status_code, event.reason, event.http_version, event.headers.raw_items())
            if isinstance(event, h11.EndOfMessage):
                return END
            if isinstance(event, h11.InformationalResponse):  # 100 Continue and the like
                continue
            if event is h11.PAUSED:  # the server switched protocols, which nobody asked it to
                raise _RemoteError("the server switched protocols")
            if event is h11.NEED_DATA:
                return None
            raise _RemoteError(f"unexpected {type(event).__name__}")  # ConnectionClosed

    def reusable(self) -> bool:
        connection = self._h11
        unread, _ = connection.trailing_data  # bytes after the response: the server is confused
        return connection.our_state is h11.DONE and connection.their_state is h11.DONE and not unread

    def next_cycle(self) -> None:
        self._h11.start_next_cycle()


# --- llhttp (httptools) and a request writer of our own -------------------------------------

_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_FIELD_VALUE = re.compile(rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?")
_TARGET = re.compile(rb"[\x21-\x7e]+")
_CONTENT_LENGTH = re.compile(rb"[0-9]{1,20}")
_NO_BODY_STATUS = (204, 304)


class _Stop(Exception):
    """Raised in a parser callback to stop llhttp at a point only the caller knows."""


class _Writer:
    """A request head and body framing, as h11 writes and validates them."""

    __slots__ = ("_chunked", "_left")

    def __init__(self) -> None:
        self._chunked = False
        self._left = 0

    def request(self, method: bytes, target: bytes, headers: list[Header]) -> bytes:
        if not _TOKEN.fullmatch(method):
            raise _LocalError(f"Illegal method characters: {method!r}")
        if not _TARGET.fullmatch(target):
            raise _LocalError(f"Illegal target characters: {target!r}")
        lines = [b"%s %s HTTP/1.1\r\n" % (method, target)]
        length: bytes | None = None
        chunked = host = False
        for name, value in headers:
            if not _TOKEN.fullmatch(name):
                raise _LocalError(f"Illegal header name {name!r}")
            if not _FIELD_VALUE.fullmatch(value):
                raise _LocalError(f"Illegal header value {value!r}")
            lowered = name.lower()
            if lowered == b"host":
                host = True
            elif lowered == b"content-length":
                lengths = {part.strip() for part in value.split(b",")}
                if len(lengths) != 1 or (length is not None and lengths != {length}):
                    raise _LocalError("conflicting Content-Length headers")
                length = lengths.pop()
                if not _CONTENT_LENGTH.fullmatch(length):
                    raise _LocalError("bad Content-Length")
                value = length
            elif lowered == b"transfer-encoding":
                if chunked:
                    raise _LocalError("multiple Transfer-Encoding headers")
                value = value.lower()
                if value != b"chunked":
                    raise _LocalError("Only Transfer-Encoding: chunked is supported")
                chunked = True
            lines.append(b"%s: %s\r\n" % (name, value))
        if not host:
            raise _LocalError("Missing mandatory Host: header")
        lines.append(b"\r\n")
        self._chunked = chunked
        self._left = int(length) if length is not None and not chunked else 0
        return b"".join(lines)

    def data(self, chunk: bytes) -> bytes:
        if self._chunked:
            return b"%x\r\n%s\r\n" % (len(chunk), chunk)
        if len(chunk) > self._left:
            raise _LocalError("Too much data for declared Content-Length")
        self._left -= len(chunk)
        return chunk

    def end(self) -> bytes:
        if self._chunked:
            return b"0\r\n\r\n"
        if self._left:
            raise _LocalError("Too little data for declared Content-Length")
        return b""


class LlhttpWire:
    """Responses parsed by llhttp (its callbacks queue the events); requests written by :class:`_Writer`."""

    __slots__ = (
        "_body_left",
        "_chunked",
        "_ended",
        "_events",
        "_head_bytes",
        "_head_method",
        "_headers",
        "_keep_alive",
        "_parser",
        "_reason",
        "_stopped",
        "_unread",
        "_writer",
    )

    def __init__(self) -> None:
        self._writer = _Writer()
        self._parser = _new_parser(self)
        self._events: deque[Event] = deque()
        self._reset()

    def _reset(self) -> None:
        self._head_method = False
        self._headers: list[Header] = []
        self._reason = b""
        self._head_bytes = 0  # bytes received since the head began, while it is incomplete (-1: complete)
        self._chunked = False
        self._body_left: int | None = None  # Content-Length bytes still to come
        self._keep_alive = False
        self._ended = False
        self._unread = False  # bytes followed the response
        self._stopped = False  # llhttp was stopped (a HEAD): the parser is spent

    # --- writing ---

    def request(self, method: bytes, target: bytes, headers: list[Header]) -> bytes:
        head = self._writer.request(method, target, headers)
        self._head_method = method == b"HEAD"
        return head

    def data(self, chunk: bytes) -> bytes:
        return self._writer.data(chunk)

    def end(self) -> bytes:
        return self._writer.end()

    # --- reading ---

    def receive(self, data: bytes) -> None:
        if self._ended:
            if data:
                self._unread = True
            return
        if not data:
            self._eof()
            return
        if self._head_bytes >= 0:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except _httptools.HttpParserUpgrade:
            raise _RemoteError("the server switched protocols") from None
        except _httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, _RemoteError):
                raise exc.__context__ from None
            if not isinstance(exc.__context__, _Stop):
                raise _RemoteError(str(exc)) from exc
        except _httptools.HttpParserError as exc:
            if not self._ended:
                raise _RemoteError(_describe(exc)) from exc
            self._unread = True  # garbage after a complete response
        if self._head_bytes > MAX_HEAD:
            raise _RemoteError("Receive buffer too long")

    def _eof(self) -> None:
        if self._head_bytes >= 0:
            raise _RemoteError(_DISCONNECTED)
        if self._chunked:
            raise _RemoteError(
                "peer closed connection without sending complete message body: incomplete chunked read"
            )
        if self._body_left is not None:
            raise _RemoteError(
                "peer closed connection without sending complete message body: "
                f"received {self._received()} bytes, expected {self._expected()}"
            )
        self._keep_alive = False  # the body ran to the close
        self._ended = True
        self._events.append(END)

    def _received(self) -> int:
        return self._expected() - (self._body_left or 0)

    def _expected(self) -> int:
        return next((int(value) for name, value in self._headers if name.lower() == b"content-length"), 0)

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    def reusable(self) -> bool:
        return self._ended and self._keep_alive and not self._unread and not self._stopped

    def next_cycle(self) -> None:
        self._reset()

    # --- llhttp's callbacks ---

    def on_message_begin(self) -> None:
        if self._ended:  # another response follows, unasked
            self._unread = True
            raise _Stop
        self._headers = []
        self._reason = b""
        self._head_bytes = max(self._head_bytes, 0)

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        parser = self._parser
        status = parser.get_status_code()
        if status < 200:  # interim: skipped (a 101 raises HttpParserUpgrade after this)
            self._head_bytes = 0
            return
        version = parser.get_http_version().encode()
        self._head_bytes = -1
        self._events.append(Head(status, self._reason, version, self._headers))
        framed = self._head_method or status in _NO_BODY_STATUS
        for name, value in self._headers:
            lowered = name.lower()
            if lowered == b"transfer-encoding":
                if value.strip().lower() != b"chunked":  # as h11: nothing else can be read
                    raise _RemoteError("Only Transfer-Encoding: chunked is supported")
                self._chunked = framed = True
            elif lowered == b"content-length" and not self._chunked:
                self._body_left = int(value.split(b",")[0].strip())
                framed = True
        self._keep_alive = version == b"1.1" and framed and parser.should_keep_alive()
        if self._head_method:  # llhttp would read a body: stop it at the head
            self._body_left = None
            self._chunked = False
            self._stopped = True
            self._ended = True
            self._events.append(END)
            raise _Stop

    def on_body(self, body: bytes) -> None:
        if self._body_left is not None:
            self._body_left -= len(body)
        if body:
            self._events.append(bytes(body))

    def on_message_complete(self) -> None:
        if self._head_bytes >= 0:  # an interim response's end
            return
        self._body_left = None
        self._chunked = False
        self._ended = True
        self._events.append(END)


def _describe(exc: Exception) -> str:
    return f"malformed response: {exc}" if str(exc) else "malformed response"


try:
    import httptools as _httptools
except ImportError:  # pragma: no cover - the [speed] extra is not installed
    HAVE_LLHTTP = False
else:
    HAVE_LLHTTP = True


def _new_parser(wire: LlhttpWire) -> _httptools.HttpResponseParser:
    if not HAVE_LLHTTP:
        raise RuntimeError("httptools is not installed (host-receiver[speed])")
    parser = _httptools.HttpResponseParser(wire)
    # h11 takes a bare LF as a line's end; so does this wire, for the servers that send one.
    parser.set_dangerous_leniencies(lenient_optional_cr_before_lf=True)
    return parser


def _default() -> Callable[[], Wire]:
    return LlhttpWire if HAVE_LLHTTP else H11Wire


#: Makes a connection's wire: llhttp when httptools is installed, h11 otherwise.
new_wire: Callable[[], Wire] = _default()
