"""Reading an HTTP body so that a size bound holds per byte, compressed or not.

httpx decodes a body one network read at a time: a 64 KiB read of a gzip
bomb becomes some 64 MB at once, before any counting reader sees a byte.
:func:`decoded` reads the raw body and inflates it in pieces of at most
``PIECE`` bytes, so a reader that stops at its limit has never held more
than the limit and a piece. :func:`cap_unread_body` does the same for a
body that httpx reads itself (a 401 before an auth flow's retry): whoever
reads it gets its first bytes only.

Rules:

* The codings are those httpx asks for (``gzip``, ``deflate``) and
  ``identity``, in the order the ``Content-Encoding`` header lists them; a
  ``deflate`` body may be zlib-wrapped or raw, as httpx accepts it.
* Any other coding, or bytes that do not inflate, raise
  :class:`httpx.DecodingError` naming the coding: a server sent what nobody
  asked for, and the body cannot be bounded.

Fixed caps (docs/limits.md): ``PIECE``, ``MAX_ERROR_BODY``.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Mapping

import httpx

__all__ = ["MAX_ERROR_BODY", "PIECE", "cap_unread_body", "decoded", "decoded_stream"]

#: The most bytes one step of inflation gives.
PIECE = 64 * 1024
#: The most bytes of an error status's body read (a JSON-RPC error, a 401's explanation).
MAX_ERROR_BODY = 64 * 1024

_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


async def decoded(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body of ``response`` decoded per its ``Content-Encoding``, in pieces of at most ``PIECE`` bytes."""
    async for chunk in _decode(response.aiter_raw(), response.headers, response.request):
        yield chunk


async def decoded_stream(
    raw: httpx.AsyncByteStream, content_encoding: str, request: httpx.Request
) -> AsyncIterator[bytes]:
    """A transport's body stream ``raw`` decoded per ``content_encoding``, as :func:`decoded` does.

    For a transport between the pool and its client: the stream is read directly (no
    response object's reader around it), and the coding is given, taken from the
    headers before they are changed.
    """
    async for chunk in _decode(aiter(raw), {"content-encoding": content_encoding}, request):
        yield chunk


def cap_unread_body(response: httpx.Response, limit: int) -> None:
    """Make whoever reads the body of ``response`` next get at most its first ``limit`` decoded bytes.

    For a body that httpx reads itself (an auth flow's 401 before its retry): the
    body is decoded here, bounded, and what lies beyond ``limit`` is never read
    (closing the response drops its connection).
    """
    raw = response.stream
    if not isinstance(raw, httpx.AsyncByteStream):
        raise TypeError("only the body of an async response can be capped")
    capped = _Capped(_decode(aiter(raw), response.headers, response.request), limit, raw)
    for name in ("content-encoding", "content-length"):
        response.headers.pop(name, None)
    response.stream = capped


def _decode(
    raw: AsyncIterator[bytes], headers: Mapping[str, str], request: httpx.Request
) -> AsyncIterator[bytes]:
    codings = [c.strip().lower() for c in headers.get("content-encoding", "").split(",")]
    body = raw
    for coding in reversed([c for c in codings if c and c != "identity"]):
        if coding not in _WBITS:
            raise httpx.DecodingError(
                f"the response is in Content-Encoding {coding[:40]!r}, which was not asked for",
                request=request,
            )
        body = _inflated(body, coding, request)
    return body


async def _inflated(body: AsyncIterator[bytes], coding: str, request: httpx.Request) -> AsyncIterator[bytes]:
    inflater = zlib.decompressobj(_WBITS[coding])
    started = False
    try:
        async for chunk in body:
            data = chunk
            while data:
                if not started and coding == "deflate":
                    inflater = _deflate_inflater(inflater, data)
                started = True
                out = inflater.decompress(data, PIECE)
                data = inflater.unconsumed_tail
                if out:
                    yield out
        rest = inflater.flush()
        if rest:
            yield rest
    except zlib.error as exc:
        raise httpx.DecodingError(f"the {coding} body does not inflate: {exc}", request=request) from exc


def _deflate_inflater(zlib_wrapped: zlib._Decompress, data: bytes) -> zlib._Decompress:
    """The inflater of a ``deflate`` body: zlib-wrapped when its first bytes say so, raw otherwise."""
    try:
        zlib_wrapped.copy().decompress(data[:2])
    except zlib.error:
        return zlib.decompressobj(-zlib.MAX_WBITS)
    return zlib_wrapped


class _Capped(httpx.AsyncByteStream):
    """At most ``limit`` bytes of ``body``; the rest is left unread."""

    def __init__(self, body: AsyncIterator[bytes], limit: int, raw: httpx.AsyncByteStream) -> None:
        self._body = body
        self._left = limit
        self._raw = raw

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._body:
            if len(chunk) >= self._left:
                yield chunk[: self._left]
                self._left = 0
                return
            self._left -= len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._raw.aclose()
