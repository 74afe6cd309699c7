"""Server-sent events read from a byte stream, each event bounded in size (the HTML event stream format).

Rules (HTML, "Server-sent events", interpreting an event stream):

- Lines end with CRLF, LF or CR (a CRLF split between two chunks is one
  ending); a leading UTF-8 BOM is dropped; text is UTF-8, invalid bytes
  replaced.
- ``data`` lines are joined with newlines; ``event`` names the type
  (``message`` when absent); ``id`` sets the last event id (not when it
  holds NUL), which every later event carries; ``retry`` takes digits only
  (milliseconds); lines starting with ``:`` are comments; other fields are
  ignored. A blank line ends the event, which is delivered when any field
  was set (a priming event of only an ``id`` counts). A stream that ends
  inside an event drops it.
- Bounded: an event whose data adds up to more than ``limit`` bytes is not
  kept. The first :data:`~host_receiver.protocol._head.HEAD_LIMIT` bytes of
  its data are, and it is delivered at its end as an :class:`Event` whose
  ``data`` is None, with that ``head``; the stream goes on with the next
  event. A line is never kept beyond the limit either (an ``event`` or
  ``id`` longer than ``HEAD_LIMIT`` is ignored), so nothing a server sends
  makes the reader hold more than about ``limit`` bytes besides the chunk
  being read.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

from host_receiver.protocol._head import HEAD_LIMIT

__all__ = ["Event", "EventReader", "read_events"]

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


class EventReader:
    """Feed bytes, get the events they complete (rules in the module docstring)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._line = bytearray()  # the line being read, as far as it is kept
        self._cut = False  # the line being read was not kept whole
        self._after_cr = False  # the last chunk ended with CR: a LF that starts the next ends nothing
        self._started = False  # past a leading BOM
        self._last_id = ""
        self._clear()

    def _clear(self) -> None:
        self._fields = False
        self._event = ""
        self._data = bytearray()
        self._over = False
        self._head = b""
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes, in order."""
        if not self._started:
            pending = bytes(self._line) + chunk
            if len(pending) < len(_BOM) and _BOM.startswith(pending):
                self._line[:] = pending  # maybe the start of a BOM: wait for more
                return []
            chunk = pending.removeprefix(_BOM)
            self._line.clear()
            self._started = True
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        events: list[Event] = []
        start = 0
        for match in _LINE_END.finditer(chunk):
            self._grow(chunk, start, match.start())
            event = self._end_line()
            if event is not None:
                events.append(event)
            start = match.end()
        self._grow(chunk, start, len(chunk))
        return events

    def _grow(self, chunk: bytes, start: int, end: int) -> None:
        """Keep ``chunk[start:end]`` of the current line, as far as there is room for it."""
        room = max(self._limit - len(self._data), HEAD_LIMIT) - len(self._line)
        if end - start > room:
            self._cut = True
            end = start + max(room, 0)
        self._line += chunk[start:end]

    def _end_line(self) -> Event | None:
        line, cut = bytes(self._line), self._cut
        self._line.clear()
        self._cut = False
        if not line and not cut:
            return self._dispatch()
        if line.startswith(b":"):
            return None
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._fields = True
            if not self._over and (cut or len(self._data) + len(value) + 1 > self._limit):
                self._head = bytes((self._data + value)[:HEAD_LIMIT])
                self._data = bytearray()
                self._over = True
            if not self._over:
                self._data += value + b"\n"
        elif cut or len(value) > HEAD_LIMIT:
            return None  # an event type or id that long is no event type or id
        elif name == b"event":
            self._fields = True
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            self._fields = True
            if b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            self._fields = True
            if value.isdigit():
                self._retry = int(value)
        return None

    def _dispatch(self) -> Event | None:
        if not self._fields:
            return None
        kind = self._event or "message"
        if self._over:
            event = Event(kind, None, self._last_id, self._retry, self._head)
        else:
            event = Event(kind, bytes(self._data[:-1]).decode("utf-8", "replace"), self._last_id, self._retry)
        self._clear()
        return event


async def read_events(chunks: AsyncIterable[bytes], limit: int) -> AsyncIterator[Event]:
    """The events of a byte stream, each at most ``limit`` bytes of data (rules in the module docstring)."""
    reader = EventReader(limit)
    async for chunk in chunks:
        for event in reader.feed(chunk):
            yield event
