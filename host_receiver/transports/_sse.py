"""Server-sent events of a response: parsed here, each event kept to a bounded size.

Rules:

- Parsing follows the HTML event stream format as ``httpx-sse`` reads it
  (it did this before): lines end at CR LF, CR or LF (a CR LF cut in two
  by the chunks is one line end); ``:`` starts a comment; a field's value
  loses one leading space; ``data`` lines are joined by LF, ``event`` names
  the event (``message`` when none), ``id`` is kept for the events after it
  too (ignored when it holds a NUL), ``retry`` is taken when it is an
  integer; a blank line dispatches the event, unless nothing was set since
  the last one and no id was ever seen; a last event without its blank line
  is dropped. Text is UTF-8 whatever a header says, a bad byte replaced. A
  leading UTF-8 BOM is dropped before it, as the format says.
- Bytes are parsed as they come, in the task that reads the body: no
  response object, text decoder or line iterator per chunk between the
  socket and the event (issue 39: the pushed request's path).
- Bounded: the body's bytes reach the parser through :class:`_Bounded`,
  which counts the bytes of the event being read (from the last blank line).
  An event that would pass ``limit`` keeps what came before, up to the
  limit (cut at a character boundary); the rest of it is dropped up to its
  blank line, and a ``data`` line holding a marker takes its place: a NUL
  and 32 random hex digits, new for each reader, so no server can send it
  (an event whose data is a bare NUL is data like any other). That event
  reaches the transport as
  an :class:`Event` whose ``data`` is None, with the first
  :data:`~host_receiver.protocol._head.HEAD_LIMIT` bytes of its data as
  ``head``; the stream goes on with the next event. Nothing a server sends
  makes the reader hold much more than ``limit`` bytes besides the chunk
  being read.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

from host_receiver.protocol._head import HEAD_LIMIT

__all__ = ["Event", "read_events"]

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Event:
    """One event: ``data`` as text, or None when it was over the limit (``head`` then holds its start)."""

    event: str = "message"
    data: str | None = ""
    id: str = ""
    retry: int | None = None
    head: bytes = b""


async def read_events(chunks: AsyncIterable[bytes], limit: int) -> AsyncIterator[Event]:
    """The events of a byte stream, each at most about ``limit`` bytes (rules in the module docstring)."""
    cut = b"\0" + secrets.token_hex(16).encode()  # the data line put where an event over the limit was cut
    bounded = _Bounded(limit, cut)
    parser = _Parser(cut)
    async for chunk in chunks:
        if events := parser.feed(bounded.feed(chunk)):
            for event in events:
                yield event


class _Parser:
    """Bytes to events, line by line, as they come (the format's rules in the module docstring)."""

    def __init__(self, cut: bytes) -> None:
        self._cut = cut
        self._tail = b"\n" + cut
        self._partial: list[bytes] = []  # the start of a line the chunks cut
        self._after_cr = False  # the last chunk ended with CR: a LF starting the next ends nothing
        self._event = b""
        self._data: list[bytes] = []
        self._id = ""
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        """The events that ``chunk`` completes."""
        if not chunk:
            return []
        if self._after_cr:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._after_cr = chunk[-1:] == b"\r"
            lines = _LINE_END.split(chunk)
        else:
            lines = chunk.split(b"\n")
        last = lines.pop()  # the start of a line (or b"" after a line end)
        if not lines:
            if last:
                self._partial.append(last)
            return []
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
            self._partial = []
        if last:
            self._partial.append(last)
        events: list[Event] = []
        for line in lines:
            if not line:
                if self._data or self._event or self._id or self._retry is not None:
                    events.append(self._dispatch())
                continue
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self._data.append(value)
            elif name == b"event":
                self._event = value
            elif name == b"id":
                if b"\0" not in value:
                    self._id = value.decode(errors="replace")
            elif name == b"retry":
                with contextlib.suppress(ValueError):
                    self._retry = int(value.decode(errors="replace"))
            # a comment (an empty name) or an unknown field: ignored
        return events

    def _dispatch(self) -> Event:
        """The event the blank line ends; the id stays for the next."""
        name = self._event.decode(errors="replace") if self._event else "message"
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        retry = self._retry
        self._event, self._data, self._retry = b"", [], None
        if data == self._cut or data.endswith(self._tail):
            kept = data[: -len(self._cut)].removesuffix(b"\n")
            return Event(name, None, self._id, retry, kept[:HEAD_LIMIT])
        return Event(name, data.decode(errors="replace"), self._id, retry)


class _Bounded:
    """The body's bytes, each event cut to ``limit`` (module rules); it parses nothing but line ends."""

    def __init__(self, limit: int, cut: bytes) -> None:
        self._limit = limit
        self._cut = cut
        self._event = 0  # bytes of the event being read, line ends included
        self._line = 0  # bytes of the line being read
        self._over = False  # the event being read passed the limit: dropped up to its end
        self._after_cr = False  # the last chunk ended with CR: a LF starting the next ends nothing
        self._pending: bytes | None = b""  # the body's first bytes while they may start a BOM

    def feed(self, chunk: bytes) -> bytes:
        """What of ``chunk`` the parser gets (a leading BOM dropped, an event over the limit cut)."""
        if self._pending is not None:
            pending = self._pending + chunk
            if len(pending) < len(_BOM) and _BOM.startswith(pending):
                self._pending = pending
                return b""  # maybe the start of a BOM: wait for more
            chunk, self._pending = pending.removeprefix(_BOM), None
        return self._feed(chunk)

    def _feed(self, chunk: bytes) -> bytes:
        if not (self._over or self._after_cr or b"\r" in chunk) and self._event + len(chunk) <= self._limit:
            return self._fits(chunk)
        out: list[bytes] = []
        start = 0
        if self._after_cr and chunk.startswith(b"\n"):
            start = 1  # the LF of a CR LF that the last chunk cut in two
            if not self._over:
                out.append(b"\n")
        self._after_cr = chunk.endswith(b"\r")
        for end in _LINE_END.finditer(chunk, start):
            self._take(chunk[start : end.start()], out)
            self._line_ended(end.group(), out)
            start = end.end()
        self._take(chunk[start:], out)
        return b"".join(out)

    def _fits(self, chunk: bytes) -> bytes:
        """A chunk of LF line ends that the event being read has room for: passed on whole,
        the counts moved as :meth:`_take` and :meth:`_line_ended` would move them."""
        blank = chunk.rfind(b"\n\n")
        if blank >= 0:
            self._event = len(chunk) - blank - 2  # the events before it ended
        elif chunk[:1] == b"\n" and self._line == 0:
            self._event = len(chunk) - 1
        else:
            self._event += len(chunk)
        last = chunk.rfind(b"\n")
        self._line = self._line + len(chunk) if last < 0 else len(chunk) - last - 1
        return chunk

    def _take(self, piece: bytes, out: list[bytes]) -> None:
        """Part of a line: passed on while the event fits, cut where it would not."""
        self._line += len(piece)
        if self._over or not piece:
            return
        room = self._limit - self._event
        if len(piece) <= room:
            self._event += len(piece)
            out.append(piece)
            return
        while room > 0 and piece[room] & 0xC0 == 0x80:  # never cut a character in two
            room -= 1
        out.append(piece[:room] + b"\ndata: " + self._cut + b"\n")
        self._over = True

    def _line_ended(self, ending: bytes, out: list[bytes]) -> None:
        event_ended = self._line == 0
        self._line = 0
        if event_ended:
            self._event, self._over = 0, False
        elif self._over:
            return
        else:
            self._event += len(ending)
        out.append(ending)
