"""Server-sent events of a response: parsed by ``httpx-sse``, each event kept to a bounded size.

Rules:

- Parsing is ``httpx-sse``'s (the HTML event stream format: line ends,
  fields, ``id``, ``retry``, dispatch on a blank line). A leading UTF-8 BOM
  is dropped before it, as the format says.
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

import re
import secrets
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

import httpx
from httpx_sse import EventSource

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
    cut = "\0" + secrets.token_hex(16)  # the data line put where an event over the limit was cut
    bounded = _Bounded(chunks, limit, cut.encode())
    body = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=bounded)
    body.encoding = "utf-8"  # the format is UTF-8 whatever a header says (and nothing to parse)
    async for sse in EventSource(body).aiter_sse():
        data = sse.data
        if data == cut or data.endswith("\n" + cut):
            kept = data[: -len(cut)].removesuffix("\n")
            yield Event(sse.event, None, sse.id, sse.retry, kept.encode()[:HEAD_LIMIT])
        else:
            yield Event(sse.event, data, sse.id, sse.retry)


class _Bounded(httpx.AsyncByteStream):
    """The body's bytes, each event cut to ``limit`` (module rules); it parses nothing but line ends."""

    def __init__(self, chunks: AsyncIterable[bytes], limit: int, cut: bytes) -> None:
        self._chunks = chunks
        self._limit = limit
        self._cut = cut
        self._event = 0  # bytes of the event being read, line ends included
        self._line = 0  # bytes of the line being read
        self._over = False  # the event being read passed the limit: dropped up to its end
        self._after_cr = False  # the last chunk ended with CR: a LF starting the next ends nothing
        self._started = False  # past a leading BOM

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending = b""
        async for chunk in self._chunks:
            if not self._started:
                pending += chunk
                if len(pending) < len(_BOM) and _BOM.startswith(pending):
                    continue  # maybe the start of a BOM: wait for more
                chunk, self._started = pending.removeprefix(_BOM), True
            if out := self._feed(chunk):
                yield out

    def _feed(self, chunk: bytes) -> bytes:
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

    async def aclose(self) -> None:
        close = getattr(self._chunks, "aclose", None)
        if close is not None:
            await close()
